# SPDX-License-Identifier: MIT
"""Composer's metrics: every batch, _compute_and_log_metrics deep-copies the
metric objects before computing them. A torchmetrics Metric refers to
itself (and carries dicts of defaults, reductions and update hooks), so
each dropped copy waits for the cycle collector: with the collector on,
device memory is freed only at its passes; with it off (argv[1] "off"),
never.

    composer.py on|off STEPS"""
import copy
import gc
import sys

from common import batch, leakwatch, tt

MODE = sys.argv[1]
STEPS = int(sys.argv[2])


class Metric(object):
    """A metric with device state, as torchmetrics keeps it."""

    def __init__(self, name, size):
        self.name = name
        self.total = tt.zeros(size)
        self.count = tt.zeros(1)
        self._defaults = {"total": 0.0, "count": 0.0}
        self._reductions = {"total": "sum", "count": "sum"}
        self._update_hooks = [{"step": i} for i in range(16)]
        self._computed = None
        self._self = self  # the cycle that torchmetrics' objects carry

    def update(self, value):
        tt.lib.tt_axpy(self.total.ptr, 1.0, value.ptr, value.numel)

    def compute(self):
        return self.total.sum().item()


def compute_and_log_metrics(metrics):
    metrics = copy.deepcopy(metrics)  # @deepcopy
    return {name: m.compute() for name, m in metrics.items()}


def main():
    if MODE == "off":
        gc.disable()
    model = tt.Linear(1024)
    opt = tt.SGD(model.parameters(), lr=0.01)
    metrics = {"accuracy": Metric("accuracy", 4096),
               "loss": Metric("loss", 4096)}
    for step in range(STEPS):
        x = batch(step)
        y = model(x)
        loss = (y * y).sum()
        loss.backward()
        opt.step()
        opt.zero_grad()
        metrics["loss"].update(tt.full(4096, loss.item()))
        compute_and_log_metrics(metrics)
        leakwatch.step()
    print("ok", STEPS)


main()
