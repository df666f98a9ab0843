#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Requests, then each request's tokens, in one function: the steps are the
requests, not the tokens."""
import argparse

import torch
from torch import nn


@torch.no_grad()
def serve(model, prompts, tokens):
    answers = []
    for prompt in prompts:
        ids = prompt.to("cuda")
        for _ in range(tokens):
            logits = model(ids[:, -1])
            ids = torch.cat([ids, logits.argmax(dim=-1, keepdim=True)], 1)
        answers.append(ids.cpu())
    return len(answers)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--tokens", type=int, default=8)
    args = parser.parse_args()
    model = nn.Sequential(nn.Embedding(256, 64), nn.Linear(64, 256)).cuda()
    prompts = [torch.randint(0, 256, (4, 16)) for _ in range(args.requests)]
    print(f"requests: {serve(model, prompts, args.tokens)}")


if __name__ == "__main__":
    main()
