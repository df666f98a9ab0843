# SPDX-License-Identifier: MIT
"""Tests the pytest plugin's test runs on: loops over tinytensor, on the
stand-in CUDA runtime. Not collected by the project's own suites."""
import pytest

import tinytensor as tt

KEPT = []
CACHE = []
FILLED = []


@pytest.mark.leakwatch(max_growth="1KiB", steps=30)
def test_keeps_a_tensor_per_run():
    x = tt.ones([1024])             # 4 KiB of float32
    KEPT.append(x * 2)              # @kept


@pytest.mark.leakwatch(max_growth="1KiB", steps=30)
def test_frees_everything():
    x = tt.ones([1024])
    assert float((x * 2).sum()) == 2048.0


@pytest.mark.leakwatch(max_growth=0, steps=30)
def test_cache_made_once():
    if not CACHE:                   # the first run is the warm-up
        CACHE.append(tt.ones([4096]))


@pytest.mark.leakwatch(max_growth=0, steps=30)
def test_cache_fills_then_stops():
    if len(FILLED) < 12:            # grows for 12 runs, then a plateau
        FILLED.append(tt.ones([1024]))  # @filled


@pytest.fixture
def weights():
    return tt.ones([256])


@pytest.mark.leakwatch(max_growth="1KiB", steps=20)
def test_fixture_set_up_once(weights):
    assert float((weights + 1).sum()) == 512.0


def test_unmarked():
    assert len(KEPT) in (0, 1, 30)
