# SPDX-License-Identifier: MIT
"""An interpreter leakwatch does not read (2.7, 3.6 to 3.8, ...): the probe
must say LW_PY_UNSUPPORTED, name the version, and capture nothing.
Kept to syntax that Python 2.7 also parses.

    python pyframes_unsupported.py LIBPYFRAMES_PROBE
"""
import ctypes
import os
import sys

UNSUPPORTED = 2


def main():
    path = os.path.abspath(sys.argv[1])
    failures = 0
    for lib in (ctypes.PyDLL(path), ctypes.CDLL(path)):
        lib.probe_version.restype = ctypes.c_char_p
        lib.probe_capture.argtypes = [ctypes.c_char_p, ctypes.c_int]
        status = lib.probe_status()
        version = lib.probe_version().decode("ascii")
        buf = ctypes.create_string_buffer(4096)
        frames = lib.probe_capture(buf, len(buf))
        print("python %s: status %d, version %r, %d frames, %r" %
              (sys.version.split()[0], status, version, frames, buf.value))
        if status != UNSUPPORTED or frames != 0 or buf.value != b"merge 0 0\n":
            failures += 1
        if version != "%d.%d.%d" % sys.version_info[:3]:
            failures += 1
    print("%d failure(s)" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
