# SPDX-License-Identifier: MIT
"""ESPnet's trainer: `retval = model(**batch)` keeps the previous step's
result (its loss among it) until the next forward has run, and the loss, a
custom one like a CTC loss, keeps the gradient buffer it computed in the
forward pass on the loss until the loss dies. Each step's peak holds two
steps' buffers. Steps come from the optimizer (PyTorch's step hook).

    espnet.py STEPS"""
import sys

from common import FEATURES, TorchOptimizer, batch, tt

STEPS = int(sys.argv[1])
# The gradient buffer is larger than the output: (time, vocabulary).
GRAD_ELEMENTS = 32 * FEATURES


class GradBufferLoss(object):
    """Computes the gradient in the forward pass and keeps it with the loss
    (as a custom autograd function keeps tensors on ctx)."""

    def __call__(self, y):
        grad = tt.full(GRAD_ELEMENTS, 0.5)  # @gradbuf
        loss = (y * y).sum()
        loss.ctx_grad = grad
        return loss


class ASRModel(tt.Module):
    def __init__(self):
        self.encoder = tt.Linear(FEATURES)
        self.criterion = GradBufferLoss()

    def forward(self, x):
        loss = self.criterion(self.encoder(x))
        return {"loss": loss, "stats": {"loss": None}, "weight": 1.0}


def train():
    model = ASRModel()
    opt = TorchOptimizer(model.parameters())
    retval = None
    for step in range(STEPS):
        x = batch(step)
        retval = model(x)  # the previous retval is still alive here
        retval["loss"].backward()
        opt.step()
        opt.zero_grad()
    return retval


train()
print("ok", STEPS)
