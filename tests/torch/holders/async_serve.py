# SPDX-License-Identifier: MIT
"""An asyncio service that learns online: a handler task, started and
left to run (no reference kept to it), answers each request with the
model and keeps each answer's scores, on the device, in a local list "for
the metrics endpoint" that nothing ever reads; the main coroutine sends
the requests and takes an optimizer step on each answer's feedback.

    async_serve.py [--steps N]

The line a finding must name is marked `# @lead`.
"""
import argparse
import asyncio

import torch
import torch.nn.functional as F
from torch import nn


async def handle(model, requests, answers):
    answered = []
    while True:
        x = await requests.get()
        if x is None:
            break
        with torch.no_grad():
            scores = model(x)  # @lead
        answered.append(scores)
        await answers.put(scores.argmax(1))


async def serve(steps):
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(),
                          nn.Linear(512, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    requests, answers = asyncio.Queue(), asyncio.Queue()
    asyncio.create_task(handle(model, requests, answers))
    for step in range(steps):
        x = torch.randn(64, 256, device="cuda")
        await requests.put(x)
        labels = await answers.get()
        loss = F.cross_entropy(model(x), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
    await requests.put(None)
    await asyncio.sleep(0)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    asyncio.run(serve(args.steps))
    torch.cuda.synchronize()
    print("ok")


if __name__ == "__main__":
    main()
