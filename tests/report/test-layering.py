#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The layers of the command and of the shim, as the sources say them:

- every format the command lists (report_formats in report/meson.build,
  which makes formats.h's table) is one file of its own,
  report/render/NAME.c, with one struct lw_renderer named lw_NAME_renderer,
  and the table is made from that list alone;
- renderers (the files of report/render/, and analyse/locations.c) read the
  model through model.h's accessors: no member of struct lw_model is named
  after `->` or `.` on a model, and none includes model-parts.h, the
  model's own interface while a trace is read, which only model/ includes;
- each product is rooms in the order its meson.build lists them
  (report_rooms, the commands in report/ itself above them all; shim_rooms),
  and a room includes headers of its own and of lower rooms only: the
  reader never reaches the model or the analysis, the analysis never a
  renderer. An include is judged by the room of the file it names. The few
  includes back up are listed below (UPWARD), each with its reason, and
  each must still be there;
- and a room calls into its own and lower rooms only: from `nm` on a
  product's built objects (--objects, the folders of a product's objects:
  its room is the prefix of an object's name, record_tracker.c.o is
  record/'s), every lw_ symbol an object uses that another object of the
  product defines is defined in the same or a lower room;
- in the shim, every file that exports an entry point (LW_EXPORT) reaches
  the recorder (interpose/record/) through tracker.h alone;
- every room has a README.md and at most ROOM_MAX source files;
- no object of the command calls into main.c, the dispatcher on top
  (nm on the objects, with --objects).
- renderers only format the analysis's result: on the command's built
  objects (`nm`; --objects, the command's folder under report/, and its
  static libraries' beside it), no object of report/render/ calls a
  function defined in report/symbols/ or report/analyse/ but the result's
  accessors, declared in analyse/result.h; and of those rooms' headers a
  file of report/render/ includes result.h and report.h (the trace read)
  alone.

    test-layering.py --root SOURCE_ROOT [--objects BUILD/PRODUCT/X.p]...
"""
import argparse
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
from lwcheck import check, finish  # noqa: E402

HELPERS = ("analyse/locations",)
ROOM_MAX = 15
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

# (product, file, included file): includes of a higher room that stay.
# None: every arrow points down.
UPWARD = set()

# Rooms a renderer reaches only through the result.
RESULT_ROOMS = ("symbols", "analyse")


def check_render_calls(root, folders):
    """Renderers reach symbols/ and analyse/ through the result alone,
    judged from the built objects in folders (the command's, and its core
    library's): an object's room is its file name's prefix
    (render_json.c.o: render), a call an undefined lw_* symbol that
    another object defines."""
    with open(os.path.join(root, "report", "analyse", "result.h")) as f:
        header = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
    accessors = set(re.findall(r"\b(lw_\w+)\s*\(", header))
    check(len(accessors) >= 4,
          f"analyse/result.h declares no accessors: {sorted(accessors)}")
    objects = []
    for folder in folders:
        if check(os.path.isdir(folder), f"{folder}: no such folder"):
            objects += [os.path.join(folder, n)
                        for n in sorted(os.listdir(folder))
                        if n.endswith(".o")]
    room_of = {}	# symbol -> room of the object defining it
    calls = {}	# render object -> its undefined lw_* symbols
    for path in objects:
        name = os.path.basename(path)
        defined, undefined = object_symbols(path)
        room = name.split("_", 1)[0] if "_" in name else ""
        for symbol in defined:
            room_of[symbol] = room
        if room == "render":
            calls[name] = undefined
    check(len(calls) >= 6, f"render objects in {folders}: {sorted(calls)}")
    check(room_of.get("lw_category_name") == "analyse",
          f"analyse/'s objects not read: lw_category_name in "
          f"{room_of.get('lw_category_name')!r}")
    through_result = 0
    for name, undefined in sorted(calls.items()):
        for symbol in sorted(undefined):
            if room_of.get(symbol) not in RESULT_ROOMS:
                continue
            if symbol in accessors:
                through_result += 1
                continue
            check(False, f"report/render: {name} calls {symbol} of "
                  f"{room_of[symbol]}/, not through the result "
                  f"(analyse/result.h)")
    check(through_result > 0, "no renderer reads the result's accessors")


def check_render_includes(root):
    """Of analyse/'s and symbols/' headers, renderers include the result's
    and the report's alone."""
    report = os.path.join(root, "report")
    lower = set()
    for room in RESULT_ROOMS:
        lower |= {n for n in sources(os.path.join(report, room))
                  if n.endswith(".h")}
    check("result.h" in lower, f"no analyse/result.h among {sorted(lower)}")
    folder = os.path.join(report, "render")
    for name in sources(folder):
        with open(os.path.join(folder, name)) as f:
            text = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
        for header in INCLUDE.findall(text):
            check(header not in lower or header in ("result.h", "report.h"),
                  f"report/render/{name} includes {header}: renderers read "
                  f"the analysis through result.h")


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


def rooms_of(root, product, variable):
    """The rooms of product, lowest first, as its meson.build lists them
    in variable."""
    with open(os.path.join(root, product, "meson.build")) as f:
        m = re.search(r"^%s = \[(.*?)\]" % variable, f.read(), re.M | re.S)
    if not check(m, f"{product}/meson.build lists no {variable}"):
        return []
    return re.findall(r"'([\w-]+)'", m.group(1))


def sources(folder):
    return sorted(n for n in os.listdir(folder)
                  if n.endswith((".c", ".h", ".def")))


def check_rooms(root, product, rooms):
    """Checks that no file of product includes a header of a higher room
    (room "" is the product's folder itself, above its rooms when top)."""
    base = os.path.join(root, product)
    where = {}	# file name -> (rank, room)
    files = []
    for rank, room in enumerate(rooms):
        folder = os.path.join(base, room)
        if not check(os.path.isdir(folder), f"{product}/{room}: no folder"):
            continue
        names = sources(folder)
        if room:
            check(os.path.exists(os.path.join(folder, "README.md")),
                  f"{product}/{room} has no README.md")
        count = sum(1 for n in names if n.endswith((".c", ".h")))
        check(count <= ROOM_MAX,
              f"{product}/{room} holds {count} source files (> {ROOM_MAX})")
        for name in names:
            check(name not in where,
                  f"{product}: two files named {name}: an include of it "
                  f"names no one room")
            where[name] = (rank, room)
            files.append((rank, os.path.join(room, name) if room else name))
    upward = {(f, h) for p, f, h in UPWARD if p == product}
    seen = set()
    for rank, path in files:
        with open(os.path.join(base, path)) as f:
            text = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
        for header in INCLUDE.findall(text):
            if header not in where:
                continue	# common/, generated, the system's
            to_rank, to_room = where[header]
            if to_rank <= rank:
                continue
            if (path, header) in upward:
                seen.add((path, header))
                continue
            check(False, f"{product}/{path} includes {header}, of the "
                  f"higher room {to_room or product + '/'}")
    for path, header in sorted(upward - seen):
        check(False, f"{product}/{path} no longer includes {header}: take "
              f"it off UPWARD in test-layering.py")
    return where


def room_of_object(name, rooms):
    """The room of a built object, by its name's prefix: "record" for
    record_tracker.c.o; None for code beside the rooms (common/, whose
    objects' names start with ".."); the product's own folder ("", when
    a room) for any other name."""
    prefix = name.split("_", 1)[0] if "_" in name else ""
    if prefix in rooms and prefix:
        return prefix
    if name.startswith(".."):
        return None
    return "" if "" in rooms else None


def object_symbols(path):
    """The lw_ symbols an object defines (global) and those it uses."""
    out = subprocess.run(["nm", path], capture_output=True, text=True,
                         check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        fields = line.split()
        if not fields or not fields[-1].startswith("lw_"):
            continue
        if len(fields) == 2 and fields[0] == "U":
            used.add(fields[1])
        elif len(fields) == 3 and fields[1].isupper():
            defined.add(fields[2])
    return defined, used


def check_calls(product, rooms, folders):
    """Checks that no object of product calls (or reads) an lw_ symbol
    another of its objects defines in a higher room. rooms: lowest first;
    code beside them (common/) counts as below them all. Returns how many
    objects were read."""
    rank = {room: n for n, room in enumerate(rooms)}
    objects = []	# (name, rank, room, used)
    owner = {}	# symbol -> (rank, room, object)
    for folder in folders:
        if not check(os.path.isdir(folder),
                     f"{product}: no folder of objects {folder}"):
            continue
        for name in sorted(os.listdir(folder)):
            if not name.endswith(".o"):
                continue
            room = room_of_object(name, rooms)
            r = -1 if room is None else rank[room]
            defined, used = object_symbols(os.path.join(folder, name))
            for symbol in defined:
                owner[symbol] = (r, room, name)
            objects.append((name, r, room, used))
    for name, r, room, used in objects:
        for symbol in sorted(used):
            if symbol not in owner:
                continue	# another product's, the system's
            to_rank, to_room, to_name = owner[symbol]
            check(to_rank <= r,
                  f"{product}: {name} ({room or product + '/'}) calls "
                  f"{symbol}, of {to_name} in the higher room "
                  f"{to_room or product + '/'}")
    return len(objects)


def check_entry_points(root, where):
    """The shim's exported entry points reach record/ through tracker.h."""
    base = os.path.join(root, "interpose")
    exporters = 0
    for dirpath, _, names in os.walk(base):
        for name in names:
            if not name.endswith(".c"):
                continue
            path = os.path.join(dirpath, name)
            with open(path) as f:
                text = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
            if "LW_EXPORT" not in text:
                continue
            exporters += 1
            rel = os.path.relpath(path, base)
            for header in INCLUDE.findall(text):
                room = where.get(header, (0, ""))[1]
                check(room != "record" or header == "tracker.h",
                      f"interpose/{rel} exports, and reaches the recorder "
                      f"through {header}, not tracker.h")
    check(exporters >= 6, f"files of the shim that export: {exporters}")


def check_no_calls_into_main(objects):
    """No object of the command calls a function main.c defines: main.c is
    the dispatcher on top, and what the commands share is below it (cli/,
    commands.h's files). objects: the command's object folder
    (build/report/leakwatch.p)."""
    names = sorted(n for n in os.listdir(objects) if n.endswith(".o"))
    main = [n for n in names if n == "main.c.o"]
    if not check(main, f"{objects}: no main.c.o"):
        return
    defined = object_symbols(os.path.join(objects, main[0]))[0]
    check(names != main, f"{objects}: only main.c.o")
    for n in names:
        if n == "main.c.o":
            continue
        for name in object_symbols(os.path.join(objects, n))[1]:
            check(name not in defined,
                  f"report/{n[:-2].replace('_', '/', 1)} calls {name}, "
                  f"which main.c defines")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--objects", action="append", default=[],
                    help="a folder of a product's built objects, "
                    "BUILD/PRODUCT/NAME.p")
    args = ap.parse_args()
    report = os.path.join(args.root, "report")

    report_rooms = rooms_of(args.root, "report", "report_rooms")
    check(report_rooms[:1] == ["read"] and "render" in report_rooms,
          f"report_rooms: {report_rooms}")
    check_rooms(args.root, "report", report_rooms + [""])
    shim_rooms = rooms_of(args.root, "interpose", "shim_rooms")
    check({"hooks", "record"} <= set(shim_rooms)
          and shim_rooms.index("hooks") > shim_rooms.index("record"),
          f"shim_rooms: {shim_rooms}")
    check_entry_points(args.root, check_rooms(args.root, "interpose",
                                              shim_rooms))
    # The calls, product by product, of each product whose objects are
    # passed (BUILD/PRODUCT/NAME.p); the shim's always.
    product_rooms = {"interpose": shim_rooms, "report": report_rooms + [""]}
    folders = {}
    for folder in args.objects:
        product = os.path.basename(os.path.dirname(os.path.abspath(folder)))
        folders.setdefault(product, []).append(folder)
    check("interpose" in folders, "no --objects of the shim")
    check("report" in folders, "no --objects of the command (report/)")
    for folder in folders.get("report", []):
        check_no_calls_into_main(folder)
    # The command's objects, and its static libraries' beside them
    # (analyse/rules.c and growth.c are in its core library).
    report_objects = []
    for folder in folders.get("report", []):
        parent = os.path.dirname(os.path.normpath(folder))
        if os.path.basename(parent) != "report":
            continue
        report_objects.append(folder)
        report_objects += sorted(
            os.path.join(parent, n) for n in os.listdir(parent)
            if n.endswith(".a.p") and os.path.join(parent, n)
            not in report_objects)
    folders["report"] = report_objects
    for product in sorted(folders):
        if not check(product in product_rooms,
                     f"--objects of an unknown product: {product}"):
            continue
        objects = check_calls(product, product_rooms[product],
                              folders[product])
        check(objects >= (30 if product == "interpose" else 1),
              f"objects of {product} read: {objects}")
    # model-parts.h is the model's own, while a trace is read.
    for dirpath, _, names in os.walk(report):
        for name in names:
            if not name.endswith((".c", ".h")):
                continue
            rel = os.path.relpath(os.path.join(dirpath, name), report)
            with open(os.path.join(dirpath, name)) as f:
                text = f.read()
            check('#include "model-parts.h"' not in text
                  or rel.startswith("model/"),
                  f"report/{rel} includes model-parts.h, the model's own")

    with open(os.path.join(report, "meson.build")) as f:
        build = f.read()
    names = re.findall(r"'(\w+)'", re.search(r"^report_formats = \[(.*?)\]",
                                            build, re.M | re.S).group(1))
    check(len(names) >= 6, f"formats in report_formats: {names}")
    with open(os.path.join(report, "render", "formats.h")) as f:
        check("#define LW_FORMATS(X) LW_FORMAT_LIST(X)" in f.read(),
              "formats.h's table is not made from report_formats")
    for name in names:
        check(f"'{name}.c'" not in build,
              f"{name}.c is also listed by hand in report/meson.build")
    with open(os.path.join(report, "model", "model.h")) as f:
        members = model_members(f.read())
    check({"meta", "counts", "sites", "points", "peak"} <= members,
          f"struct lw_model's members were not read: {sorted(members)}")
    access = re.compile(r"\b(?:m|model)(?:->|\.)(%s)\b"
                        % "|".join(sorted(members)))

    renderers = ["render/" + n for n in names]
    helpers = ["render/" + n[:-2] for n in sources(os.path.join(report,
                                                                "render"))
               if n.endswith(".c") and "render/" + n[:-2] not in renderers]
    check("render/text-torch" in helpers, f"render/'s helpers: {helpers}")
    for name in renderers + helpers + list(HELPERS):
        path = os.path.join(report, name + ".c")
        if not check(os.path.exists(path), f"{name}: no report/{name}.c"):
            continue
        with open(path) as f:
            text = f.read()
        if name in renderers:
            name = os.path.basename(name)
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
    check_render_calls(args.root, report_objects)
    check_render_includes(args.root)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
