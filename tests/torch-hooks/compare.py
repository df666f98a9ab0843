# SPDX-License-Identifier: MIT
"""Holds a leakwatch JSON report of levels.py against the counters that
levels.py wrote from PyTorch itself.

    compare.py REPORT.json TORCH.json [--mode native|tensors]

native (PyTorch's native allocator, plain or with expandable segments,
seen through its profiler hook): every step point's allocated and
reserved bytes equal torch.cuda.memory_allocated() and memory_reserved()
read right after that step, and the peaks equal max_memory_allocated()/
max_memory_reserved(). tensors (the cudaMallocAsync backend, or no
caching: each tensor its own CUDA allocation): no block comes through the
hook, and where PyTorch counts (async) every step point's live bytes equal
memory_allocated(). Under every mode the kept loss is found at levels.py's
line, growing per step by what PyTorch's counter grows (a 512-byte block
under the native allocator), or by the tensor's bytes where PyTorch does
not count. Prints what differs; exits 1 on a difference.
"""
import json
import sys


def main():
    report = json.load(open(sys.argv[1]))
    if "reports" in report:
        # leakwatch run: the Python process's report (the one with steps).
        report = max(report["reports"], key=lambda r: r["steps"])
    torch = json.load(open(sys.argv[2]))
    mode = sys.argv[4] if len(sys.argv) > 4 and sys.argv[3] == "--mode" \
        else "native"
    bad = []
    series = report["step_series"]
    if len(series) != len(torch["steps"]):
        bad.append(f"{len(series)} step points, torch saw "
                   f"{len(torch['steps'])} steps")
    alloc = report["torch_allocator"]
    if alloc is None:
        bad.append("no torch_allocator in the report")
    elif mode == "native":
        for point, counters in zip(series, torch["steps"]):
            for ours, theirs in (("allocated_bytes", "allocated"),
                                 ("reserved_bytes", "reserved")):
                if point[ours] != counters[theirs]:
                    bad.append(f"step {point['step']}: {ours} "
                               f"{point[ours]} != torch's {counters[theirs]}")
        for ours, theirs in (("peak_allocated_bytes", "max_allocated"),
                             ("peak_reserved_bytes", "max_reserved")):
            if alloc[ours] != torch[theirs]:
                bad.append(f"{ours} {alloc[ours]} != torch's {torch[theirs]}")
    elif mode == "tensors":
        if alloc["blocks"] or alloc["segments"]:
            bad.append(f"hook blocks {alloc['blocks']}, segments "
                       f"{alloc['segments']}: counted twice")
        for point, counters in zip(series, torch["steps"]):
            if counters["allocated"] and \
                    point["live_bytes"] != counters["allocated"]:
                bad.append(f"step {point['step']}: live_bytes "
                           f"{point['live_bytes']} != torch's "
                           f"{counters['allocated']}")
    steps = torch["steps"]
    per_step = steps[-1]["allocated"] - steps[-2]["allocated"] \
        if len(steps) > 1 else 0
    per_step = per_step or torch["kept_nbytes"]
    leak = [f for f in report["findings"]
            if f["leak"] and f["location"]
            and (f["location"]["file"] or "").endswith("levels.py")]
    if not leak:
        bad.append("the kept loss is not reported at levels.py")
    elif leak[0]["evidence"]["bytes_per_step"] != per_step:
        bad.append(f"the kept loss grows by "
                   f"{leak[0]['evidence']['bytes_per_step']} B per step, "
                   f"not {per_step}")
    for line in bad:
        print(line)
    last = series[-1] if series else {}
    print(f"{mode}: {len(series)} steps; last step: leakwatch allocated "
          f"{last.get('allocated_bytes')} reserved "
          f"{last.get('reserved_bytes')} live {last.get('live_bytes')}; "
          f"torch {steps[-1] if steps else '-'}; peaks: leakwatch "
          f"{alloc and (alloc['peak_allocated_bytes'], alloc['peak_reserved_bytes'])}"
          f" torch {(torch['max_allocated'], torch['max_reserved'])}; "
          f"leak +{leak[0]['evidence']['bytes_per_step'] if leak else '-'}"
          f" B/step; {'DIFFERENT' if bad else 'same'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
