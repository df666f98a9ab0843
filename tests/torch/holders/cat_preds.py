# SPDX-License-Identifier: MIT
"""An evaluator that gathers predictions by concatenating each batch's
logits onto all before it (`self.all_preds = torch.cat((self.all_preds,
logits))`), kept on the object across evaluations and never reset: one
buffer made anew, larger, at every evaluation batch.

    cat_preds.py [--steps N]

The line a finding must name is marked `# @lead`.
"""
import argparse

import torch
import torch.nn.functional as F
from torch import nn


class Evaluator(object):
    def __init__(self):
        self.all_preds = None

    def update(self, logits):
        if self.all_preds is None:
            self.all_preds = logits
        else:
            self.all_preds = torch.cat((self.all_preds, logits))  # @lead


def train(steps, eval_every=2):
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(),
                          nn.Linear(512, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    evaluator = Evaluator()
    val = [torch.randn(64, 256, device="cuda") for _ in range(3)]
    for step in range(steps):
        x = torch.randn(64, 256, device="cuda")
        y = torch.randint(0, 10, (64,), device="cuda")
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % eval_every == eval_every - 1:
            model.eval()
            with torch.no_grad():
                for v in val:
                    evaluator.update(model(v))
            model.train()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    train(args.steps)
    torch.cuda.synchronize()
    print("ok")


if __name__ == "__main__":
    main()
