# SPDX-License-Identifier: MIT
"""Validation outputs kept with their graphs, computed under
saved_tensors_hooks (as activation checkpointing and offloading libraries
install them): each graph's saved activations live in what the pack hook
returned, which PyTorch keeps for the unpack hook. The holder is the list
of outputs; the unpack hook must never run for the search (it prints how
often it ran, 0 here: nothing back-propagates these graphs).

    saved_hooks.py [--steps N]

The line a finding must name is marked `# @lead`.
"""
import argparse

import torch
import torch.nn.functional as F
from torch import nn

calls = {"pack": 0, "unpack": 0}


def pack(tensor):
    calls["pack"] += 1
    return tensor


def unpack(tensor):
    calls["unpack"] += 1
    return tensor


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(64, 256)
        self.head = nn.Linear(256, 10)

    def forward(self, x):
        h = torch.tanh(self.fc(x))  # @lead
        return self.head(h)


def train(steps):
    model = Net().cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    outputs = []
    for step in range(steps):
        x = torch.randn(32, 64, device="cuda")
        y = torch.randint(0, 10, (32,), device="cuda")
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
            outputs.append(model(torch.randn(32, 64, device="cuda")).sum())
    print("unpack hook calls:", calls["unpack"])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    train(args.steps)
    torch.cuda.synchronize()
    print("ok")


if __name__ == "__main__":
    main()
