#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A training loop that makes a new Adam and LambdaLR every iteration, and
ties them together (the trainer's hooks refer to both, both to the
trainer): each iteration's optimizer state lives on in a reference cycle
until the cycle collector runs. --fixed makes them once."""
import argparse

import torch
from torch import nn


class Trainer:
    def __init__(self, model, lr):
        self.model = model
        self.lr = lr
        self.optimizer = None
        self.scheduler = None

    def make_optimizer(self):
        optimizer = torch.optim.Adam(self.model.parameters(), lr=self.lr)
        scheduler = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda epoch: 0.95 ** epoch)
        optimizer.trainer = self
        return optimizer, scheduler

    def train_step(self, x, y, remake):
        if remake or self.optimizer is None:
            self.optimizer, self.scheduler = self.make_optimizer()
            self.optimizer.owner = (self.optimizer, self.scheduler)
        loss = nn.functional.mse_loss(self.model(x), y)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()  # @lead
        self.scheduler.step()
        return loss.item()


def train(trainer, batches, remake):
    losses = []
    for x, y in batches:
        losses.append(trainer.train_step(x.to("cuda"), y.to("cuda"), remake))
    return losses


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--fixed", action="store_true")
    args = parser.parse_args()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(),
                          nn.Linear(512, 256)).cuda()
    trainer = Trainer(model, 1e-3)
    batches = [(torch.randn(32, 256), torch.randn(32, 256))
               for _ in range(args.batches)]
    losses = train(trainer, batches, remake=not args.fixed)
    print(f"batches: {len(losses)}")


if __name__ == "__main__":
    main()
