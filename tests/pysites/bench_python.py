# SPDX-License-Identifier: MIT
"""Benchmark: what the shim costs a Python program per allocation.

    bench_python.py [--python PATH] [--pairs N] [--repeats R]

A child interpreter makes N tinytensor Storage alloc+free pairs (each one
cudaMalloc and one cudaFree through libtinytensor, from Python, at a Python
call depth of 5 and of 30 frames), with and without LD_PRELOAD of the shim,
and times them itself (the best of R runs). Prints ns per allocation (one
alloc+free pair) for each and the slowdown. Environment as for
test_pysites.py: LW_LIB, LW_TINYTENSOR, LW_TINYTENSOR_PY.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

CHILD = r'''
import os, sys, time
sys.path.insert(0, os.environ["TINYTENSOR_SITE"])
import tinytensor

DEPTH, PAIRS, REPEATS = (int(a) for a in sys.argv[1:4])
Storage = tinytensor.Storage


def loop(pairs):
    for _ in range(pairs):
        s = Storage(256)
        del s


def at_depth(depth, pairs):
    # Python frames at the allocation: Storage.__init__, loop, depth - 3
    # at_depth calls and <module>.
    if depth > 4:
        return at_depth(depth - 1, pairs)
    start = time.perf_counter_ns()
    loop(pairs)
    return time.perf_counter_ns() - start


sys.setrecursionlimit(max(1000, DEPTH + 100))
at_depth(DEPTH, 1000)  # warm up: the shim's start, the stack interned
best = None
for _ in range(REPEATS):  # a loop, not a genexpr: no frame of its own
    elapsed = at_depth(DEPTH, PAIRS)
    best = elapsed if best is None else min(best, elapsed)
print(best / PAIRS)
'''


def measure(python, depth, pairs, repeats, site_dir, workdir, preload):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("LEAKWATCH_")
           and k not in ("LD_PRELOAD", "MALLOC_PERTURB_")}
    env["TINYTENSOR_SITE"] = site_dir
    if preload:
        env["LD_PRELOAD"] = os.environ["LW_LIB"]
        env["LEAKWATCH_OUT"] = os.path.join(workdir, "bench-%p.trace")
        env["LEAKWATCH_QUIET"] = "1"
    out = subprocess.run([python, "-E", "-s", "-c", CHILD, str(depth),
                          str(pairs), str(repeats)],
                         env=env, cwd=workdir, capture_output=True,
                         text=True, timeout=600)
    if out.returncode != 0:
        raise SystemExit(f"benchmark child failed ({out.returncode}):\n"
                         f"{out.stderr}")
    return float(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--pairs", type=int, default=100000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    workdir = tempfile.mkdtemp(prefix="lw-bench-")
    site_dir = os.path.join(workdir, "site-packages")
    os.mkdir(site_dir)
    shutil.copy(os.environ["LW_TINYTENSOR_PY"], site_dir)
    version = subprocess.run(
        [args.python, "-E", "-s", "-c", "import sys; print(sys.version.split()[0])"],
        capture_output=True, text=True, check=True).stdout.strip()
    print(f"Python {version} ({args.python}): {args.pairs} tinytensor "
          f"alloc+free pairs per run, best of {args.repeats}")
    print(f"{'depth':>5}  {'without shim':>14}  {'with shim':>14}  "
          f"{'added':>12}  {'slowdown':>8}")
    try:
        for depth in (5, 30):
            base = measure(args.python, depth, args.pairs, args.repeats,
                           site_dir, workdir, preload=False)
            shim = measure(args.python, depth, args.pairs, args.repeats,
                           site_dir, workdir, preload=True)
            print(f"{depth:>5}  {base:>11.0f} ns  {shim:>11.0f} ns  "
                  f"{shim - base:>9.0f} ns  {shim / base:>7.2f}x")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
