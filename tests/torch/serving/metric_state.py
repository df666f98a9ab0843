#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""An evaluation job over a validation set held on the device, that
collects every sample's score in a torchmetrics CatMetric to report their
spread at the end: the metric's list state keeps every batch's scores.
--fixed keeps a running mean (MeanMetric), whose state does not grow."""
import argparse

import torch
from torch import nn
from torchmetrics import CatMetric, MeanMetric


@torch.no_grad()
def evaluate(model, batches, metric):
    seen = 0
    for x in batches:
        scores = model(x).squeeze(1).sigmoid()  # @lead
        metric.update(scores)
        seen += 1
    return seen


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--fixed", action="store_true")
    args = parser.parse_args()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(128, 256), nn.ReLU(),
                          nn.Linear(256, 1)).cuda().eval()
    kind = MeanMetric if args.fixed else CatMetric
    metric = kind(nan_strategy="disable").cuda()
    batches = [torch.randn(1024, 128, device="cuda")
               for _ in range(args.batches)]
    seen = evaluate(model, batches, metric)
    print(f"batches: {seen}")
    print(f"scores: {metric.compute().shape}")


if __name__ == "__main__":
    main()
