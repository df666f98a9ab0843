#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Training with gradient accumulation: the optimizer steps once every
--accumulate batches, and its steps are the steps, not the batches."""
import argparse

import torch
from torch import nn


def train(model, optimizer, batches, accumulate):
    steps = 0
    for i, (x, y) in enumerate(batches):
        loss = nn.functional.mse_loss(model(x.to("cuda")), y.to("cuda"))
        (loss / accumulate).backward()
        if (i + 1) % accumulate == 0:
            optimizer.step()
            optimizer.zero_grad()
            steps += 1
    return steps


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", type=int, default=48)
    parser.add_argument("--accumulate", type=int, default=4)
    args = parser.parse_args()
    model = nn.Sequential(nn.Linear(128, 256), nn.ReLU(),
                          nn.Linear(256, 128)).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    batches = [(torch.randn(32, 128), torch.randn(32, 128))
               for _ in range(args.batches)]
    print(f"optimizer steps: {train(model, optimizer, batches, args.accumulate)}")


if __name__ == "__main__":
    main()
