#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Rotary position tables memoised with functools.lru_cache: requests come
with lengths in no order and few repeat, so an unbounded cache keeps one
table per length on the device. --fixed gives the cache maxsize=8."""
import argparse
import functools

import torch


def make_tables(maxsize):
    @functools.lru_cache(maxsize=maxsize)
    def rotary_table(length, dim):
        pos = torch.arange(length, device="cuda", dtype=torch.float32)
        freqs = torch.arange(0, dim, 2, device="cuda", dtype=torch.float32)
        angles = pos[:, None] * freqs[None, :]
        return angles.cos(), angles.sin()  # @lead
    return rotary_table


def apply_rotary(x, table):
    cos, sin = table(x.shape[1], x.shape[2])
    half = x.shape[2] // 2
    a, b = x[..., :half], x[..., half:]
    return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)


def serve(requests, table):
    served = 0
    for x in requests:
        y = apply_rotary(x.to("cuda"), table)
        served += int(y.shape[0])
    return served


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--fixed", action="store_true")
    args = parser.parse_args()
    torch.manual_seed(0)
    table = make_tables(8 if args.fixed else None)
    lengths = [128 + 8 * ((i * 17) % args.requests)
               for i in range(args.requests)]
    requests = [torch.randn(1, n, 128) for n in lengths]
    print(f"requests: {serve(requests, table)}")


if __name__ == "__main__":
    main()
