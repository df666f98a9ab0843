# SPDX-License-Identifier: MIT
"""Hangs if the shim takes the GIL inside an allocation hook.

Each round, thread A (the main thread) holds the GIL while it waits for a
native mutex L (tt_lock_wait through ctypes.PyDLL, which keeps the GIL held),
and thread B holds L while it calls cudaMalloc. B is first a native thread
libtinytensor creates (8192 bytes), then a Python thread calling through
ctypes.CDLL, which releases the GIL (4096 bytes). libtinytensor orders them
so that B holds L before A waits for it, and A is inside its GIL-holding
call before B allocates. A hook that took the GIL would wait for A, which
waits for B. The very first allocation of the process is such a B, so the
shim's own initialisation runs there too. Every buffer is kept."""
import ctypes
import os
import sys
import threading

sys.path.insert(0, os.environ["TINYTENSOR_SITE"])
import tinytensor as tt  # noqa: E402

ROUNDS = 3


def python_thread_alloc(out):
    buf = ctypes.c_void_p()
    rc = tt.lib.tt_locked_alloc(4096, ctypes.byref(buf))  # @pythread
    out.append((rc, buf.value))


kept = []
for _ in range(ROUNDS):
    if tt.lib.tt_locked_alloc_start(8192) != 0:
        sys.exit("tt_locked_alloc_start failed")
    tt.pylib.tt_lock_wait()
    buf = ctypes.c_void_p()
    if tt.lib.tt_locked_alloc_join(ctypes.byref(buf)) != 0:
        sys.exit("the native thread's allocation failed")
    kept.append(buf.value)

    out = []
    thread = threading.Thread(target=python_thread_alloc, args=(out,))
    thread.start()
    tt.pylib.tt_lock_wait()
    thread.join()
    if out[0][0] != 0:
        sys.exit("the Python thread's allocation failed")
    kept.append(out[0][1])
print("ok", len(kept))
