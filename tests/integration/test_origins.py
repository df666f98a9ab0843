#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Where the program's Python code comes from, as the shim reads it
(interpose/python/pypaths.c) with none of the program's code run: programs
that allocate through tinytensor under the shim, and the PYPATH facts of
their traces (`leakwatch report --format json`, python_paths).

  facts      a prefix added to site.PREFIXES whose site directory has .pth
             files (one that adds a directory, one of setuptools'
             __editable__ ones, one whose import line must not run, a
             FIFO), sys.path entries that are no str,
             PYTHONPATH, a sys.path entry holding an installed distribution,
             editable finders in sys.modules (one a module subclass whose
             attribute hooks must not run, one not a module at all), the
             program's own import hook, sysconfig's variables not read yet,
             the main script inside a git tree: each fact once, none of that
             code run, nothing imported; and the facts again in the trace of
             a forked child. INTERPRETER (a path; default this one) runs it;
             a missing one skips.
  untouched  the program's os.path.exists, os.listdir, os.stat, os.getcwd
             (and a few more) wrapped to count their calls, and an audit hook
             counting the file system's events: the same counts with and
             without the shim.
  big_dir    100,000 files beside the script: the shim reads a bounded part
             of that directory, not all of it (getdents64 calls on it counted
             with strace, with and without the shim; skipped without strace).

    test_origins.py SCENARIO [INTERPRETER]
"""
import json
import os
import shutil
import subprocess
import sys

from lwtest import (LIB, SKIP, Failure, check, check_eq, main, report,
                    scratch_dir)

# The runs' trace directories, one each.
RUNS = []


def interpreter():
    """The interpreter named on the command line, or this one; None when it
    is not installed."""
    path = sys.argv[2] if len(sys.argv) > 2 else sys.executable
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        print(f"skipped: no interpreter {path}")
        return None
    return path


def version_of(python):
    return subprocess.run(
        [python, "-E", "-s", "-c",
         "import sys; print('%d.%d' % sys.version_info[:2])"],
        capture_output=True, text=True, timeout=60,
        check=True).stdout.strip()


def run(python, argv, cwd, pythonpath=(), preload=True, tracer=()):
    """The program under the shim (or not), its trace's facts as
    [(kind, path, name)] and the traces written."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("LEAKWATCH_") and
           k not in ("PYTHONPATH", "PYTHONHOME", "LD_PRELOAD")}
    traces = os.path.join(cwd, f"traces-{len(RUNS)}")
    RUNS.append(traces)
    os.makedirs(traces)
    env.update({
        "LEAKWATCH_OUT": os.path.join(traces, "t-%p.trace"),
        "PYTHONPATH": os.pathsep.join(
            list(pythonpath) + [os.path.dirname(
                os.environ["LW_TINYTENSOR_PY"])]),
        "PYTHONDONTWRITEBYTECODE": "1",
    })
    command = [python, *argv]
    if preload:
        # Through env(1), so that a tracer before it is not preloaded.
        command = ["env", f"LD_PRELOAD={LIB}"] + command
    try:
        p = subprocess.run(list(tracer) + command, cwd=cwd, env=env,
                           capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        raise Failure(f"{argv}: still running after 60 s")
    check(p.returncode == 0, f"{argv}: exit {p.returncode}: {p.stdout}\n"
          f"{p.stderr}")
    return p, sorted(os.path.join(traces, n) for n in os.listdir(traces))


def facts_of(trace):
    return [(f["kind"], f["path"], f.get("name") or "")
            for f in report(trace)["python_paths"]]


# The program of `facts`: argv[1] the prefix, argv[2] a directory holding
# an installed distribution; prints what ran and was imported at its end.
FACTS_CHILD = r'''
# gc and atexit: the shim's hooks import them (through the program's import
# hooks when the program has not).
import atexit, gc, json, os, site, sys, types

import tinytensor as tt

ran = []


class Trap(types.ModuleType):
    def __getattribute__(self, name):
        ran.append("getattribute " + name)
        return types.ModuleType.__getattribute__(self, name)

    def __getattr__(self, name):
        ran.append("getattr " + name)
        raise AttributeError(name)


trap = Trap("__editable___trap_1_0_finder")
trap.__dict__["MAPPING"] = {"trap": "/opt/trap/src/trap"}
sys.modules[trap.__name__] = trap
plain = types.ModuleType("__editable___plain_2_0_finder")
plain.MAPPING = {"plain": "/opt/plain/plain", 3: "/not/a/name"}
sys.modules[plain.__name__] = plain


class NotModule(object):
    @property
    def __class__(self):
        ran.append("class")
        return types.ModuleType

    def __getattr__(self, name):
        ran.append("getattr " + name)
        raise AttributeError(name)


sys.modules["__editable___fake_3_0_finder"] = NotModule()


class Finder(object):
    """The program's own import hook: must not be asked for anything."""

    def find_spec(self, name, path=None, target=None):
        ran.append("find_spec " + name)
        return None


# sysconfig imported, its variables not read yet (reading them imports
# _sysconfigdata, through the finders).
import sysconfig  # noqa: E402
sysconfig._CONFIG_VARS = None
if hasattr(sysconfig, "_CONFIG_VARS_INITIALIZED"):
    sysconfig._CONFIG_VARS_INITIALIZED = False
for name in [m for m in sys.modules if m.startswith("_sysconfigdata")]:
    del sys.modules[name]
site.PREFIXES.append(sys.argv[1])
sys.meta_path.insert(0, Finder())
sys.path.append(sys.argv[2])


class Text(str):
    def __fspath__(self):
        ran.append("fspath")
        return str(self)


# Entries of the types import skips, and one whose methods are the
# program's: none is a fact.
import pathlib  # noqa: E402
sys.path += [b"/bytes/entry", pathlib.PurePosixPath("/pure/path"),
             Text("/text/subclass"), None]
before = set(sys.modules)
del ran[:]
pid = os.getpid()


def done():
    if os.getpid() == pid:
        print(json.dumps({"ran": ran,
                          "imported": sorted(set(sys.modules) - before)}))


atexit.register(done)
kept = [tt.full(4, float(i)) for i in range(10)]
child = os.fork()
if child == 0:
    kept += [tt.full(4, float(i)) for i in range(10)]
    sum(range(100000))
    os._exit(0)
os.waitpid(child, 0)
kept += [tt.full(4, 1.0)]
'''


def facts():
    python = interpreter()
    if not python:
        return SKIP
    version = version_of(python)
    tmp = os.path.realpath(scratch_dir("lw-origins-"))
    prefix = os.path.join(tmp, "prefix")
    site_dir = os.path.join(prefix, "lib", f"python{version}",
                            "site-packages")
    added = os.path.join(tmp, "added")
    editable = os.path.join(tmp, "editable-src")
    installed = os.path.join(tmp, "installed")
    project = os.path.join(tmp, "project")
    for d in (site_dir, added, editable, project + "/.git",
              project + "/bin", installed + "/lib-1.0.dist-info",
              tmp + "/pp"):
        os.makedirs(d)
    with open(os.path.join(site_dir, "plain.pth"), "w") as f:
        f.write("# a comment\n../../../../added\n/nonexistent/dir\n"
                "import sys; sys.stdout.write('RAN ')\n")
    with open(os.path.join(site_dir, "__editable__.lib-1.0.pth"), "w") as f:
        f.write(editable + "\n")
    # Opened for reading, a FIFO would wait for a writer for ever.
    os.mkfifo(os.path.join(site_dir, "a-fifo.pth"))
    script = os.path.join(project, "bin", "child.py")
    with open(script, "w") as f:
        f.write(FACTS_CHILD)
    p, traces = run(python, ["-s", script, prefix, installed], tmp,
                    pythonpath=[tmp + "/pp"])
    check(not p.stdout.startswith("RAN"), f"a .pth import line ran: "
          f"{p.stdout}")
    out = json.loads(p.stdout.strip().splitlines()[-1])
    check_eq(out["ran"], [], "code of the program that ran")
    check_eq(out["imported"], [], "modules imported")
    check_eq(len(traces), 2, "traces (the program's and its child's)")
    parent = facts_of(traces[0])
    want = [
        ("pth", added, "plain.pth"),
        ("editable", editable, "__editable__.lib-1.0.pth"),
        ("editable", "/opt/trap/src/trap", "trap"),
        ("editable", "/opt/plain/plain", "plain"),
        ("pythonpath", tmp + "/pp", ""),
        ("installed", installed, ""),
        ("script", script, ""),
        ("cwd", tmp, ""),
        ("project", project, "script"),
        ("site", site_dir, ""),
    ]
    for trace in traces:
        found = facts_of(trace)
        kinds = {k for k, _, _ in found}
        for fact in want:
            check(fact in found, f"{trace}: no fact {fact}: {found}")
        check({"stdlib", "site", "scripts"} <= kinds,
              f"standard library, site and scripts directories: {kinds}")
        check(not any(path in ("/nonexistent/dir", "/not/a/name",
                               "/bytes/entry", "/pure/path",
                               "/text/subclass")
                      for _, path, _ in found),
              "a .pth line that is not a directory, a mapping whose key is "
              "not a name, or a sys.path entry that is not a str, is a "
              "fact")
        check(not any(k == "sys_path" and path in (added, editable)
                      for k, path, _ in found),
              "directories from .pth files are also plain sys.path entries")
        check_eq(len(found), len(set(found)),
                 f"each fact once in {trace}, though read twice")
    check_eq(sorted(set(facts_of(traces[1]))), sorted(set(parent)),
             "the forked child's facts")


# The program of `untouched`: counts what it sees of the file system,
# prints the counts at its end (after the shim's reading at exit: atexit
# runs the handlers registered last first).
UNTOUCHED_CHILD = r'''
# gc: the shim's hooks import it, an import event when the program has not.
import atexit, gc, json, os, sys

import tinytensor as tt

calls, events = {}, {}


def counted(module, name):
    real = getattr(module, name)

    def wrapper(*args, **kwargs):
        calls[name] = calls.get(name, 0) + 1
        return real(*args, **kwargs)
    setattr(module, name, wrapper)


for name in ("listdir", "stat", "lstat", "getcwd", "scandir", "fspath",
             "fsencode", "fsdecode"):
    counted(os, name)
for name in ("exists", "isdir", "realpath", "expanduser", "join"):
    counted(os.path, name)


def audit(event, args):
    if event.startswith("os.") or event in ("open", "import", "compile",
                                            "exec", "sys.addaudithook"):
        events[event] = events.get(event, 0) + 1


atexit.register(lambda: print(json.dumps({"calls": calls,
                                          "events": events})))
sys.addaudithook(audit)
os.getcwd()
kept = [tt.full(4, float(i)) for i in range(20)]
sum(range(100000))
'''


def untouched():
    tmp = os.path.realpath(scratch_dir("lw-origins-"))
    os.makedirs(os.path.join(tmp, ".git"))
    script = os.path.join(tmp, "program.py")
    with open(script, "w") as f:
        f.write(UNTOUCHED_CHILD)
    counts = {}
    for preload in (False, True):
        p, traces = run(sys.executable, [script], tmp, preload=preload)
        counts[preload] = json.loads(p.stdout.strip().splitlines()[-1])
        if preload:
            check_eq(len(traces), 1, "traces")
            found = facts_of(traces[0])
            check(("script", script, "") in found and
                  ("project", tmp, "script") in found,
                  f"the facts were read: {found}")
    check_eq(counts[True], counts[False],
             "calls of the program's os functions and file system events "
             "(with the shim, without it)")
    check_eq(counts[False]["calls"].get("getcwd"), 1,
             "the program's own call is counted")


BIG_CHILD = '''
import tinytensor as tt
kept = [tt.full(4, float(i)) for i in range(5)]
'''
BIG_FILES = 100000


def big_dir():
    strace = shutil.which("strace")
    if not strace:
        print("skipped: strace is not installed")
        return SKIP
    tmp = os.path.realpath(scratch_dir("lw-origins-"))
    big = os.path.join(tmp, "big")
    os.makedirs(big)
    for i in range(BIG_FILES):
        os.close(os.open(os.path.join(big, f"f{i}"),
                         os.O_CREAT | os.O_WRONLY, 0o644))
    with open(os.path.join(big, "program.py"), "w") as f:
        f.write(BIG_CHILD)
    log = os.path.join(tmp, "syscalls")
    reads = {}
    for preload in (False, True):
        run(sys.executable, ["program.py"], big, preload=preload,
            tracer=[strace, "-f", "-qq", "-y", "-e", "trace=getdents64",
                    "-o", log])
        with open(log) as f:
            reads[preload] = sum(1 for line in f
                                 if f"getdents64(" in line and
                                 f"<{big}>" in line)
    print(f"getdents64 calls on the script's directory: {reads[False]} "
          f"without the shim, {reads[True]} with it")
    # The interpreter reads the directory once, to import from it; each of
    # the shim's two readings stops after a few thousand entries.
    check(reads[False] > 50, f"the interpreter's own reads: {reads}")
    check(reads[True] - reads[False] <= 24,
          f"getdents64 calls on the script's directory, without and with "
          f"the shim: {reads[False]}, {reads[True]}")


if __name__ == "__main__":
    sys.exit(main({"facts": facts, "untouched": untouched,
                   "big_dir": big_dir}))
