# SPDX-License-Identifier: MIT
"""A training loop whose evaluation keeps its graphs: the running total of
the validation loss is a tensor, so every evaluation forward's graph (and
the activations it saved) stays alive through it. One line of this script
leaks, through several framework paths (the linear layers, the ReLU, the
loss). Run by test_views.py under the stand-in GPU."""
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                            torch.nn.Linear(128, 10)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
val_total = 0
for step in range(30):
    x = torch.randn(32, 64, device="cuda")
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    v = torch.randn(32, 64, device="cuda")
    val_total = val_total + model(v).pow(2).mean()  # the leak: keeps graphs
print("done")
