#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`meson install`: what it installs, and that the installed command finds
its shim and rules relative to itself after the whole tree is moved.

    test-install.py BUILD_DIR PROGRAM

PROGRAM allocates on the stand-in runtime and marks steps (leaky_loop).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
from lwcheck import check, failures  # noqa: E402


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def installed_options(cli, command):
    """The options `leakwatch help COMMAND` lists."""
    out = run([cli, "help", command]).stdout
    return set(re.findall(r"^  (?:-\w, )?(--[a-z-]+)", out, re.M))


def main():
    build, program = sys.argv[1:3]
    tmp = tempfile.mkdtemp(prefix="lw-install-")
    try:
        dest = os.path.join(tmp, "dest")
        p = run(["meson", "install", "-C", build, "--no-rebuild", "--quiet",
                 "--destdir", dest])
        if p.returncode != 0:
            print(p.stdout, p.stderr)
            return 1
        intro = json.loads(run(["meson", "introspect", build,
                                "--buildoptions"]).stdout)
        opt = {o["name"]: o["value"] for o in intro}
        prefix = dest + opt["prefix"]
        libdir = os.path.join(prefix, opt["libdir"])
        expect = [
            os.path.join(prefix, opt["bindir"], "leakwatch"),
            os.path.join(libdir, "libleakwatch.so"),
            os.path.join(prefix, opt["includedir"], "leakwatch.h"),
            os.path.join(libdir, "pkgconfig", "leakwatch.pc"),
            os.path.join(prefix, opt["datadir"], "leakwatch", "rules.conf"),
            os.path.join(prefix, opt["mandir"], "man1", "leakwatch.1"),
        ]
        for path in expect:
            check(os.path.isfile(path), f"installed: {path}")
        if failures:
            return 1

        # The installation moved elsewhere: the command still finds its
        # shim and rules, relative to itself.
        moved = os.path.join(tmp, "moved")
        shutil.move(prefix, moved)
        cli = os.path.join(moved, opt["bindir"], "leakwatch")
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("LEAKWATCH_") and k != "LD_PRELOAD"}
        work = os.path.join(tmp, "work")
        os.mkdir(work)
        p = run([cli, "run", "--format", "json", "-o", "report.json", "--",
                 program], cwd=work, env=env)
        check(p.returncode == 0, f"run from the moved tree: {p.stderr}")
        check("rules.conf not found" not in p.stderr,
              f"the moved tree's rules are found: {p.stderr}")
        try:
            report = json.load(open(os.path.join(work, "report.json")))
        except (OSError, ValueError) as e:
            check(False, f"the report of the moved tree's run: {e}")
            return 1
        check(report["allocations"] > 0, "the shim recorded the program")
        check(any(f["fix"] for f in report["findings"] if f["leak"]),
              "the shipped rules worded the fix")

        # pkg-config: the header's flags, and where the shim is.
        pc_dir = os.path.join(moved, opt["libdir"], "pkgconfig")
        pkg_config = ["pkg-config", f"--define-variable=prefix={moved}"]
        pc_env = dict(env, PKG_CONFIG_PATH=pc_dir)
        pc = run(pkg_config + ["--cflags", "leakwatch"], env=pc_env)
        check(pc.returncode == 0, f"pkg-config: {pc.stderr}")
        check(os.path.join(moved, opt["includedir"]) in pc.stdout,
              f"pkg-config --cflags names the include dir: {pc.stdout}")
        for name, path in (("shim", "libleakwatch.so"),
                           ("rules", "rules.conf")):
            pc = run(pkg_config + [f"--variable={name}", "leakwatch"],
                     env=pc_env)
            check(os.path.basename(pc.stdout.strip()) == path and
                  os.path.isfile(pc.stdout.strip()),
                  f"pkg-config's {name} is the installed {path}: {pc.stdout}")
        cc = shutil.which("cc")
        if cc:
            src = os.path.join(tmp, "mark.c")
            with open(src, "w") as f:
                f.write("#include <leakwatch.h>\n"
                        "int main(void) { leakwatch_mark_step(); return 0; }\n")
            flags = run(pkg_config + ["--cflags", "--libs", "leakwatch"],
                        env=pc_env).stdout.split()
            c = run([cc, src, "-o", os.path.join(tmp, "mark"), *flags])
            check(c.returncode == 0, f"a program built with pkg-config's flags: {c.stderr}")

        # The man page holds every option of every command's --help.
        page = open(os.path.join(moved, opt["mandir"], "man1",
                                 "leakwatch.1")).read().replace("\\-", "-")
        for command in ("run", "report", "check", "diff"):
            options = installed_options(cli, command)
            check(len(options) >= 2, f"{command} lists options")
            check(f".SS leakwatch {command}" in page,
                  f"the man page has a section for {command}")
            for option in options:
                check(option in page, f"the man page names {command} {option}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
