#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Loads libtestext.so (path in argv[1]) with RTLD_LOCAL, as Python loads an
extension module, allocates three buffers of 1000 bytes through it and frees
one. Prints "ok" if every call returned 0 (cudaSuccess); else prints the
codes and exits 1.

The CUDA runtime then sits in the extension's local scope: a shim that
looks for it with dlsym(RTLD_NEXT, ...) finds nothing and must look
elsewhere. Two buffers are left live at exit, 2000 bytes.
"""
import ctypes
import os
import sys


def main(argv):
    if len(argv) != 2:
        sys.stderr.write('usage: rtld_local.py LIBTESTEXT\n')
        return 2
    lib = ctypes.CDLL(argv[1], mode=os.RTLD_LOCAL)
    lib.testext_alloc.argtypes = [ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p)]
    lib.testext_alloc.restype = ctypes.c_int
    lib.testext_free.argtypes = [ctypes.c_void_p]
    lib.testext_free.restype = ctypes.c_int

    codes = []
    buffers = []
    for _ in range(3):
        ptr = ctypes.c_void_p()
        codes.append(lib.testext_alloc(1000, ctypes.byref(ptr)))
        buffers.append(ptr.value)
    codes.append(lib.testext_free(buffers[0]))

    if all(code == 0 for code in codes) and all(buffers):
        print('ok')
        return 0
    print('codes: %s, buffers: %s' % (codes, buffers))
    return 1


if __name__ == '__main__':
    sys.exit(main(sys.argv))
