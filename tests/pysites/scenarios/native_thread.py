# SPDX-License-Identifier: MIT
"""A native thread that libtinytensor creates allocates and keeps 5 buffers
of 3000 bytes; the Python main thread keeps 2 tensors of 40 bytes."""
import ctypes
import os
import sys

sys.path.insert(0, os.environ["TINYTENSOR_SITE"])
import tinytensor as tt  # noqa: E402

kept = []
for _ in range(2):
    kept.append(tt.zeros(10))  # @python
rc = tt.lib.tt_native_leak(5, 3000)  # @native-call
if rc != 0:
    sys.exit("tt_native_leak failed: %d" % rc)
ctypes.pythonapi.Py_IncRef(ctypes.py_object(kept))
print("ok")
