# SPDX-License-Identifier: MIT
from .optimizer import Optimizer  # noqa: F401
