# SPDX-License-Identifier: MIT
"""Two tests that leak at different lines and rates, for the pytest
plugin's per-test failure sections. Not collected by the project's own
suites."""
import pytest

import tinytensor as tt

FOUR = []
EIGHT = []


@pytest.mark.leakwatch(max_growth="1KiB", steps=20)
def test_leaks_4k():
    FOUR.append(tt.ones([1024]) * 2)    # @four


@pytest.mark.leakwatch(max_growth="1KiB", steps=20)
def test_leaks_8k():
    EIGHT.append(tt.ones([2048]) * 2)   # @eight
