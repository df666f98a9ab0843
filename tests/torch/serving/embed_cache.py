#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""An embedding service that caches each request's embedding in a dict
keyed by the request: no key ever comes back, so the cache only grows.
--fixed bounds the cache to the last 8 entries."""
import argparse
from collections import OrderedDict

import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self, vocab=1024, dim=256):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, ids):
        return self.proj(self.embed(ids))


class EmbeddingService:
    def __init__(self, model, bound):
        self.model = model
        self.bound = bound
        self.cache = OrderedDict() if bound else {}

    @torch.no_grad()
    def embed(self, request_id, ids):
        key = (request_id, ids.shape[1])
        if key in self.cache:
            return self.cache[key]
        vec = self.model(ids.to("cuda")).mean(dim=1)  # @lead
        self.cache[key] = vec
        if self.bound and len(self.cache) > self.bound:
            self.cache.popitem(last=False)
        return vec


def serve(service, requests):
    norms = []
    for request_id, ids in enumerate(requests):
        vec = service.embed(request_id, ids)
        norms.append(vec.norm().item())
    return len(norms)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--fixed", action="store_true")
    args = parser.parse_args()
    torch.manual_seed(0)
    service = EmbeddingService(Encoder().cuda().eval(),
                               8 if args.fixed else 0)
    requests = [torch.randint(0, 1024, (16, 64)) for _ in range(args.requests)]
    print(f"requests: {serve(service, requests)}")


if __name__ == "__main__":
    main()
