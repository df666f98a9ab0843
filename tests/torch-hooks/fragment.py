# SPDX-License-Identifier: MIT
# Real PyTorch: every step makes and frees an activation larger than any
# before (a new shape each step), so the native allocator's cache grows
# while the tensors do not. argv[1]: where to write PyTorch's counters.
import json
import sys

import torch

dev = torch.device("cuda")
model = torch.nn.Linear(512, 512).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
counters = []
for step in range(20):
    big = torch.randn(4096 + 512 * step, 1024, device=dev)  # SHAPES
    loss = model(torch.randn(64, 512, device=dev)).sum() + big.sum()
    loss.backward()
    del big, loss
    opt.step()
    counters.append({"allocated": torch.cuda.memory_allocated(),
                     "reserved": torch.cuda.memory_reserved()})
with open(sys.argv[1], "w") as f:
    json.dump({"steps": counters}, f)
