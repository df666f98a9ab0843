# SPDX-License-Identifier: MIT
# A small training loop on real PyTorch that keeps one 512-byte loss
# tensor per step (the torchtitan story), and writes PyTorch's own
# counters after every optimizer step to the JSON file named by argv[1],
# so that a test can hold leakwatch's allocated/reserved levels against
# torch.cuda.memory_allocated()/memory_reserved() to the byte.
import json
import sys

import torch

STEPS = int(sys.argv[2]) if len(sys.argv) > 2 else 12

torch.manual_seed(0)
dev = torch.device("cuda")
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(),
                            torch.nn.Linear(512, 128)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
kept = []
counters = []
for step in range(STEPS):
    x = torch.randn(64, 256, device=dev)
    y = torch.randn(64, 128, device=dev)
    loss = ((model(x) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    # Read right after the step: the optimizer post-hook ended the step.
    counters.append({"allocated": torch.cuda.memory_allocated(),
                     "reserved": torch.cuda.memory_reserved()})
    kept.append(loss.detach() * 1)  # one 512-byte block per step: the leak

with open(sys.argv[1], "w") as f:
    json.dump({"steps": counters, "kept_nbytes": kept[-1].nbytes,
               "max_allocated": torch.cuda.max_memory_allocated(),
               "max_reserved": torch.cuda.max_memory_reserved()}, f)
