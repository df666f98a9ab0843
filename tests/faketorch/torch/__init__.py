# SPDX-License-Identifier: MIT
"""A stand-in for the part of PyTorch leakwatch talks to: the global
optimizer step post-hook of torch.optim.optimizer. Test double only."""
from . import optim  # noqa: F401  (torch imports torch.optim on import)
