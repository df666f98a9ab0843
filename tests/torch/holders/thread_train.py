# SPDX-License-Identifier: MIT
"""Training in a worker thread (a UI or a server keeps the main thread):
main() builds the model on the GPU and hands it to train() in a thread,
which keeps every step's loss in a local list while the main thread waits
in join().

    thread_train.py [--steps N]

The line a finding must name is marked `# @lead`.
"""
import argparse
import threading

import torch
import torch.nn.functional as F
from torch import nn


def train(model, steps):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses = []
    for step in range(steps):
        x = torch.randn(64, 256, device="cuda")
        y = torch.randint(0, 10, (64,), device="cuda")
        loss = F.cross_entropy(model(x), y)  # @lead
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss)
    print(f"mean loss {sum(losses).item() / len(losses):.3f}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(),
                          nn.Linear(512, 10)).cuda()
    worker = threading.Thread(target=train, args=(model, args.steps))
    worker.start()
    worker.join()
    torch.cuda.synchronize()
    print("ok")


if __name__ == "__main__":
    main()
