from __future__ import annotations

import pytest

from meta_memory.clock import ManualClock


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(1_700_000_000_000)
