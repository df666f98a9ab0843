#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The holder search keeps nothing of the program alive, on real PyTorch:
a loop whose tensors are searched for during the run (kept into each next
step: the search for what lingers), then leakwatch.snapshot(). Once the
program drops its tensors, torch.cuda.memory_allocated() must read 0, at
once (no reference of the search's may wait for the collector), and the
report must count the same as PyTorch at the program's end.
Environment as for test_torch.py."""
import json
import os
import subprocess
import sys
import tempfile

SKIP = 77

PROGRAM = r"""
import torch, leakwatch


def main():
    for step in range(24):
        x = torch.randn(256, 256, device="cuda")
        y = x @ x
        leakwatch.step()
    leakwatch.snapshot()
    del x, y
    torch.cuda.synchronize()
    print("allocated", torch.cuda.memory_allocated())


main()
"""


def main():
    python = os.environ.get("LW_TORCH_PYTHON", "")
    if not python:
        print("no PyTorch configured (meson -Dtorch_python=PATH): skipped")
        return SKIP
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LEAKWATCH_", "PYTORCH_"))}
    env["LEAKWATCH_LIB"] = os.environ["LW_LIB"]
    env["LEAKWATCH_BUILD"] = os.environ["LEAKWATCH_BUILD"]
    if os.environ.get("LW_TRACE_DETAIL"):  # meson test --setup full
        env["LEAKWATCH_TRACE_DETAIL"] = os.environ["LW_TRACE_DETAIL"]
    env["PYTHONPATH"] = os.environ["LW_SCRIPTS"]
    with tempfile.TemporaryDirectory(prefix="lw-keeps-") as tmp:
        script = os.path.join(tmp, "loop.py")
        with open(script, "w") as f:
            f.write(PROGRAM)
        trace = os.path.join(tmp, "t.trace")
        r = subprocess.run([os.environ["LW_FAKEGPU"], os.environ["LW_CLI"],
                            "run", "--no-report", "--trace", trace, "--",
                            python, script], env=env, capture_output=True,
                           text=True, timeout=600)
        print(r.stdout, r.stderr[-2000:])
        doc = json.loads(subprocess.run(
            [os.environ["LW_CLI"], "report", "--format", "json", trace],
            capture_output=True, text=True).stdout)
    searches = doc["info"].get("holder_searches_in_run", "0 0").split()[0]
    failures = []
    if r.returncode != 0 or "allocated 0" not in r.stdout:
        failures.append(f"memory_allocated() after the tensors were "
                        f"dropped: {r.stdout.strip()}")
    if int(searches) < 1:
        failures.append("no search ran during the run: the test tests "
                        "nothing")
    if doc["live_bytes_at_exit"] != 0:
        failures.append(f"the report counts {doc['live_bytes_at_exit']} "
                        "bytes live at the program's end; PyTorch, 0")
    for f in failures:
        print("FAIL: " + f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
