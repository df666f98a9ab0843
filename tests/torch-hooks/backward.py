# SPDX-License-Identifier: MIT
# Real PyTorch: gradients made in backward, on autograd's device thread,
# kept every step (torch.autograd.grad with create_graph=True, appended
# to a list). leakwatch must report them at the line that called grad().
import sys

import torch

dev = torch.device("cuda")
model = torch.nn.Linear(128, 128).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
kept = []
for step in range(int(sys.argv[2]) if len(sys.argv) > 2 else 12):
    x = torch.randn(32, 128, device=dev)
    loss = model(x).square().mean()
    grads = torch.autograd.grad(loss, model.weight, create_graph=True)  # GRAD
    kept.append(grads[0])
    opt.zero_grad()
    loss.backward()
    opt.step()
open(sys.argv[1], "w").write("{}")
