# SPDX-License-Identifier: MIT
"""Composer's story as a script at module level: a deep copy of the
metric every step, to report the running figure without touching the
epoch's metric. The metric refers to itself, so each copy, with its
device buffer, waits for the cycle collector (left on, on its own
schedule); the program keeps only the newest copy, in the global `m`.

    metric_deepcopy.py [--steps N]

The line a finding must name is marked `# @lead`.
"""
import argparse
import copy

import torch
import torch.nn.functional as F
from torch import nn


class ConfusionMatrix(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.register_buffer("confmat", torch.zeros(classes, 4096,
                                                    device="cuda"))
        # Kept for callbacks, as torchmetrics' Metric keeps its own
        # bound methods: the object refers to itself.
        self.__dict__["owner"] = self

    def update(self, logits):
        self.confmat += logits.sum()


parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=30)
args = parser.parse_args()

model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(),
                      nn.Linear(512, 10)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
metric = ConfusionMatrix()
for step in range(args.steps):
    x = torch.randn(64, 256, device="cuda")
    y = torch.randint(0, 10, (64,), device="cuda")
    out = model(x)
    loss = F.cross_entropy(out, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    m = copy.deepcopy(metric)  # @lead
    m.update(out.detach())
torch.cuda.synchronize()
print("ok")
