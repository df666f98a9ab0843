# SPDX-License-Identifier: MIT
"""Activations recorded by a forward hook, the most common hook leak: a
helper registers a hook that appends each output of a layer to a list, and
only the hook function's closure refers to that list (its free variable
`acts`). Every step's activation stays on the device.

    hook_closure.py [--steps N]

The line a finding must name is marked `# @lead`.
"""
import argparse

import torch
import torch.nn.functional as F
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(256, 512)
        self.head = nn.Linear(512, 10)

    def forward(self, x):
        h = self.fc(x)  # @lead
        return self.head(F.relu(h))


def record_activations(module):
    """Keeps what module outputs, for statistics computed later."""
    acts = []

    def hook(mod, inputs, output):
        acts.append(output.detach())

    module.register_forward_hook(hook)


def train(model, steps):
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(steps):
        x = torch.randn(64, 256, device="cuda")
        y = torch.randint(0, 10, (64,), device="cuda")
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    model = Net().cuda()
    record_activations(model.fc)
    train(model, args.steps)
    torch.cuda.synchronize()
    print("ok")


if __name__ == "__main__":
    main()
