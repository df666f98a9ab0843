# SPDX-License-Identifier: MIT
"""torch.optim.optimizer's global step hooks, as PyTorch defines them:
register_optimizer_step_post_hook(hook) registers hook(optimizer, args,
kwargs), called after every Optimizer.step() of every optimizer."""
from collections import OrderedDict

_global_optimizer_post_hooks = OrderedDict()
_next_id = 0


class RemovableHandle:
    def __init__(self, hooks, key):
        self._hooks, self._key = hooks, key

    def remove(self):
        self._hooks.pop(self._key, None)


def register_optimizer_step_post_hook(hook):
    global _next_id
    _next_id += 1
    _global_optimizer_post_hooks[_next_id] = hook
    return RemovableHandle(_global_optimizer_post_hooks, _next_id)


class Optimizer:
    def __init__(self, name="opt"):
        self.name = name
        self.steps = 0

    def step(self, *args, **kwargs):
        self.steps += 1
        for hook in list(_global_optimizer_post_hooks.values()):
            hook(self, args, kwargs)
