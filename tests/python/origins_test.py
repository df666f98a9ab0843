#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The reader of where Python code comes from (scripts/leakwatch/
_origins.py), without the shim, in an interpreter set up for it: a site
directory with .pth files (one that adds a directory, one of setuptools'
__editable__ ones, one whose import line must not run), PYTHONPATH, a
sys.path entry that holds an installed distribution, editable finders in
sys.modules (one a module subclass whose attribute hooks must not run, one
not a module at all), a main script inside a git tree. Checks the facts it
returns, that it runs none of that code and imports nothing (nor asks the
program's import hooks, with sysconfig's variables not read yet), and that each
fact comes once until a fresh start.

    origins_test.py SCRIPTS_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
from lwcheck import check, check_eq, finish  # noqa: E402

# Run in the child: argv[1] the scripts directory, argv[2] the site dir.
CHILD = r'''
import json, os, site, sys, types

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
site.getsitepackages = lambda: [sys.argv[2]]


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
sys.meta_path.insert(0, Finder())
sys.path.append(os.path.join(os.path.dirname(sys.argv[2]), "installed"))
# Compiled alone, as the shim does, not through the leakwatch package.
_origins = types.ModuleType("origins")
with open(os.path.join(sys.argv[1], "leakwatch", "_origins.py")) as f:
    exec(compile(f.read(), "<leakwatch origins>", "exec"), _origins.__dict__)
before = set(sys.modules)
del ran[:]

first = _origins.facts(True)
again = _origins.facts(False)
fresh = _origins.facts(True)
print(json.dumps({
    "facts": [[k, os.fsdecode(p), os.fsdecode(n)] for k, p, n in first],
    "again": len(again),
    "fresh": len(fresh),
    "ran": ran,
    "imported": sorted(set(sys.modules) - before),
}))
'''


def main():
    scripts = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="lw-origins-") as tmp:
        tmp = os.path.realpath(tmp)
        site_dir = os.path.join(tmp, "site")
        added = os.path.join(tmp, "added")
        editable = os.path.join(tmp, "editable-src")
        installed = os.path.join(tmp, "installed")
        project = os.path.join(tmp, "project")
        for d in (site_dir, added, editable, project + "/.git",
                  project + "/bin", installed + "/lib-1.0.dist-info",
                  tmp + "/pp"):
            os.makedirs(d)
        with open(os.path.join(site_dir, "plain.pth"), "w") as f:
            f.write("# a comment\n../added\n/nonexistent/dir\n"
                    "import sys; sys.stdout.write('RAN ')\n")
        with open(os.path.join(site_dir, "__editable__.lib-1.0.pth"),
                  "w") as f:
            f.write(editable + "\n")
        script = os.path.join(project, "bin", "child.py")
        with open(script, "w") as f:
            f.write(CHILD)
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "PYTHONHOME")}
        env["PYTHONPATH"] = tmp + "/pp"
        p = subprocess.run([sys.executable, "-s", script, scripts, site_dir],
                           cwd=tmp, env=env, capture_output=True, text=True,
                           timeout=60)
        check(p.returncode == 0 and not p.stdout.startswith("RAN"),
              f"the child: {p.returncode}: {p.stdout}{p.stderr}")
        if p.returncode != 0:
            return finish()
        out = json.loads(p.stdout)
        facts = {(k, path, name) for k, path, name in out["facts"]}
        kinds = {k for k, _, _ in facts}
        want = [
            (5, added, "plain.pth"),
            (6, editable, "__editable__.lib-1.0.pth"),
            (6, "/opt/trap/src/trap", "trap"),
            (6, "/opt/plain/plain", "plain"),
            (4, tmp + "/pp", ""),
            (7, installed, ""),
            (9, script, ""),
            (10, tmp, ""),
            (11, project, "script"),
        ]
        for fact in want:
            check(fact in facts, f"no fact {fact}: {sorted(facts)}")
        check({1, 2, 12} <= kinds, f"standard library, site and scripts "
              f"directories: {sorted(kinds)}")
        check(not any(path == "/nonexistent/dir" or path == "/not/a/name"
                      for _, path, _ in facts),
              "a .pth line that is not a directory, or a mapping whose key "
              "is not a name, is a fact")
        check(not any(k == 8 and path in (added, editable)
                      for k, path, _ in facts),
              "directories from .pth files are also plain sys.path entries")
        check_eq(out["ran"], [], "code of the program that ran")
        check_eq(out["imported"], [], "modules imported")
        check_eq(out["again"], 0, "facts returned twice")
        check_eq(out["fresh"], len(out["facts"]), "facts after a fresh start")
        check_eq(len(out["facts"]), len(facts), "each fact once")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
