# SPDX-License-Identifier: MIT
"""An allocation six Python calls deep (one of them a method)."""
import ctypes
import os
import sys

sys.path.insert(0, os.environ["TINYTENSOR_SITE"])
import tinytensor as tt  # noqa: E402


def level6(n):
    return tt.zeros(n)  # @level6


def level5(n):
    return level6(n)  # @level5


class Chain(object):
    def level4(self, n):
        return level5(n)  # @level4


def level3(n):
    return Chain().level4(n)  # @level3


def level2(n):
    return level3(n)  # @level2


def level1(n):
    return level2(n)  # @level1


kept = []
for _ in range(3):
    kept.append(level1(1024))  # @module
ctypes.pythonapi.Py_IncRef(ctypes.py_object(kept))
print("ok")
