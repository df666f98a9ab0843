# SPDX-License-Identifier: MIT
"""Tensors kept in a module-level list: CPython's finalization frees them
after the script's last line, so they are live when the program's code
finishes but not at exit. One more tensor is pinned (never freed)."""
import ctypes
import os
import sys

sys.path.insert(0, os.environ["TINYTENSOR_SITE"])
import tinytensor as tt  # noqa: E402

COUNT = 20
history = []
for _ in range(COUNT):
    history.append(tt.zeros(1024))  # @history
pinned = tt.zeros(256)  # @pinned
ctypes.pythonapi.Py_IncRef(ctypes.py_object(pinned))
print("ok")
