# SPDX-License-Identifier: MIT
"""Hook cost: ns per cudaMalloc+cudaFree pair on the stand-in runtime at
native stack depths 10, 30 and 60, without and with the shim, best of 5."""
import os
import subprocess
import sys
import tempfile

bench, lib = sys.argv[1], sys.argv[2]
pairs = "300000"


def best(env):
    runs = [float(subprocess.run([bench, str(depth), pairs], env=env,
                                 capture_output=True, text=True,
                                 check=True).stdout.split()[-1])
            for _ in range(5)]
    return min(runs)


base = {k: v for k, v in os.environ.items() if not k.startswith("LEAKWATCH")}
base.pop("LD_PRELOAD", None)
with tempfile.TemporaryDirectory() as d:
    shim = dict(base, LD_PRELOAD=lib, LEAKWATCH_QUIET="1",
                LEAKWATCH_OUT=os.path.join(d, "bench-%p.trace"))
    print(f"{pairs} cudaMalloc+cudaFree pairs per run, best of 5")
    print("depth   without shim      with shim   slowdown   trace bytes/event")
    for depth in (10, 30, 60):
        plain = best(base)
        traced = best(shim)
        sizes = [os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)]
        per_event = max(sizes) / (2 * int(pairs)) if sizes else 0
        for f in os.listdir(d):
            os.unlink(os.path.join(d, f))
        print(f"{depth:5d} {plain:11.1f} ns {traced:11.1f} ns {traced / plain:9.2f}x"
              f" {per_event:12.2f}")
