#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Whose code a frame is, from where the interpreter imported it: a program
whose library (mylib, on tinytensor) makes the tensor a step keeps, in a
`compute_loss` that the program overrides, and the library's copy reached
in each of the ways people install libraries. Every time, the one finding
names the override's line (train.py, `# @user`), not the library's, and the
shim's exit summary names it too:

  pythonpath      the library on PYTHONPATH, outside the project;
  target          `pip install --target vendor` inside the project, on
                  sys.path from the script (a wheel made here, installed
                  with no network);
  editable_pth    `pip install -e` of a src-layout package into a scratch
                  virtual environment (setuptools' __editable__ .pth with
                  the source directory);
  editable_finder the same for a flat package (setuptools' __editable__
                  finder and its MAPPING);
  vendored        a copy in the project (third_party/ on sys.path): the
                  project's own code unless named otherwise, so the finding
                  names the copy's line; with --user-code naming the
                  script (or LEAKWATCH_USER_CODE), the override's;
  pytest_option   the same in a test, under the pytest plugin, with and
                  without --leakwatch-user-code (skipped without pytest).

The editable cases need an interpreter with pip, setuptools and wheel
(Debian's python3 with python3-wheel) and skip (77) without one.

    test_usercode.py SCENARIO
"""
import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

from lwtest import (CLI, LIB, SKIP, Failure, check, check_eq, main, markers,
                    report)

LIBRARY = {
    "mylib/__init__.py": "",
    "mylib/loss_utils.py": '''\
import tinytensor as tt


def fixed_cross_entropy(out, target):
    diff = out + target * -1.0
    return (diff * diff).sum()  # @library
''',
    "mylib/trainer.py": '''\
import leakwatch
import tinytensor as tt

from . import loss_utils


class Trainer(object):
    def __init__(self, model):
        self.model = model
        self.opt = tt.SGD(model.parameters(), lr=0.01)

    def compute_loss(self, x, y):
        return loss_utils.fixed_cross_entropy(self.model(x), y)

    def train(self, steps):
        for step in range(steps):
            x = tt.full(4, float(step))
            loss = self.compute_loss(x, x)
            loss.backward()
            self.opt.step()
            self.opt.zero_grad()
            leakwatch.step()
''',
}

# The program: VENDOR, when set, is a directory it puts on sys.path first.
SCRIPT = '''\
import os
import sys

if os.environ.get("VENDOR"):
    sys.path.insert(0, os.path.join(os.path.dirname(__file__),
                                    os.environ["VENDOR"]))
import tinytensor as tt  # noqa: E402
from mylib import loss_utils  # noqa: E402
from mylib.trainer import Trainer  # noqa: E402


class MyTrainer(Trainer):
    def __init__(self, model):
        super().__init__(model)
        self.history = []

    def compute_loss(self, x, y):
        loss = loss_utils.fixed_cross_entropy(self.model(x), y)  # @user
        self.history.append(loss)
        return loss


def main():
    trainer = MyTrainer(tt.Linear(4))
    trainer.train(30)
    return trainer


kept = main()
print("ok", len(kept.history))
'''

HERE = os.path.dirname(os.path.abspath(__file__))
# Directories made, removed once the scenario passed.
MADE = []


def write_tree(root, files):
    for name, text in files.items():
        path = os.path.join(root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


class Project(object):
    """A project directory with train.py, and tinytensor and leakwatch's
    module in a directory of their own on PYTHONPATH."""

    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="lw-usercode-")
        MADE.append(self.tmp)
        self.proj = os.path.join(self.tmp, "proj")
        self.script = os.path.join(self.proj, "train.py")
        write_tree(self.proj, {"train.py": SCRIPT})
        self.lines = markers(self.script)
        self.libs = os.path.join(self.tmp, "tt")
        os.makedirs(self.libs)
        shutil.copy(os.environ["LW_TINYTENSOR_PY"], self.libs)

    def run(self, python=sys.executable, pythonpath=(), env=None):
        full = {k: v for k, v in os.environ.items()
                if not k.startswith("LEAKWATCH_")}
        full.update({
            "LD_PRELOAD": LIB,
            "LEAKWATCH_OUT": os.path.join(self.tmp, "train-%p.trace"),
            "PYTHONPATH": os.pathsep.join(
                list(pythonpath) + [self.libs, os.environ["LW_PYTHON_DIR"]]),
            "PYTHONDONTWRITEBYTECODE": "1",
        })
        full.update(env or {})
        p = subprocess.run([python, "train.py"], cwd=self.proj, env=full,
                           capture_output=True, text=True, timeout=120)
        check(p.returncode == 0 and "ok 30" in p.stdout,
              f"train.py exited {p.returncode}: {p.stdout}\n{p.stderr}")
        traces = [os.path.join(self.tmp, n) for n in os.listdir(self.tmp)
                  if n.endswith(".trace")]
        check_eq(len(traces), 1, "traces written")
        self.stderr = p.stderr
        self.trace = traces[0]
        return self.trace

    def finding(self, *extra):
        rep = report(self.trace, extra=extra)
        leaks = [f for f in rep["findings"] if f["leak"]]
        check(len(leaks) == 1, f"one leak: {leaks}")
        return rep, leaks[0]["location"]

    def expect_user_line(self, *extra, summary=True):
        """The finding, and the shim's exit summary, at train.py @user."""
        rep, loc = self.finding(*extra)
        check_eq((os.path.basename(loc["file"] or ""), loc["line"],
                  loc["function"]),
                 ("train.py", self.lines["user"], "MyTrainer.compute_loss"),
                 "the finding's line")
        want = f"MyTrainer.compute_loss (train.py:{self.lines['user']})"
        check(not summary or f"per step at {want}" in self.stderr,
              f"the exit summary names {want}: {self.stderr}")
        return rep

    def fact(self, rep, kind, path):
        paths = [(p["kind"], p["path"]) for p in rep["python_paths"]]
        check((kind, os.path.realpath(path)) in
              [(k, os.path.realpath(p)) for k, p in paths],
              f"the trace's facts have no {kind} {path}: {paths}")


def pythonpath():
    pr = Project()
    libs = os.path.join(pr.tmp, "libs")
    write_tree(libs, LIBRARY)
    pr.run(pythonpath=[libs])
    rep = pr.expect_user_line()
    pr.fact(rep, "pythonpath", libs)
    pr.fact(rep, "script", pr.script)


def wheel(directory):
    """mylib-0.1-py3-none-any.whl in directory, written by hand."""
    path = os.path.join(directory, "mylib-0.1-py3-none-any.whl")
    info = "mylib-0.1.dist-info/"
    files = dict(LIBRARY)
    files[info + "METADATA"] = "Metadata-Version: 2.1\nName: mylib\n" \
                               "Version: 0.1\n"
    files[info + "WHEEL"] = "Wheel-Version: 1.0\nGenerator: leakwatch-tests\n" \
                            "Root-Is-Purelib: true\nTag: py3-none-any\n"
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(
            hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(text.encode())}")
    record.append(info + "RECORD,,")
    files[info + "RECORD"] = "\n".join(record) + "\n"
    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
    return path


def target():
    pr = Project()
    vendor = os.path.join(pr.proj, "vendor")
    p = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps",
                        "--no-index", "--disable-pip-version-check",
                        "--target", vendor, wheel(pr.tmp)],
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        print(f"pip install --target failed: {p.stderr[-2000:]}: skipped")
        return SKIP
    pr.run(env={"VENDOR": "vendor"})
    rep = pr.expect_user_line()
    pr.fact(rep, "installed", vendor)


def editable_python():
    """An interpreter whose pip can build an editable install offline, or
    None."""
    for py in ("/usr/bin/python3", sys.executable):
        if os.path.exists(py) and all(subprocess.run(
                [py, *args], capture_output=True).returncode == 0
                for args in (["-c", "import setuptools, wheel, venv"],
                             ["-m", "pip", "--version"])):
            return py
    return None


def editable(layout):
    base = editable_python()
    if not base:
        print("no python3 with pip, setuptools and wheel: skipped")
        return SKIP
    pr = Project()
    venv = os.path.join(pr.tmp, "venv")
    pkg = os.path.join(pr.tmp, "mylib-src")
    src = os.path.join(pkg, "src") if layout == "src" else pkg
    write_tree(src, LIBRARY)
    where = '[tool.setuptools.packages.find]\nwhere = ["src"]\n' \
        if layout == "src" else '[tool.setuptools]\npackages = ["mylib"]\n'
    write_tree(pkg, {"pyproject.toml": (
        '[build-system]\nrequires = ["setuptools>=64"]\n'
        'build-backend = "setuptools.build_meta"\n\n'
        '[project]\nname = "mylib"\nversion = "0.1"\n\n' + where)})
    subprocess.run([base, "-m", "venv", "--system-site-packages",
                    "--without-pip", venv], check=True, timeout=300)
    python = os.path.join(venv, "bin", "python")
    p = subprocess.run([base, "-m", "pip", "--python", python, "install",
                        "--no-deps", "--no-build-isolation", "--no-index",
                        "--disable-pip-version-check", "-e", pkg],
                       capture_output=True, text=True, timeout=300)
    check(p.returncode == 0, f"pip install -e: {p.stdout}\n{p.stderr}")
    site = subprocess.run([python, "-c", "import sysconfig; "
                           "print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True,
                          timeout=60).stdout.strip()
    names = os.listdir(site)
    pr.run(python=python)
    rep = pr.expect_user_line()
    if layout == "src":
        check(any(n.startswith("__editable__") and n.endswith(".pth")
                  for n in names), f"no __editable__ .pth: {names}")
        pr.fact(rep, "editable", src)
    else:
        check(any(n.startswith("__editable___") and n.endswith("_finder.py")
                  for n in names), f"no __editable__ finder: {names}")
        pr.fact(rep, "editable", os.path.join(src, "mylib"))


def editable_pth():
    return editable("src")


def editable_finder():
    return editable("flat")


def vendored():
    pr = Project()
    write_tree(os.path.join(pr.proj, "third_party"), LIBRARY)
    pr.run(env={"VENDOR": "third_party"})
    # The project's own tree: its copy's line leads, as decided.
    _, loc = pr.finding()
    check_eq((os.path.relpath(loc["file"], pr.proj), loc["line"]),
             (os.path.join("third_party", "mylib", "loss_utils.py"),
              markers(os.path.join(pr.proj, "third_party", "mylib",
                                   "loss_utils.py"))["library"]),
             "a vendored copy is the project's code by default")
    # Named otherwise: the script is the user's code, the copy is not.
    pr.expect_user_line("--user-code", pr.script, summary=False)
    env = dict(os.environ, LEAKWATCH_USER_CODE=pr.proj + "/train.py")
    p = subprocess.run([CLI, "report", "--format", "json", pr.trace],
                       env=env, capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, p.stderr)
    loc = [f for f in json.loads(p.stdout)["findings"]
           if f["leak"]][0]["location"]
    check_eq(loc["line"], pr.lines["user"],
             "LEAKWATCH_USER_CODE names the user's code")
    # And the shim's own summary, with the variable set for the run.
    pr2 = Project()
    write_tree(os.path.join(pr2.proj, "third_party"), LIBRARY)
    pr2.run(env={"VENDOR": "third_party",
                 "LEAKWATCH_USER_CODE": "train.py"})
    pr2.expect_user_line("--user-code", pr2.script)


# A test of the vendored library's override, for the pytest plugin.
PYTEST_FILE = '''\
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..",
                                "third_party"))
import tinytensor as tt  # noqa: E402
from mylib import loss_utils  # noqa: E402
from mylib.trainer import Trainer  # noqa: E402


class MyTrainer(Trainer):
    def __init__(self, model):
        super().__init__(model)
        self.history = []

    def compute_loss(self, x, y):
        loss = loss_utils.fixed_cross_entropy(self.model(x), y)  # @user
        self.history.append(loss)
        return loss


TRAINER = MyTrainer(tt.Linear(4))


@pytest.mark.leakwatch(max_growth="0", steps=20)
def test_step():
    x = tt.full(4, 1.0)
    with tt.no_grad():    # the kept loss is all that grows
        TRAINER.compute_loss(x, x)
'''


def pytest_option():
    """pytest --leakwatch-user-code: the failure section of a leaking test
    names the override's line, not the vendored copy's it calls."""
    py = next((p for p in ("/usr/bin/python3", sys.executable)
               if os.path.exists(p) and subprocess.run(
                   [p, "-c", "import pytest"],
                   capture_output=True).returncode == 0), None)
    if not py:
        print("no python with pytest: skipped")
        return SKIP
    pr = Project()
    write_tree(os.path.join(pr.proj, "third_party"), LIBRARY)
    test = os.path.join(pr.proj, "tests", "test_train.py")
    write_tree(pr.proj, {"tests/test_train.py": PYTEST_FILE})
    user = markers(test)["user"]
    library = markers(os.path.join(pr.proj, "third_party", "mylib",
                                   "loss_utils.py"))["library"]
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("LEAKWATCH_") and k != "LD_PRELOAD"}
    env.update({"PYTHONPATH": os.pathsep.join([pr.libs,
                                               os.environ["LW_PYTHON_DIR"]]),
                "LEAKWATCH_LIB": LIB, "LEAKWATCH_CLI": CLI,
                "LEAKWATCH_OUT": os.path.join(pr.tmp, "pytest-%p.trace"),
                "PYTHONDONTWRITEBYTECODE": "1"})
    base = [py, "-m", "pytest", "-p", "pytest_leakwatch", "-p",
            "no:cacheprovider", "-q", "--leakwatch", "tests"]

    def section(*extra):
        p = subprocess.run(base + list(extra), cwd=pr.proj, env=env,
                           capture_output=True, text=True, timeout=300)
        check(p.returncode == 1 and
              "what the test's runs left live, by site" in p.stdout,
              f"pytest: {p.returncode}: {p.stdout}\n{p.stderr}")
        return p.stdout
    # The tests' tree is the user's: the vendored copy in it too.
    out = section()
    check(re.search(rf"per run \(\d+ allocations in \d+ runs\) at "
                    rf"fixed_cross_entropy  \S*/third_party/mylib/"
                    rf"loss_utils\.py:{library}$", out, re.M),
          f"by default, the vendored copy's line: {out}")
    out = section("--leakwatch-user-code", "tests")
    check(f"at MyTrainer.compute_loss  {test}:{user}" in out,
          f"--leakwatch-user-code tests names the test's line: {out}")
    p = subprocess.run(base + ["--leakwatch-user-code", "testz"],
                       cwd=pr.proj, env=env, capture_output=True, text=True,
                       timeout=300)
    gone = os.path.join(pr.proj, "testz")
    check(p.returncode == 4 and
          f"--leakwatch-user-code {gone}: no such directory" in p.stderr,
          f"a missing directory: {p.returncode}: {p.stdout}\n{p.stderr}")


def missing():
    """A directory that is not there is named, not ignored: every command
    that takes --user-code stops with one line naming it (exit 2), the
    shim warns once for LEAKWATCH_USER_CODE and the run goes on."""
    pr = Project()
    write_tree(os.path.join(pr.proj, "third_party"), LIBRARY)
    trace = pr.run(env={"VENDOR": "third_party"})
    gone = os.path.join(pr.tmp, "srcc")
    for argv in (["report", "--user-code", gone, trace],
                 ["check", "--max-growth", "1MiB", "--user-code", gone,
                  trace],
                 ["diff", "--user-code", gone, trace, trace],
                 ["run", "--user-code", gone, "--", "true"]):
        p = subprocess.run([CLI] + argv, capture_output=True, text=True,
                           timeout=120)
        check_eq((p.returncode, p.stderr),
                 (2, f"leakwatch: --user-code {gone}: no such directory\n"),
                 f"leakwatch {argv[0]} --user-code MISSING")
    # A script is fine (it names one file as the program's).
    p = subprocess.run([CLI, "report", "--user-code", pr.script, trace],
                       capture_output=True, text=True, timeout=120)
    check_eq(p.returncode, 0, f"--user-code SCRIPT: {p.stderr}")
    for t in os.listdir(pr.tmp):
        if t.endswith(".trace"):
            os.unlink(os.path.join(pr.tmp, t))
    pr.run(env={"VENDOR": "third_party",
                "LEAKWATCH_USER_CODE": "train.py:" + gone})
    warned = [line for line in pr.stderr.splitlines()
              if "LEAKWATCH_USER_CODE" in line]
    check_eq(warned, [f"leakwatch: warning: LEAKWATCH_USER_CODE names "
                      f"{gone}, which does not exist; it is ignored"],
             "the shim's warning")


if __name__ == "__main__":
    status = main(globals())
    if status in (0, SKIP):
        for d in MADE:
            shutil.rmtree(d, ignore_errors=True)
    sys.exit(status)
