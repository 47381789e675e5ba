from __future__ import annotations

from pathlib import Path

import pytest

from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from meta_memory.clock import ManualClock


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(1_700_000_000_000)


@pytest.fixture
def store(tmp_path: Path, clock: ManualClock):
    s = SqliteAgentMemoryStore(tmp_path / "agent-memory", clock)
    yield s
    s.close()
