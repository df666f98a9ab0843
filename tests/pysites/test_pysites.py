# SPDX-License-Identifier: MIT
"""Python allocation sites: scenario scripts (scenarios/*.py) that allocate
through tinytensor run under the shim with a given interpreter, and their
`leakwatch report --format json` must name the right Python lines.

    test_pysites.py SCENARIO [INTERPRETER]

INTERPRETER is a path, or "default" (this script's own interpreter). A
missing interpreter skips (77). tinytensor.py is copied into a temporary
`site-packages` directory, so that, as torch would be, it is library code
and not the program's own: a site's `location` is then the scenario's line.
Each scenario script marks the lines a test expects with `# @name`.

Environment (tests/pysites/meson.build): LW_LIB, LW_CLI, LW_TINYTENSOR
(libtinytensor.so), LW_TINYTENSOR_PY (tinytensor.py).
"""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

from lwtest import (SKIP, Failure, Run, check, check_eq, describe_sites,  # noqa: E402
                    functions, main, markers, need, python_frames, report,
                    same_file, sites_at)

SCENARIOS = os.path.join(HERE, "scenarios")
SUPPORTED = ((3, 9), (3, 13))  # the frame reader's range, inclusive
# The shim's hooks must never wait for the GIL: a hang past this is a failure.
DEADLOCK_TIMEOUT = 20


class Interpreter(object):
    def __init__(self, path):
        self.path = path
        out = subprocess.run(
            [path, "-E", "-s", "-c",
             "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
            capture_output=True, text=True, timeout=60, check=True)
        self.version = out.stdout.strip()
        self.minor = tuple(int(x) for x in self.version.split(".")[:2])

    def supported(self):
        return SUPPORTED[0] <= self.minor <= SUPPORTED[1]

    def qualname(self, qualified, plain):
        """co_qualname from 3.11; the plain co_name before."""
        return qualified if self.minor >= (3, 11) else plain


def interpreter(require_supported=True):
    """The interpreter named on the command line, or None to skip."""
    arg = sys.argv[2] if len(sys.argv) > 2 else "default"
    path = sys.executable if arg == "default" else arg
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        print(f"skip: no interpreter {path}")
        return None
    py = Interpreter(path)
    if require_supported and not py.supported():
        print(f"skip: Python {py.version} is outside the frame reader's "
              f"range")
        return None
    return py


class Scenario(object):
    """One scenario script run under the shim."""

    def __init__(self, py, name, args=(), timeout=120):
        self.py = py
        self.script = os.path.join(SCENARIOS, name + ".py")
        self.lines = markers(self.script)
        site_dir = os.path.join(tempfile.mkdtemp(prefix="lw-pysites-"),
                                "site-packages")
        os.mkdir(site_dir)
        shutil.copy(os.environ["LW_TINYTENSOR_PY"], site_dir)
        # -E -s: nothing from the caller's environment or user site; the
        # absolute interpreter path, never a pyenv shim under LD_PRELOAD.
        self.run = Run([py.path, "-E", "-s", self.script, *args],
                       env={"TINYTENSOR_SITE": site_dir,
                            "LW_TINYTENSOR": os.environ["LW_TINYTENSOR"]},
                       timeout=timeout)
        self.run.expect_ok()
        self.rep = report(self.run.trace())

    def warnings(self):
        return [line for line in self.run.stderr.splitlines()
                if line.startswith("leakwatch: warning:")]

    def check_python_report(self):
        """What every run on a supported interpreter must give."""
        check_eq(self.warnings(), [], "shim warnings")
        check_eq(need(self.rep, "python"), self.py.version,
                 "the report's Python version")

    def at(self, marker):
        """The sites located at the scenario's line `# @marker`."""
        sites = sites_at(self.rep, self.script, self.lines[marker])
        check(sites, f"no site located at @{marker} (line "
              f"{self.lines[marker]}); sites: {describe_sites(self.rep)}")
        return sites

    def check_at(self, marker, count, nbytes, function):
        """The sites at @marker hold count allocations and nbytes, and their
        location is a Python frame of `function`."""
        sites = self.at(marker)
        check_eq(sum(s["live_count"] for s in sites), count,
                 f"live count at @{marker}")
        check_eq(sum(s["live_bytes"] for s in sites), nbytes,
                 f"live bytes at @{marker}")
        for s in sites:
            loc = s["location"]
            check_eq(loc.get("python"), True, f"@{marker}: location.python")
            check_eq(loc.get("function"), function, f"@{marker}: function")
            check_eq(need(s, "native_thread", "site"), False,
                     f"@{marker}: native_thread")
        return sites

    def script_frames(self, site):
        """(function, line) of the site's Python frames in the script."""
        return [(f["function"], f["line"]) for f in python_frames(site)
                if same_file(f["file"], self.script)]


def index_of(frames, frame):
    # A location is a frame with keys after a frame's (in_backward...).
    frame = {k: v for k, v in frame.items()
             if k not in ("in_backward", "autograd_node")}
    for i, f in enumerate(frames):
        if f == frame:
            return i
    raise Failure(f"location {frame} is not one of the site's frames")


# ---- the scenarios ----

def per_step():
    py = interpreter()
    if not py:
        return SKIP
    sc = Scenario(py, "per_step", ["50"])
    check_eq(sc.run.stdout.strip(), "ok 50", "program output")
    # What the shim alone guarantees: the 50 losses, and nothing else.
    check_eq(sc.rep["live_count_at_exit"], 50, "live count at exit")
    check_eq(sc.rep["live_bytes_at_exit"], 50 * 4, "live bytes at exit")
    sc.check_python_report()
    top = sc.rep["sites"][0]
    loc = need(top, "location", "site")
    check_eq((loc.get("python"), loc.get("function"), loc.get("line")),
             (True, "train", sc.lines["loss"]),
             "the top site's location (python, function, line)")
    check(same_file(loc.get("file"), sc.script),
          f"the top site's file: {loc.get('file')}")
    check_eq(top["live_count"], 50, "the top site's live count")
    check_eq(need(top, "live_count_at_program_end", "site"), 50,
             "the top site's live count at program end")
    check_eq(need(top, "native_thread", "site"), False, "native_thread")
    # The shim's own exit summary names the same line: the user's code,
    # not the tensor library's frames above it.
    want = f"train ({os.path.basename(sc.script)}:{sc.lines['loss']})"
    check(want in sc.run.stderr, f"exit summary names {want}: "
          f"{sc.run.stderr}")


def deep_chain():
    py = interpreter()
    if not py:
        return SKIP
    sc = Scenario(py, "deep_chain")
    check_eq(sc.rep["live_count_at_exit"], 3, "live count at exit")
    sc.check_python_report()
    # The interpreter's specialising call paths can give the same Python
    # stack several native ones (3.13): every such site must be right.
    for site in sc.check_at("level6", 3, 3 * 4096, "level6"):
        check_deep_chain_site(py, sc, site)


def check_deep_chain_site(py, sc, site):
    frames = site["frames"]
    lines = sc.lines
    check_eq(sc.script_frames(site), [
        ("level6", lines["level6"]),
        ("level5", lines["level5"]),
        (py.qualname("Chain.level4", "level4"), lines["level4"]),
        ("level3", lines["level3"]),
        ("level2", lines["level2"]),
        ("level1", lines["level1"]),
        ("<module>", lines["module"]),
    ], "the script's Python frames, innermost first")
    pys = python_frames(site)
    for f in pys:
        check_eq((f.get("module"), f.get("address")), (None, None),
                 f"module and address of Python frame {f}")
    check(pys[0]["file"].endswith("/site-packages/tinytensor.py")
          and pys[0]["function"] == py.qualname("Storage.__init__", "__init__"),
          f"innermost Python frame is tinytensor's Storage: {pys[0]}")
    names = functions(site)
    first_py = index_of(frames, pys[0])
    last_py = index_of(frames, pys[-1])
    check("_PyEval_EvalFrameDefault" not in names,
          f"evaluation-loop frames replaced by Python frames: {names}")
    check("tt_alloc" in names[:first_py],
          f"native frames above the Python ones: {names[:first_py]}")
    check("Py_RunMain" in names[last_py + 1:],
          f"native frames below the Python ones: {names[last_py + 1:]}")
    check(all(not f.get("python") for f in frames[last_py + 1:]),
          "nothing Python below <module>")


def generators():
    py = interpreter()
    if not py:
        return SKIP
    sc = Scenario(py, "generators")
    check_eq(sc.rep["live_count_at_exit"], 5 + 7 + 4, "live count at exit")
    sc.check_python_report()
    lines = sc.lines
    for site in sc.check_at("generator", 5, 5 * 128, "batches"):
        check_eq(sc.script_frames(site), [
            ("batches", lines["generator"]),
            ("consume", lines["consume"]),
            ("<module>", lines["consume-call"]),
        ], "a generator's frames: the generator, then whoever resumes it")
    # 3.12 inlines comprehensions into their function (PEP 709).
    listcomp = ("make_list" if py.minor >= (3, 12) else
                py.qualname("make_list.<locals>.<listcomp>", "<listcomp>"))
    for site in sc.check_at("listcomp", 7, 7 * 192, listcomp):
        own = [] if py.minor >= (3, 12) else [(listcomp, lines["listcomp"])]
        check_eq(sc.script_frames(site),
                 own + [("make_list", lines["listcomp"]),
                        ("<module>", lines["listcomp-call"])],
                 "a list comprehension's frames")
    for site in sc.check_at("genexpr", 4, 4 * 64, "<genexpr>"):
        check_eq(sc.script_frames(site),
                 [("<genexpr>", lines["genexpr"]),
                  ("<module>", lines["genexpr"])],
                 "a generator expression's frames")


def threads():
    py = interpreter()
    if not py:
        return SKIP
    sc = Scenario(py, "threads")
    check_eq(sc.run.stdout.strip(), "ok 32", "program output")
    check_eq(sc.rep["live_count_at_exit"], 32, "live count at exit")
    sc.check_python_report()
    for site in sc.check_at("thread", 30, 30 * 400, "worker"):
        files = [f["file"] for f in python_frames(site)]
        check(any(f.endswith("/threading.py") for f in files),
              f"threading.py frames below the thread function: {files}")
        check_eq(sc.script_frames(site), [("worker", sc.lines["thread"])],
                 "the thread's own frames in the script")
    sc.check_at("main", 2, 2 * 40, "<module>")


def deepcopy():
    py = interpreter()
    if not py:
        return SKIP
    sc = Scenario(py, "deepcopy")
    check_eq(sc.rep["live_count_at_exit"], 2 + 8 * 2, "live count at exit")
    sc.check_python_report()
    # Eight copies of two tensors, 256 and 4 bytes.
    for site in sc.check_at("deepcopy", 16, 8 * 260, "<module>"):
        frames = site["frames"]
        user = index_of(frames, site["location"])
        copies = [i for i, f in enumerate(frames)
                  if f.get("python") and (f.get("file") or "").endswith("/copy.py")]
        check(copies, f"copy.py frames in the stack: {functions(site)}")
        check(all(i < user for i in copies),
              "copy.py frames are innermost of the user's line")
        check("deepcopy" in [frames[i]["function"] for i in copies],
              "copy.deepcopy itself is on the stack")


def exceptions():
    py = interpreter()
    if not py:
        return SKIP
    sc = Scenario(py, "exceptions")
    check_eq(sc.run.stdout.strip(), "ok 6 18", "program output")
    check_eq(sc.rep["live_count_at_exit"], 24, "live count at exit")
    sc.check_python_report()
    sc.check_at("raise", 6, 6 * 800, "inner")
    sc.check_at("listed", 6, 6 * 1200, "inner_listed")
    sc.check_at("finally", 6, 6 * 200, "middle")
    sc.check_at("handler", 6, 6 * 300, "<module>")


def program_end():
    py = interpreter()
    if not py:
        return SKIP
    sc = Scenario(py, "program_end")
    history_bytes, pinned_bytes = 20 * 4096, 1024
    # The shim: the exit summary counts what the code left, not what
    # finalization left; the trace's end holds only the pinned tensor.
    check("21 allocations" in sc.run.stderr,
          f"the exit summary counts the program-end view: {sc.run.stderr}")
    # live_*_at_exit are at the report point (here the program's end), as
    # before this view existed; the end of the trace is live_*_at_end.
    check_eq(sc.rep["live_count_at_end"], 1, "live count at exit")
    check_eq(sc.rep["live_bytes_at_end"], pinned_bytes, "live bytes at exit")
    sc.check_python_report()
    check_eq(need(sc.rep, "program_end"),
             {"bytes": history_bytes + pinned_bytes, "count": 21},
             "program_end")
    history = sc.at("history")
    check_eq(sum(need(s, "live_count_at_program_end", "site") for s in history),
             20, "history: live count at program end")
    check_eq(sum(s["live_bytes_at_program_end"] for s in history),
             history_bytes, "history: live bytes at program end")
    check_eq(sum(s["live_count_at_end"] for s in history), 0,
             "history: live count at exit (freed by finalization)")
    pinned = sc.at("pinned")
    check_eq([(s["live_count_at_program_end"], s["live_count_at_end"])
              for s in pinned], [(1, 1)], "pinned: live at both")
    text = report(sc.run.trace(), fmt="text")
    where = f"{os.path.basename(sc.script)}:{sc.lines['history']}"
    check(where in text, f"the text report names {where}: {text[:2000]}")
    lines = text.lower().splitlines()
    check(any("program" in line and ("82944" in line or "81.0 kib" in line)
              for line in lines),
          f"a line of the text report gives the program-end view "
          f"(82944 bytes): {text[:2000]}")
    check(any("exit" in line and ("1024 " in line or "1.0 kib" in line)
              for line in lines),
          f"a line of the text report gives the exit view (1024 bytes): "
          f"{text[:2000]}")


def native_thread():
    py = interpreter()
    if not py:
        return SKIP
    sc = Scenario(py, "native_thread")
    check_eq(sc.rep["live_count_at_exit"], 7, "live count at exit")
    native = [s for s in sc.rep["sites"]
              if "native_keep_buffers" in functions(s)]
    check_eq([(s["live_count"], s["live_bytes"]) for s in native],
             [(5, 15000)], "the native thread's site")
    sc.check_python_report()
    site = native[0]
    check_eq(python_frames(site), [], "Python frames of a native thread")
    check_eq(need(site, "native_thread", "site"), True, "native_thread")
    loc = need(site, "location", "site")
    check_eq((loc.get("python"), loc.get("function")),
             (False, "native_keep_buffers"), "the native site's location")
    sc.check_at("python", 2, 80, "<module>")


def run_deadlock():
    py = interpreter()
    if not py:
        return None
    try:
        sc = Scenario(py, "deadlock", timeout=DEADLOCK_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise Failure(f"hung for {DEADLOCK_TIMEOUT} s: a hook waited for "
                      f"the GIL (or for a lock held while waiting for it)")
    check_eq(sc.run.stdout.strip(), "ok 6", "program output")
    check_eq(sc.rep["live_count_at_exit"], 6, "live count at exit")
    check_eq(sc.rep["live_bytes_at_exit"], 3 * 8192 + 3 * 4096,
             "live bytes at exit")
    return sc


def deadlock():
    """The proof itself: depends on the shim alone."""
    sc = run_deadlock()
    if not sc:
        return SKIP
    native = [s for s in sc.rep["sites"]
              if "locked_region_alloc" in functions(s)]
    check_eq(sum(s["live_bytes"] for s in native), 6 * 4096 + 3 * 4096,
             "the locked region's allocations, from both threads")


def deadlock_sites():
    """The same run's sites: frames read from a thread that released the
    GIL while another thread held it."""
    sc = run_deadlock()
    if not sc:
        return SKIP
    sc.check_python_report()
    sc.check_at("pythread", 3, 3 * 4096, "python_thread_alloc")
    native = [s for s in sc.rep["sites"]
              if "locked_region_alloc" in functions(s)
              and not python_frames(s)]
    check_eq(sum(s["live_bytes"] for s in native), 3 * 8192,
             "the native thread's allocations")
    check(all(need(s, "native_thread", "site") for s in native),
          "native_thread of the native thread's site")


def version_fallback():
    """An interpreter the frame reader does not support: the program runs
    as without the shim, one warning names Python, native frames only."""
    py = interpreter(require_supported=False)
    if not py:
        return SKIP
    check(not py.supported(), f"Python {py.version} is supported: this "
          f"test needs one that is not")
    sc = Scenario(py, "per_step", ["50"])
    check_eq(sc.run.stdout.strip(), "ok 50", "program output")
    warnings = sc.warnings()
    check_eq(len(warnings), 1, f"one warning line; stderr: {sc.run.stderr}")
    check("Python" in warnings[0] and py.version in warnings[0],
          f"the warning names Python {py.version}: {warnings[0]}")
    check_eq(sc.rep["live_count_at_exit"], 50, "live count at exit")
    check_eq(sc.rep.get("python"), None, "the report's Python version")
    for site in sc.rep["sites"]:
        check_eq(python_frames(site), [], "Python frames")
        loc = site.get("location")
        check(loc is None or not loc.get("python"),
              f"a native location: {loc}")
        check(not site.get("native_thread"),
              "native_thread is for Python programs' sites")
    check("tt_alloc" in functions(sc.rep["sites"][0]),
          "the native stack is still there")


if __name__ == "__main__":
    sys.exit(main({f.__name__: f for f in [
        per_step, deep_chain, generators, threads, deepcopy, exceptions,
        program_end, native_thread, deadlock, deadlock_sites,
        version_fallback]}))
