#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The guide's CUDAPluggableAllocator snippet, on real PyTorch: leakwatch
plugged in as PyTorch's allocator (each tensor one cudaMallocAsync through
the shim's own hook). The report must say the tensors were tracked one by
one, never that the allocator's hook reported no tensor, and find the
program's kept tensors. Environment as for test_torch.py."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_torch import run_program  # noqa: E402

SKIP = 77

PROGRAM = r"""
import os, torch
allocator = torch.cuda.memory.CUDAPluggableAllocator(
    os.environ["LEAKWATCH_LIB"], "leakwatch_torch_alloc",
    "leakwatch_torch_free")
torch.cuda.memory.change_current_allocator(allocator)


def train():
    import leakwatch
    kept = []
    for step in range(30):
        x = torch.randn(64, 256, device="cuda")
        kept.append(x.sum(0))  # @lead
        del x
        leakwatch.step()


train()
"""


def main():
    if not os.environ.get("LW_TORCH_PYTHON"):
        print("no PyTorch configured (meson -Dtorch_python=PATH): skipped")
        return SKIP
    failures = []
    with tempfile.TemporaryDirectory(prefix="lw-pluggable-") as tmp:
        r, doc, trace = run_program(PROGRAM, tmp, "plugged")
        if r.returncode != 0 or doc is None:
            print(f"FAIL: the program exited {r.returncode}", file=sys.stderr)
            return 1
        text = subprocess.run([os.environ["LW_CLI"], "report", trace],
                              capture_output=True, text=True).stdout
    print(text)
    torch = doc["torch_allocator"]
    if not torch or not torch["tensors_visible"]:
        failures.append(f"tensors not visible: {torch}")
    if "reported no tensor" in text or "pluggable allocator" not in text:
        failures.append("the summary does not say the pluggable allocator "
                        "tracked the tensors one by one")
    leaks = [f for f in doc["findings"] if f["leak"]]
    lead = next(n for n, line in enumerate(PROGRAM.splitlines(), 1)
                if "# @lead" in line)
    if len(leaks) != 1 or leaks[0]["location"]["line"] != lead:
        failures.append(f"one leak at line {lead} expected: {leaks}")
    for f in failures:
        print("FAIL: " + f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
