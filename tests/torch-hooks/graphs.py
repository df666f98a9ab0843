# SPDX-License-Identifier: MIT
# Real PyTorch captures a model's forward in a CUDA graph and replays it
# every step: the graph's private pool holds its blocks for as long as the
# graph lives, which is not a leak; a copy of each step's output kept in a
# list is. Steps are marked with leakwatch.step() (no optimizer steps).
# Writes PyTorch's counters at the end to the JSON file argv[1].
import json
import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.environ["LW_PYTHON_DIR"])
import leakwatch  # noqa: E402

model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10)).cuda()
static_x = torch.randn(64, 256, device="cuda")
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side), torch.no_grad():
    for _ in range(3):  # warm-up before capture, as PyTorch asks
        model(static_x)
torch.cuda.current_stream().wait_stream(side)
graph = torch.cuda.CUDAGraph()
with torch.no_grad(), torch.cuda.graph(graph):
    static_y = model(static_x)

kept = []
for step in range(30):
    static_x.copy_(torch.randn(64, 256, device="cuda"))
    graph.replay()
    kept.append(static_y.clone())  # KEPT: 64 x 10 floats per step
    leakwatch.step()
torch.cuda.synchronize()
with open(sys.argv[1], "w") as f:
    json.dump({"allocated": torch.cuda.memory_allocated(),
               "reserved": torch.cuda.memory_reserved()}, f)
