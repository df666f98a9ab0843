#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A week of training in a benchmark: a recorded PyTorch step replayed a
million times under the shim, with a slow leak planted.

    bench-week.py BUILD_DIR [--steps N] [--every K] [--full-steps M]

bench-week (bench-week.c) replays tests/bench/torch-step.txt, one
training step of a GPT-style model recorded on the stand-in GPU
(bench-week-record.py: 384 allocations and frees from 66 call stacks, the
gradients and the batch kept into the next step), N times (default
1,000,000: a week at 1.6 steps a second), marking a step after each, and
keeps one 512-byte block every K steps (default 100) at its own line,
leak_small(). It runs on the stand-in runtime without the shim, then
under it (a bounded trace, the default); `leakwatch report` then reads the
trace. A trace in full of M steps (default 10,000) gives the size a full
record would have. Printed, each beside its target:

  - the trace's size (<= 1 GB), and its bytes per step;
  - the shim's memory: what its arena held at its most (the trace's INFO
    shim_memory) after the run, against a run of M steps (flat: within
    1 MB); and the process's resident memory at step 1000 and at the last
    step, with the shim and without it (the stand-in runtime's and the
    replay's own memory included);
  - `leakwatch report` (JSON) of the trace: wall and CPU time (<= 60 s),
    peak resident memory;
  - the leak: found at leak_small's line (bench-week.c, "@leak"), its rate
    against 512 / K bytes per step (within 10%).

The stand-in's allocations are kept off mmap (GLIBC_TUNABLES), so that
the run's time is the shim's and the program's, not the kernel's. Always
exits 0: the figures are for reading, not a gate.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
STEP_FILE = os.path.join(HERE, "torch-step.txt")
SOURCE_FILE = os.path.join(HERE, "bench-week.c")
LEAK_BYTES = 512
TUNABLES = "glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=4294967296"


def clean_env():
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("LEAKWATCH_") and k != "LD_PRELOAD"}
    env["GLIBC_TUNABLES"] = TUNABLES
    return env


def timed(cmd, env):
    """Runs cmd: (its output, wall seconds)."""
    start = time.monotonic()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"bench-week: {' '.join(cmd[:3])} failed "
                 f"({r.returncode}):\n{r.stderr[-3000:]}")
    return r.stdout, time.monotonic() - start


def replay(build, steps, every, env):
    cmd = [os.path.join(build, "tests", "bench", "bench-week"), STEP_FILE,
           str(steps), str(every)]
    out, wall = timed(cmd, env)
    rss, seconds = {}, None
    for line in out.splitlines():
        parts = line.split()
        if parts[0] == "rss":
            rss[int(parts[1])] = int(parts[2])
        elif parts[0] == "seconds":
            seconds = float(parts[1])
    return rss, seconds, wall


def leak_line():
    with open(SOURCE_FILE) as f:
        for n, line in enumerate(f, 1):
            if "@leak" in line:
                return n
    sys.exit("bench-week: no @leak line in bench-week.c")


def report(build, trace):
    """`leakwatch report --format json` of trace, timed by the kernel."""
    cmd = ["/usr/bin/time", "-f", "%e %U %S %M",
           os.path.join(build, "report", "leakwatch"), "report", "--format",
           "json", trace]
    env = dict(clean_env(), LEAKWATCH_SYMBOL_CACHE="0")
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"bench-week: the report failed:\n{r.stderr[-3000:]}")
    wall, user, system, kb = r.stderr.strip().splitlines()[-1].split()
    return (json.loads(r.stdout), float(wall), float(user) + float(system),
            int(kb) * 1024)


def own_memory(build, trace):
    """The shim's own memory at its most, as its trace says (INFO
    shim_memory)."""
    return int(report(build, trace)[0]["info"].get("shim_memory", 0))


def shim_env(build, pattern, detail):
    env = clean_env()
    env.update(LD_PRELOAD=os.path.join(build, "interpose", "libleakwatch.so"),
               LEAKWATCH_OUT=pattern, LEAKWATCH_QUIET="1",
               LEAKWATCH_TRACE_DETAIL=detail)
    return env


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build")
    ap.add_argument("--steps", type=int, default=1000000)
    ap.add_argument("--every", type=int, default=100)
    ap.add_argument("--full-steps", type=int, default=10000)
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    if not os.path.exists("/usr/bin/time"):
        print("bench-week: /usr/bin/time is needed (Debian: time)")
        return 0
    steps, every = args.steps, args.every
    print(f"bench-week: {steps} steps of {STEP_FILE}, {LEAK_BYTES} bytes "
          f"kept every {every} steps", flush=True)
    with tempfile.TemporaryDirectory(prefix="lw-week-") as tmp:
        base_rss, base_cpu, base_wall = replay(build, steps, every,
                                               clean_env())
        print(f"without the shim: {base_cpu:.1f} s CPU ({base_wall:.1f} s "
              f"wall)", flush=True)
        pattern = os.path.join(tmp, "week-%p.trace")
        rss, cpu, wall = replay(build, steps, every,
                                shim_env(build, pattern, "bounded"))
        trace = [os.path.join(tmp, f) for f in os.listdir(tmp)
                 if f.startswith("week-")][0]
        size = os.path.getsize(trace)
        print(f"under the shim: {cpu:.1f} s CPU ({wall:.1f} s wall), "
              f"{(cpu - base_cpu) / steps * 1e6:.1f} us a step more",
              flush=True)
        doc, rwall, rcpu, rrss = report(build, trace)
        os.unlink(trace)
        short_pattern = os.path.join(tmp, "short-%p.trace")
        replay(build, args.full_steps, every,
               shim_env(build, short_pattern, "bounded"))
        short = [os.path.join(tmp, f) for f in os.listdir(tmp)
                 if f.startswith("short-")][0]
        short_memory = own_memory(build, short)
        full_pattern = os.path.join(tmp, "full-%p.trace")
        replay(build, args.full_steps, every,
               shim_env(build, full_pattern, "full"))
        full = [os.path.join(tmp, f) for f in os.listdir(tmp)
                if f.startswith("full-")][0]
        full_size = os.path.getsize(full)
    last = max(rss)
    memory = int(doc["info"].get("shim_memory", 0))
    grew = memory - short_memory
    line = leak_line()
    expected = LEAK_BYTES / every
    found = None
    for f in doc["findings"]:
        loc = f.get("location") or {}
        if f["leak"] and str(loc.get("file", "")).endswith("bench-week.c") \
                and loc.get("line") == line:
            found = f
    rate = found["evidence"]["bytes_per_step"] if found else 0
    print()
    print("| figure | measured | target |")
    print("|---|---|---|")
    print(f"| trace, {steps} steps (bounded) | {size / 1e6:.1f} MB, "
          f"{size / steps:.0f} bytes per step | <= 1 GB: "
          f"{'met' if size <= 1e9 else 'MISSED'} |")
    print(f"| the same in full ({args.full_steps} steps, scaled) | "
          f"{full_size / args.full_steps * steps / 1e9:.1f} GB, "
          f"{full_size / args.full_steps:.0f} bytes per step | |")
    print(f"| resident memory, step 1000 -> {last}, with the shim | "
          f"{rss[1000] / 1e6:.1f} -> {rss[last] / 1e6:.1f} MB | |")
    print(f"| the same without it | {base_rss[1000] / 1e6:.1f} -> "
          f"{base_rss[last] / 1e6:.1f} MB | |")
    print(f"| the shim's own memory (its arena at its most), after "
          f"{args.full_steps} and {steps} steps | {short_memory / 1e6:.2f} "
          f"-> {memory / 1e6:.2f} MB | flat (within 1 MB): "
          f"{'met' if memory and abs(grew) <= 1e6 else 'MISSED'} |")
    print(f"| `leakwatch report` of the trace | {rwall:.1f} s wall, "
          f"{rcpu:.1f} s CPU, {rrss / 1e6:.0f} MB peak; {doc['events']} "
          f"events, {doc['events'] / max(rcpu, 1e-9) / 1e6:.0f} M/s | "
          f"<= 60 s: {'met' if max(rwall, rcpu) <= 60 else 'MISSED'} |")
    print(f"| the leak (bench-week.c:{line}) | "
          + (f"found: {found['category']}, {rate:.2f} bytes per step "
             f"against {expected:.2f}" if found else "NOT FOUND")
          + " | found, rate within 10%: "
          + ("met" if found and abs(rate - expected) <= 0.1 * expected
             else "MISSED") + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
