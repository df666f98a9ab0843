# SPDX-License-Identifier: MIT
"""The seed leak cases of tests/diagnose/, written against real PyTorch, for
the GPU suite (test_gpu.py's diagnose_* scenarios). Each function is one
case; the line a test expects to lead the finding is marked `# @lead`.

Usage: diagnose_programs.py CASE STEPS
"""
import copy
import gc
import sys

import torch
import torch.nn.functional as F

DEVICE = "cuda"


def model_and_data():
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 10)).to(DEVICE)
    x = torch.randn(64, 256, device=DEVICE)
    y = torch.randint(0, 10, (64,), device=DEVICE)
    return model, x, y


def torchtitan(steps):
    """The loss of every step kept for logging that never happens."""
    model, x, y = model_and_data()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    losses = []
    for _ in range(steps):
        loss = F.cross_entropy(model(x), y)  # @lead
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss)
    return losses


class Accuracy(object):
    """A metric object that refers to itself (as Composer's do), so that a
    copy of it is freed only by the cycle collector."""

    def __init__(self):
        self.correct = torch.zeros(1024, device=DEVICE)
        self.me = self

    def update(self, out):
        self.correct += out.sum()


def composer(steps, collect=True):
    """A deep copy of the metrics every batch."""
    if not collect:
        gc.disable()
    model, x, y = model_and_data()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    metric = Accuracy()
    for _ in range(steps):
        out = model(x)
        loss = F.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        batch_metric = copy.deepcopy(metric)  # @lead
        batch_metric.update(out.detach())
        del batch_metric


def composer_no_gc(steps):
    composer(steps, collect=False)


class GradBufferLoss(torch.autograd.Function):
    """A loss that computes its gradient in the forward pass and keeps it
    on ctx, as CTC losses do."""

    @staticmethod
    def forward(ctx, logits):
        grad = torch.softmax(logits, dim=1) * 2  # @lead
        ctx.save_for_backward(grad)
        return logits.square().mean()

    @staticmethod
    def backward(ctx, g):
        (grad,) = ctx.saved_tensors
        return grad * g


def espnet(steps):
    """retval of the previous step alive while the next forward runs."""
    model = torch.nn.Linear(256, 4096).to(DEVICE)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(256, 256, device=DEVICE)
    retval = None
    for _ in range(steps):
        retval = {"loss": GradBufferLoss.apply(model(x))}
        opt.zero_grad()
        retval["loss"].backward()
        opt.step()
    return retval


def simpletuner(steps):
    """Text encoders loaded in a phase and "unloaded", while a cache and a
    prompt handler still hold two of their weights."""
    sys.path.insert(0, sys.argv[3])
    import leakwatch

    cache = {}
    with leakwatch.phase("text_encoder"):
        encoders = [torch.nn.Linear(1024, 1024).to(DEVICE)  # @lead
                    for _ in range(3)]
        prompt = torch.randn(8, 1024, device=DEVICE)
        with torch.no_grad():
            embeds = encoders[2](encoders[1](encoders[0](prompt)))
        cache["te1"] = encoders[0].weight
        cache["te2"] = encoders[1].weight
        del encoders
    model, x, y = model_and_data()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(steps):
        loss = F.cross_entropy(model(x), y) + embeds.mean() * 0
        opt.zero_grad()
        loss.backward()
        opt.step()
    return cache


def eval_grad(steps):
    """Evaluation without no_grad(), summing losses: every forward's graph
    is kept."""
    model, x, y = model_and_data()
    total = 0
    for _ in range(steps):
        out = model(x)  # @lead
        total = total + F.cross_entropy(out, y)
        torch.cuda.synchronize()
    return total


def control_adam(steps):
    """Adam's state, made at the first step: no leak."""
    model, x, y = model_and_data()
    opt = torch.optim.Adam(model.parameters())
    for _ in range(steps):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()


def control_eval(steps):
    """Evaluation under no_grad(), losses kept as floats: no leak."""
    model, x, y = model_and_data()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    losses = []
    for step in range(steps):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if step % 5 == 4:
            with torch.no_grad():
                losses.append(F.cross_entropy(model(x), y).item())


CASES = {f.__name__: f for f in (torchtitan, composer, composer_no_gc, espnet,
                                 simpletuner, eval_grad, control_adam,
                                 control_eval)}

if __name__ == "__main__":
    result = CASES[sys.argv[1]](int(sys.argv[2]))
    torch.cuda.synchronize()
    print("ok")
