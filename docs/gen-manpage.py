#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes leakwatch(1) from the command's own help, so that the two never
disagree: `leakwatch --help` gives the synopsis, the description and the
exit status; `leakwatch help COMMAND` each command's section.

    gen-manpage.py LEAKWATCH OUTPUT
"""
import re
import subprocess
import sys

COMMANDS = ["run", "report", "check", "diff"]


def helptext(cli, *args):
    return subprocess.run([cli, *args], check=True, capture_output=True,
                          text=True).stdout


def roff(text):
    """Text as roff: backslashes escaped, no line starting a request."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return re.sub(r"^([.'])", r"\\&\1", text, flags=re.M)


def blocks(text):
    """(kind, lines) for each block of a help text: "usage", "options" or
    "text", split at blank lines."""
    for block in text.strip("\n").split("\n\n"):
        lines = block.split("\n")
        if lines[0].startswith("usage:"):
            yield "usage", lines
        elif lines[0].startswith("  -"):
            yield "options", lines
        else:
            yield "text", lines


def options(lines):
    """.TP entries from "  --opt ARG   meaning" lines and their
    continuations (indented further)."""
    out = []
    for line in lines:
        m = re.match(r"  (-\S.*?)(?:\s{2,}(.*))?$", line)
        if m:
            out += [".TP", ".B " + roff(m.group(1))]
            if m.group(2):
                out.append(roff(m.group(2)))
        else:
            out.append(roff(line.strip()))
    return out


def usage(lines):
    out = [".nf"]
    for line in lines:
        out.append(roff(re.sub(r"^usage: |^       ", "", line)))
    return out + [".fi"]


def section(text, skip_usage=False):
    out = []
    for kind, lines in blocks(text):
        if kind == "usage":
            if not skip_usage:
                out += usage(lines)
        elif kind == "options":
            out += options(lines)
        else:
            out += [".PP", roff(" ".join(line.strip() for line in lines))]
    return out


def main():
    cli, output = sys.argv[1:3]
    version = helptext(cli, "--version").split()[-1]
    top = list(blocks(helptext(cli, "--help")))
    page = [
        f'.TH LEAKWATCH 1 "" "leakwatch {version}" "User Commands"',
        ".SH NAME",
        "leakwatch \\- find GPU memory leaks in training jobs",
        ".SH SYNOPSIS",
    ]
    page += usage(next(lines for kind, lines in top if kind == "usage"))
    page.append(".SH DESCRIPTION")
    status = []
    for kind, lines in top:
        if kind == "text":
            para = roff(" ".join(line.strip() for line in lines))
            (status if lines[0].startswith("Exit status") else page).extend(
                [".PP", para])
    page.append(".SH COMMANDS")
    for name in COMMANDS:
        sub = helptext(cli, "help", name)
        page += [f".SS leakwatch {name}"]
        page += section(sub)
    page += [".SH EXIT STATUS"] + status
    page += [".SH SEE ALSO",
             "The user guide and reference: docs/ in leakwatch's sources."]
    with open(output, "w") as f:
        f.write("\n".join(page) + "\n")


if __name__ == "__main__":
    main()
