# SPDX-License-Identifier: MIT
"""A prefetcher as training code writes it: each batch is made on a side
stream, the main stream waits for it and uses it, and
tensor.record_stream() tells PyTorch's pool that the main stream uses it.
Freed at the step's end, a batch goes back to the side stream's pool only
once the main stream's work on it is done; the CPU runs ahead of the GPU,
so the next batches find it not yet reusable and the pool reserves new
segments for them.

Usage: record_stream.py [--steps N] [--batch-mib M] [--out FILE]
"""
import argparse
import json

import torch
from torch import nn


def train(steps, batch_mib):
    model = nn.Sequential(nn.Linear(4096, 1024), nn.ReLU(),
                          nn.Linear(1024, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    side = torch.cuda.Stream()
    rows = (batch_mib << 20) // (4096 * 4)
    for _ in range(steps):
        with torch.cuda.stream(side):
            x = torch.randn(rows, 4096, device="cuda")
        torch.cuda.current_stream().wait_stream(side)
        x.record_stream(torch.cuda.current_stream())
        for _ in range(4):  # long work on the main stream
            loss = model(x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
        opt.step()
        del x, loss
    torch.cuda.synchronize()
    return torch.cuda.max_memory_reserved()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch-mib", type=int, default=64)
    parser.add_argument("--out")
    args = parser.parse_args()
    peak = train(args.steps, args.batch_mib)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"max_reserved": peak}, f)


if __name__ == "__main__":
    main()
