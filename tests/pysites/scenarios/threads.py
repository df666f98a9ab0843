# SPDX-License-Identifier: MIT
"""Three threading.Threads each keep 10 tensors of 400 bytes; the main
thread keeps 2 of 40 bytes."""
import ctypes
import os
import sys
import threading

sys.path.insert(0, os.environ["TINYTENSOR_SITE"])
import tinytensor as tt  # noqa: E402

kept = []
kept_lock = threading.Lock()


def worker(n):
    for _ in range(n):
        t = tt.zeros(100)  # @thread
        with kept_lock:
            kept.append(t)


threads = [threading.Thread(target=worker, args=(10,)) for _ in range(3)]
for t in threads:
    t.start()
for t in threads:
    t.join()
for _ in range(2):
    kept.append(tt.zeros(10))  # @main
ctypes.pythonapi.Py_IncRef(ctypes.py_object(kept))
print("ok", len(kept))
