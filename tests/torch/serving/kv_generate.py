#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A generation server: each request's tokens are generated one at a time
with a key/value cache, and the server keeps every response it gave, on
the device. --fixed keeps the responses' token ids on the host."""
import argparse

import torch
from torch import nn


class TinyLM(nn.Module):
    def __init__(self, vocab=512, dim=128):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, ids, cache):
        x = self.embed(ids[:, -1:])
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=1)
            v = torch.cat([cache[1], v], dim=1)
        att = torch.softmax(q @ k.transpose(1, 2) / 8.0, dim=-1)
        return self.head(att @ v), (k, v)


@torch.no_grad()
def generate(model, prompt, max_new_tokens):
    ids = prompt
    cache = None
    for _ in range(max_new_tokens):
        logits, cache = model(ids, cache)
        nxt = logits[:, -1].argmax(dim=-1, keepdim=True)
        ids = torch.cat([ids, nxt], dim=1)  # @lead
    return ids


class Server:
    def __init__(self, model, tokens, fixed):
        self.model = model
        self.tokens = tokens
        self.fixed = fixed
        self.responses = {}

    def handle(self, request_id, prompt):
        out = generate(self.model, prompt.to("cuda"), self.tokens)
        self.responses[request_id] = out.tolist() if self.fixed else out
        return request_id


def serve(server, requests):
    served = 0
    for request_id, prompt in enumerate(requests):
        server.handle(request_id, prompt)
        served += 1
    return served


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--tokens", type=int, default=6)
    parser.add_argument("--fixed", action="store_true")
    args = parser.parse_args()
    torch.manual_seed(0)
    model = TinyLM().cuda().eval()
    server = Server(model, args.tokens, args.fixed)
    requests = [torch.randint(0, 512, (8, 96)) for _ in range(args.requests)]
    served = serve(server, requests)
    print(f"requests: {served}")


if __name__ == "__main__":
    main()
