# SPDX-License-Identifier: MIT
"""The Composer case: `copy.deepcopy` of a metrics object that holds device
tensors (and refers to itself) every step, the copies kept."""
import copy
import ctypes
import os
import sys

sys.path.insert(0, os.environ["TINYTENSOR_SITE"])
import tinytensor as tt  # noqa: E402

STEPS = 8


class Metrics(object):
    def __init__(self):
        self.total = tt.zeros(64)
        self.count = tt.zeros(1)
        self.owner = self  # a cycle, as torchmetrics' Metric objects have


metrics = Metrics()
copies = []
for _ in range(STEPS):
    copies.append(copy.deepcopy(metrics))  # @deepcopy
ctypes.pythonapi.Py_IncRef(ctypes.py_object(copies))
print("ok")
