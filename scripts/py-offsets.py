#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Prints the CPython struct offsets that interpose/python/pyframes.c reads.

Run by hand, never by the build. For every CPython include directory given
(or, with no arguments, every one found under ~/.pyenv/versions and
/usr/include), it compiles a small probe against that version's headers,
internal ones included (Py_BUILD_CORE), runs it, and prints one C initialiser
per minor version for the `layouts` table in interpose/python/pyframes.c. When
several patch releases of one minor version are given, it checks that they
agree and fails if they do not (the table has one entry per minor version).

    python3 scripts/py-offsets.py [INCLUDE_DIR...] > /tmp/layouts.txt
    python3 scripts/py-offsets.py --walk [INCLUDE_DIR...]

With --walk it prints the offsets of interpose/holders/walk.c's table instead.

INCLUDE_DIR is the directory holding Python.h, e.g.
/root/.pyenv/versions/3.12.1/include/python3.12. The compiler is $CC or cc.
"""

import glob
import os
import re
import subprocess
import sys
import tempfile

PROBE = r"""
#define Py_BUILD_CORE 1
#include <Python.h>
#include <frameobject.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#if PY_VERSION_HEX >= 0x030B0000
#include <internal/pycore_frame.h>
#endif
#include <internal/pycore_runtime.h>

#define OFF(type, field) ((int)offsetof(type, field))

/* Mask of a bit-field of PyASCIIObject.state: set it to all ones in a zeroed
 * object and read the 32-bit word back. */
#define STATE_MASK(field, ones) do { \
	PyASCIIObject o; \
	unsigned int word; \
	memset(&o, 0, sizeof(o)); \
	o.state.field = ones; \
	memcpy(&word, (char *)&o + offsetof(PyASCIIObject, state), sizeof(word)); \
	printf(#field "_mask 0x%x\n", word); \
} while (0)

int main(void)
{
	printf("version %s\n", PY_VERSION);
	printf("minor %d\n", PY_MINOR_VERSION);
#if PY_VERSION_HEX < 0x030B0000
	printf("frame_kind PY_FRAME_OBJECT\n");
	printf("gen_frame %d\n", OFF(PyGenObject, gi_frame));
	printf("gen_frame_state -1\n");
	printf("tstate_frame %d\n", OFF(PyThreadState, frame));
	printf("cframe_current_frame -1\n");
	printf("frame_previous %d\n", OFF(PyFrameObject, f_back));
	printf("frame_code %d\n", OFF(PyFrameObject, f_code));
	printf("frame_instr %d\n", OFF(PyFrameObject, f_lasti));
	printf("frame_owner -1\nframe_is_entry -1\n");
	printf("owner_generator -1\nowner_cstack -1\n");
	printf("code_name %d\n", OFF(PyCodeObject, co_name));
	printf("code_start -1\ncode_first_traceable -1\n");
	printf("frameobj_frame -1\n");
	printf("frame_localsplus %d\n", OFF(PyFrameObject, f_localsplus));
	printf("code_nlocalsplus %d\n", OFF(PyCodeObject, co_nlocals));
	printf("code_localsplusnames %d\n", OFF(PyCodeObject, co_varnames));
	printf("code_localspluskinds -1\n");
	printf("code_cellvars %d\n", OFF(PyCodeObject, co_cellvars));
	printf("code_freevars %d\n", OFF(PyCodeObject, co_freevars));
#if PY_VERSION_HEX < 0x030A0000
	printf("line_format PY_LINES_LNOTAB\n");
	printf("code_line_table %d\n", OFF(PyCodeObject, co_lnotab));
#else
	printf("line_format PY_LINES_310\n");
	printf("code_line_table %d\n", OFF(PyCodeObject, co_linetable));
#endif
#else
	printf("line_format PY_LINES_LOCATIONS\n");
	printf("gen_frame %d\n", OFF(PyGenObject, gi_iframe));
	printf("gen_frame_state %d\n", OFF(PyGenObject, gi_frame_state));
#if PY_VERSION_HEX < 0x030D0000
	printf("tstate_frame %d\n", OFF(PyThreadState, cframe));
	printf("cframe_current_frame %d\n", OFF(_PyCFrame, current_frame));
	printf("frame_code %d\n", OFF(_PyInterpreterFrame, f_code));
	printf("frame_instr %d\n", OFF(_PyInterpreterFrame, prev_instr));
#else
	printf("tstate_frame %d\n", OFF(PyThreadState, current_frame));
	printf("cframe_current_frame -1\n");
	printf("frame_code %d\n", OFF(_PyInterpreterFrame, f_executable));
	printf("frame_instr %d\n", OFF(_PyInterpreterFrame, instr_ptr));
#endif
	printf("frame_previous %d\n", OFF(_PyInterpreterFrame, previous));
	printf("frame_owner %d\n", OFF(_PyInterpreterFrame, owner));
	printf("owner_generator %d\n", FRAME_OWNED_BY_GENERATOR);
#if PY_VERSION_HEX < 0x030C0000
	printf("frame_kind PY_FRAME_311\n");
	printf("frame_is_entry %d\n", OFF(_PyInterpreterFrame, is_entry));
	printf("owner_cstack -1\n");
#else
	printf("frame_kind PY_FRAME_312\n");
	printf("frame_is_entry -1\n");
	printf("owner_cstack %d\n", FRAME_OWNED_BY_CSTACK);
#endif
	printf("code_name %d\n", OFF(PyCodeObject, co_qualname));
	printf("frameobj_frame %d\n", OFF(PyFrameObject, f_frame));
	printf("frame_localsplus %d\n", OFF(_PyInterpreterFrame, localsplus));
	printf("code_nlocalsplus %d\n", OFF(PyCodeObject, co_nlocalsplus));
	printf("code_localsplusnames %d\n", OFF(PyCodeObject, co_localsplusnames));
	printf("code_localspluskinds %d\n", OFF(PyCodeObject, co_localspluskinds));
	printf("code_cellvars -1\ncode_freevars -1\n");
	printf("code_line_table %d\n", OFF(PyCodeObject, co_linetable));
	printf("code_start %d\n", OFF(PyCodeObject, co_code_adaptive));
	printf("code_first_traceable %d\n", OFF(PyCodeObject, _co_firsttraceable));
#endif
	printf("code_filename %d\n", OFF(PyCodeObject, co_filename));
	printf("code_first_line %d\n", OFF(PyCodeObject, co_firstlineno));
	printf("object_type %d\n", OFF(PyObject, ob_type));
	printf("bytes_size %d\n", OFF(PyVarObject, ob_size));
	printf("bytes_data %d\n", OFF(PyBytesObject, ob_sval));
	printf("tuple_items %d\n", OFF(PyTupleObject, ob_item));
	printf("unicode_length %d\n", OFF(PyASCIIObject, length));
	printf("unicode_state %d\n", OFF(PyASCIIObject, state));
	printf("unicode_ascii_size %d\n", (int)sizeof(PyASCIIObject));
	printf("unicode_compact_size %d\n", (int)sizeof(PyCompactUnicodeObject));
	printf("unicode_data %d\n", OFF(PyUnicodeObject, data));
	STATE_MASK(kind, 7);
	STATE_MASK(compact, 1);
	STATE_MASK(ascii, 1);
#if PY_VERSION_HEX < 0x030C0000
	STATE_MASK(ready, 1);
#else
	printf("ready_mask 0x0\n");
#endif
	printf("runtime_finalizing %d\n", OFF(_PyRuntimeState, _finalizing));
	return 0;
}
"""

# The offsets interpose/holders/walk.c reads (struct walk_layout), with
# --walk: the collector's state, heap types, functions, exceptions and the
# inline values of instances.
PROBE_WALK = r"""
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>
#if PY_VERSION_HEX >= 0x030B0000
#include <internal/pycore_dict.h>
#endif
#include <internal/pycore_interp.h>

#define OFF(type, field) ((int)offsetof(type, field))

int main(void)
{
	int gc = OFF(PyInterpreterState, gc);

	printf("version %s\n", PY_VERSION);
	printf("minor %d\n", PY_MINOR_VERSION);
	printf("interp_gc_generations %d + %d\n", gc, OFF(struct _gc_runtime_state, generations));
	printf("interp_gc_collecting %d + %d\n", gc, OFF(struct _gc_runtime_state, collecting));
	printf("gc_enabled_before_generations %d\n",
	       OFF(struct _gc_runtime_state, generations) - OFF(struct _gc_runtime_state, enabled));
	printf("gc_generation_size %d\n", (int)sizeof(struct gc_generation));
	printf("heap_cached_keys %d\n", OFF(PyHeapTypeObject, ht_cached_keys));
	printf("func_code %d\nfunc_closure %d\nfunc_defaults %d\nfunc_kwdefaults %d\nfunc_dict %d\n",
	       OFF(PyFunctionObject, func_code), OFF(PyFunctionObject, func_closure),
	       OFF(PyFunctionObject, func_defaults), OFF(PyFunctionObject, func_kwdefaults),
	       OFF(PyFunctionObject, func_dict));
	printf("exc_traceback %d\nexc_context %d\nexc_cause %d\n",
	       OFF(PyBaseExceptionObject, traceback), OFF(PyBaseExceptionObject, context),
	       OFF(PyBaseExceptionObject, cause));
#if PY_VERSION_HEX >= 0x030B0000
	printf("values_items %d\n", OFF(PyDictValues, values));
	printf("keys_nentries %d\nkeys_indices %d\n", OFF(PyDictKeysObject, dk_nentries),
	       OFF(PyDictKeysObject, dk_indices));
	printf("managed_dict %lu\n", (unsigned long)Py_TPFLAGS_MANAGED_DICT);
#else
	printf("values_items 0\nmanaged_dict 0\n");
#endif
#ifdef Py_TPFLAGS_INLINE_VALUES
	printf("inline_values %lu\n", (unsigned long)Py_TPFLAGS_INLINE_VALUES);
#else
	printf("inline_values 0\n");
#endif
	printf("tp_is_gc %d\ntp_mro %d\ntp_traverse %d\n", OFF(PyTypeObject, tp_is_gc),
	       OFF(PyTypeObject, tp_mro), OFF(PyTypeObject, tp_traverse));
	return 0;
}
"""

# The fields of struct py_layout, grouped as printed on one line each.
GROUPS = [
    ["minor", "frame_kind", "line_format"],
    ["tstate_frame", "cframe_current_frame", "runtime_finalizing"],
    ["frame_previous", "frame_code", "frame_instr"],
    ["frame_owner", "frame_is_entry", "owner_generator", "owner_cstack"],
    ["code_filename", "code_name", "code_first_line"],
    ["code_line_table", "code_start", "code_first_traceable"],
    ["object_type", "bytes_size", "bytes_data", "tuple_items"],
    ["frameobj_frame", "frame_localsplus"],
    ["code_nlocalsplus", "code_localsplusnames", "code_localspluskinds"],
    ["code_cellvars", "code_freevars"],
    ["unicode_length", "unicode_state", "unicode_ascii_size"],
    ["unicode_compact_size", "unicode_data"],
    ["kind_mask", "compact_mask", "ascii_mask", "ready_mask"],
    ["gen_frame", "gen_frame_state"],
]
FIELDS = [field for group in GROUPS for field in group]


def default_dirs():
    found = glob.glob(os.path.expanduser("~/.pyenv/versions/3.*/include/python3.*"))
    found += glob.glob("/usr/include/python3.*")
    return sorted(d for d in found if os.path.exists(os.path.join(d, "Python.h")))


def header_version(include_dir):
    """(major, minor) from patchlevel.h, without compiling anything."""
    with open(os.path.join(include_dir, "patchlevel.h")) as f:
        text = f.read()
    major = int(re.search(r"#define PY_MAJOR_VERSION\s+(\d+)", text).group(1))
    minor = int(re.search(r"#define PY_MINOR_VERSION\s+(\d+)", text).group(1))
    return major, minor


def probe(include_dir, workdir, source=None):
    src = os.path.join(workdir, "probe.c")
    exe = os.path.join(workdir, "probe")
    with open(src, "w") as f:
        f.write(source or PROBE)
    cc = os.environ.get("CC", "cc")
    cmd = [cc, "-w", "-I", include_dir, "-I", os.path.join(include_dir, "internal"),
           src, "-o", exe]
    subprocess.run(cmd, check=True)
    out = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
    values = {}
    for line in out.splitlines():
        key, value = line.split(" ", 1)
        values[key] = value
    return values


def main_walk(dirs):
    """Prints the offsets walk.c's table holds, one block per version."""
    with tempfile.TemporaryDirectory() as workdir:
        for d in dirs:
            if header_version(d) < (3, 9) or header_version(d) > (3, 13):
                continue
            values = probe(d, workdir, PROBE_WALK)
            print("/* %s */" % values.pop("version"))
            for key, value in values.items():
                print("\t%s = %s" % (key, value))
    return 0


def main():
    if sys.argv[1:2] == ["--walk"]:
        return main_walk(sys.argv[2:] or default_dirs())
    dirs = sys.argv[1:] or default_dirs()
    by_minor = {}
    with tempfile.TemporaryDirectory() as workdir:
        for d in dirs:
            if header_version(d) < (3, 9) or header_version(d) > (3, 13):
                print("skipping %s: not a supported version" % d, file=sys.stderr)
                continue
            values = probe(d, workdir)
            minor = int(values["minor"])
            by_minor.setdefault(minor, []).append((values["version"], d, values))
    status = 0
    for minor in sorted(by_minor):
        entries = by_minor[minor]
        first = entries[0][2]
        for version, d, values in entries[1:]:
            diff = [k for k in FIELDS if k != "version" and values.get(k) != first.get(k)]
            if diff:
                print("error: %s and %s differ in %s" % (entries[0][0], version, ", ".join(diff)),
                      file=sys.stderr)
                status = 1
        versions = ", ".join(v for v, _, _ in entries)
        print("\t{ /* 3.%d: from the headers of %s */" % (minor, versions))
        for group in GROUPS:
            print("\t\t" + " ".join(".%s = %s," % (key, first[key]) for key in group))
        print("\t},")
    return status


if __name__ == "__main__":
    sys.exit(main())
