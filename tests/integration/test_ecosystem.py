# SPDX-License-Identifier: MIT
"""Integration tests of how leakwatch fits into the jobs around it: ranks of
a multi-process launch, data-loader workers, the live view of a long job
(LEAKWATCH_LIVE_EVERY, SIGUSR2), on the stand-in runtime under
LD_PRELOAD=libleakwatch.so."""
import glob
import json
import os
import re
import signal
import subprocess
import sys
import time

from lwtest import (CLI, LIB, Run, check, check_eq, main, prog, report,
                    scratch_dir)


def rank_names():
    """torchrun sets RANK and LOCAL_RANK: the default trace name carries
    the rank, %r expands to it, and the trace records it."""
    run = Run([prog("leaky_loop"), "12", "100"],
              env={"LEAKWATCH_OUT": "", "RANK": "3", "LOCAL_RANK": "1"})
    run.expect_ok()
    pid_traces = glob.glob(os.path.join(run.dir, "leakwatch-rank3-*.trace"))
    check_eq(len(pid_traces), 1,
             f"default name with the rank; found {os.listdir(run.dir)}")
    rep = report(pid_traces[0])
    check_eq(rep["info"].get("rank"), "3", "INFO rank")
    # LOCAL_RANK when there is no RANK; %r in LEAKWATCH_OUT.
    run = Run([prog("leaky_loop"), "12", "100"],
              env={"LOCAL_RANK": "1"}, pattern="job-%r.trace").expect_ok()
    check(os.path.exists(os.path.join(run.dir, "job-1.trace")),
          f"%r is LOCAL_RANK: {os.listdir(run.dir)}")
    # No rank: %r expands to nothing, the default name has no rank.
    run = Run([prog("leaky_loop"), "12", "100"],
              env={"LEAKWATCH_OUT": ""}).expect_ok()
    names = [n for n in os.listdir(run.dir) if n.endswith(".trace")]
    check(len(names) == 1 and re.fullmatch(r"leakwatch-\d+\.trace", names[0]),
          f"no rank in the name without one: {names}")
    # A value that is not a number is no rank.
    run = Run([prog("leaky_loop"), "12", "100"],
              env={"RANK": "../x"}, pattern="r%r.trace").expect_ok()
    check(os.path.exists(os.path.join(run.dir, "r.trace")),
          f"RANK=../x must not reach the file name: {os.listdir(run.dir)}")


def two_ranks():
    """Two ranks of one job, one leaking twice as fast: `report` and
    `check` give a merged view in rank order."""
    traces = []
    for rank, nbytes in (("1", "2000"), ("0", "1000")):
        run = Run([prog("leaky_loop"), "30", nbytes],
                  env={"RANK": rank}, pattern="t-%r.trace").expect_ok()
        traces.append(os.path.join(run.dir, f"t-{rank}.trace"))
    p = subprocess.run([CLI, "report", *traces], capture_output=True,
                       text=True, timeout=120)
    check_eq(p.returncode, 0, f"report: {p.stderr}")
    view = p.stdout[p.stdout.find("Merged view of 2 traces:"):]
    lines = view.split("\n")
    check(len(lines) > 3 and lines[1].startswith("  rank 0:") and
          lines[2].startswith("  rank 1:"), f"rank order: {view}")
    check("rank 0 +1000 B/step, rank 1 +2.0 KiB/step" in view,
          f"common growing site with per-rank rates: {view}")
    check("leak_one_buffer" in view, view)
    p = subprocess.run([CLI, "check", "--max-growth", "1500", *traces],
                       capture_output=True, text=True, timeout=120)
    check_eq(p.returncode, 1, f"rank 1 is over: {p.stdout}")
    check("Merged view of 2 traces" in p.stdout, p.stdout)


WORKERS = r"""
import ctypes, multiprocessing, os, sys
ext = ctypes.CDLL(sys.argv[1])
ext.testext_alloc.argtypes = [ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p)]
kept = ctypes.c_void_p()
assert ext.testext_alloc(4096, ctypes.byref(kept)) == 0

def load(i):              # a data-loader worker: CPU work only
    return sum(range(i * 1000))

if __name__ == "__main__":
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(3) as pool:
        print(sum(pool.map(load, range(30))))
"""


def dataloader_workers():
    """Forked workers that never allocate GPU memory write no trace and
    print nothing; the parent's trace and summary are unchanged."""
    run = Run([sys.executable, "-c", WORKERS, os.environ["LW_TESTEXT"]])
    run.expect_ok()
    check_eq(len(run.traces()), 1, f"one trace: {run.traces()}")
    summaries = [line for line in run.stderr.splitlines()
                 if "of device memory live" in line]
    check_eq(len(summaries), 1, f"one summary: {run.stderr}")
    check_eq(report(run.trace())["live_bytes_at_exit"], 4096, "live bytes")


def live_every():
    """LEAKWATCH_LIVE_EVERY=10: one line every 10 steps, with the growth
    over the last 10 and per step since the first."""
    run = Run([prog("leaky_loop"), "50", "4096"],
              env={"LEAKWATCH_LIVE_EVERY": "10"}).expect_ok()
    lines = [line for line in run.stderr.splitlines()
             if re.match(r"leakwatch: step \d+:", line)]
    check_eq([int(re.match(r"leakwatch: step (\d+)", line).group(1))
              for line in lines], [10, 20, 30, 40, 50], "steps of the lines")
    check("+40.0 KiB over the last 10 steps, +4.0 KiB per step since step 1"
          in lines[-1], f"growth in the line: {lines[-1]}")
    run = Run([prog("leaky_loop"), "50", "4096"]).expect_ok()
    check(not re.search(r"leakwatch: step \d+:", run.stderr),
          "no lines without the variable")
    run = Run([prog("leaky_loop"), "5", "4096"],
              env={"LEAKWATCH_LIVE_EVERY": "many"}).expect_ok()
    check("LEAKWATCH_LIVE_EVERY='many'" in run.stderr, run.stderr)


SNAPSHOT = r"""
import json, sys
import leakwatch
import tinytensor as tt


def serve(requests):
    answered = []
    for i in range(requests):
        answered.append(tt.full(256, float(i)))   # 1 KiB kept per request
        leakwatch.step()
    return answered, leakwatch.snapshot()


answered, snap = serve(int(sys.argv[1]))
print("repr:", repr(snap))
print("fields:", json.dumps(None if snap is None else snap._asdict()))
"""


def snapshot_returns():
    """leakwatch.snapshot() in a notebook-like session: it returns what the
    trace holds (its path, the steps, the device memory live, what grows),
    with a repr that says so, and prints the live view's line on stderr;
    the trace it names is flushed and readable now. Without the shim it
    returns None and prints nothing."""
    env = {"PYTHONPATH": os.pathsep.join(
        [os.environ["LW_PYTHON_DIR"],
         os.path.dirname(os.environ["LW_TINYTENSOR_PY"])])}
    run = Run([sys.executable, "-c", SNAPSHOT, "20"], env=env).expect_ok()
    fields = json.loads(run.stdout.split("fields: ", 1)[1])
    trace = run.trace()
    check_eq(fields, {"trace": trace, "steps": 20, "live_bytes": 20 * 1024,
                      "live_allocations": 20, "growing_sites": 1,
                      "fastest_growth": 1024.0}, "snapshot()'s fields")
    check(f"repr: <leakwatch snapshot: step 20: 20.0 KiB live in 20 "
          f"allocations; growing at 1 site (+1.0 KiB per step at the "
          f"fastest); trace {trace}>" in run.stdout, run.stdout)
    line = [x for x in run.stderr.splitlines()
            if x.startswith("leakwatch: snapshot: ")]
    check(len(line) == 1 and line[0].startswith(
        "leakwatch: snapshot: step 20: 20.0 KiB of device memory live in "
        "20 allocations;") and "growing at 1 site" in line[0] and
        line[0].endswith(f"; trace flushed: {trace}"),
        f"the live view's line: {run.stderr}")
    run = Run([sys.executable, "-c", SNAPSHOT, "20"], env=env,
              preload=False).expect_ok()
    check("fields: null" in run.stdout and "repr: None" in run.stdout and
          "leakwatch:" not in run.stderr, f"without the shim: {run.stdout}"
          f"{run.stderr}")


CELL_PROGRAM = r"""
import linecache, sys
import leakwatch
import tinytensor as tt

CELL = '''\
def train(steps):
    kept = []
    for i in range(steps):
        kept.append(tt.full(256, 1.0))  # kept per step
        leakwatch.step()
    return kept
'''
name, seed = sys.argv[1], sys.argv[2] == "seed"
if seed:
    # As IPython does: the cell's text in linecache, compiled under its name.
    linecache.cache[name] = (len(CELL), None, CELL.splitlines(True), name)
exec(compile(CELL, name, "exec"), globals())
kept = train(30)
"""


def notebook_cells():
    """Code of notebook cells (IPython's <ipython-input-N-HASH>, ipykernel's
    /tmp/ipykernel_PID/HASH.py) is named by its cell, in the report, its
    holders and the exit summary, with the line's text, which the shim
    copies from linecache (the interpreter's copy, read from C) into the
    trace; a cell whose text the interpreter does not keep, and code
    compiled from a string, are named without text."""
    env = {"PYTHONPATH": os.pathsep.join(
        [os.environ["LW_PYTHON_DIR"],
         os.path.dirname(os.environ["LW_TINYTENSOR_PY"])])}
    text = "`kept.append(tt.full(256, 1.0))  # kept per step`"
    for name, cell, seed, shown in (
            ("<ipython-input-5-0a1b2c3d>", "cell 5", "seed", True),
            ("/tmp/ipykernel_4121/2583146019.py", "cell", "seed", True),
            ("<ipython-input-7-99ff>", "cell 7", "no", False),
            ("<string>", "<string>", "seed", False)):
        run = Run([sys.executable, "-c", CELL_PROGRAM, name, seed],
                  env=env).expect_ok()
        check(f"per step at train ({cell}:4)," in run.stderr,
              f"{name}: the exit summary names {cell}: {run.stderr}")
        out = report(run.trace(), fmt="text")
        at = [line.strip() for line in out.splitlines()
              if line.strip().startswith("at train  ")]
        want = f"at train  {cell}:4" + (f"  {text}" if shown else "")
        check(at and at[0] == want, f"{name}: {want!r} in\\n{out}")
        if cell.startswith("cell"):
            check(f"(local of train (defined at {cell}:1); " in out or
                  "(global of __main__; " in out, f"{name}: holder: {out}")
            # (but for the command line, which holds it here)
            check(not [line for line in out.splitlines() if name in line
                       and not line.strip().startswith("process ")],
                  f"{name}: the file name is not shown: {out}")


def wait_for(path, pred, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if os.path.exists(path) and pred():
            return True
        time.sleep(0.05)
    return False


def signal_flush():
    """SIGUSR2 to a running job that asked for it (LEAKWATCH_SIGNAL=1): a
    line on stderr naming the trace, and `leakwatch report` of the live
    trace."""
    probe = Run([prog("no_cuda")])
    d = probe.dir
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("LEAKWATCH_")}
    env.update(LD_PRELOAD=LIB, LEAKWATCH_OUT=os.path.join(d, "t-%p.trace"),
               LEAKWATCH_SIGNAL="1")
    err = open(os.path.join(d, "stderr"), "w+")
    p = subprocess.Popen([prog("leaky_loop"), "100000000", "64"], env=env,
                         cwd=d, stdout=subprocess.DEVNULL, stderr=err)
    trace = os.path.join(d, f"t-{p.pid}.trace")
    try:
        check(wait_for(trace, lambda: os.path.getsize(trace) > 10000),
              "the job started")
        p.send_signal(signal.SIGUSR2)
        check(wait_for(trace, lambda: "SIGUSR2: step" in
                       open(err.name).read()), "a line after SIGUSR2")
        check(p.poll() is None, "SIGUSR2 did not end the job")
        text = open(err.name).read()
        check(trace in text, f"the line names the trace: {text}")
        # Whenever in a step the signal lands, the growth is that of step
        # ends: the one 64-byte buffer a step keeps, not the step's
        # temporaries live at that moment.
        check(re.search(r"at the end of step \d+; .*\+64 B per step since "
                        r"step 1", text), f"growth on step ends: {text}")
        rep = report(trace)
        check(rep["steps"] > 0 and rep["truncated"],
              f"the live trace reads: {rep['steps']} steps")
    finally:
        p.kill()
        p.wait()
        err.close()


OWN_HANDLER = r"""
import ctypes, os, signal, sys, time
seen = []
signal.signal(signal.SIGUSR2, lambda s, f: seen.append(s))
ext = ctypes.CDLL(sys.argv[1])
ext.testext_alloc.argtypes = [ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p)]
p = ctypes.c_void_p()
assert ext.testext_alloc(100, ctypes.byref(p)) == 0   # the trace opens
os.kill(os.getpid(), signal.SIGUSR2)
time.sleep(0.1)
assert ext.testext_alloc(100, ctypes.byref(p)) == 0
print("handled", len(seen))
"""


def signal_respected():
    """A program that handles SIGUSR2 itself keeps its handler, even with
    LEAKWATCH_SIGNAL=1; with LEAKWATCH_SIGNAL=0 the shim leaves the signal
    alone."""
    run = Run([sys.executable, "-c", OWN_HANDLER,
               os.environ["LW_TESTEXT"]],
              env={"LEAKWATCH_SIGNAL": "1"}).expect_ok()
    check_eq(run.stdout.strip(), "handled 1", "the program's handler ran")
    check("SIGUSR2: step" not in run.stderr, run.stderr)
    probe = Run([prog("no_cuda")])
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("LEAKWATCH_")}
    env.update(LD_PRELOAD=LIB, LEAKWATCH_SIGNAL="0",
               LEAKWATCH_OUT=os.path.join(probe.dir, "t-%p.trace"))
    p = subprocess.Popen([prog("leaky_loop"), "100000000", "64"], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    trace = os.path.join(probe.dir, f"t-{p.pid}.trace")
    try:
        check(wait_for(trace, lambda: os.path.getsize(trace) > 1000),
              "the job started")
        p.send_signal(signal.SIGUSR2)
        p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    check_eq(p.returncode, -signal.SIGUSR2,
             "LEAKWATCH_SIGNAL=0: SIGUSR2 keeps its default action")


HOLDERS = r"""
import os, signal, sys, time
import leakwatch
import tinytensor as tt

mode = sys.argv[1]


class Trainer:
    def __init__(self):
        self.history = []


def train(trainer, steps):
    for i in range(steps):
        x = tt.ones(16)
        loss = (x * x).sum()
        trainer.history.append(loss)
        leakwatch.step()
        if mode == "snapshot" and i == steps - 6:
            leakwatch.snapshot()


trainer = Trainer()
train(trainer, 30)
if mode == "signal":
    os.kill(os.getpid(), signal.SIGUSR2)
    # The shim takes the signal at the job's next allocation or step.
    for _ in range(50):
        y = tt.ones(1)
        time.sleep(0.01)
if mode in ("snapshot", "signal"):
    os._exit(0)     # no program end: what was found came from the request
"""


def holders():
    """Who holds it, on a library that exposes only
    __cuda_array_interface__: at the program's end, on
    leakwatch.snapshot() and on SIGUSR2 (asked for with LEAKWATCH_SIGNAL=1)
    the leak's finding is held by the trainer's list; LEAKWATCH_HOLDERS=0
    searches nothing."""
    env = {"PYTHONPATH": os.pathsep.join(
        [os.environ["LW_PYTHON_DIR"],
         os.path.dirname(os.environ["LW_TINYTENSOR_PY"])]),
           "LEAKWATCH_SIGNAL": "1"}
    want = {"end": ("trainer.history[29]", "global of __main__", 29),
            "signal": ("trainer.history[29]", "global of __main__", 29),
            # The newest loss is reached first through the local `loss`.
            "snapshot": ("trainer.history[23]", "local of train (defined at ",
                         23)}
    for mode, (path, root, objects) in want.items():
        run = Run([sys.executable, "-c", HOLDERS, mode], env=env).expect_ok()
        rep = report(run.traces()[-1])
        leaks = [f for f in rep["findings"] if f["leak"]]
        check(len(leaks) == 1, f"{mode}: one leak: {rep['findings']}")
        held = leaks[0]["held_by"]
        check(held, f"{mode}: a holder\n{run.stderr}")
        first = held[0]
        check_eq(first["path"], path, f"{mode}: the holder's path")
        check(first["root"].startswith(root), f"{mode}: root {first['root']}")
        check_eq(first["objects"], objects, f"{mode}: objects held")
        check(not first["cut"] and first["graph_nodes"] == 0,
              f"{mode}: {first}")
        check("drain `trainer.history`" in first["fix"], first["fix"])
        text = report(run.traces()[-1], fmt="text")
        check(f"held by: {path} (" in text, f"{mode}: text report\n{text}")
        page = report(run.traces()[-1], fmt="html")
        check(f'<div class="lw-held">Held by: <code>{path}</code>' in page
              and "Fix the holder: drain `trainer.history`" in page,
              f"{mode}: the HTML finding shows the holder")
    run = Run([sys.executable, "-c", HOLDERS, "end"],
              env=dict(env, LEAKWATCH_HOLDERS="0")).expect_ok()
    rep = report(run.trace())
    check(all(not f["held_by"] for f in rep["findings"]) and
          any(f["leak"] for f in rep["findings"]),
          f"LEAKWATCH_HOLDERS=0: no holders: {rep['findings']}")
    run = Run([sys.executable, "-c", HOLDERS, "end"],
              env=dict(env, LEAKWATCH_HOLDERS_BUDGET="soon")).expect_ok()
    check("LEAKWATCH_HOLDERS_BUDGET='soon'" in run.stderr, run.stderr)
    rep = report(run.trace())
    check(any(f["held_by"] for f in rep["findings"]),
          "a bad budget falls back to the default")


QUIET = r"""
import gc, os, signal, sys, threading, time, weakref
import leakwatch
import tinytensor as tt

lock = threading.Lock()
ran = []


class Watched:
    # Code of the program the search must never run: a property that
    # takes the program's lock, __getattr__, __eq__.

    def __init__(self, t):
        self.t = t

    @property
    def __cuda_array_interface__(self):
        ran.append("property")
        if lock.acquire(timeout=2):   # blocks while the program holds it
            lock.release()
        return self.t.__cuda_array_interface__

    def __getattr__(self, name):
        ran.append("getattr " + name)
        raise AttributeError(name)

    def __eq__(self, other):
        ran.append("eq")
        return False

    __hash__ = object.__hash__


def train(steps):
    history = []
    for i in range(steps):
        x = tt.ones(16)
        loss = (x * x).sum()
        history.append(Watched(loss))
        leakwatch.step()
    # A tensor the function lets go of: no f_locals dict of this frame
    # may keep it once the search has read the frame.
    scratch = tt.ones(16)
    gone = weakref.ref(scratch)
    with lock:                        # the program holds its lock
        leakwatch.snapshot()
        os.kill(os.getpid(), signal.SIGUSR2)
        for _ in range(20):
            y = tt.ones(1)
            time.sleep(0.01)
    del scratch
    print("freed" if gone() is None else "kept", "ran:", ran)
    return history


kept = train(30)
"""


def holders_run_no_program_code():
    """The holder search runs none of the program's code: a property that
    takes a lock the program holds while it calls leakwatch.snapshot() or
    gets SIGUSR2 neither runs nor deadlocks it, nor __getattr__ or __eq__;
    and the frames it reads keep nothing alive (a local the function lets
    go of is freed at once)."""
    env = {"PYTHONPATH": os.pathsep.join(
        [os.environ["LW_PYTHON_DIR"],
         os.path.dirname(os.environ["LW_TINYTENSOR_PY"])])}
    run = Run([sys.executable, "-c", QUIET],
              env=dict(env, LEAKWATCH_SIGNAL="1"), timeout=60).expect_ok()
    check("freed ran: []" in run.stdout,
          f"program code ran, or a local was kept: {run.stdout}")
    check("holder search failed" not in run.stderr, run.stderr)
    rep = report(run.traces()[-1])
    leaks = [f for f in rep["findings"] if f["leak"]]
    check(leaks and leaks[0]["held_by"] and
          leaks[0]["held_by"][0]["path"].startswith(("history[", "kept[")),
          f"the list still holds the losses: {leaks}")


DEAD_CODE = """\
import os, sys
sys.path.insert(0, os.getcwd())
with open("lwdead.py", "w") as f:
    f.write("import tinytensor as tt\\nKEPT = tt.ones(4)\\n")
import lwdead  # noqa: E402
# The module's body ran once and its code object is gone: new code objects
# take the memory it had.
junk = [compile("x%d = %d\\n" % (i, i), "<junk %d>" % i, "exec")
        for i in range(2000)]
print("ok")
"""


def summary_names_dead_code():
    """The exit summary names a line by what its code was when the
    allocation was made, not by whatever code object took the address of
    one that died since (a module's body, once imported)."""
    env = {"PYTHONPATH": os.pathsep.join(
        [os.environ["LW_PYTHON_DIR"],
         os.path.dirname(os.environ["LW_TINYTENSOR_PY"])])}
    run = Run([sys.executable, "-c", DEAD_CODE], env=env).expect_ok()
    check("16 B in 1 allocation at <module> (lwdead.py:2)" in run.stderr,
          f"the summary names the module's line: {run.stderr}")
    check("<junk" not in run.stderr, f"a dead code object read: {run.stderr}")


def gate_names_growth():
    """The bare gate's exit summary names what grew from step to step,
    also when the program let go of it after its loop (keep_then_free
    frees its kept buffers at the end): the leak, not what is live."""
    run = Run([prog("keep_then_free"), "40", "4096"],
              env={"LEAKWATCH_MAX_GROWTH": "100"})
    check_eq(run.returncode, 23, f"the gate trips: {run.stderr}")
    m = re.search(r"leakwatch: device memory grew from step to step at "
                  r"(\d+) sites?:\nleakwatch:   (\S+ \S+) per step at "
                  r"(\S+).*let go after the last step", run.stderr)
    check(m, f"the summary names the growth: {run.stderr}")
    check_eq(m.group(2), "+4.0 KiB", "its rate")
    check("keep_one_buffer" in m.group(3), f"its site: {m.group(0)}")


def pytest_per_test():
    """A failing test's leakwatch section is the test's own: the sites its
    runs left live, each at its rate per run, and none of another test's
    (test_two_leaks.py: two tests leaking at different lines and rates)."""
    py = pytest_python()
    if not py:
        print("no python with pytest: skipped")
        sys.exit(77)
    tests = os.path.join(os.path.dirname(os.environ["LW_PYTEST_TESTS"]),
                         "test_two_leaks.py")
    lines = {m: next(i for i, line in enumerate(open(tests), 1)
                     if "# @" + m in line) for m in ("four", "eight")}
    env = plugin_env()
    run = Run([py, "-m", "pytest", "-p", "pytest_leakwatch", "-p",
               "no:cacheprovider", "-q", "-rA", tests, "--leakwatch"],
              env=env, preload=False)
    out = run.stdout
    check_eq(run.returncode, 1, f"both tests fail: {out}\n{run.stderr}")
    sections = re.split(r"_{3,} test_leaks_", out)
    by_test = {s.split(" ")[0]: s for s in sections[1:]}
    for test, mine, other, rate in (("4k", "four", "eight", "+4.0 KiB"),
                                    ("8k", "eight", "four", "+8.0 KiB")):
        text = by_test.get(test, "")
        check(f"{rate} per run" in text and
              f"test_two_leaks.py:{lines[mine]}" in text,
              f"test_leaks_{test} names its own line and rate: {text}")
        check(f"test_two_leaks.py:{lines[other]}" not in text,
              f"test_leaks_{test} names the other test's line: {text}")


def plugin_env():
    """pytest with the plugin and tinytensor importable; the plugin
    preloads the shim itself (it starts pytest again)."""
    return {
        "PYTHONPATH": os.pathsep.join([os.environ["LW_PYTHON_DIR"],
                                       os.path.dirname(
                                           os.environ["LW_TINYTENSOR_PY"])]),
        "LEAKWATCH_LIB": LIB,
        "LEAKWATCH_CLI": CLI,
        "LD_PRELOAD": "",
    }


def pytest_python():
    """An interpreter with pytest (Debian's python3-pytest), or None."""
    for py in ("/usr/bin/python3", sys.executable):
        if subprocess.run([py, "-c", "import pytest"],
                          capture_output=True).returncode == 0:
            return os.path.realpath(py)
    return None


def pytest_plugin():
    """pytest --leakwatch: a marked test whose loop keeps a tensor per run
    fails with a leakwatch section naming the line; the others pass; the
    marker does nothing without --leakwatch."""
    py = pytest_python()
    if not py:
        print("no python with pytest: skipped")
        sys.exit(77)
    tests = os.environ["LW_PYTEST_TESTS"]
    kept_line = next(i for i, line in enumerate(open(tests), 1)
                     if "# @kept" in line)
    env = plugin_env()
    base = [py, "-m", "pytest", "-p", "pytest_leakwatch", "-p",
            "no:cacheprovider", "-q", "-rA", tests]
    # The plugin preloads the shim itself (it starts pytest again).
    run = Run(base + ["--leakwatch"], env=env, preload=False)
    out = run.stdout
    check_eq(run.returncode, 1, f"one test fails: {out}\n{run.stderr}")
    check("FAILED" in out and "test_keeps_a_tensor_per_run" in out, out)
    for name in ("test_frees_everything", "test_cache_made_once",
                 "test_cache_fills_then_stops", "test_fixture_set_up_once",
                 "test_unmarked"):
        check(re.search(rf"^PASSED \S*::{name}$", out, re.M),
              f"{name} passes: {out}")
    check(re.search(r"leakwatch: GPU memory grows by \+4\.0 KiB per run "
                    r"over 30 runs", out), f"the failure says how fast: {out}")
    check("Captured leakwatch call" in out, f"the report section: {out}")
    check(f"test_gpu_loops.py:{kept_line}" in out,
          f"the section names the line that keeps memory ({kept_line}): {out}")
    check("leakwatch: trace " in out, "the summary names the trace")
    # The site's holder and fix, and the test's own frames with pytest's
    # folded into one line (no pluggy, _pytest or plugin frames).
    section = out.split("Captured leakwatch call", 1)[-1].split(
        "short test summary", 1)[0]
    check(re.search(r"^\s+held by: KEPT\[\d+\] \(global of "
                    r"test_gpu_loops; \d+ objects\)$", section, re.M),
          f"the holder: {section}")
    check(re.search(r"^\s+fix: drain `KEPT`", section, re.M),
          f"the fix against the holder: {section}")
    check(re.search(rf"^\s+test_keeps_a_tensor_per_run  \S*test_gpu_loops"
                    rf"\.py:{kept_line}\n\s+… \d+ pytest frames$",
                    section, re.M), f"the test's frame, then pytest's "
          f"folded: {section}")
    check(not re.search(r"pluggy|_pytest/|_multicall|pytest_pyfunc_call",
                        section), f"no pytest frame listed: {section}")
    check_eq(len(run.traces()), 1, "pytest's trace")
    # One verdict per site: the session's report judges each test's steps
    # as the plugin did: the kept tensor grows, +4.0 KiB per
    # step, a leak; the cache that filled and stopped is a plateau.
    filled_line = next(i for i, line in enumerate(open(tests), 1)
                       if "# @filled" in line)
    rep = report(run.traces()[0])

    def at_line(line):
        return [s for s in rep["sites"] if any(
            f.get("line") == line and (f.get("file") or "").endswith(
                "test_gpu_loops.py") for f in s["frames"])]
    kept = at_line(kept_line)
    check(kept and kept[0]["verdict"] == "growing" and
          abs(kept[0]["growth_bytes_per_step"] - 4096) < 1,
          "the kept tensor's site: "
          f"{[(s['verdict'], s['growth_bytes_per_step']) for s in kept]}")
    leaks = [f for f in rep["findings"] if f["leak"] and
             f["site"] in [s["id"] for s in kept]]
    check(leaks, "the kept tensor is a leak: "
          f"{[(f['category'], f['site']) for f in rep['findings']]}")
    filled = at_line(filled_line)
    check(filled and filled[0]["verdict"] == "plateau",
          f"the filled cache's site: {[s['verdict'] for s in filled]}")
    # Without --leakwatch the marker does nothing: every test runs once.
    run = Run(base, env=env, preload=False)
    check_eq(run.returncode, 0, f"all pass without --leakwatch: {run.stdout}")
    check_eq(run.traces(), [], "no shim, no trace")
    # Already preloaded (leakwatch run, a launcher): no second start.
    run = Run(base + ["--leakwatch", "-k", "frees or cache"],
              env=dict(env, LD_PRELOAD=LIB), preload=False)
    check_eq(run.returncode, 0, f"{run.stdout}\n{run.stderr}")
    # A shim that cannot be found is a usage error, not a silent pass.
    run = Run(base + ["--leakwatch", "--leakwatch-lib", "/nonexistent.so"],
              env=env, preload=False)
    check_eq(run.returncode, 4, f"usage error: {run.stdout}{run.stderr}")
    check("cannot be preloaded" in run.stdout + run.stderr, run.stderr)


def pytest_gate():
    """A marked test the plugin cannot judge fails (a gate never passes on
    nothing), with one line saying why (too few runs; a peak limit on a
    test that does not use PyTorch); fail_on fails a test whose kept
    tensor is a diagnosed leak though it grows within max_growth, names
    the kind and the line, and passes a test that keeps nothing; a bad
    fail_on is a usage error naming the kind."""
    py = pytest_python()
    if not py:
        print("no python with pytest: skipped")
        sys.exit(77)
    tests = os.path.join(os.path.dirname(os.environ["LW_PYTEST_TESTS"]),
                         "test_gate_marker.py")
    kept_line = next(i for i, line in enumerate(open(tests), 1)
                     if "# @kept" in line)
    base = [py, "-m", "pytest", "-p", "pytest_leakwatch", "-p",
            "no:cacheprovider", "-q", "-rA", tests, "--leakwatch"]
    run = Run(base, env=plugin_env(), preload=False)
    out = run.stdout
    check_eq(run.returncode, 1, f"three tests fail: {out}\n{run.stderr}")
    check(re.search(r"^FAILED \S*::test_too_few_runs_to_judge", out, re.M)
          and re.search(r"^leakwatch: cannot judge: 3 runs after the warm-up "
                        r"of 4, at least 5 needed", out, re.M),
          f"cannot judge: {out}")
    check(re.search(r"^FAILED \S*::test_kept_within_growth_but_a_leak", out,
                    re.M) and
          re.search(r"^leakwatch: FAIL: \S+ \(\w+ confidence\) at "
                    r"test_kept_within_growth_but_a_leak \(\S*"
                    rf"test_gate_marker.py:{kept_line}\) \(fail_on='all'\)",
                    out, re.M), f"fail_on names the kind and line: {out}")
    check(re.search(r"^PASSED \S*::test_frees_everything$", out, re.M),
          f"a test that keeps nothing passes fail_on: {out}")
    check(re.search(r"^FAILED \S*::test_peak_without_pytorch", out, re.M)
          and re.search(r"^leakwatch: cannot judge max_peak=: the test's "
                        r"runs did not use PyTorch's CUDA allocator", out,
                        re.M), f"max_peak without PyTorch: {out}")
    # The variable stands for fail_on=, judged by the plugin, so the shim
    # it preloaded does not say that it leaves it to `leakwatch check`.
    env = dict(plugin_env(), LEAKWATCH_FAIL_ON="all")
    run = Run(base[:-1] + ["-k", "frees_everything", "--leakwatch"],
              env=env, preload=False)
    check_eq(run.returncode, 0, f"LEAKWATCH_FAIL_ON=all: {run.stdout}")
    check("not judged by the shim alone" not in run.stdout + run.stderr,
          f"the shim's note under the plugin: {run.stderr}")
    # A bad kind is a usage error.
    env = dict(plugin_env(), LEAKWATCH_FAIL_ON="nosuchkind")
    run = Run(base, env=env, preload=False)
    out = run.stdout + run.stderr
    check_eq(run.returncode, 4, f"bad LEAKWATCH_FAIL_ON: {out}")
    check("LEAKWATCH_FAIL_ON: unknown kind 'nosuchkind' (known kinds: "
          in out and "metric-copy" in out and "Traceback" not in out,
          f"names the kind and the known ones: {out}")


def pytest_bad_marker():
    """A bad leakwatch marker value is a one-line usage error (exit 4)
    before any test runs, not a traceback through the plugin."""
    py = pytest_python()
    if not py:
        print("no python with pytest: skipped")
        sys.exit(77)
    tmp = scratch_dir("lw-pytest-")
    # The command names the kinds fail_on= may take (wherever the build
    # directory is).
    env = {"PYTHONPATH": os.environ["LW_PYTHON_DIR"], "LD_PRELOAD": LIB,
           "LEAKWATCH_CLI": CLI}
    for marker, said in (('max_growth="lots"', "not a size: 'lots'"),
                         ('steps="many"', "steps='many' is not a whole number"),
                         ("steps=3", "steps=3: growth is judged on at least 5"),
                         ("steps=8, warmup=7", "steps=8 leaves nothing"),
                         ('max_growht="1MiB"',
                          "unknown argument max_growht= (it takes"),
                         ('fail_on="nosuchkind"', "unknown kind 'nosuchkind'"),
                         ('"1MiB"', "positional argument '1MiB'")):
        path = os.path.join(tmp, "test_marked.py")
        with open(path, "w") as f:
            f.write("import pytest\n\n\n"
                    f"@pytest.mark.leakwatch({marker})\n"
                    "def test_loop():\n    pass\n")
        run = Run([py, "-m", "pytest", "-p", "pytest_leakwatch", "-p",
                   "no:cacheprovider", "-q", path, "--leakwatch"],
                  env=env, preload=False)
        out = run.stdout + run.stderr
        check_eq(run.returncode, 4, f"{marker}: usage error: {out}")
        check(f"ERROR: {path}::test_loop: leakwatch marker: {said}" in out
              or f"test_marked.py::test_loop: leakwatch marker: {said}" in out,
              f"{marker}: names the test and the value: {out}")
        check("Traceback" not in out and "raise " not in out,
              f"{marker}: no traceback: {out}")


if __name__ == "__main__":
    sys.exit(main({f.__name__: f for f in [
        rank_names, two_ranks, dataloader_workers, live_every, signal_flush,
        signal_respected, pytest_plugin, pytest_bad_marker, pytest_gate,
        holders,
        holders_run_no_program_code, gate_names_growth, pytest_per_test,
        summary_names_dead_code, snapshot_returns, notebook_cells]}))
