# SPDX-License-Identifier: MIT
"""A generator that makes the batches on the device and keeps each one in
a local list (for a replay that was never written): the generator's
suspended frame holds every batch while the training loop consumes it.

    generator_batches.py [--steps N]

The line a finding must name is marked `# @lead`.
"""
import argparse

import torch
import torch.nn.functional as F
from torch import nn


def device_batches(n, batch=128):
    replay = []
    for i in range(n):
        x = torch.randn(batch, 1024, device="cuda")  # @lead
        y = torch.randint(0, 10, (batch,), device="cuda")
        replay.append(x)
        yield x, y


def train(steps):
    model = nn.Sequential(nn.Linear(1024, 512), nn.ReLU(),
                          nn.Linear(512, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    smoothed = None
    for step, (x, y) in enumerate(device_batches(steps)):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        # A smoothed loss for the progress line, kept on the device.
        smoothed = loss.detach() if smoothed is None else \
            0.98 * smoothed + 0.02 * loss.detach()
        if step % 10 == 9:
            print(f"step {step + 1}: loss {smoothed.item():.3f}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    train(args.steps)
    torch.cuda.synchronize()
    print("ok")


if __name__ == "__main__":
    main()
