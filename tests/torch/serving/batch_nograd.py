#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Batch inference under torch.no_grad() that keeps every batch's outputs
on the device until the job ends. --fixed moves each batch's outputs to
the host as it comes."""
import argparse

import torch
from torch import nn


def make_model():
    return nn.Sequential(nn.Linear(256, 1024), nn.GELU(),
                         nn.Linear(1024, 2048))


@torch.no_grad()
def predict(model, batches, fixed):
    outputs = []
    for batch in batches:
        x = batch.to("cuda", non_blocking=True)
        logits = model(x)  # @lead
        outputs.append(logits.cpu() if fixed else logits)
    return outputs


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--fixed", action="store_true")
    args = parser.parse_args()
    torch.manual_seed(0)
    model = make_model().cuda().eval()
    batches = [torch.randn(64, 256) for _ in range(args.batches)]
    outputs = predict(model, batches, args.fixed)
    print(f"batches: {len(outputs)}")


if __name__ == "__main__":
    main()
