# SPDX-License-Identifier: MIT
"""torchtitan's training loop: every step's loss goes on a list that only
logging drains. With logging off ("off": no steps marked either, so the
report infers them from the loop) the list is never drained; with a long
interval ("every N", steps marked with leakwatch.step()) it is drained
every N steps: a sawtooth of small blocks.

    torchtitan.py off|every N STEPS"""
import sys

from common import batch, leakwatch, tt

MODE = sys.argv[1]
LOG_FREQ = int(sys.argv[2]) if MODE == "every" else 0
STEPS = int(sys.argv[-1])


def train():
    model = tt.Linear(64)
    opt = tt.SGD(model.parameters(), lr=0.01)
    losses_since_last_log = []
    for step in range(STEPS):
        y = model(batch(step, 64))
        loss = (y * y).sum()  # @loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses_since_last_log.append(loss)
        if LOG_FREQ and (step + 1) % LOG_FREQ == 0:
            avg = sum(l.item() for l in losses_since_last_log) / LOG_FREQ
            print("step %d loss %.3f" % (step + 1, avg))
            losses_since_last_log.clear()
        if LOG_FREQ:
            leakwatch.step()
    return losses_since_last_log


kept = train()
print("ok", STEPS)
