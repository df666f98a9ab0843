#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The report's layers, as the sources say them:

- every format the command lists (report_formats in report/meson.build,
  which makes formats.h's table) is one file of its own, report/NAME.c,
  with one struct lw_renderer named lw_NAME_renderer, and the table is
  made from that list alone;
- renderers (those files, and the helpers they share: text-torch.c,
  locations.c) read the model through model.h's accessors: no member of
  struct lw_model is named after `->` or `.` on a model, and none includes
  model-parts.h, the model's own interface while a trace is read.

    test-layering.py --root SOURCE_ROOT
"""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
from lwcheck import check, finish  # noqa: E402

HELPERS = ("text-torch", "locations")


def model_members(header):
    """The member names of struct lw_model in model.h."""
    body = re.search(r"^struct lw_model \{\n(.*?)^\};", header,
                     re.S | re.M).group(1)
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    names = set()
    for decl in body.split(";"):
        m = re.search(r"(\w+)\s*(\[[^\]]*\])?\s*$", decl.strip())
        if m:
            names.add(m.group(1))
    return names


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    args = ap.parse_args()
    report = os.path.join(args.root, "report")

    with open(os.path.join(report, "meson.build")) as f:
        build = f.read()
    names = re.findall(r"'(\w+)'", re.search(r"^report_formats = \[(.*?)\]",
                                            build, re.M | re.S).group(1))
    check(len(names) >= 6, f"formats in report_formats: {names}")
    with open(os.path.join(report, "formats.h")) as f:
        check("#define LW_FORMATS(X) LW_FORMAT_LIST(X)" in f.read(),
              "formats.h's table is not made from report_formats")
    for name in names:
        check(f"'{name}.c'" not in build,
              f"{name}.c is also listed by hand in report/meson.build")
    with open(os.path.join(report, "model.h")) as f:
        members = model_members(f.read())
    check({"meta", "counts", "sites", "points", "peak"} <= members,
          f"struct lw_model's members were not read: {sorted(members)}")
    access = re.compile(r"\b(?:m|model)(?:->|\.)(%s)\b"
                        % "|".join(sorted(members)))

    for name in names + list(HELPERS):
        path = os.path.join(report, name + ".c")
        if not check(os.path.exists(path), f"{name}: no report/{name}.c"):
            continue
        with open(path) as f:
            text = f.read()
        if name in names:
            check(re.search(r"const struct lw_renderer lw_%s_renderer\b"
                            % name, text),
                  f"{name}.c defines no lw_{name}_renderer")
        check('#include "model-parts.h"' not in text,
              f"{name}.c includes model-parts.h")
        code = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
        for n, line in enumerate(code.splitlines(), 1):
            for hit in access.finditer(line):
                check(False, f"{name}.c:{n}: reads the model's member "
                      f"'{hit.group(1)}' directly: {line.strip()}")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
