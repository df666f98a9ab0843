# SPDX-License-Identifier: MIT
"""What the scenarios share: tinytensor (from the test's site-packages),
leakwatch.py, the stand-in torch, and a small training step."""
import os
import sys

sys.path.insert(0, os.environ["TINYTENSOR_SITE"])
sys.path.insert(0, os.environ["LW_PYTHON_DIR"])
sys.path.insert(0, os.environ["LW_FAKETORCH"])

import leakwatch  # noqa: E402,F401
import tinytensor as tt  # noqa: E402
import torch  # noqa: E402  (the stand-in: its optimizer step hook)

FEATURES = 1024


class TorchOptimizer(torch.optim.Optimizer):
    """A tinytensor SGD behind torch.optim.Optimizer, so that its steps
    fire PyTorch's global optimizer step hooks (leakwatch's steps)."""

    def __init__(self, params, lr=0.01, momentum=0.0):
        super().__init__("sgd")
        self.sgd = tt.SGD(params, lr=lr, momentum=momentum)

    def step(self, *args, **kwargs):
        self.sgd.step()
        super().step(*args, **kwargs)

    def zero_grad(self):
        self.sgd.zero_grad()


def batch(step, features=FEATURES):
    return tt.full(features, 0.001 * (step % 7))
