# SPDX-License-Identifier: MIT
"""Helpers for leakwatch's integration tests: run a real program under the
shim, find the traces it wrote, and read them back with `leakwatch report`.

Paths come from the environment set by tests/integration/meson.build:
LW_LIB (libleakwatch.so), LW_CLI (the leakwatch command), LW_FAKECUDA_DIR,
and LW_PROG_<name> for each test program. The runs' directories are removed
when the test ends; LW_KEEP=1 keeps them (their paths are in the output)."""
import atexit
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

LIB = os.environ.get("LW_LIB", "")
CLI = os.environ.get("LW_CLI", "")
SKIP = 77


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def check_eq(actual, expected, what):
    if actual != expected:
        raise Failure(f"{what}: got {actual!r}, expected {expected!r}")


def prog(name):
    path = os.environ.get("LW_PROG_" + name)
    check(path and os.path.exists(path), f"test program {name} not built")
    return path


def scratch_dir(prefix="lw-it-"):
    """A new directory, removed when the test ends (kept with LW_KEEP=1)."""
    path = tempfile.mkdtemp(prefix=prefix)
    if os.environ.get("LW_KEEP"):
        print(f"kept: {path}")
    else:
        atexit.register(shutil.rmtree, path, True)
    return path


class Run:
    """One program run under the shim in a fresh directory."""

    def __init__(self, argv, env=None, preload=True, timeout=120,
                 pattern="trace-%p.trace"):
        self.dir = scratch_dir()
        full_env = dict(os.environ)
        for key in list(full_env):
            if key.startswith("LEAKWATCH_"):
                del full_env[key]
        if preload:
            full_env["LD_PRELOAD"] = LIB
        full_env["LEAKWATCH_OUT"] = os.path.join(self.dir, pattern)
        if os.environ.get("LW_TRACE_DETAIL"):  # meson test --setup full
            full_env["LEAKWATCH_TRACE_DETAIL"] = os.environ["LW_TRACE_DETAIL"]
        full_env.update(env or {})
        for key in [k for k, v in full_env.items() if v is None]:
            del full_env[key]  # None: unset
        self.proc = subprocess.run(argv, env=full_env, cwd=self.dir,
                                   capture_output=True, text=True,
                                   timeout=timeout)
        self.stdout = self.proc.stdout
        self.stderr = self.proc.stderr
        self.returncode = self.proc.returncode

    def traces(self):
        return sorted(glob.glob(os.path.join(self.dir, "*.trace")))

    def trace(self, pid=None):
        if pid is not None:
            path = os.path.join(self.dir, f"trace-{pid}.trace")
            check(os.path.exists(path), f"no trace for pid {pid}")
            return path
        found = self.traces()
        check(len(found) == 1, f"expected one trace, found {found}\n"
              f"stderr: {self.stderr}")
        return found[0]

    def expect_ok(self):
        check(self.returncode == 0,
              f"program exited {self.returncode}\nstdout: {self.stdout}\n"
              f"stderr: {self.stderr}")
        return self


def report(trace, fmt="json", extra=()):
    proc = subprocess.run([CLI, "report", "--format", fmt, *extra, trace],
                          capture_output=True, text=True, timeout=120)
    check(proc.returncode == 0,
          f"leakwatch report exited {proc.returncode}: {proc.stderr}")
    return json.loads(proc.stdout) if fmt == "json" else proc.stdout


def functions(site):
    return [f.get("function") for f in site["frames"]]


def site_with(rep, function):
    """The live site whose innermost frame is in `function`."""
    for site in rep["sites"]:
        if site["frames"] and site["frames"][0].get("function") == function:
            return site
    raise Failure(f"no live site in {function}; sites: "
                  + json.dumps([functions(s)[:3] for s in rep["sites"]]))


# ---- Python programs: sites located by file and line ----

def markers(path):
    """{name: line} for each line of the file ending with `# @name`, the
    convention Python scenario scripts use to name the lines a test
    expects."""
    found = {}
    with open(path, encoding="utf-8") as f:
        for number, text in enumerate(f, 1):
            m = re.search(r"#\s*@([\w-]+)\s*$", text)
            if m:
                check(m.group(1) not in found,
                      f"marker @{m.group(1)} twice in {path}")
                found[m.group(1)] = number
    return found


def need(obj, key, what="report"):
    """obj[key], or a failure that names the missing field."""
    check(isinstance(obj, dict) and key in obj,
          f"{what} has no {key!r} field; it has "
          f"{sorted(obj) if isinstance(obj, dict) else obj!r}")
    return obj[key]


def same_file(a, b):
    if not a or not b:
        return False
    return a == b or os.path.realpath(a) == os.path.realpath(b)


def python_frames(site):
    return [f for f in site["frames"] if f.get("python")]


def sites_at(rep, file, line):
    """The sites whose `location` is file:line (JSON `location`)."""
    found = []
    for s in rep["sites"]:
        loc = need(s, "location", "site") or {}
        if same_file(loc.get("file"), file) and loc.get("line") == line:
            found.append(s)
    return found


def describe_sites(rep):
    """A short listing of the sites, for failure messages."""
    out = []
    for s in rep["sites"]:
        loc = s.get("location") or {}
        out.append(f"{s['live_count']}x{s['live_bytes']}B at "
                   f"{loc.get('function')} {loc.get('file')}:{loc.get('line')}")
    return "; ".join(out)


def main(scenarios):
    name = sys.argv[1] if len(sys.argv) > 1 else ""
    if name not in scenarios:
        print(f"unknown scenario {name!r}; known: {sorted(scenarios)}",
              file=sys.stderr)
        return 2
    try:
        result = scenarios[name]()
    except Failure as e:
        print(f"FAIL {name}: {e}", file=sys.stderr)
        return 1
    return SKIP if result == SKIP else 0
