#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Records one training step of real PyTorch, for bench-week.c to replay.

    bench-week-record.py BUILD_DIR TORCH_PYTHON OUT

Trains the GPT-style model of bench-report-torch.py (4 layers, d=256,
AdamW) on the stand-in GPU (scripts/fakegpu.sh) under `leakwatch run
--trace-detail full` for 20 steps, and writes one step of the steady state
(the 12th) to OUT: its allocations and frees in order, with sizes and
stacks. Each allocation takes a slot; a free names the slot of the
allocation it frees: "f" one of this step, "p" one of the step before,
by the slot of the allocation of this step that stands in its place (the
same stack and size, as many of them before it). Replayed in a loop, each
step frees what the step before kept, and keeps the same. A stack is a
site, numbered from 0 in the order of first use.

    # comment lines
    sites S
    a SLOT SIZE SITE
    f SLOT
    p SLOT

The recording is kept in tests/bench/torch-step.txt; run this again to
make it anew.
"""
import importlib.util
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
from tracebytes import read_varint  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
STEPS = 20
STEP = 12


def events(path):
    """Per step: [("a", address, size, stack) or ("f", address)]."""
    data = open(path, "rb").read()
    steps, cur, i, prev = [], [], 32, 0
    while i < len(data):
        tag = data[i]
        i += 1
        if tag in (1, 2, 3, 4):
            d, i = read_varint(data, i)
            size, i = read_varint(data, i)
            stack, i = read_varint(data, i)
            prev += (d >> 1) ^ -(d & 1)
            cur.append(("a", prev, size, stack))
        elif tag == 8:
            d, i = read_varint(data, i)
            prev += (d >> 1) ^ -(d & 1)
            cur.append(("f", prev))
        elif tag == 9:
            steps.append(cur)
            cur = []
        elif tag in (10,):
            pass
        elif tag in (11, 12):
            _, i = read_varint(data, i)
        elif tag == 13:
            for _ in range(3):
                _, i = read_varint(data, i)
        elif tag >= 0x40:
            n, i = read_varint(data, i)
            i += n
        else:
            sys.exit(f"bench-week-record: unknown tag {tag:#x} at {i - 1}")
    return steps


def pattern(steps, k):
    """Step k as slots: (lines, sites)."""
    before, now, after = steps[k - 1], steps[k], steps[k + 1]
    sites, lines, slots = {}, [], {}
    rank = {}        # (stack, size) -> allocations of step k so far
    by_key = {}      # (stack, size, n) -> slot in step k
    born_before = {}  # address -> (stack, size, n) of step k - 1
    seen = {}
    for ev in before:
        if ev[0] == "a":
            key = (ev[3], ev[2])
            n = seen.get(key, 0)
            seen[key] = n + 1
            born_before[ev[1]] = key + (n,)
        else:
            born_before.pop(ev[1], None)
    live = {}        # address -> slot, made in step k
    late = []        # frees of step k - 1's memory: (index, key)
    for ev in now:
        if ev[0] == "a":
            key = (ev[3], ev[2])
            n = rank.get(key, 0)
            rank[key] = n + 1
            slot = len(slots)
            slots[slot] = key
            by_key[key + (n,)] = slot
            live[ev[1]] = slot
            site = sites.setdefault(ev[3], len(sites))
            lines.append(["a", slot, ev[2], site])
        elif ev[1] in live:
            lines.append(["f", live.pop(ev[1])])
        elif ev[1] in born_before:
            late.append((len(lines), born_before.pop(ev[1])))
            lines.append(None)
        # else: memory older than the step before (kept across steps)
    for index, key in late:
        if key not in by_key:
            sys.exit(f"bench-week-record: step {k} frees memory of step "
                     f"{k - 1} that it does not make again: {key}")
        lines[index] = ["p", by_key[key]]
    # What step k leaves live must die in step k + 1 (replayed, the next
    # iteration frees it).
    freed_next = {ev[1] for ev in after if ev[0] == "f"}
    for address, slot in live.items():
        if address not in freed_next:
            sys.exit(f"bench-week-record: slot {slot} of step {k} outlives "
                     f"step {k + 1}")
    # ... and what it keeps is what the step before kept: the loop keeps
    # no more than the program did.
    kept = sorted(live.values())
    late_slots = sorted(by_key[key] for _, key in late)
    if kept != late_slots:
        sys.exit(f"bench-week-record: step {k} keeps slots {kept}, frees "
                 f"{late_slots} of the step before")
    return [l for l in lines if l], len(sites)


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    build, python, out = (os.path.abspath(sys.argv[1]), sys.argv[2],
                          sys.argv[3])
    spec = importlib.util.spec_from_file_location(
        "bench_report_torch", os.path.join(HERE, "bench-report-torch.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with tempfile.TemporaryDirectory(prefix="lw-week-") as tmp:
        child = os.path.join(tmp, "gpt.py")
        with open(child, "w") as f:
            f.write(module.CHILD)
        trace = os.path.join(tmp, "gpt.trace")
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("LEAKWATCH_", "PYTORCH_CUDA_ALLOC"))
               and k != "LD_PRELOAD"}
        env.update(LEAKWATCH_BUILD=build, PYTHONDONTWRITEBYTECODE="1")
        cmd = [os.path.join(SOURCE, "scripts", "fakegpu.sh"),
               os.path.join(build, "report", "leakwatch"), "run",
               "--trace-detail", "full", "--trace", trace, "--no-report",
               "--", python, child, str(STEPS)]
        r = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"bench-week-record: the run failed:\n{r.stderr}")
        steps = events(trace)
    lines, sites = pattern(steps, STEP)
    allocs = sum(1 for l in lines if l[0] == "a")
    with open(out, "w") as f:
        f.write("# One training step of a GPT-style model (4 layers, d=256, "
                "AdamW;\n# bench-report-torch.py) on the stand-in GPU, "
                f"PyTorch's native allocator:\n# step {STEP} of {STEPS}, "
                f"{allocs} allocations. Made by bench-week-record.py.\n")
        f.write(f"sites {sites}\n")
        for l in lines:
            f.write(" ".join(str(x) for x in l) + "\n")
    print(f"{out}: {len(lines)} events, {allocs} allocations, {sites} sites")
    return 0


if __name__ == "__main__":
    sys.exit(main())
