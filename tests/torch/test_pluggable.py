#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The guide's CUDAPluggableAllocator snippet, on real PyTorch: leakwatch
plugged in as PyTorch's allocator (each tensor one cudaMallocAsync through
the shim's own hook). The report must say the tensors were tracked one by
one, never that the allocator's hook reported no tensor, and find the
program's kept tensors. Environment as for test_torch.py."""
import json
import os
import subprocess
import sys
import tempfile

SKIP = 77

PROGRAM = r"""
import os, torch
allocator = torch.cuda.memory.CUDAPluggableAllocator(
    os.environ["LW_LIB"], "leakwatch_torch_alloc", "leakwatch_torch_free")
torch.cuda.memory.change_current_allocator(allocator)


def main():
    import leakwatch
    kept = []
    for step in range(30):
        x = torch.randn(64, 256, device="cuda")
        kept.append(x.sum(0))  # @lead
        del x
        leakwatch.step()


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
    env["PYTHONPATH"] = os.environ["LW_SCRIPTS"]
    failures = []
    with tempfile.TemporaryDirectory(prefix="lw-pluggable-") as tmp:
        script = os.path.join(tmp, "plugged.py")
        with open(script, "w") as f:
            f.write(PROGRAM)
        trace = os.path.join(tmp, "t.trace")
        r = subprocess.run([os.environ["LW_FAKEGPU"], os.environ["LW_CLI"],
                            "run", "--no-report", "--trace", trace, "--",
                            python, script], env=env, capture_output=True,
                           text=True, timeout=600)
        if r.returncode != 0:
            print(r.stdout, r.stderr[-3000:], file=sys.stderr)
            return 1
        text = subprocess.run([os.environ["LW_CLI"], "report", trace],
                              capture_output=True, text=True).stdout
        doc = json.loads(subprocess.run(
            [os.environ["LW_CLI"], "report", "--format", "json", trace],
            capture_output=True, text=True).stdout)
    print(text)
    torch = doc["torch_allocator"]
    if not torch or not torch["tensors_visible"]:
        failures.append(f"tensors not visible: {torch}")
    if "reported no tensor" in text or "pluggable allocator" not in text:
        failures.append("the summary does not say the pluggable allocator "
                        "tracked the tensors one by one")
    leaks = [f for f in doc["findings"] if f["leak"]]
    lead = PROGRAM.splitlines().index(
        next(l for l in PROGRAM.splitlines() if "# @lead" in l)) + 1
    if len(leaks) != 1 or leaks[0]["location"]["line"] != lead:
        failures.append(f"one leak at line {lead} expected: {leaks}")
    for f in failures:
        print("FAIL: " + f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
