# SPDX-License-Identifier: MIT
"""Training loops of every memory shape leakwatch must judge, written with
the tests' tensor library (tinytensor, whose storages are freed when Python
drops them).

    train.py SHAPE [--no-marks]

Each step calls leakwatch.step() unless --no-marks is given (leakwatch then
infers the steps from the loop's repeating allocations). Lines a test
expects to be named are marked with `# @name`.
"""
import gc
import os
import sys

sys.path.insert(0, os.environ["TINYTENSOR_SITE"])
sys.path.insert(0, os.environ["LEAKWATCH_PY"])
import leakwatch  # noqa: E402
import tinytensor as tt  # noqa: E402

STEPS = 60
FEATURES = 1024  # 4 KiB per tensor


class Adam(object):
    """Two moments per parameter, made at the first step (lazy state)."""

    def __init__(self, params):
        self.params = list(params)
        self.state = None

    def step(self):
        if self.state is None:
            self.state = [(tt.zeros(p.shape), tt.zeros(p.shape))  # @adam
                          for p in self.params]


def forward(model, step):
    x = tt.full(FEATURES, float(step % 7))
    y = model(x)
    hidden = y * 2.0 + 1.0
    return (hidden * hidden).sum(), hidden  # @loss


def run(shape, marks):
    model = tt.Linear(FEATURES)
    opt = tt.SGD(model.parameters(), lr=0.001)
    adam = Adam(model.parameters())
    kept, cache, metrics = [], {}, []
    grads = None
    previous = None
    for step in range(STEPS):
        loss, hidden = forward(model, step)
        loss.backward()
        opt.step()
        opt.zero_grad()
        if shape == "linear":
            kept.append(tt.empty(16384))  # @linear
        elif shape == "tiny":
            kept.append(loss.detach())  # the loss's storage, kept
        elif shape in ("sawtooth-flat", "sawtooth-rising"):
            metrics.append(hidden.detach().clone())  # @metric
            if step % 10 == 9:
                survivor = metrics[-1:] if shape == "sawtooth-rising" else []
                del metrics[:]
                kept.extend(survivor)
        elif shape in ("plateau", "cache-fill"):
            key = step % 12 if shape == "plateau" else step % 4
            if key not in cache:
                cache[key] = tt.empty(8192)  # @cache
        elif shape == "warmup":
            adam.step()
            kept.append(tt.empty(4096))  # @warmup-leak
        elif shape == "lazy-optimizer":
            adam.step()
        elif shape == "grad-accumulation":
            if step % 4 == 0:
                grads = tt.zeros(65536)  # @grads
            if step % 4 == 3:
                grads = None
        elif shape == "eval":
            if step % 10 == 9:
                with tt.no_grad():
                    batch = [tt.full(32768, 1.0) for _ in range(4)]
                    total = sum(b.sum().item() for b in batch)
                    del batch
                assert total > 0
        elif shape == "lingering":
            # The previous step's outputs are still referenced while the
            # next forward runs (a `retval` kept until it is reassigned).
            out = tt.empty(65536)  # @lingering
            previous = out
            del out
        elif shape == "phase-survivor":
            if step == 5:
                with leakwatch.phase("text_encoder"):
                    encoder = [tt.empty(32768) for _ in range(3)]  # @encoder
                    cache["prompt"] = encoder[0]
                    cache["pooled"] = encoder[1]
                    del encoder
        del loss, hidden
        if marks:
            leakwatch.step()
    gc.collect()
    return kept, cache, metrics, previous, grads


if __name__ == "__main__":
    state = run(sys.argv[1], "--no-marks" not in sys.argv[2:])
    print("ok")
