from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from meta_memory.agent_memory.model import Author
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from meta_memory.clock import ManualClock


class FakeGate:
    """A write gate that quarantines LLM-authored writes while ``reason`` is set."""

    def __init__(self, reason: str | None = "session tainted by web tool 'web_search'") -> None:
        self.reason = reason
        self.calls: list[tuple[Author, str, list[Any]]] = []

    def quarantine_reason(self, author: Author, batch_kind: str, evidence: list[Any]) -> str | None:
        self.calls.append((author, batch_kind, evidence))
        if not author.is_llm:
            return None
        return self.reason


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(1_700_000_000_000)


@pytest.fixture
def store(tmp_path: Path, clock: ManualClock):
    s = SqliteAgentMemoryStore(tmp_path / "agent-memory", clock)
    yield s
    s.close()
