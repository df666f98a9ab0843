# SPDX-License-Identifier: MIT
"""Programs the GPU tests run under `leakwatch run`: each keeps one buffer
per step on purpose (the planted leak, allocated on the line marked LEAK)
and frees everything else.

Usage: gpu_programs.py torch|cupy|jax STEPS
"""
import sys


def torch_loop(steps):
    import torch

    model = torch.nn.Linear(256, 256).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    kept = []
    for _ in range(steps):
        x = torch.randn(64, 256, device="cuda")
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        kept.append(torch.empty(4096, device="cuda"))  # LEAK
    torch.cuda.synchronize()
    print(len(kept))


def cupy_loop(steps):
    import cupy

    # The stream-ordered pool: one cudaMallocAsync per array.
    cupy.cuda.set_allocator(cupy.cuda.MemoryAsyncPool().malloc)
    kept = []
    for _ in range(steps):
        a = cupy.ones(65536, dtype=cupy.float32)
        b = (a * 2).sum()
        del a, b
        kept.append(cupy.empty(4096, dtype=cupy.float32))  # LEAK
    cupy.cuda.Device().synchronize()
    print(len(kept))


def jax_loop(steps):
    import jax
    import jax.numpy as jnp

    kept = []
    for i in range(steps):
        a = jnp.ones((256, 256)) * i
        a.block_until_ready()
        del a
        kept.append(jnp.full((4096,), float(i)).block_until_ready())  # LEAK
    print(len(kept))


if __name__ == "__main__":
    {"torch": torch_loop, "cupy": cupy_loop, "jax": jax_loop}[sys.argv[1]](
        int(sys.argv[2]))
