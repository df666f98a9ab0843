# SPDX-License-Identifier: MIT
# Real PyTorch runs out of the stand-in device's memory (FAKECUDA_CAPACITY):
# a loop keeps one 8 MiB activation per step until the allocator fails.
# Writes PyTorch's counters at the failure to the JSON file argv[1].
import json
import sys

import torch

dev = torch.device("cuda")
model = torch.nn.Linear(1024, 1024).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
kept = []
result = {}
try:
    for step in range(100000):
        x = torch.randn(2048, 1024, device=dev)
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        kept.append(x)  # the leak: 8 MiB per step
except torch.OutOfMemoryError as e:
    result = {"step": step, "allocated": torch.cuda.memory_allocated(),
              "reserved": torch.cuda.memory_reserved(), "error": str(e)}
with open(sys.argv[1], "w") as f:
    json.dump(result, f)
