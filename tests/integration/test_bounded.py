#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Bounded traces (LEAKWATCH_TRACE_DETAIL, the default) on real programs
under the shim: the same reports as traces in full, a trace that grows by
what the steps keep, a running job's trace read after SIGUSR2, a forked
child's, a program that allocates on hundreds of streams, and the setting
itself.

    test_bounded.py SCENARIO
"""
import json
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lwtest import (CLI, LIB, SKIP, Failure, Run, check, check_eq, prog,
                    report)

# What differs between two runs of the same program, whatever the mode.
RUN_KEYS = {"trace", "pid", "address", "stream", "info", "command", "exe",
            "held_by"}


def comparable(doc):
    """A JSON report without what every run has of its own."""
    if isinstance(doc, dict):
        return {k: comparable(v) for k, v in doc.items()
                if k not in RUN_KEYS}
    if isinstance(doc, list):
        return [comparable(v) for v in doc]
    return doc


def first_difference(a, b, path="report"):
    if type(a) is not type(b):
        return f"{path}: {a!r} against {b!r}"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}.{k}: in one report only"
            d = first_difference(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} items against {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    return None if a == b else f"{path}: {a!r} in full, {b!r} bounded"


def text_report(trace):
    """The text report, less the lines that name the file or the pid."""
    text = report(trace, fmt="text")
    return [line for line in text.splitlines()
            if trace not in line and not line.lstrip().startswith(
                ("process ", "leakwatch: leak report"))
            and not re.search(r"0x[0-9a-f]{6,}", line)]


def both(argv, env=None):
    """Runs argv in full and bounded: the two Runs."""
    full = Run(argv, env=dict(env or {}, LEAKWATCH_TRACE_DETAIL="full"))
    bounded = Run(argv, env=dict(env or {}, LEAKWATCH_TRACE_DETAIL=None))
    return full.expect_ok(), bounded.expect_ok()


def same_reports(full_trace, bounded_trace, what):
    f, b = report(full_trace), report(bounded_trace)
    check_eq(f["info"].get("trace_detail"), "full", f"{what}: full trace")
    check_eq(b["info"].get("trace_detail"), "bounded",
             f"{what}: bounded by default")
    d = first_difference(comparable(f), comparable(b))
    check(d is None, f"{what}: the reports differ: {d}")
    check_eq(text_report(bounded_trace), text_report(full_trace),
             f"{what}: text reports")
    return f, b


def same_as_full():
    """Programs that mark steps give the same report, JSON and text, from
    either trace; the bounded one is the smaller (by the factor given)
    where steps make and free memory."""
    programs = [
        ([prog("step_churn"), "40", "300"], 10),
        ([prog("leaky_loop"), "60", "4096"], 1.2),
        ([prog("keep_then_free")], 0),
        ([prog("torch_steps")], 0),
        ([prog("unchecked_loop")], 0),
        ([prog("clean_loop")], 0),
    ]
    for argv, smaller in programs:
        name = os.path.basename(argv[0])
        full, bounded = both(argv)
        same_reports(full.trace(), bounded.trace(), name)
        sizes = os.path.getsize(full.trace()), os.path.getsize(bounded.trace())
        check(not smaller or sizes[1] * smaller < sizes[0],
              f"{name}: bounded {sizes[1]} bytes, full {sizes[0]}")


def many_streams():
    """Allocations on 300 streams, each a context (API, device, stream) of
    its own: the trace stays bounded, with no warning, and reads as in
    full. Past LW_BOUNDED_CONTEXTS_MAX (65536) contexts it goes on in full,
    and the warning says so, not that memory ran out."""
    argv = [prog("step_churn"), "320", "300", "0", "300"]
    full, bounded = both(argv)
    check("warning" not in bounded.stderr,
          f"300 streams: a warning: {bounded.stderr}")
    same_reports(full.trace(), bounded.trace(), "300 streams")
    sizes = os.path.getsize(full.trace()), os.path.getsize(bounded.trace())
    check(sizes[1] * 5 < sizes[0],
          f"300 streams: bounded {sizes[1]} bytes, full {sizes[0]}")
    many = Run([prog("step_churn"), "66000", "1", "0", "66000"]).expect_ok()
    check("allocations on more than 65536 (API, device, stream) contexts"
          in many.stderr and "exhausted" not in many.stderr,
          f"66000 streams: {many.stderr}")
    rep = report(many.trace())
    check_eq(rep["steps"], 66000, "66000 streams: steps")
    check_eq(rep["live_count_at_exit"], 66000, "66000 streams: the leaks")


def per_step(steps_a, steps_b, temporaries, detail):
    """Trace bytes per step of step_churn, between two run lengths."""
    env = {"LEAKWATCH_TRACE_DETAIL": detail}
    a = Run([prog("step_churn"), str(steps_a), str(temporaries)],
            env=env).expect_ok()
    b = Run([prog("step_churn"), str(steps_b), str(temporaries)],
            env=env).expect_ok()
    return ((os.path.getsize(b.trace()) - os.path.getsize(a.trace())) /
            (steps_b - steps_a))


def bytes_per_step():
    """A step that makes 1000 or 4000 temporaries adds at most 1 KiB to a
    bounded trace, and the same whatever their number."""
    few = per_step(50, 150, 1000, "bounded")
    many = per_step(50, 150, 4000, "bounded")
    full = per_step(50, 150, 1000, "full")
    print(f"bytes per step: bounded {few:.1f} (1000 temporaries), "
          f"{many:.1f} (4000); full {full:.1f} (1000)")
    check(few <= 1024 and many <= 1024,
          f"bounded: {few:.1f} and {many:.1f} bytes per step")
    check(abs(many - few) <= 16, "the same for 4000 temporaries as for 1000")
    check(full > 50 * few, f"full {full:.1f} bytes per step")


def wait_for(pred, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    return False


def signal_mid_step():
    """SIGUSR2 to a running job: its bounded trace reads, whole up to that
    moment (every leaked buffer of the steps before it)."""
    probe = Run([prog("no_cuda")])
    d = probe.dir
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("LEAKWATCH_")}
    env.update(LD_PRELOAD=LIB, LEAKWATCH_OUT=os.path.join(d, "t-%p.trace"),
               LEAKWATCH_SIGNAL="1")
    err = open(os.path.join(d, "stderr"), "w+")
    p = subprocess.Popen([prog("step_churn"), "100000000", "500"], env=env,
                         cwd=d, stdout=subprocess.DEVNULL, stderr=err)
    trace = os.path.join(d, f"t-{p.pid}.trace")
    try:
        check(wait_for(lambda: os.path.exists(trace) and
                       os.path.getsize(trace) > 20000), "the job started")
        p.send_signal(signal.SIGUSR2)
        check(wait_for(lambda: "SIGUSR2: step" in open(err.name).read()),
              "a line after SIGUSR2")
        check(p.poll() is None, "SIGUSR2 did not end the job")
        rep = report(trace)
        check(rep["truncated"] and rep["steps"] > 0,
              f"the live trace reads: {rep['steps']} steps")
        leaks = [s for s in rep["sites"]
                 if s["frames"] and s["frames"][0].get("function") ==
                 "leak_one"]
        check(leaks and leaks[0]["live_count"] >= rep["steps"],
              f"every step's leak in the trace: {rep['steps']} steps, "
              f"{leaks and leaks[0]['live_count']} buffers")
        check_eq(rep["info"].get("trace_detail"), "bounded", "bounded")
    finally:
        p.kill()
        p.wait()
        err.close()


SIGNAL_MID_STEP = r"""
import ctypes, os, signal, sys, time
ext = ctypes.CDLL(sys.argv[1])
ext.testext_alloc.argtypes = [ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p)]
ext.testext_free.argtypes = [ctypes.c_void_p]
step = ctypes.CDLL(None).leakwatch_step

def alloc(size):
    p = ctypes.c_void_p()
    assert ext.testext_alloc(size, ctypes.byref(p)) == 0
    return p

kept = []
for i in range(3):
    kept.append(alloc(100))
    ext.testext_free(alloc(50))
    step()
kept.append(alloc(4321))              # in the step that runs now
os.kill(os.getpid(), signal.SIGUSR2)  # answered at the next event
time.sleep(0.1)
ext.testext_free(alloc(8))
os.kill(os.getpid(), signal.SIGKILL)
"""


def signal_whole():
    """The flush on SIGUSR2 writes what the running step made so far: a
    process killed right after it leaves a trace with that step's
    allocation, although no step ended after it."""
    run = Run([sys.executable, "-c", SIGNAL_MID_STEP,
               os.environ["LW_TESTEXT"]], env={"LEAKWATCH_SIGNAL": "1"})
    check_eq(run.returncode, -signal.SIGKILL, f"killed: {run.stderr}")
    rep = report(run.trace())
    check(rep["truncated"], "truncated")
    check_eq(rep["steps"], 3, "steps")
    check_eq(rep["info"].get("trace_detail"), "bounded", "bounded")
    check(any(s["live_bytes"] == 4321 for s in rep["sites"]),
          f"the running step's allocation: "
          f"{[s['live_bytes'] for s in rep['sites']]}")
    check_eq(rep["allocations"], 3 * 2 + 1 + 1, "allocations")


def forked_child():
    """A process that forks in the middle of a step: the parent's trace
    and the child's read as in full."""
    full, bounded = both([prog("step_churn"), "30", "200", "12"])
    fp = dict(line.split() for line in full.stdout.splitlines())
    bp = dict(line.split() for line in bounded.stdout.splitlines())
    for who in ("parent", "child"):
        _, b = same_reports(full.trace(fp[who]), bounded.trace(bp[who]), who)
        check_eq(b["pid"], int(bp[who]), f"{who}: its own trace")
    child = report(bounded.trace(bp["child"]))
    check_eq(child["steps"], 30 - 12, "the child's steps")


def setting():
    """`leakwatch run --trace-detail` and LEAKWATCH_TRACE_DETAIL: full,
    bounded, and a bad value (refused by run; warned of, and bounded, by
    the shim)."""
    for option, expected in ((["--trace-detail", "full"], "full"),
                             (["--trace-detail", "bounded"], "bounded"),
                             ([], "bounded")):
        run = Run([CLI, "run", "--format", "json", "-o", "r.json"] + option +
                  ["--", prog("leaky_loop"), "20", "64"],
                  env={"LEAKWATCH_TRACE_DETAIL": None})
        run.expect_ok()
        with open(os.path.join(run.dir, "r.json")) as f:
            doc = json.load(f)
        check_eq(doc["info"].get("trace_detail"), expected,
                 f"run {' '.join(option) or '(default)'}")
    run = Run([CLI, "run", "--trace-detail", "some", "--",
               prog("leaky_loop"), "2"], preload=False)
    check_eq(run.returncode, 2, "a bad --trace-detail")
    check_eq(run.stderr.strip().count("\n"), 0, "one line")
    check("--trace-detail: 'some' is neither bounded nor full" in run.stderr,
          run.stderr)
    run = Run([prog("leaky_loop"), "20", "64"],
              env={"LEAKWATCH_TRACE_DETAIL": "some"}).expect_ok()
    check("LEAKWATCH_TRACE_DETAIL='some' is neither bounded nor full; "
          "using bounded" in run.stderr, run.stderr)
    check_eq(report(run.trace())["info"].get("trace_detail"), "bounded",
             "a bad value: the default")


SCENARIOS = {f.__name__: f for f in (same_as_full, bytes_per_step,
                                     signal_mid_step, signal_whole,
                                     forked_child, setting,
                                     many_streams)}


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in SCENARIOS:
        print(f"usage: test_bounded.py {{{','.join(SCENARIOS)}}}",
              file=sys.stderr)
        return 2
    if not LIB or not CLI:
        print("LW_LIB and LW_CLI are not set: skipped")
        return SKIP
    try:
        SCENARIOS[sys.argv[1]]()
    except Failure as e:
        print(f"FAIL {sys.argv[1]}: {e}", file=sys.stderr)
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
