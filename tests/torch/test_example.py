#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""examples/torch_train.py, an ordinary training script that knows nothing
of leakwatch or of the stand-in, run as the README shows:

    scripts/fakegpu.sh leakwatch run --format json -- python3 examples/torch_train.py

It must train to its end, and its report must hold one leak: the logits it
keeps, made at `out = model(x)`, one batch of them (128 x 10 floats) per
step. Environment as for test_torch.py."""
import json
import os
import subprocess
import sys
import tempfile

SKIP = 77
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "torch_train.py")


def main():
    python = os.environ.get("LW_TORCH_PYTHON", "")
    if not python:
        print("no PyTorch configured (meson -Dtorch_python=PATH): skipped")
        return SKIP
    with open(EXAMPLE) as f:
        line = next(n for n, text in enumerate(f, 1)
                    if text.strip() == "out = model(x)")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LEAKWATCH_", "PYTORCH_"))}
    env["LEAKWATCH_LIB"] = os.environ["LW_LIB"]
    env["LEAKWATCH_BUILD"] = os.environ["LEAKWATCH_BUILD"]
    with tempfile.TemporaryDirectory(prefix="lw-example-") as tmp:
        out = os.path.join(tmp, "report.json")
        r = subprocess.run([os.environ["LW_FAKEGPU"], os.environ["LW_CLI"],
                            "run", "--format", "json", "-o", out, "--trace",
                            os.path.join(tmp, "t-%p.trace"), "--", python,
                            EXAMPLE], env=env, capture_output=True,
                           text=True, timeout=600)
        print(r.stdout, r.stderr[-3000:])
        if r.returncode != 0 or "training accuracy" not in r.stdout:
            print(f"FAIL: the example exited {r.returncode}", file=sys.stderr)
            return 1
        with open(out) as f:
            doc = json.load(f)
    rep = max(doc.get("reports", [doc]), key=lambda x: x["allocations"])
    leaks = [f for f in rep["findings"] if f["leak"] and not f["suppressed"]]
    print(json.dumps(leaks, indent=1))
    want = 128 * 10 * 4
    ok = (len(leaks) == 1 and
          leaks[0]["location"]["file"].endswith("torch_train.py") and
          leaks[0]["location"]["line"] == line and
          abs(leaks[0]["evidence"]["bytes_per_step"] - want) <= want / 10)
    if not ok:
        print(f"FAIL: expected one leak at torch_train.py:{line}, "
              f"{want} bytes per step", file=sys.stderr)
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
