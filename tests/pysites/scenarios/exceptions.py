# SPDX-License-Identifier: MIT
"""Allocations in code that raises through several frames, caught higher
up; the memory is kept through the exception's traceback (@raise), an
explicit list (@listed), an except block (@handler) and a finally block
(@finally)."""
import ctypes
import os
import sys

sys.path.insert(0, os.environ["TINYTENSOR_SITE"])
import tinytensor as tt  # noqa: E402

ROUNDS = 6
listed = []


class Boom(Exception):
    pass


def inner(i):
    scratch = tt.zeros(200)  # @raise
    if i >= 0:
        raise Boom("round %d" % i)
    return scratch


def inner_listed(i):
    listed.append(tt.zeros(300))  # @listed
    raise Boom("listed %d" % i)


def middle(i):
    try:
        return inner(i)
    finally:
        listed.append(tt.zeros(50))  # @finally


def outer(i):
    return middle(i)


caught = []
for i in range(ROUNDS):
    try:
        outer(i)
    except Boom as e:
        caught.append(e)  # its traceback keeps inner's frame and `scratch`
    try:
        inner_listed(i)
    except Boom:
        listed.append(tt.zeros(75))  # @handler
ctypes.pythonapi.Py_IncRef(ctypes.py_object(caught))
ctypes.pythonapi.Py_IncRef(ctypes.py_object(listed))
print("ok", len(caught), len(listed))
