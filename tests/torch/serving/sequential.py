#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Clean batch inference through an nn.Sequential model: the predictions
go to the host, nothing is kept on the device. Its layers run in
Sequential's own loop; the steps are the batches."""
import argparse

import torch
from torch import nn


def make_model(depth):
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(256, 256), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(256, 10))


@torch.no_grad()
def predict(model, batches):
    predictions = []
    for batch in batches:
        predictions.append(model(batch.to("cuda")).argmax(dim=1).cpu())
    return predictions


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", type=int, default=60)
    parser.add_argument("--depth", type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = make_model(args.depth).cuda().eval()
    batches = [torch.randn(32, 256) for _ in range(args.batches)]
    print(f"batches: {len(predict(model, batches))}")


if __name__ == "__main__":
    main()
