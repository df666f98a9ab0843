# SPDX-License-Identifier: MIT
"""Integration tests of what a program may do that reaches the shim's own
resources: its trace descriptor (closed, taken by dup2, its file removed),
its signals and ways to end (terminating signals, _exit, quick_exit,
faulthandler), the text it prints at exit, its settings and the command
line it records. Each program makes its events with no step or flush of its
own (tests/programs/intrusions.c: 110 allocations and 100 frees), so that a
trace that lost its buffer shows it."""
import os
import shutil
import signal
import sys
import tempfile

from lwtest import Run, check, check_eq, main, prog, report

EVENTS = {"allocations": 110, "frees": 100}


def intrusions(*args, **kw):
    return Run([prog("intrusions"), *[str(a) for a in args]], **kw)


def events(rep):
    return {"allocations": rep["allocations"], "frees": rep["frees"]}


def program_file(run):
    with open(os.path.join(run.dir, "own.txt"), "rb") as f:
        return f.read()


def trace_descriptor_closed():
    """A program that closes every descriptor above 2 and opens a file of
    its own: the file holds only what the program wrote, and the trace is
    reopened and holds every event."""
    run = intrusions("closefds", "own.txt").expect_ok()
    check_eq(program_file(run), b"program\nprogram\n", "the program's file")
    rep = report(run.trace())
    check_eq(events(rep), {"allocations": 220, "frees": 200},
             "every event, before and after the descriptors were closed")
    check_eq(rep["truncated"], False, "complete")
    check("leakwatch: warning" not in run.stderr, run.stderr)


def trace_descriptor_taken():
    """A program that dup2()s a file of its own over the trace's
    descriptor: the file holds only what the program wrote; the trace is
    reopened and holds every event."""
    run = intrusions("dup2", "own.txt").expect_ok()
    check(run.stdout.startswith("took "), run.stdout)
    check(int(run.stdout.split()[1]) > 2, f"descriptor: {run.stdout}")
    check_eq(program_file(run), b"program\nprogram\n", "the program's file")
    rep = report(run.trace())
    check_eq(events(rep), {"allocations": 220, "frees": 200}, "every event")
    check_eq(rep["truncated"], False, "complete")


def trace_file_removed():
    """The trace's file is removed and its descriptor closed: the trace
    cannot be reopened, nothing is written anywhere else, and the exit
    summary says how many events are not in the trace (420 allocations and
    frees, and the step)."""
    run = intrusions("unlink", "own.txt").expect_ok()
    check_eq(program_file(run), b"program\nprogram\n", "the program's file")
    check_eq(run.traces(), [], "no trace file")
    lines = [l for l in run.stderr.splitlines() if l.startswith("leakwatch")]
    lost = [l for l in lines if "about 421 events" in l]
    check_eq(len(lost), 1, f"one line counting the events lost: {lines}")
    check("descriptor" in lost[0], f"the line says why: {lost[0]}")


def trace_descriptor_high():
    """The trace's descriptor is not one the program's next open() would
    take."""
    run = intrusions("dup2", "own.txt").expect_ok()
    check(int(run.stdout.split()[1]) >= 100,
          f"the trace's descriptor: {run.stdout}")


def same_without_shim(args, what):
    plain = intrusions(*args, preload=False)
    run = intrusions(*args)
    check_eq(run.returncode, plain.returncode, f"{what}: exit status")
    check_eq(run.stdout, plain.stdout, f"{what}: output")
    return run


TERMINATING = ["SIGTERM", "SIGINT", "SIGHUP", "SIGALRM", "SIGUSR1",
               "SIGQUIT", "SIGPIPE", "SIGXCPU", "SIGUSR2"]


def signal_exits():
    """Signals whose default action ends the program: the program ends as
    it would without leakwatch (killed by the same signal), and the trace
    has every event."""
    # A suite started in the background by a shell (`&`) inherits SIGINT
    # and SIGQUIT ignored, and so would the programs: give them back their
    # default action, which is what the test is about.
    for name in TERMINATING:
        if signal.getsignal(getattr(signal, name)) == signal.SIG_IGN:
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    for name in TERMINATING:
        sig = getattr(signal, name)
        run = same_without_shim(["signal", int(sig)], name)
        check_eq(run.returncode, -sig, f"{name}: killed by it")
        rep = report(run.trace())
        check_eq(events(rep), EVENTS, f"{name}: every event")


def exit_functions():
    """_exit(), _Exit() and quick_exit() run no destructor: the trace still
    has every event, and the exit status is the program's."""
    for how in ["_exit", "_Exit", "quick_exit"]:
        run = same_without_shim([how, 7], how)
        check_eq(run.returncode, 7, f"{how}: exit status")
        rep = report(run.trace())
        check_eq(events(rep), EVENTS, f"{how}: every event")


def handlers_kept():
    """The program's own handlers: one installed after the shim started
    wins; putting SIG_DFL back ends the program with that signal, every
    event flushed; and a program that asks sees the default action where
    it left one."""
    run = same_without_shim(["own-later", int(signal.SIGUSR1)], "own-later")
    check_eq(run.returncode, 0, "own-later: the program carried on")
    check_eq(run.stdout, f"handled {int(signal.SIGUSR1)}\n", "own-later")
    run = same_without_shim(["default-again", int(signal.SIGTERM)],
                            "default-again")
    check_eq(run.returncode, -signal.SIGTERM, "default-again: killed")
    rep = report(run.trace())
    check_eq(rep["allocations"], 111, "default-again: every allocation")
    run = same_without_shim(["query"], "query")
    check_eq(run.stdout, "default 1 1 1\n", "the default actions read back")


def signal_while_busy():
    """A signal to a thread that is inside a hook, maybe holding the
    tracker's lock (two threads allocate without pause): the program is
    killed by it as without leakwatch, never left waiting on the lock, and
    its trace reads."""
    for _ in range(20):
        run = intrusions("kill-busy", int(signal.SIGTERM), timeout=60)
        check_eq(run.returncode, -signal.SIGTERM, "killed by SIGTERM")
        report(run.trace())


PYTHON_ENDS = r"""
import ctypes, faulthandler, os, signal, sys
ext = ctypes.CDLL(sys.argv[1])
ext.testext_alloc.argtypes = [ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p)]
how = sys.argv[2]
if how == "faulthandler":
    faulthandler.enable()
kept = []
for i in range(5):
    p = ctypes.c_void_p()
    assert ext.testext_alloc(5000, ctypes.byref(p)) == 0
    kept.append(p)
sys.stdout.flush()
if how == "faulthandler":
    ctypes.string_at(16)
elif how == "os._exit":
    os._exit(3)
elif how == "SIGTERM":
    os.kill(os.getpid(), signal.SIGTERM)
"""


def python_ends():
    """A Python program with faulthandler on (as pytest runs tests) that
    crashes: faulthandler's report still comes, the program dies of the
    same signal, and the trace has its allocations. os._exit() and a
    SIGTERM it leaves at the default action likewise."""
    ext = os.environ["LW_TESTEXT"]
    for how, status in [("faulthandler", -signal.SIGSEGV),
                        ("os._exit", 3), ("SIGTERM", -signal.SIGTERM)]:
        argv = [sys.executable, "-c", PYTHON_ENDS, ext, how]
        plain = Run(argv, preload=False)
        run = Run(argv)
        check_eq((plain.returncode, run.returncode), (status, status),
                 f"{how}: exit status without and with leakwatch")
        if how == "faulthandler":
            check("Fatal Python error: Segmentation fault" in run.stderr,
                  f"faulthandler's report: {run.stderr}")
        rep = report(run.trace())
        check_eq(rep["allocations"], 5, f"{how}: every allocation")


def sigusr2_default():
    """A program that never asked for leakwatch's SIGUSR2 keeps the
    signal's default action; LEAKWATCH_SIGNAL=1 or the live view takes it
    (and the program carries on)."""
    usr2 = int(signal.SIGUSR2)
    run = same_without_shim(["signal", usr2], "SIGUSR2")
    check_eq(run.returncode, -signal.SIGUSR2, "killed by SIGUSR2")
    for env in ({"LEAKWATCH_SIGNAL": "1"}, {"LEAKWATCH_LIVE_EVERY": "100"}):
        run = intrusions("signal", usr2, env=env)
        check_eq(run.returncode, 0, f"{env}: SIGUSR2 taken by leakwatch")
    run = intrusions("signal", usr2, env={"LEAKWATCH_LIVE_EVERY": "100",
                                          "LEAKWATCH_SIGNAL": "0"})
    check_eq(run.returncode, -signal.SIGUSR2, "LEAKWATCH_SIGNAL=0 wins")


def trace_dir_symlink():
    """A directory on the trace's path may be a symbolic link (/scratch to
    a bigger disk): the trace is written where it leads. The trace's own
    name is never followed: a link there, even a dangling one, is left
    alone and nothing is recorded."""
    probe = Run([prog("no_cuda")])
    real = os.path.join(probe.dir, "disk")
    os.mkdir(real)
    os.symlink(real, os.path.join(probe.dir, "scratch"))
    run = intrusions("args", env={"LEAKWATCH_OUT": os.path.join(
        probe.dir, "scratch", "t-%p.trace")}).expect_ok()
    found = os.listdir(real)
    check_eq(len(found), 1, f"the trace, in the link's target: {found}")
    check_eq(events(report(os.path.join(real, found[0]))), EVENTS, "events")
    dangling = os.path.join(probe.dir, "dangling.trace")
    os.symlink(os.path.join(probe.dir, "nothing-here"), dangling)
    run = intrusions("args", env={"LEAKWATCH_OUT": dangling}).expect_ok()
    check(not os.path.exists(os.path.join(probe.dir, "nothing-here")),
          "a dangling link is not followed")
    check_eq(run.stderr.count("leakwatch: warning:"), 1, run.stderr)


FORGED = "e\x1b[31m\n::error::x\nleakwatch: ok: no device memory growth"

PYTHON_NAMES = r"""
import ctypes, sys
ext = ctypes.CDLL(sys.argv[1])
ext.testext_alloc.argtypes = [ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p)]
name = sys.argv[2]
kept = []
src = ("def f():\n    p = ctypes.c_void_p()\n"
       "    assert ext.testext_alloc(4096, ctypes.byref(p)) == 0\n"
       "    kept.append(p)\n")
ns = {"ctypes": ctypes, "ext": ext, "kept": kept}
exec(compile(src, name + ".py", "exec"), ns)
f = ns["f"]
f.__code__ = f.__code__.replace(co_name=name, co_qualname=name)
f()
"""


def check_summary_escaped(stderr, what):
    check("\x1b" not in stderr, f"{what}: an escape byte on stderr")
    for line in stderr.splitlines():
        check(line.startswith("leakwatch: "),
              f"{what}: a line not of leakwatch's: {line!r}")
        check(line != "leakwatch: ok: no device memory growth",
              f"{what}: a forged line")
    check("\\x1b[31m\\n::error::x\\nleakwatch: ok: no device memory growth"
          in stderr, f"{what}: the name, escaped: {stderr!r}")


def summary_escaped():
    """Function, file and library names in the exit summary are escaped as
    the text report escapes them: no terminal escape, no line of their
    own (a forged verdict, a GitHub workflow command)."""
    run = Run([sys.executable, "-c", PYTHON_NAMES, os.environ["LW_TESTEXT"],
               FORGED]).expect_ok()
    check_summary_escaped(run.stderr, "Python names")
    d = tempfile.mkdtemp(prefix="lw-names-")
    lib = os.path.join(d, FORGED + ".so")
    shutil.copy(os.environ["LW_TESTEXT"], lib)
    run = intrusions("dlopen", lib).expect_ok()
    check_summary_escaped(run.stderr, "a library's name")
    shutil.rmtree(d)


def bad_settings_deferred():
    """Bad LEAKWATCH_MAX_GROWTH, LEAKWATCH_MIN_STEPS and
    LEAKWATCH_TORCH_ALLOCATOR say nothing in processes that make no CUDA
    allocation (a shell loop), and one warning line in one that does."""
    loop = ["sh", "-c", "for i in 1 2 3 4 5 6; do /bin/true; done"]
    for env in ({"LEAKWATCH_MAX_GROWTH": "lots",
                 "LEAKWATCH_TORCH_ALLOCATOR": "fast"},
                {"LEAKWATCH_MAX_GROWTH": "1MiB",
                 "LEAKWATCH_MIN_STEPS": "few"}):
        run = Run(loop, env=env).expect_ok()
        check_eq(run.stderr, "", f"{env}: a process without CUDA")
    run = intrusions("args", env={"LEAKWATCH_MAX_GROWTH": "lots",
                                  "LEAKWATCH_TORCH_ALLOCATOR": "fast",
                                  "LEAKWATCH_QUIET": "1"}).expect_ok()
    lines = run.stderr.splitlines()
    check_eq(len(lines), 1, f"one warning line: {lines}")
    check(lines[0].startswith("leakwatch: warning: ") and
          "LEAKWATCH_MAX_GROWTH" in lines[0] and
          "LEAKWATCH_TORCH_ALLOCATOR" in lines[0], lines[0])
    rep = report(run.trace())
    check(any("LEAKWATCH_MAX_GROWTH" in w for w in rep["warnings"]),
          f"the warning in the trace: {rep['warnings']}")
    run = intrusions("args", env={"LEAKWATCH_MAX_GROWTH": "1MiB",
                                  "LEAKWATCH_MIN_STEPS": "few",
                                  "LEAKWATCH_QUIET": "1"}).expect_ok()
    check("LEAKWATCH_MIN_STEPS='few'" in run.stderr, run.stderr)


def long_command_line():
    """A command line over 8 KiB is recorded whole; one past what a trace
    record holds is cut at an argument's end and the cut is marked."""
    args = ["a" * 5000, "b" * 5000, "c" * 5000]
    run = intrusions("args", *args).expect_ok()
    rep = report(run.trace())
    check_eq(rep["command"][1:], ["args", *args], "the whole command line")
    args = [chr(ord("a") + i % 26) * 4000 for i in range(30)]
    run = intrusions("args", *args).expect_ok()
    rep = report(run.trace())
    command = rep["command"]
    check(len(command) < 32 and command[-1].startswith("[cut by leakwatch:"),
          f"the cut is marked: {command[-3:]!r}"[:400])
    check_eq(command[1:-1], ["args", *args[:len(command) - 3]],
             "whole arguments before the mark")
    text = report(run.trace(), fmt="text")
    check("[cut by leakwatch:" in text, "the text report shows the mark")


if __name__ == "__main__":
    sys.exit(main({f.__name__: f for f in [
        trace_descriptor_closed, trace_descriptor_taken, trace_file_removed,
        trace_descriptor_high, signal_exits, exit_functions, handlers_kept,
        signal_while_busy, python_ends, sigusr2_default, trace_dir_symlink,
        summary_escaped, bad_settings_deferred, long_command_line]}))
