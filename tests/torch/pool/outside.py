# SPDX-License-Identifier: MIT
"""Training next to a library that takes its own device memory: a
workspace made with the CUDA runtime's own cudaMalloc through ctypes, as
bindings of C libraries do, kept for the whole run. PyTorch's pool never
sees it; the device does.

Usage: outside.py [--steps N] [--workspace-mib M] [--out FILE]
(FILE: what the program saw, as JSON.)
"""
import argparse
import ctypes
import json

import torch
from torch import nn


def load_cudart():
    """The CUDA runtime PyTorch loaded, by its usual names."""
    for name in ("libcudart.so.13", "libcudart.so.12", "libcudart.so"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    raise SystemExit("no libcudart found")


def train(steps, workspace):
    cudart = load_cudart()
    buf = ctypes.c_void_p()
    err = cudart.cudaMalloc(ctypes.byref(buf), ctypes.c_size_t(workspace))
    if err != 0:
        raise SystemExit(f"cudaMalloc returned {err}")
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(),
                          nn.Linear(512, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    reserved = []
    for _ in range(steps):
        x = torch.randn(64, 256, device="cuda")
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        reserved.append(torch.cuda.memory_reserved())
    torch.cuda.synchronize()
    cudart.cudaFree(buf)
    return reserved


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--workspace-mib", type=int, default=64)
    parser.add_argument("--out")
    args = parser.parse_args()
    reserved = train(args.steps, args.workspace_mib << 20)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"reserved": reserved,
                       "workspace": args.workspace_mib << 20}, f)


if __name__ == "__main__":
    main()
