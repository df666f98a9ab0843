#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The reference (docs/reference.md) and `--help` agree.

- The reference's synopsis (the first code block under "The `leakwatch`
  command") is, whitespace aside, the one `leakwatch --help` prints;
- each command's own help starts with the same synopsis as `--help`;
- every option of `leakwatch help COMMAND` (short and long) is named in the
  reference's section on the commands, and every size unit `check`
  accepts.
"""
import argparse
import re
import subprocess
import sys

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def synopses(lines):
    """{command: its synopsis, whitespace collapsed} from lines that hold
    one entry per "leakwatch COMMAND" (continuations indented)."""
    out, current = {}, None
    for line in lines:
        m = re.match(r"\s*(?:usage: )?leakwatch (\S+)", line)
        if m:
            current = m.group(1)
            out[current] = line.strip().removeprefix("usage: ")
        elif current and line.strip():
            out[current] += " " + line.strip()
    return {k: " ".join(v.split()) for k, v in out.items()}


def help_text(lw, *argv):
    p = subprocess.run([lw, *argv], capture_output=True, text=True,
                       timeout=60)
    if p.returncode != 0:
        fail(f"leakwatch {' '.join(argv)}: exit {p.returncode}")
    return p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--leakwatch", required=True)
    ap.add_argument("--reference", required=True)
    args = ap.parse_args()
    readme = open(args.reference, encoding="utf-8").read()
    m = re.search(r"^## The `leakwatch` command\n(.*?)^## ", readme,
                  re.S | re.M)
    if not m:
        fail("reference: no section 'The `leakwatch` command'")
        return 1
    section = m.group(1)
    block = re.search(r"\n((?:    .*\n)+)", section).group(1)
    in_readme = synopses(block.splitlines())

    top = help_text(args.leakwatch, "--help").split("\n\n")[0]
    in_help = synopses(top.splitlines())
    if in_help != in_readme:
        for cmd in sorted(set(in_help) | set(in_readme)):
            if in_help.get(cmd) != in_readme.get(cmd):
                fail(f"synopsis of {cmd}: --help {in_help.get(cmd)!r}, "
                     f"reference {in_readme.get(cmd)!r}")

    for cmd in ("report", "check", "diff", "run"):
        own = help_text(args.leakwatch, "help", cmd)
        first = synopses(own.split("\n\n")[0].splitlines())
        if first.get(cmd) != in_help.get(cmd):
            fail(f"`help {cmd}` synopsis {first.get(cmd)!r} is not "
                 f"--help's {in_help.get(cmd)!r}")
        for line in own.splitlines():
            if not re.match(r"  -", line):
                continue
            for opt in re.findall(r"(?<![\w-])(--?[a-z][a-z-]*)", line):
                if not re.search(rf"`{re.escape(opt)}[` ]", section):
                    fail(f"the reference does not name {cmd}'s {opt} ({line.strip()})")

    units = re.search(r"decimal units: ([^;]*); binary: ([^)]*)\)",
                      " ".join(help_text(args.leakwatch, "help",
                                         "check").split()))
    if not units:
        fail("`help check` lists no size units")
    else:
        names = re.findall(r"[A-Za-z]+", units.group(1) + " " +
                           units.group(2).replace(" or ", " "))
        for unit in names:
            if f"`{unit}`" not in section:
                fail(f"the reference does not name the size unit {unit}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
