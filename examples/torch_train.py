# SPDX-License-Identifier: MIT
"""An ordinary PyTorch training script with a common leak: the logits of
every batch are kept, with their device memory, to compute the training
accuracy at the end (keep `out.argmax(1).cpu()` instead).

Runs on any CUDA device, the stand-in GPU included:

    scripts/fakegpu.sh build/report/leakwatch run -- python3 examples/torch_train.py
"""
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def main(epochs=2, batch=128):
    device = "cuda"
    data = TensorDataset(torch.randn(batch * 20, 1, 28, 28),
                         torch.randint(0, 10, (batch * 20,)))
    loader = DataLoader(data, batch_size=batch, shuffle=True, pin_memory=True)
    model = nn.Sequential(nn.Flatten(), nn.Linear(28 * 28, 256), nn.ReLU(),
                          nn.Linear(256, 10)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    outputs, targets = [], []
    for _ in range(epochs):
        for x, y in loader:
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            out = model(x)
            loss = F.cross_entropy(out, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            outputs.append(out)  # the leak: a batch of logits per step
            targets.append(y.cpu())
    correct = sum((o.argmax(1).cpu() == t).sum().item()
                  for o, t in zip(outputs, targets))
    print(f"training accuracy {correct / len(targets) / batch:.3f}")


if __name__ == "__main__":
    main()
