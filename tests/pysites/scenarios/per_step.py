# SPDX-License-Identifier: MIT
"""A training loop that keeps every step's loss (the torchtitan case):
one small tensor per step, from the line marked @loss."""
import ctypes
import os
import sys

sys.path.insert(0, os.environ["TINYTENSOR_SITE"])
import tinytensor as tt  # noqa: E402

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 50


def train(steps):
    model = tt.Linear(4)
    opt = tt.SGD(model.parameters(), lr=0.01)
    history = []
    for step in range(steps):
        x = tt.full(4, float(step))
        y = model(x)
        loss = (y * y).sum()  # @loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        history.append(loss)
    return history


history = train(STEPS)
# Pinned: alive at program end and at exit alike, so that this test does not
# depend on which of the two views ranks the sites.
ctypes.pythonapi.Py_IncRef(ctypes.py_object(history))
print("ok", len(history))
