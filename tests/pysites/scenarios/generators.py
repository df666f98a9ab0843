# SPDX-License-Identifier: MIT
"""Leaks made inside a generator, a list comprehension and a generator
expression. Each has its own size, so that the test can tell the sites
apart: generator 5 x 128 bytes, list comprehension 7 x 192, generator
expression 4 x 64."""
import ctypes
import os
import sys

sys.path.insert(0, os.environ["TINYTENSOR_SITE"])
import tinytensor as tt  # noqa: E402


def batches(n):
    for _ in range(n):
        yield tt.zeros(32)  # @generator


def consume(gen):
    out = []
    for item in gen:  # @consume
        out.append(item)
    return out


def make_list(n):
    return [tt.zeros(48) for _ in range(n)]  # @listcomp


kept = []
kept.append(consume(batches(5)))  # @consume-call
kept.append(make_list(7))  # @listcomp-call
kept.append(list(tt.zeros(16) for _ in range(4)))  # @genexpr
ctypes.pythonapi.Py_IncRef(ctypes.py_object(kept))
print("ok")
