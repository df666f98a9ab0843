# SPDX-License-Identifier: MIT
"""A plain PyTorch training loop for a regression model that measures its
errors with a torchmetrics `MetricCollection`, as torchmetrics'
documentation shows. (Regression metrics: the classification ones size
their buffers from the values of their inputs, which the stand-in GPU
leaves as garbage.)

    torchmetrics_loop.py CASE STEPS OUT PYTHON_DIR

CASE:
  clean        the metrics used as documented: update() every step,
               compute() and reset() at each epoch's end;
  metric_copy  a deep copy of the collection every step, to report the
               running figures without touching the epoch's metrics, as
               Composer's trainer did: each copy's state tensors stay on
               the device until the cycle collector frees the copy (a
               torchmetrics metric refers to itself).

STEPS optimizer steps in all, 10 a epoch. The line a finding must name is
marked `# @lead CASE`. What the program measured itself (scenarios.py's
Record: memory_allocated() after every step, and the optimizer's count of
its steps) is written as JSON to OUT.
"""
import copy
import os
import sys

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from torchmetrics import MetricCollection
from torchmetrics.regression import MeanAbsoluteError, MeanSquaredError

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from scenarios import Record  # noqa: E402

DEVICE = "cuda"
OUTPUTS = 16
BATCH = 64
BATCHES_PER_EPOCH = 10


def setup(rec):
    data = TensorDataset(torch.randn(BATCH * BATCHES_PER_EPOCH, 256),
                         torch.randn(BATCH * BATCHES_PER_EPOCH, OUTPUTS))
    loader = DataLoader(data, batch_size=BATCH, shuffle=True)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(),
                          nn.Linear(512, OUTPUTS)).to(DEVICE)
    optimizer = rec.count(torch.optim.SGD(model.parameters(), lr=0.01))
    metrics = MetricCollection({
        "mse": MeanSquaredError(),
        "mae": MeanAbsoluteError(),
    }).to(DEVICE)
    return loader, model, optimizer, metrics


def train(steps, rec):
    loader, model, optimizer, metrics = setup(rec)
    for epoch in range(steps // BATCHES_PER_EPOCH):
        for x, y in loader:
            x, y = x.to(DEVICE), y.to(DEVICE)
            preds = model(x)
            loss = F.mse_loss(preds, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            metrics.update(preds.detach(), y)
            rec.step()
        epoch_metrics = metrics.compute()
        print(f"epoch {epoch}: mse {epoch_metrics['mse'].item():.3f}")
        metrics.reset()


def train_metric_copy(steps, rec):
    loader, model, optimizer, metrics = setup(rec)
    for epoch in range(steps // BATCHES_PER_EPOCH):
        for x, y in loader:
            x, y = x.to(DEVICE), y.to(DEVICE)
            preds = model(x)
            loss = F.mse_loss(preds, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            metrics.update(preds.detach(), y)
            # The running figures, from a copy: the epoch's metrics stay
            # untouched until the epoch ends.
            running = copy.deepcopy(metrics)  # @lead metric_copy
            running_mse = running.compute()["mse"].item()
            rec.step()
        epoch_metrics = metrics.compute()
        print(f"epoch {epoch}: mse {epoch_metrics['mse'].item():.3f} "
              f"(last running figure {running_mse:.3f})")
        metrics.reset()


def main():
    case, steps, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    loops = {"clean": train, "metric_copy": train_metric_copy}
    if case not in loops:
        sys.exit(f"torchmetrics_loop.py: no case {case!r}")
    rec = Record()
    loops[case](steps, rec)
    torch.cuda.synchronize()
    rec.write(out)
    print("ok")


if __name__ == "__main__":
    main()
