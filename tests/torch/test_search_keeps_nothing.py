#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The holder search keeps nothing of the program alive, on real PyTorch:
a loop whose tensors are searched for during the run (kept into each next
step: the search for what lingers), then leakwatch.snapshot(). Once the
program drops its tensors, torch.cuda.memory_allocated() must read 0, at
once (no reference of the search's may wait for the collector), and the
report must count the same as PyTorch at the program's end.
Environment as for test_torch.py."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_torch import run_program  # noqa: E402

SKIP = 77

PROGRAM = r"""
import torch, leakwatch


def train():
    for step in range(24):
        x = torch.randn(256, 256, device="cuda")
        y = x @ x
        leakwatch.step()
    leakwatch.snapshot()
    del x, y
    torch.cuda.synchronize()
    print("allocated", torch.cuda.memory_allocated())


train()
"""


def main():
    if not os.environ.get("LW_TORCH_PYTHON"):
        print("no PyTorch configured (meson -Dtorch_python=PATH): skipped")
        return SKIP
    with tempfile.TemporaryDirectory(prefix="lw-keeps-") as tmp:
        r, doc, _ = run_program(PROGRAM, tmp, "loop")
    failures = []
    if r.returncode != 0 or doc is None or "allocated 0" not in r.stdout:
        failures.append(f"memory_allocated() after the tensors were "
                        f"dropped: {r.stdout.strip()}")
    elif int(doc["info"].get("holder_searches_in_run", "0 0").split()[0]) < 1:
        failures.append("no search ran during the run: the test tests "
                        "nothing")
    elif doc["live_bytes_at_exit"] != 0:
        failures.append(f"the report counts {doc['live_bytes_at_exit']} "
                        "bytes live at the program's end; PyTorch, 0")
    for f in failures:
        print("FAIL: " + f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
