#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The JSON report parses with Python's json module and has the documented
fields, in the documented order, with the documented types; the report of a
trace with real return addresses names the functions and lines of gen-trace.

    check-json.py --leakwatch PATH --gen PATH [--libdw 0|1]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
from lwcheck import check, failures  # noqa: E402

CONTEXT_KEYS = ["api", "device", "stream", "live_bytes", "live_count",
                "allocations", "bytes_allocated"]
REPORT_KEYS = [
    "leakwatch_report", "trace", "pid", "command", "exe", "truncated",
    "events", "allocations", "frees", "steps", "live_bytes_at_exit",
    "live_count_at_exit", "peak", "kinds", "unknown_frees", "warnings",
    "sites",
    # Added after the fields of the first version.
    "locations",
    "dropped_events", "reused_live_addresses", "phases", "info", "notes",
    "report_point", "live_bytes_at_end", "live_count_at_end",
    "python", "program_end",
    # Growth.
    "step_series", "step_series_stride", "growth_bytes_per_step", "verdict",
    "min_steps", "step_source", "step_loop", "peak_attribution", "gc_passes", "findings",
    "suppressed_findings", "torch_allocator",
    # Failed allocation calls.
    "failed_allocations", "failed_allocation_errors",
    # PyTorch's out-of-memory error, through its allocator's hook.
    "oom",
    # Device memory by API, device and stream.
    "device_memory_by_context",
    # How the trace ends; its checksums.
    "trace_state",
    # The version of docs/report.schema.json.
    "schema_version",
    # Where the Python code came from, as the interpreter said.
    "python_paths",
    # PyTorch's pool and what lies outside it; the pool's verdict.
    "memory_account",
]
VERDICTS = ("growing", "plateau", "sawtooth-flat", "stable", "not-enough-steps")
POINT_KEYS = ["step", "live_bytes", "live_count", "peak_bytes",
              "lingering_bytes", "allocated_bytes", "reserved_bytes",
              "peak_reserved_bytes",
              # The step's memory account.
              "peak_allocated_bytes", "pool_free_at_peak_bytes",
              "outside_pool_bytes", "peak_outside_pool_bytes",
              "peak_in_use_bytes", "largest_request_bytes"]
ACCOUNT_KEYS = ["allocated_bytes_at_end", "peak_allocated_bytes",
                "reserved_bytes_at_end", "peak_reserved_bytes",
                "pool_free_at_peak_bytes", "outside_pool_bytes_at_end",
                "peak_outside_pool_bytes", "peak_in_use_bytes",
                "device_total_bytes", "pool"]
POOL_KEYS = ["verdict", "leak", "pattern", "expandable_segments",
             "reserved_grows", "reserved_excess", "reserved_stranded",
             "reserved_bytes_per_step",
             "largest_request_bytes", "stranded_misses", "stranded_bytes",
             "fix"]
TORCH_KEYS = ["conf", "source", "tensors_visible", "expandable_segments",
              "blocks", "segments", "allocated_bytes_at_end",
              "reserved_bytes_at_end", "peak_allocated_bytes",
              "peak_reserved_bytes",
              # What the program's code last saw (null without the mark).
              "allocated_bytes_at_program_end",
              "reserved_bytes_at_program_end"]
OOM_KEYS = ["count", "size", "allocated", "reserved", "device", "step",
            "live_bytes", "live_count", "tracked_allocated",
            "tracked_reserved", "sites", "more_sites", "grew"]
PHASE_KEYS = ["name", "begins", "ends", "surviving_bytes", "surviving_count",
              "sites", "more_sites"]
SHARE_KEYS = ["id", "kind", "bytes", "count", "location"]
FINDING_KEYS = ["category", "leak", "confidence", "suppressed", "site", "kind",
                "location", "reason", "fix", "phase", "evidence", "held_by",
                "lines"]
EVIDENCE_KEYS = ["bytes_per_step", "count_per_step", "live_bytes", "live_count",
                 "mean_size", "frees", "mean_lifetime_steps",
                 "max_lifetime_steps", "gc_frees", "gc_passes",
                 "lingering_steps", "lingering_bytes", "peak_bytes",
                 "phase_bytes", "sites",
                 # A step peak's share, against a typical step's peak.
                 "lingering_mean_bytes", "typical_peak_bytes",
                 # What it held at step ends, and when it was let go.
                 "held_bytes", "held_count", "held_at_step", "released",
                 "released_when", "allocated_bytes"]
CATEGORIES = ["retained-loss", "metric-copy", "retained-graph",
              "lingering-previous-step", "unreleased-module",
              "cycle-delayed-frees", "growth", "not-a-leak", "pool-fragmentation",
              "growing-buffer", "kept-exception", "uncollected-cycle",
              "kept-activations", "kept-outputs", "unbounded-cache",
              "kept-inputs", "metric-state"]
KIND_KEYS = ["device", "managed", "pinned_host", "host_registered"]
TOTAL_KEYS = ["live_bytes", "live_count", "allocations", "bytes_allocated"]
SITE_KEYS = ["id", "kind", "live_bytes", "live_count", "allocations",
             "bytes_allocated", "frames",
             # Added after the fields of the first version.
             "location", "native_thread", "live_bytes_at_program_end",
             "live_count_at_program_end", "live_bytes_at_end",
             "live_count_at_end",
             "growth_bytes_per_step", "growth_count_per_step", "verdict",
             "category", "fix",
             # What it held at step ends: the one notion of what leaked.
             "held_bytes", "held_count", "held_at_step", "retained_bytes",
             "leaked", "released"]
DEVICE_KINDS = ("device", "managed")
FRAME_KEYS = ["function", "file", "line", "python", "module", "address",
              "module_offset",
              # What the frame folds into in the default views.
              "folded"]


def is_uint(v):
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def as_frame(location):
    """A location without the keys that follow a frame's."""
    return {k: v for k, v in location.items()
            if k not in ("in_backward", "autograd_node")}


def check_frame(f, where):
    check(list(f) == FRAME_KEYS, f"{where}: frame keys {list(f)}")
    check(f["function"] is None or isinstance(f["function"], str), f"{where}: function")
    check(f["file"] is None or isinstance(f["file"], str), f"{where}: file")
    check(f["line"] is None or is_uint(f["line"]), f"{where}: line")
    check(isinstance(f["python"], bool), f"{where}: python")
    check(f["folded"] is None or (isinstance(f["folded"], str) and
                                  f["folded"] and not f["python"]),
          f"{where}: folded")
    if f["python"]:
        check(f["module"] is None and f["address"] is None and
              f["module_offset"] is None, f"{where}: Python frame")
        return
    check(f["module"] is None or isinstance(f["module"], str), f"{where}: module")
    check(isinstance(f["address"], str) and f["address"].startswith("0x") and
          int(f["address"], 16) >= 0, f"{where}: address")


def check_locations(r, where):
    """Every site in exactly one location, of its own location and kind;
    each location's sums those of its sites."""
    # A stack may allocate more than one kind: (id, kind) names a site.
    sites = {(s["id"], s["kind"]): s for s in r["sites"]}
    seen = []
    for i, loc in enumerate(r["locations"]):
        w = f"{where}: locations[{i}]"
        members = [sites.get((n, loc["kind"])) for n in loc["sites"]]
        check(members and all(members), f"{w}: sites {loc['sites']}")
        if not (members and all(members)):
            continue
        seen += [(n, loc["kind"]) for n in loc["sites"]]
        check(all(m["location"] == loc["location"] and
                  m["kind"] == members[0]["kind"] for m in members),
              f"{w}: its sites' locations and kinds differ")
        check(loc["live_bytes"] == sum(m["live_bytes"] for m in members) and
              loc["live_count"] == sum(m["live_count"] for m in members),
              f"{w}: live sums")
        check(abs(loc["growth_bytes_per_step"] -
                  sum(m["growth_bytes_per_step"] for m in members)) < 1e-6 *
              (1 + abs(loc["growth_bytes_per_step"])), f"{w}: growth sum")
    check(sorted(seen) == sorted(sites), f"{where}: locations do not hold "
          f"every site once")
    keys = [(json.dumps(s["location"], sort_keys=True), s["kind"])
            for s in r["sites"] if s["location"] is not None]
    check(len(set(keys)) == sum(1 for loc in r["locations"]
                                if loc["location"] is not None),
          f"{where}: one location per distinct site location and kind")


def check_report(r, where):
    check(list(r) == REPORT_KEYS, f"{where}: keys {list(r)}")
    check_locations(r, where)
    check(r["leakwatch_report"] == 1 and r["schema_version"] == 1, f"{where}: version")
    check(isinstance(r["trace"], str), f"{where}: trace")
    check(is_uint(r["pid"]), f"{where}: pid")
    check(isinstance(r["command"], list) and
          all(isinstance(a, str) for a in r["command"]), f"{where}: command")
    check(r["exe"] is None or isinstance(r["exe"], str), f"{where}: exe")
    check(isinstance(r["truncated"], bool), f"{where}: truncated")
    for k in ["events", "allocations", "frees", "steps", "live_bytes_at_exit",
              "live_count_at_exit", "unknown_frees", "dropped_events",
              "reused_live_addresses", "live_bytes_at_end", "live_count_at_end"]:
        check(is_uint(r[k]), f"{where}: {k}")
    check(list(r["peak"]) == ["bytes", "step"] and
          all(is_uint(v) for v in r["peak"].values()), f"{where}: peak")
    check(r["peak"]["step"] <= r["steps"], f"{where}: peak step")
    check(list(r["kinds"]) == KIND_KEYS, f"{where}: kinds")
    for kind, t in r["kinds"].items():
        check(list(t) == TOTAL_KEYS and all(is_uint(v) for v in t.values()),
              f"{where}: kinds.{kind}")
    device = r["kinds"]["device"]["live_bytes"] + r["kinds"]["managed"]["live_bytes"]
    check(r["live_bytes_at_exit"] == device, f"{where}: live bytes = device + managed")
    check(r["peak"]["bytes"] >= r["live_bytes_at_exit"], f"{where}: peak >= live")
    contexts = r["device_memory_by_context"]
    check(all(list(c) == CONTEXT_KEYS and isinstance(c["api"], str) and
              (c["device"] is None or isinstance(c["device"], int)) and
              all(is_uint(c[k]) for k in CONTEXT_KEYS[3:]) and
              c["allocations"] > 0 for c in contexts),
          f"{where}: device_memory_by_context {contexts}")
    # Every byte of device memory is in one context, at the report point
    # and over the trace.
    check(sum(c["live_bytes"] for c in contexts) == r["live_bytes_at_exit"] and
          sum(c["live_count"] for c in contexts) == r["live_count_at_exit"],
          f"{where}: contexts sum to the live device memory")
    check(sum(c["allocations"] for c in contexts) ==
          r["kinds"]["device"]["allocations"] + r["kinds"]["managed"]["allocations"],
          f"{where}: contexts sum to the device allocations")
    check(isinstance(r["warnings"], list) and
          all(isinstance(w, str) for w in r["warnings"]), f"{where}: warnings")
    check(isinstance(r["notes"], list), f"{where}: notes")
    check(r["report_point"] in ("end", "program_end"), f"{where}: report_point")
    if r["report_point"] == "end":
        check(r["live_bytes_at_end"] == r["live_bytes_at_exit"] and
              r["live_count_at_end"] == r["live_count_at_exit"], f"{where}: at end")
    check(isinstance(r["info"], dict), f"{where}: info")
    check(isinstance(r["phases"], list) and
          all(list(p) == PHASE_KEYS for p in r["phases"]), f"{where}: phases")
    for p in r["phases"]:
        check(sum(s["bytes"] for s in p["sites"]) <= p["surviving_bytes"] and
              all(list(s) == SHARE_KEYS for s in p["sites"]) and
              p["ends"] <= p["begins"], f"{where}: phase {p['name']}")
        if p["more_sites"] == 0:
            check(sum(s["bytes"] for s in p["sites"]) == p["surviving_bytes"] and
                  sum(s["count"] for s in p["sites"]) == p["surviving_count"],
                  f"{where}: phase {p['name']} sites add up")
    check(r["step_source"] in ("api", "optimizer", "loop", "line",
                               "inferred", "none"),
          f"{where}: step_source")
    check((r["step_loop"] is not None) ==
          (r["step_source"] in ("loop", "line")), f"{where}: step_loop")
    check((r["step_source"] == "none") == (r["steps"] == 0),
          f"{where}: step_source none without steps")
    pa = r["peak_attribution"]
    check(pa is None or list(pa) == ["lingering_steps", "at_highest_peak",
                                     "most_lingering", "sites", "more_sites"],
          f"{where}: peak_attribution keys")
    if pa is not None:
        for key in ("at_highest_peak", "most_lingering"):
            l = pa[key]
            if l is None:
                continue
            check(list(l) == ["step", "peak_bytes", "lingering_bytes", "sites",
                              "more_sites"] and
                  l["lingering_bytes"] <= l["peak_bytes"] <= r["peak"]["bytes"] and
                  l["step"] < r["steps"], f"{where}: {key}")
            if l["more_sites"] == 0:
                check(sum(s["bytes"] for s in l["sites"]) == l["lingering_bytes"],
                      f"{where}: {key} sites add up")
        check(all(list(s) == ["id", "kind", "steps", "max_bytes", "mean_bytes",
                              "location"] and s["mean_bytes"] <= s["max_bytes"]
                  for s in pa["sites"]), f"{where}: peak_attribution sites")
    check(r["python"] is None or isinstance(r["python"], str), f"{where}: python")
    check(isinstance(r["step_series"], list) and
          all(list(p) == POINT_KEYS and all(is_uint(p[k]) for k in POINT_KEYS)
              for p in r["step_series"]), f"{where}: step_series")
    check(is_uint(r["step_series_stride"]) and r["step_series_stride"] >= 1,
          f"{where}: step_series_stride")
    check(isinstance(r["growth_bytes_per_step"], (int, float)) and
          not isinstance(r["growth_bytes_per_step"], bool),
          f"{where}: growth_bytes_per_step")
    check(r["verdict"] in VERDICTS, f"{where}: verdict")
    check(is_uint(r["min_steps"]), f"{where}: min_steps")
    torch = r["torch_allocator"]
    check(torch is None or (isinstance(torch, dict) and
                            list(torch) == TORCH_KEYS and
                            all(is_uint(torch[k]) for k in TORCH_KEYS[4:10]) and
                            all(torch[k] is None or is_uint(torch[k])
                                for k in TORCH_KEYS[10:]) and
                            torch["allocated_bytes_at_end"] <=
                            torch["peak_allocated_bytes"] and
                            torch["reserved_bytes_at_end"] <=
                            torch["peak_reserved_bytes"]),
          f"{where}: torch_allocator {torch!r}")
    account = r["memory_account"]
    check(account is None or (
        isinstance(account, dict) and list(account) == ACCOUNT_KEYS and
        all(is_uint(account[k]) for k in ACCOUNT_KEYS[:8]) and
        account["device_total_bytes"] is None and
        account["allocated_bytes_at_end"] <= account["peak_allocated_bytes"] and
        account["reserved_bytes_at_end"] <= account["peak_reserved_bytes"] and
        account["peak_in_use_bytes"] >= account["peak_reserved_bytes"] and
        (torch is not None and
         account["peak_reserved_bytes"] == torch["peak_reserved_bytes"]) and
        (account["pool"] is None or (
            list(account["pool"]) == POOL_KEYS and
            account["pool"]["leak"] is False and
            (account["pool"]["verdict"] is None) ==
            (account["pool"]["fix"] is None) and
            account["pool"]["verdict"] in (None, "pool-fragmentation")))),
          f"{where}: memory_account {account!r}")
    pools = [f for f in r["findings"] if f["category"] == "pool-fragmentation"]
    check(len(pools) <= 1 and all(not f["leak"] for f in pools) and
          bool(pools) <= bool(account and account["pool"] and
                              account["pool"]["verdict"]),
          f"{where}: the pool's finding agrees with memory_account")
    oom = r["oom"]
    check(oom is None or (isinstance(oom, dict) and list(oom) == OOM_KEYS and
                          oom["count"] >= 1 and
                          list(oom["grew"]) == ["sites", "more_sites"]),
          f"{where}: oom {oom!r}")
    check(r["python"] == r["info"].get("python"), f"{where}: python = INFO python")
    marked = r["report_point"] == "program_end"
    if marked:
        check(r["program_end"] == {"bytes": r["live_bytes_at_exit"],
                                   "count": r["live_count_at_exit"]},
              f"{where}: program_end is the report point")
    else:
        check(r["program_end"] is None, f"{where}: program_end without a mark")
    check(is_uint(r["gc_passes"]) and is_uint(r["suppressed_findings"]),
          f"{where}: gc_passes, suppressed_findings")
    check(isinstance(r["findings"], list), f"{where}: findings")
    by_id = {}
    for f in r["findings"]:
        check(list(f) == FINDING_KEYS, f"{where}: finding keys {list(f)}")
        check(f["category"] in CATEGORIES and
              f["confidence"] in ("low", "medium", "high") and
              f["leak"] == (f["category"] not in ("not-a-leak",
                                                  "pool-fragmentation")) and
              (f["fix"] is None) == (f["category"] == "not-a-leak") and
              isinstance(f["reason"], str) and
              list(f["evidence"]) == EVIDENCE_KEYS and
              f["evidence"]["sites"] >= 1, f"{where}: finding {f}")
        by_id.setdefault((f["site"], f["kind"]), f)
    check(sum(f["suppressed"] and f["leak"] for f in r["findings"]) ==
          r["suppressed_findings"], f"{where}: suppressed findings counted")
    previous = None
    live_total = 0
    device_at_end = device_at_report = 0
    for s in r["sites"]:
        check(list(s) == SITE_KEYS, f"{where}: site keys {list(s)}")
        check(s["kind"] in KIND_KEYS, f"{where}: site kind")
        check(s["live_count"] > 0 or s["live_count_at_end"] > 0,
              f"{where}: site without live memory")
        check(s["allocations"] >= max(s["live_count"], s["live_count_at_end"]),
              f"{where}: site counts")
        key = (s["live_bytes"], s["live_bytes_at_end"])
        check(previous is None or previous >= key, f"{where}: site order")
        previous = key
        live_total += s["live_bytes"]
        for k in ["live_bytes_at_end", "live_count_at_end"]:
            check(is_uint(s[k]), f"{where}: site {k}")
        for k in ["live_bytes_at_program_end", "live_count_at_program_end"]:
            check(is_uint(s[k]) if marked else s[k] is None, f"{where}: site {k}")
        at = "program_end" if marked else "end"
        check((s["live_bytes"], s["live_count"]) ==
              (s[f"live_bytes_at_{at}"], s[f"live_count_at_{at}"]),
              f"{where}: a site's live_* are at the report point")
        if s["kind"] in DEVICE_KINDS:
            device_at_end += s["live_bytes_at_end"]
            device_at_report += s["live_bytes"]
        check(isinstance(s["native_thread"], bool), f"{where}: native_thread")
        for k in ("growth_bytes_per_step", "growth_count_per_step"):
            check(isinstance(s[k], (int, float)) and not isinstance(s[k], bool),
                  f"{where}: {k}")
        check(s["verdict"] in VERDICTS, f"{where}: verdict")
        check(s["category"] is None or s["category"] in CATEGORIES,
              f"{where}: site category")
        lead = by_id.get((s["id"], s["kind"]))
        if lead is not None:
            check(s["category"] == lead["category"] and s["fix"] == lead["fix"],
                  f"{where}: a finding's lead site has its category and fix")
        if s["native_thread"]:
            check(r["python"] is not None and s["frames"] and
                  not any(f["python"] for f in s["frames"]),
                  f"{where}: native_thread without Python frames")
        loc = s["location"]
        if not s["frames"]:
            check(loc is None, f"{where}: location of an empty stack")
        else:
            check(list(loc)[-2:] == ["in_backward", "autograd_node"] and
                  isinstance(loc["in_backward"], bool) and
                  (loc["autograd_node"] is None or loc["in_backward"]),
                  f"{where}: location keys {list(loc)}")
            check(as_frame(loc) in s["frames"],
                  f"{where}: location is one of the frames")
            check(loc["python"] == any(f["python"] for f in s["frames"]),
                  f"{where}: a Python location when there are Python frames")
        for f in s["frames"]:
            check_frame(f, where)
    all_live = sum(t["live_bytes"] for t in r["kinds"].values())
    check(live_total == all_live, f"{where}: sites add up to the live bytes")
    check(device_at_report == r["live_bytes_at_exit"],
          f"{where}: sites add up to the device bytes at the report point")
    check(device_at_end == r["live_bytes_at_end"],
          f"{where}: sites add up to the device bytes at the end")


def run(args, tmp, *lw_args):
    r = subprocess.run([args.leakwatch, "report", "--format", "json", *lw_args],
                       cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    check(r.returncode == 0, f"{lw_args}: exit status {r.returncode}: {r.stderr!r}")
    return json.loads(r.stdout)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--leakwatch", required=True)
    p.add_argument("--gen", required=True)
    p.add_argument("--libdw", default="1")
    args = p.parse_args()
    args.leakwatch = os.path.abspath(args.leakwatch)
    args.gen = os.path.abspath(args.gen)

    scenarios = ["leak-loop", "kinds", "phases", "truncated", "truncated-ext",
                 "zero-tail", "header-only", "no-leak", "host-only",
                 "many-sites", "escapes", "big-header", "symbols", "python",
                 "python-location", "python-finalize"]
    with tempfile.TemporaryDirectory(prefix="lw-json-") as tmp:
        for s in scenarios:
            subprocess.run([args.gen, s, os.path.join(tmp, s + ".trace")], check=True)
            r = run(args, tmp, s + ".trace")
            check_report(r, s)

        # Each allocation in the context (CONTEXT record) in force.
        r = run(args, tmp, "kinds.trace")
        by = {(c["api"], c["device"], c["stream"]): (c["live_bytes"], c["allocations"])
              for c in r["device_memory_by_context"]}
        check(by == {("cudaMalloc", 0, 0): (3 << 20, 2),
                     ("cudaMallocManaged", 0, 0): (0, 1),
                     ("cudaMallocAsync", 1, 0x5555): (512, 1),
                     ("cudaMallocHost", None, 0): (2 << 20 | 256, 2)},
              f"kinds: device memory by context {by}")

        r = run(args, tmp, "leak-loop.trace")
        check(r["command"] == ["./leaky_loop", "100", "4096"], "leak-loop: command")
        check(r["steps"] == 100 and r["peak"]["step"] == 99, "leak-loop: steps, peak step")
        check(r["live_count_at_exit"] == 100 and r["live_bytes_at_exit"] == 409600,
              "leak-loop: live at exit")
        check(r["sites"][0]["frames"][0] == {
            "function": None, "file": None, "line": None, "python": False,
            "module": None, "address": "0x401136", "module_offset": None,
            "folded": None},
            "leak-loop: raw frame")

        # Python frames in place of the evaluation loop's; the report point
        # is the PROGRAM_END mark.
        r = run(args, tmp, "python.trace")
        check(r["report_point"] == "program_end", "python: report point")
        check((r["live_count_at_exit"], r["live_count_at_end"]) == (5, 1),
              "python: live at program end and at the end")
        site = r["sites"][0]
        check([(f["python"], f["function"] or f["address"]) for f in site["frames"]] == [
            (False, "0x7f0000001000"), (True, "Model.forward"),
            (False, "0x7f0000002000"), (True, "train_step"), (True, "<module>"),
            (False, "0x400500")], f"python: merged frames {site['frames']}")
        check(site["frames"][1]["file"] == "/home/user/train.py" and
              site["frames"][1]["line"] == 33, "python: file and line")
        unmerged = [s for s in r["sites"] if s["id"] == 2][0]["frames"]
        check([f["python"] for f in unmerged] == [True, True, False, False],
              "python: frames that cannot be lined up go innermost")
        check(r["python"] == "3.11.7", "python: version")
        check(r["program_end"] == {"bytes": 3674112, "count": 5}, "python: program_end")
        check([(s["live_count_at_program_end"], s["live_count_at_end"])
               for s in r["sites"]] == [(3, 0), (1, 0), (1, 1)],
              "python: sites live at program end and at the end")

        # The location: user code over packages and the standard library,
        # else the innermost Python frame, else native code outside CUDA.
        r = run(args, tmp, "python-location.trace")
        check(r["program_end"] is None and r["report_point"] == "end",
              "python-location: no mark")
        by_id = {s["id"]: s for s in r["sites"]}
        located = {i: (s["location"] or {}) for i, s in by_id.items()}
        described = {i: (loc.get("python"), loc.get("function"),
                         loc.get("file") or loc.get("module"), loc.get("line"))
                     for i, loc in located.items()}
        check(described == {
            1: (True, "train_step", "/home/user/train.py", 12),
            2: (True, "Thread.run", "/usr/lib/python3.11/threading.py", 975),
            3: (True, "<module>", "<string>", 1),
            4: (False, None, "/home/user/venv/lib/python3.11/site-packages/"
                "torch/lib/libtorch_cuda.so", None),
            5: (False, None, "/opt/lw-test/cuda/lib64/libcudart.so.12", None),
            0: (None, None, None, None),
        }, f"python-location: locations {described}")
        check(by_id[0]["location"] is None, "python-location: no stack, no location")
        check(as_frame(by_id[4]["location"]) == by_id[4]["frames"][2],
              "python-location: the first frame outside CUDA")
        check(as_frame(by_id[5]["location"]) == by_id[5]["frames"][0],
              "python-location: only CUDA: the innermost frame")
        check({i: s["native_thread"] for i, s in by_id.items()} ==
              {1: False, 2: False, 3: False, 4: True, 5: True, 0: False},
              "python-location: native_thread")
        check(all(s["live_bytes_at_program_end"] is None and
                  s["live_count_at_program_end"] is None for s in r["sites"]),
              "python-location: no program-end numbers without a mark")

        # Finalization frees some sites and allocates others.
        r = run(args, tmp, "python-finalize.trace")
        check(r["program_end"] == {"bytes": 11 * 2**20 + 4096, "count": 5},
              "python-finalize: program_end")
        check((r["live_bytes_at_end"], r["live_count_at_end"]) ==
              (4 * 2**20 + 4096, 4), "python-finalize: live at the end")
        check([(s["id"], s["live_count"], s["live_count_at_end"])
               for s in r["sites"]] == [(1, 1, 0), (2, 3, 2), (3, 1, 1), (4, 0, 1)],
              "python-finalize: sites live at program end or at the end, in order")
        check(r["sites"][3]["location"]["function"] == "Pool.__del__",
              "python-finalize: a package's frame when no user code")

        # Not a Python program: no Python fields.
        r = run(args, tmp, "leak-loop.trace")
        check(r["python"] is None and r["program_end"] is None,
              "leak-loop: python, program_end")
        check(not any(s["native_thread"] for s in r["sites"]),
              "leak-loop: native_thread is for Python programs")
        check(all(as_frame(s["location"]) == s["frames"][0] for s in r["sites"]),
              "leak-loop: no modules: the innermost frame")

        r = run(args, tmp, "truncated.trace")
        check(r["truncated"] is True, "truncated: flag")

        r = run(args, tmp, "escapes.trace")
        check(r["command"][3] == "\x1b[31mred\x1b[0m", "escapes: control characters")
        check(r["command"][5] == "bad\ufffd\ufffd utf8", "escapes: invalid UTF-8")
        check(r["command"][6] == "\u00fcn\u00efc\u00f6de", "escapes: valid UTF-8")
        check(r["command"][8] == 'quote"back\\slash', "escapes: quote, backslash")

        # Several traces: one wrapper object, reports in order.
        r = run(args, tmp, "leak-loop.trace", "kinds.trace")
        check(list(r) == ["leakwatch_report", "reports", "schema_version"] and
              r["leakwatch_report"] == 1 and r["schema_version"] == 1,
              "wrapper keys")
        check([x["trace"] for x in r["reports"]] == ["leak-loop.trace", "kinds.trace"],
              "wrapper order")
        for x in r["reports"]:
            check_report(x, "wrapped " + x["trace"])

        # -o FILE writes the same document.
        out = os.path.join(tmp, "out.json")
        subprocess.run([args.leakwatch, "report", "--format", "json", "-o", out,
                        "kinds.trace"], cwd=tmp, check=True)
        with open(out) as f:
            check(json.load(f) == run(args, tmp, "kinds.trace"), "-o FILE")

        # Real return addresses, symbolized with libdw.
        r = run(args, tmp, "symbols.trace")
        frames = r["sites"][0]["frames"]
        exe = os.path.realpath(args.gen)
        check(all(f["module"] == exe for f in frames), "symbols: module")
        check(all(int(f["module_offset"], 16) < int(f["address"], 16) for f in frames),
              "symbols: module offsets")
        if args.libdw == "1":
            names = [f["function"] for f in frames]
            check(names == ["lw_gen_leaky_function", "lw_gen_inlined",
                            "lw_gen_outer_function",
                            "leakwatch::test::function(int)"],
                  f"symbols: functions {names}")
            check(all(f["file"] and f["file"].startswith("/") and
                      f["file"].endswith("/gen-trace.c") for f in frames),
                  "symbols: absolute source files")
            check(all(is_uint(f["line"]) and f["line"] > 0 for f in frames),
                  "symbols: lines")
            check(frames[1]["address"] == frames[2]["address"],
                  "symbols: an inlined call shares its address")
            check(as_frame(r["sites"][0]["location"]) == frames[0],
                  "symbols: located at the innermost function")
            check(r["notes"] == [], "symbols: no notes")

    if failures:
        print(f"{len(failures)} failures")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
