#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A client that retries each request when the backend times out, and
keeps the exceptions it caught for a report: each traceback holds the
frame that raised, and that frame's tensors on the device. --fixed keeps
the messages."""
import argparse

import torch
from torch import nn


class BackendTimeout(RuntimeError):
    pass


def call_backend(model, x, attempt):
    hidden = model(x)  # @lead
    if attempt == 0:
        raise BackendTimeout(f"timed out after {hidden.shape[0]} rows")
    return hidden.sum(dim=1).cpu()


@torch.no_grad()
def run(model, requests, keep_messages):
    failures = []
    answered = 0
    for batch in requests:
        x = batch.to("cuda")
        for attempt in range(3):
            try:
                call_backend(model, x, attempt)
                answered += 1
                break
            except BackendTimeout as e:
                failures.append(str(e) if keep_messages else e)
    return answered, failures


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--fixed", action="store_true")
    args = parser.parse_args()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU()).cuda().eval()
    requests = [torch.randn(32, 256) for _ in range(args.requests)]
    answered, failures = run(model, requests, args.fixed)
    print(f"requests: {answered}")


if __name__ == "__main__":
    main()
