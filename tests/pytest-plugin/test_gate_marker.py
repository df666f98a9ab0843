# SPDX-License-Identifier: MIT
"""Tests the pytest plugin's gate runs on: what it cannot judge, and
fail_on. Loops over tinytensor, on the stand-in CUDA runtime. Not
collected by the project's own suites."""
import pytest

import tinytensor as tt

KEPT = []
KEPT_TOO = []


@pytest.mark.leakwatch(max_growth="1MiB", steps=6, warmup=4)
def test_too_few_runs_to_judge():
    KEPT.append(tt.ones([1024]))


@pytest.mark.leakwatch(max_growth="1MiB", steps=30, fail_on="all")
def test_kept_within_growth_but_a_leak():
    KEPT_TOO.append(tt.ones([1024]))    # @kept


@pytest.mark.leakwatch(max_growth="1MiB", steps=30, fail_on="all")
def test_frees_everything():
    x = tt.ones([1024])
    assert float((x * 2).sum()) == 2048.0


@pytest.mark.leakwatch(max_growth="1MiB", steps=10, max_peak="1GiB")
def test_peak_without_pytorch():
    tt.ones([1024])
