# SPDX-License-Identifier: MIT
"""Evaluation with autograd on (no `no_grad()`), summing the losses as
tensors: `val_total = val_total + loss` links every batch's graph to the
next, so each batch's whole forward pass (inputs, activations, loss) stays
alive until evaluation ends. Each evaluation batch is a marked step.

    eval_grad.py BATCHES"""
import sys

from common import batch, leakwatch, tt

BATCHES = int(sys.argv[1])


def evaluate(model, batches):
    val_total = tt.zeros(())
    for i in range(batches):
        x = batch(i)
        y = model(x)  # @forward
        loss = (y * y).sum()
        val_total = val_total + loss
        leakwatch.step()
    return val_total.item() / batches


model = tt.Linear(1024)
print("ok", evaluate(model, BATCHES) >= 0)
