#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What the holder search (who holds it) costs a program with many live
Python objects, measured through the shim, whatever the search is made of.

    bench-holders.py BUILD_DIR [TORCH_PYTHON] [--objects 0,1000000,3000000]
                     [--runs 2]

A program under `leakwatch run` (PyTorch on the stand-in GPU when
TORCH_PYTHON is given or LW_TORCH_PYTHON set, else tinytensor on the
stand-in CUDA runtime) makes N small objects, locals of its main() (half
instances with their __dict__, half one-element lists; main() returns
them to a global of __main__, for the search at the end), then runs 20
steps (leakwatch.step()) that each leak one device tensor into a list
held by another module's global (`lw_bench_keeper.kept`), so that the
shim asks for searches during the run; one more tensor is kept only by a
C reference (Py_IncRef), which no walk reaches, so that every search
walks all the objects whatever its order. Then it calls
leakwatch.snapshot() (a whole search) and ends (the search at the
program's end). LEAKWATCH_HOLDERS_BUDGET=600: no search is cut.

Each N is run with the search on and with LEAKWATCH_HOLDERS=0, alternated
(best of --runs). The program measures itself:
  - the snapshot: its time, and the growth of the peak resident memory
    while it runs (VmHWM, reset through /proc/self/clear_refs just before,
    less VmRSS then);
  - the end: the time and the peak growth from an atexit handler that runs
    just before the shim's search to one that runs after it (the rest of
    the program's exit is the same with the search off);
and the trace gives the searches during the run (holder_searches_in_run:
their number and time) and the holder the report names.

Printed per N: the objects the collector tracks in all (PyTorch's own
are several hundred thousand), the snapshot's and the end search's added
time (on less off) and added peak memory; then, against the smallest N,
the time per million objects the program adds. Targets (for the search
in C): at most 0.3 s per million objects, at most 32 MiB added at 3
million. A last run at the first N above 0 with LEAKWATCH_HOLDERS_BUDGET=0.1
shows a budget cutting the snapshot. Figures for reading: exits 0 unless
a program fails (1), 77 without a build.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
STEPS = 20
MiB = 1 << 20

# The program under the shim. argv: N OUT TENSORS (torch|tinytensor).
PROGRAM = r'''
import atexit, ctypes, gc, json, os, re, sys, time

N, OUT, TENSORS = int(sys.argv[1]), sys.argv[2], sys.argv[3]
figures = {}


def memory():
    """(VmRSS, VmHWM) in bytes."""
    with open("/proc/self/status") as f:
        text = f.read()
    return tuple(int(re.search(k + r":\s+(\d+)", text).group(1)) * 1024
                 for k in ("VmRSS", "VmHWM"))


def reset_peak():
    """VmHWM back to VmRSS (Linux 4.0 and later); VmRSS now."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        figures["no_reset"] = True
    return memory()[0]


def after_end_search():
    # Registered first, so run last: after the shim's search at the end.
    rss, hwm = memory()
    figures["end_s"] = time.perf_counter() - figures.pop("end_t0")
    figures["end_peak"] = hwm - figures.pop("end_rss0")
    with open(OUT, "w") as f:
        json.dump(figures, f)


atexit.register(after_end_search)

import leakwatch  # noqa: E402

if TENSORS == "torch":
    import torch
    torch.backends.cudnn.enabled = False

    def device_tensor():
        return torch.ones(4096, device="cuda") * 2
else:
    import tinytensor as tt

    def device_tensor():
        return tt.ones(4096) * 2

keeper = type(sys)("lw_bench_keeper")
keeper.kept = []
sys.modules["lw_bench_keeper"] = keeper


class Sample(object):
    def __init__(self, i):
        self.index = i
        self.label = "x"


def before_end_search():
    # Registered after the shim's handler, so run just before it.
    figures["end_rss0"] = reset_peak()
    figures["end_t0"] = time.perf_counter()


def main():
    program = [Sample(i) for i in range(N // 2)] + \
        [[i] for i in range(N - N // 2)]
    hidden = device_tensor()
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(hidden))
    del hidden
    for step in range(STEPS):
        keeper.kept.append(device_tensor())
        leakwatch.step()
    gc.collect()
    figures["tracked"] = len(gc.get_objects())
    rss0 = reset_peak()
    t0 = time.perf_counter()
    leakwatch.snapshot()
    figures["snapshot_s"] = time.perf_counter() - t0
    figures["snapshot_peak"] = memory()[1] - rss0
    figures["objects"] = len(program)
    # The shim registered its handler at the first device call: this one
    # runs before it.
    atexit.register(before_end_search)
    return program


STEPS = int(os.environ.get("LW_BENCH_STEPS", "20"))
# Kept to the end, for the search at the program's end (main()'s frame is
# gone by then).
objects = main()
'''


def clean_env():
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("LEAKWATCH_", "PYTORCH_"))
            and k != "LD_PRELOAD"}


def run_once(build, python, tensors, work, n, env_extra):
    """One run: (the program's figures, the trace's in-run searches (count,
    seconds), the first holder the report names, the process's wall time)."""
    for f in os.listdir(work):
        if f.endswith((".trace", ".json")):
            os.unlink(os.path.join(work, f))
    out = os.path.join(work, "figures.json")
    trace = os.path.join(work, "bench.trace")
    env = dict(clean_env(), LEAKWATCH_QUIET="1",
               LEAKWATCH_HOLDERS_BUDGET="600", LEAKWATCH_BUILD=build,
               PYTHONDONTWRITEBYTECODE="1", LW_BENCH_STEPS=str(STEPS),
               PYTHONPATH=os.pathsep.join([
                   os.path.join(SOURCE, "python"),
                   os.path.join(SOURCE, "tests", "tinytensor")]),
               LW_TINYTENSOR=os.path.join(build, "tests", "tinytensor",
                                          "libtinytensor.so"))
    env.update(env_extra)
    cmd = [os.path.join(build, "report", "leakwatch"), "run", "--no-report",
           "--trace", trace, "--", python, os.path.join(work, "program.py"),
           str(n), out, tensors]
    if tensors == "torch":
        cmd = [os.path.join(SOURCE, "scripts", "fakegpu.sh")] + cmd
    t0 = time.perf_counter()
    r = subprocess.run(cmd, env=env, cwd=work, capture_output=True,
                       text=True, timeout=1800)
    wall = time.perf_counter() - t0
    if r.returncode != 0 or not os.path.exists(out):
        sys.exit(f"bench-holders: the program failed ({r.returncode}):\n"
                 f"{r.stdout[-2000:]}\n{r.stderr[-4000:]}")
    with open(out) as f:
        figures = json.load(f)
    rep = subprocess.run([os.path.join(build, "report", "leakwatch"),
                          "report", "--format", "json", trace],
                         capture_output=True, text=True, timeout=600)
    doc = json.loads(rep.stdout) if rep.returncode == 0 else {}
    n_in_run, s_in_run = doc.get("info", {}).get(
        "holder_searches_in_run", "0 0").split()
    held = [h for f in doc.get("findings", []) for h in f["held_by"]]
    return figures, (int(n_in_run), float(s_in_run)), held, wall


def best(runs, key):
    return min(r[0][key] for r in runs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build")
    parser.add_argument("python", nargs="?",
                        default=os.environ.get("LW_TORCH_PYTHON", ""))
    parser.add_argument("--objects", default="0,1000000,3000000")
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    build = os.path.abspath(args.build)
    if not os.path.exists(os.path.join(build, "report", "leakwatch")):
        print(f"no leakwatch built in {build}: skipped")
        return 77
    tensors = "torch" if args.python else "tinytensor"
    python = args.python or sys.executable
    sizes = [int(x) for x in args.objects.split(",")]
    print(f"holder search through the shim: {tensors} tensors, python "
          f"{python}, {STEPS} steps each leaking one tensor, best of "
          f"{args.runs} runs alternated with LEAKWATCH_HOLDERS=0")
    ok = True
    rows = []
    with tempfile.TemporaryDirectory(prefix="lw-bench-holders-") as work:
        with open(os.path.join(work, "program.py"), "w") as f:
            f.write(PROGRAM)
        for n in sizes:
            on, off = [], []
            for _ in range(args.runs):
                off.append(run_once(build, python, tensors, work, n,
                                    {"LEAKWATCH_HOLDERS": "0"}))
                on.append(run_once(build, python, tensors, work, n, {}))
            m = min(r[0]["tracked"] for r in on) / 1e6
            snap = best(on, "snapshot_s") - best(off, "snapshot_s")
            end = best(on, "end_s") - best(off, "end_s")
            snap_mem = best(on, "snapshot_peak") - best(off, "snapshot_peak")
            end_mem = best(on, "end_peak") - best(off, "end_peak")
            searches = min(r[1] for r in on)
            held = on[0][2]
            wall_on = min(r[3] for r in on)
            wall_off = min(r[3] for r in off)
            rows.append((n, m, snap, end, snap_mem, end_mem))
            print(f"{n:,} objects of the program, {m * 1e6:,.0f} objects "
                  "the collector tracks in all:")
            print(f"  snapshot (a whole search): {snap:+.3f} s "
                  f"({best(on, 'snapshot_s'):.3f} s on, "
                  f"{best(off, 'snapshot_s'):.3f} s off; {snap / m:.3f} s "
                  f"per million tracked objects), peak resident memory "
                  f"{snap_mem / MiB:+.1f} MiB")
            print(f"  search at the end:         {end:+.3f} s "
                  f"({end / m:.3f} s per million tracked objects), peak "
                  f"resident memory {end_mem / MiB:+.1f} MiB")
            print(f"  searches during the run:   {searches[0]}, "
                  f"{searches[1]:.3f} s in all")
            print(f"  the process: {wall_on:.2f} s on, {wall_off:.2f} s off "
                  f"(+{wall_on - wall_off:.2f} s)")
            print(f"  held by: {held[0]['path'] + ' (' + held[0]['root'] + ')' if held else 'nothing found'}"
                  f"{'; cut' if held and held[0]['cut'] else ''}")
            if any(r[0].get("no_reset") for r in on + off):
                print("  (/proc/self/clear_refs refused: the peaks are the "
                      "process's since its start)")
        # Per million objects of the program's: against the smallest N.
        base = rows[0]
        print("per million objects the program adds (against "
              f"{base[0]:,}), the search in C's targets: <= 0.3 s per "
              "million, <= 32 MiB added at 3 million")
        for n, m, snap, end, snap_mem, end_mem in rows[1:]:
            dm = (n - base[0]) / 1e6
            t = max(snap - base[2], end - base[3]) / dm
            print(f"  {n:,}: snapshot +{(snap - base[2]) / dm:.3f} s, end "
                  f"+{(end - base[3]) / dm:.3f} s per million; peak memory "
                  f"{snap_mem / MiB:+.1f} MiB (snapshot), "
                  f"{end_mem / MiB:+.1f} MiB (end) in all"
                  f" [time: {'met' if t <= 0.3 else 'MISSED'}"
                  + (f"; memory: "
                     f"{'met' if max(snap_mem, end_mem) <= 32 * MiB else 'MISSED'}"
                     if n >= 3000000 else "") + "]")
        n = next((x for x in sizes if x), sizes[0])
        figures, _, held, _ = run_once(build, python, tensors, work, n,
                                       {"LEAKWATCH_HOLDERS_BUDGET": "0.1"})
        cut = [h["cut"] for h in held]
        print(f"budget 0.1 s, {n:,} objects: the snapshot took "
              f"{figures['snapshot_s']:.3f} s, holders marked cut: "
              f"{cut or 'nothing found'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
