#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Batch inference written without torch.no_grad(): each batch's outputs
are kept for the final report, and with them the graph autograd recorded
for them, activations and all. --fixed predicts under no_grad and moves
the outputs to the host."""
import argparse

import torch
from torch import nn


def make_model():
    return nn.Sequential(nn.Linear(256, 1024), nn.GELU(),
                         nn.Linear(1024, 1024), nn.GELU(),
                         nn.Linear(1024, 16))


def predict(model, batches, fixed):
    outputs = []
    for batch in batches:
        x = batch.to("cuda", non_blocking=True)
        if fixed:
            with torch.no_grad():
                outputs.append(model(x).cpu())
        else:
            scores = model(x)  # @lead
            outputs.append(scores)
    return outputs


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--fixed", action="store_true")
    args = parser.parse_args()
    torch.manual_seed(0)
    model = make_model().cuda()
    batches = [torch.randn(64, 256) for _ in range(args.batches)]
    outputs = predict(model, batches, args.fixed)
    print(f"batches: {len(outputs)}")


if __name__ == "__main__":
    main()
