# SPDX-License-Identifier: MIT
"""Tests the pytest plugin's limits on PyTorch's allocator run on (real
PyTorch on the stand-in GPU: tests/torch/test_gate.py). Not collected by
the project's own suites."""
import pytest
import torch

MiB = 1 << 20
BUFFER = 32 * MiB                   # one run's buffer, float32
STATE = {}


def make_buffer(nbytes):
    return torch.ones(nbytes // 4, device="cuda")


# A run's buffer is made while the previous run's is still held: each
# run's peak holds two. Allowed: one and a half.
@pytest.mark.leakwatch(steps=10, max_peak=BUFFER * 3 // 2)
def test_previous_run_lingers():
    buf = make_buffer(BUFFER)       # the previous one is still in STATE
    STATE["prev"] = buf


@pytest.mark.leakwatch(steps=10, max_peak=BUFFER * 3 // 2)
def test_previous_run_released():
    STATE.pop("prev", None)
    STATE["prev"] = make_buffer(BUFFER)


# Rising sizes, each freed at the run's end: PyTorch's native pool
# reserves new segments for the larger blocks (an input that grows).
RUNS = []


@pytest.mark.leakwatch(steps=12, max_reserved_growth="1MiB")
def test_rising_sizes():
    RUNS.append(None)
    buf = make_buffer(len(RUNS) * 4 * MiB)
    del buf


@pytest.mark.leakwatch(steps=12, max_reserved_growth="1MiB")
def test_one_size():
    buf = make_buffer(16 * MiB)
    del buf
