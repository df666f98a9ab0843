# SPDX-License-Identifier: MIT
"""Training loops without leaks, which must get no leak verdict:

    controls.py optimizer-state|grad-accumulation|eval-no-grad|cache|workspace STEPS

optimizer-state: momentum buffers made at the first optimizer step;
grad-accumulation: four batches per optimizer step (steps from the
optimizer hook); eval-no-grad: evaluation every 10 steps under no_grad(),
summing loss.item(); cache: a cache that fills for the first 30 steps,
then only hits; workspace: a library workspace kept for reuse."""
import sys

from common import FEATURES, TorchOptimizer, batch, leakwatch, tt

MODE = sys.argv[1]
STEPS = int(sys.argv[2])


def train_step(model, opt, step):
    y = model(batch(step))
    loss = (y * y).sum()
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss.item()


def optimizer_state():
    model = tt.Linear(FEATURES)
    opt = TorchOptimizer(model.parameters(), momentum=0.9)
    for step in range(STEPS):
        train_step(model, opt, step)


def grad_accumulation():
    model = tt.Linear(FEATURES)
    opt = TorchOptimizer(model.parameters())
    for step in range(STEPS * 4):
        y = model(batch(step))
        loss = (y * y).sum() * 0.25
        loss.backward()
        if (step + 1) % 4 == 0:
            opt.step()
            opt.zero_grad()


def eval_no_grad():
    model = tt.Linear(FEATURES)
    opt = tt.SGD(model.parameters(), lr=0.01)
    for step in range(STEPS):
        train_step(model, opt, step)
        if (step + 1) % 10 == 0:
            total = 0.0
            with tt.no_grad():
                for i in range(5):
                    y = model(batch(i))
                    total += (y * y).sum().item()
        leakwatch.step()


def cache():
    model = tt.Linear(FEATURES)
    opt = tt.SGD(model.parameters(), lr=0.01)
    features = {}
    for step in range(STEPS):
        key = step % 30
        if key not in features:
            features[key] = tt.full(FEATURES, float(key))  # @cache
        train_step(model, opt, step)
        leakwatch.step()


def workspace():
    model = tt.Linear(FEATURES)
    opt = tt.SGD(model.parameters(), lr=0.01)
    for step in range(STEPS):
        train_step(model, opt, step)
        tt.workspace_sum(model.weight)
        leakwatch.step()


{"optimizer-state": optimizer_state, "grad-accumulation": grad_accumulation,
 "eval-no-grad": eval_no_grad, "cache": cache, "workspace": workspace}[MODE]()
print("ok", MODE)
