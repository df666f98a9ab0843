#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The docs against what they describe:

- the option tables of docs/reference.md name exactly the options of each
  command's `leakwatch help COMMAND`;
- every option written anywhere in README.md or docs/ is a real option of
  leakwatch or of the pytest plugin (read from its pytest_addoption), or
  one of the other tools' options listed below;
- every LEAKWATCH_* variable the code reads is in the reference's table,
  and every one the docs name is read somewhere;
- every field the reference's JSON section names is in
  docs/report.schema.json;
- README.md is at most 250 lines, and every relative link in the README
  and docs/ leads to a file and, with #anchor, to a heading there.

    test-docs.py --leakwatch PATH
"""
import argparse
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
from lwcheck import check, failures  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
COMMANDS = ("report", "check", "diff", "run")
# Options of other programs that the docs show in their command lines.
OTHER_TOOLS = {
    "meson": {"--benchmark", "--suite", "--verbose", "--prefix", "--setup"},
    "pip": {"--user", "--target"},
    "torchrun": {"--nproc-per-node"},
    "the demo's programs": {"--epochs", "--steps"},
    "scripts/bench.sh": {"--quick"},
    "valgrind": {"--tool"},
    "tests/bench/bench-all.py and bench-torch.py": {"--configs", "--parts",
                                                    "--runs", "--steps"},
    "tests/bench/bench-week.py": {"--every", "--full-steps"},
    "tests/torch/test_libraries.py": {"--bare"},
}
OPTION = re.compile(r"(?<![\w./-])(--?[a-zA-Z][\w-]*)")


def read(path):
    with open(os.path.join(ROOT, path)) as f:
        return f.read()


def options_in(text):
    return {m for m in OPTION.findall(text) if m.startswith("--") or len(m) == 2}


def help_options(leakwatch, command):
    """The options of `leakwatch help COMMAND`: the first column of its
    option list (lines indented by two, up to the first two spaces)."""
    out = subprocess.run([leakwatch, "help", command], check=True, text=True,
                         stdout=subprocess.PIPE).stdout
    found = set()
    for line in out.splitlines():
        m = re.match(r"  (-.*?)(?:  |$)", line)
        if m:
            found |= options_in(m.group(1))
    return found - {"-h", "--help"}


def reference_tables(text):
    """{command: options} from the tables after "`COMMAND` options" lines
    (and the options that line itself names, "as for `report`")."""
    tables = {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"`(\w+)` options", line)
        if not m:
            continue
        found = options_in(line[m.end():])
        for row in lines[i + 1:]:
            if row.startswith("|"):
                found |= options_in(row.split("|")[1])
            elif row.strip() and found:
                break
        tables[m.group(1)] = found
    return tables


def variables(*dirs):
    """LEAKWATCH_* names quoted in C or Python, or expanded in shell."""
    found = set()
    for d in dirs:
        for dirpath, _, files in os.walk(os.path.join(ROOT, d)):
            for f in files:
                if f.endswith((".c", ".h", ".py", ".sh", ".build")) or \
                        f == "run":
                    with open(os.path.join(dirpath, f)) as fh:
                        found |= set(re.findall(
                            r'["\'{$](LEAKWATCH_[A-Z_]+)', fh.read()))
    return found


def slug(heading):
    s = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return s.replace(" ", "-")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--leakwatch", required=True)
    args = p.parse_args()

    pages = ["README.md"] + sorted(
        "docs/" + f for f in os.listdir(os.path.join(ROOT, "docs"))
        if f.endswith(".md"))
    texts = {page: read(page) for page in pages}
    reference = texts["docs/reference.md"]

    # The reference's tables and the command's help.
    real = {c: help_options(args.leakwatch, c) for c in COMMANDS}
    tables = reference_tables(reference)
    for c in COMMANDS:
        check(c in tables, f"reference: no table of `{c}` options")
        check(tables.get(c) == real[c],
              f"reference: `{c}` options {sorted(tables.get(c, ()))} "
              f"but its help has {sorted(real[c])}")

    # Options anywhere in the docs.
    plugin = set(re.findall(r'addoption\("(--[\w-]+)"',
                            read("python/pytest_leakwatch.py")))
    check("--leakwatch" in plugin, "the plugin's options were not found")
    known = set().union(*real.values(), plugin, *OTHER_TOOLS.values(),
                        {"-h", "--help", "--version"})
    for page, text in texts.items():
        code = " ".join(re.findall(r"`([^`]+)`", text) +
                        re.findall(r"^    .*$", text, re.M))
        for opt in sorted(options_in(code) - known):
            if opt.startswith("--") or opt in ("-o", "-h"):
                check(False, f"{page}: {opt} is no option of leakwatch")

    # Environment variables: those of the product must be in the reference;
    # those the docs name must be read by the product, its tests or CI.
    read_by_code = variables("interpose", "report", "common", "python",
                             "scripts")
    read_anywhere = read_by_code | variables("tests", ".ci")
    check(len(read_by_code) >= 10, f"variables found in the code: {read_by_code}")
    table = set(re.findall(r"^\| `(LEAKWATCH_[A-Z_]+)`", reference, re.M))
    for v in sorted(read_by_code - table):
        check(False, f"reference: {v} is read by the code but not documented")
    for page, text in texts.items():
        for v in sorted(set(re.findall(r"\bLEAKWATCH_[A-Z_]+\b", text)) -
                        read_anywhere):
            check(False, f"{page}: {v} is read by no code")

    # JSON fields the reference names.
    with open(os.path.join(ROOT, "docs", "report.schema.json")) as f:
        schema_keys = set(re.findall(r'^\s*"(\w+)": \{', f.read(), re.M))
    json_part = reference.split("## The JSON report", 1)[-1]
    named = set(re.findall(r"`([a-z_]+)`", json_part))
    values = {"device", "managed", "pinned_host", "host_registered", "api",
              "optimizer", "loop", "inferred", "none", "leakwatch", "user",
              "no_caching", "kept", "stride", "true"}
    for field in sorted(named - schema_keys - values):
        check(False, f"reference: JSON field {field} is not in the schema")

    # The README's length, and links.
    readme_lines = texts["README.md"].count("\n")
    check(readme_lines <= 250, f"README.md has {readme_lines} lines")
    for page, text in texts.items():
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"\w+://", target):
                continue
            path, _, anchor = target.partition("#")
            full = os.path.normpath(os.path.join(ROOT, os.path.dirname(page),
                                                 path)) if path else \
                os.path.join(ROOT, page)
            check(os.path.exists(full), f"{page}: link to {target}: no file")
            if anchor and full.endswith(".md") and os.path.exists(full):
                with open(full) as f:
                    slugs = {slug(h) for h in
                             re.findall(r"^#+ (.*)$", f.read(), re.M)}
                check(anchor in slugs, f"{page}: link to {target}: no heading")

    if failures:
        print(f"{len(failures)} failures")
        return 1
    print(f"ok: {len(pages)} pages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
