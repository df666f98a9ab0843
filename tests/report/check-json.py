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

REPORT_KEYS = [
    "leakwatch_report", "trace", "pid", "command", "exe", "truncated",
    "events", "allocations", "frees", "steps", "live_bytes_at_exit",
    "live_count_at_exit", "peak", "kinds", "unknown_frees", "warnings",
    "sites",
    # Added after the fields of the first version.
    "dropped_events", "reused_live_addresses", "phases", "info", "notes",
    "report_point", "live_bytes_at_end", "live_count_at_end",
]
KIND_KEYS = ["device", "managed", "pinned_host", "host_registered"]
TOTAL_KEYS = ["live_bytes", "live_count", "allocations", "bytes_allocated"]
SITE_KEYS = ["id", "kind", "live_bytes", "live_count", "allocations",
             "bytes_allocated", "frames"]
FRAME_KEYS = ["function", "file", "line", "python", "module", "address",
              "module_offset"]

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def is_uint(v):
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def check_report(r, where):
    check(list(r) == REPORT_KEYS, f"{where}: keys {list(r)}")
    check(r["leakwatch_report"] == 1, f"{where}: version")
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
    check(isinstance(r["warnings"], list) and
          all(isinstance(w, str) for w in r["warnings"]), f"{where}: warnings")
    check(isinstance(r["notes"], list), f"{where}: notes")
    check(r["report_point"] in ("end", "program_end"), f"{where}: report_point")
    if r["report_point"] == "end":
        check(r["live_bytes_at_end"] == r["live_bytes_at_exit"] and
              r["live_count_at_end"] == r["live_count_at_exit"], f"{where}: at end")
    check(isinstance(r["info"], dict), f"{where}: info")
    check(isinstance(r["phases"], list) and
          all(list(p) == ["name", "begins"] for p in r["phases"]), f"{where}: phases")
    previous = None
    live_total = 0
    for s in r["sites"]:
        check(list(s) == SITE_KEYS, f"{where}: site keys {list(s)}")
        check(s["kind"] in KIND_KEYS, f"{where}: site kind")
        check(s["live_count"] > 0, f"{where}: site without live memory")
        check(s["allocations"] >= s["live_count"], f"{where}: site counts")
        key = (s["live_bytes"], s["live_count"])
        check(previous is None or previous >= key, f"{where}: site order")
        previous = key
        live_total += s["live_bytes"]
        for f in s["frames"]:
            check(list(f) == FRAME_KEYS, f"{where}: frame keys {list(f)}")
            check(f["function"] is None or isinstance(f["function"], str), f"{where}: function")
            check(f["file"] is None or isinstance(f["file"], str), f"{where}: file")
            check(f["line"] is None or is_uint(f["line"]), f"{where}: line")
            check(isinstance(f["python"], bool), f"{where}: python")
            if f["python"]:
                check(f["module"] is None and f["address"] is None and
                      f["module_offset"] is None, f"{where}: Python frame")
                continue
            check(f["module"] is None or isinstance(f["module"], str), f"{where}: module")
            check(isinstance(f["address"], str) and f["address"].startswith("0x") and
                  int(f["address"], 16) >= 0, f"{where}: address")
    all_live = sum(t["live_bytes"] for t in r["kinds"].values())
    check(live_total == all_live, f"{where}: sites add up to the live bytes")


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
                 "many-sites", "escapes", "big-header", "symbols", "python"]
    with tempfile.TemporaryDirectory(prefix="lw-json-") as tmp:
        for s in scenarios:
            subprocess.run([args.gen, s, os.path.join(tmp, s + ".trace")], check=True)
            r = run(args, tmp, s + ".trace")
            check_report(r, s)

        r = run(args, tmp, "leak-loop.trace")
        check(r["command"] == ["./leaky_loop", "100", "4096"], "leak-loop: command")
        check(r["steps"] == 100 and r["peak"]["step"] == 99, "leak-loop: steps, peak step")
        check(r["live_count_at_exit"] == 100 and r["live_bytes_at_exit"] == 409600,
              "leak-loop: live at exit")
        check(r["sites"][0]["frames"][0] == {
            "function": None, "file": None, "line": None, "python": False,
            "module": None, "address": "0x401136", "module_offset": None},
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

        r = run(args, tmp, "truncated.trace")
        check(r["truncated"] is True, "truncated: flag")

        r = run(args, tmp, "escapes.trace")
        check(r["command"][3] == "\x1b[31mred\x1b[0m", "escapes: control characters")
        check(r["command"][5] == "bad\ufffd\ufffd utf8", "escapes: invalid UTF-8")
        check(r["command"][6] == "\u00fcn\u00efc\u00f6de", "escapes: valid UTF-8")
        check(r["command"][8] == 'quote"back\\slash', "escapes: quote, backslash")

        # Several traces: one wrapper object, reports in order.
        r = run(args, tmp, "leak-loop.trace", "kinds.trace")
        check(list(r) == ["leakwatch_report", "reports"] and r["leakwatch_report"] == 1,
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
            check(r["notes"] == [], "symbols: no notes")

    if failures:
        print(f"{len(failures)} failures")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
