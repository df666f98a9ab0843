#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""examples/torch_train.py, an ordinary training script that knows nothing
of leakwatch or of the stand-in, run as the README shows:

    scripts/fakegpu.sh leakwatch run --format json -- python3 examples/torch_train.py

It must train to its end, and its report must hold one leak: the logits it
keeps, made at `out = model(x)`, one batch of them (128 x 10 floats) per
step, kept-outputs (backward() freed their graph's buffers: the kept
outputs are what holds memory). The fix as the finding words it (a host
copy, `.cpu()`) ends the growth; `.detach()` does not, and the report
still calls it kept outputs without ever offering `.detach()`.
Environment as for test_torch.py."""
import json
import os
import subprocess
import sys
import tempfile

SKIP = 77
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "torch_train.py")


KEPT = "outputs.append(out)  # the leak: a batch of logits per step"


def run(python, source, tmp, name):
    """The script (its source) under `leakwatch run`: its report."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LEAKWATCH_", "PYTORCH_"))}
    env["LEAKWATCH_LIB"] = os.environ["LW_LIB"]
    env["LEAKWATCH_BUILD"] = os.environ["LEAKWATCH_BUILD"]
    if os.environ.get("LW_TRACE_DETAIL"):  # meson test --setup full
        env["LEAKWATCH_TRACE_DETAIL"] = os.environ["LW_TRACE_DETAIL"]
    script = os.path.join(tmp, name + ".py")
    with open(script, "w") as f:
        f.write(source)
    out = os.path.join(tmp, name + ".json")
    r = subprocess.run([os.environ["LW_FAKEGPU"], os.environ["LW_CLI"],
                        "run", "--format", "json", "-o", out, "--trace",
                        os.path.join(tmp, name + "-%p.trace"), "--", python,
                        script], env=env, capture_output=True,
                       text=True, timeout=600)
    print(r.stdout, r.stderr[-3000:])
    if r.returncode != 0 or "training accuracy" not in r.stdout:
        raise SystemExit(f"FAIL: {name} exited {r.returncode}")
    with open(out) as f:
        doc = json.load(f)
    rep = max(doc.get("reports", [doc]), key=lambda x: x["allocations"])
    return rep, [f for f in rep["findings"]
                 if f["leak"] and not f["suppressed"]]


def main():
    python = os.environ.get("LW_TORCH_PYTHON", "")
    if not python:
        print("no PyTorch configured (meson -Dtorch_python=PATH): skipped")
        return SKIP
    with open(EXAMPLE) as f:
        source = f.read()
    line = next(n for n, text in enumerate(source.splitlines(), 1)
                if text.strip() == "out = model(x)")
    failures = []
    with tempfile.TemporaryDirectory(prefix="lw-example-") as tmp:
        rep, leaks = run(python, source, tmp, "torch_train")
        print(json.dumps(leaks, indent=1))
        want = 128 * 10 * 4
        if not (len(leaks) == 1 and
                leaks[0]["category"] == "kept-outputs" and
                leaks[0]["location"]["line"] == line and
                abs(leaks[0]["evidence"]["bytes_per_step"] - want) <=
                want / 10 and ".cpu()" in leaks[0]["fix"] and
                ".detach()" not in leaks[0]["fix"].replace(
                    "a detached tensor", "")):
            failures.append(f"expected one kept-outputs leak at "
                            f"torch_train.py:{line}, {want} bytes per step, "
                            f"its fix a host copy: {leaks}")
        # The fix as the finding words it: a host copy of each output.
        fixed = source.replace(KEPT, "outputs.append(out.cpu())")
        rep, leaks = run(python, fixed, tmp, "fixed")
        if leaks or rep["verdict"] == "growing":
            failures.append(f"with .cpu(): {rep['verdict']}, {leaks}")
        # .detach() frees the graph, not the memory: still kept.
        detached = source.replace(KEPT, "outputs.append(out.detach())")
        rep, leaks = run(python, detached, tmp, "detached")
        if [f["category"] for f in leaks] != ["kept-outputs"]:
            failures.append(f"with .detach(): {leaks}")
    for f in failures:
        print("FAIL: " + f, file=sys.stderr)
    if failures:
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
