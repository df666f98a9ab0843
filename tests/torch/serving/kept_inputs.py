#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A scoring job that keeps each input batch, as moved to the device, to
look at the worst ones at the end. --fixed keeps the host batches."""
import argparse

import torch
from torch import nn


@torch.no_grad()
def score(model, batches, fixed):
    seen = []
    losses = []
    for batch in batches:
        x = batch.to("cuda")  # @lead
        loss = model(x).pow(2).mean()
        seen.append(batch if fixed else x)
        losses.append(loss.item())
    return seen, losses


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--fixed", action="store_true")
    args = parser.parse_args()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(512, 512), nn.ReLU(),
                          nn.Linear(512, 1)).cuda().eval()
    batches = [torch.randn(64, 512) for _ in range(args.batches)]
    seen, losses = score(model, batches, args.fixed)
    print(f"batches: {len(losses)}")


if __name__ == "__main__":
    main()
