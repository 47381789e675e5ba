"""The two-backend fixtures: every test here runs once on SQLite and once on PostgreSQL.

``agent_store`` is a fresh store; ``open_store(gate=None)`` opens another
store on the same backing (same directory / same schema), e.g. to reopen or
to use a store-level default gate. Everything is closed, and the PostgreSQL
schema dropped, at teardown.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from meta_memory.agent_memory.model import Author
from meta_memory.agent_memory.store.base import AgentMemoryStore
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from meta_memory.clock import ManualClock

from .pgsupport import DSN, require_postgres, throwaway_schema

BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


class FakeGate:
    """A write gate that quarantines LLM-authored writes while ``reason`` is set."""

    def __init__(self, reason: str | None = "session tainted by web tool 'web_search'") -> None:
        self.reason = reason
        self.calls: list[tuple[Author, str, list[Any]]] = []

    def quarantine_reason(self, author: Author, batch_kind: str, evidence: list[Any], *, realm: str) -> str | None:
        self.calls.append((author, batch_kind, evidence))
        if not author.is_llm:
            return None
        return self.reason


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(1_700_000_000_000)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    if request.param == "postgres":
        require_postgres()
    return request.param


@pytest.fixture
def open_store(backend: str, tmp_path: Path, clock: ManualClock) -> Iterator[Callable[..., AgentMemoryStore]]:
    opened: list[AgentMemoryStore] = []
    if backend == "sqlite":
        root = tmp_path / "agent-memory"

        def factory(gate: Any = None) -> AgentMemoryStore:
            s = SqliteAgentMemoryStore(root, clock, gate=gate)
            opened.append(s)
            return s

        yield factory
        for s in opened:
            s.close()
        return

    from meta_memory.agent_memory.store.postgres import PostgresAgentMemoryStore

    with throwaway_schema() as schema:

        def pg_factory(gate: Any = None) -> AgentMemoryStore:
            s = PostgresAgentMemoryStore(DSN, clock, gate=gate, schema=schema, pool_size=4)
            opened.append(s)
            return s

        try:
            yield pg_factory
        finally:
            for s in opened:
                s.close()


@pytest.fixture
def agent_store(open_store: Callable[..., AgentMemoryStore]) -> AgentMemoryStore:
    """A fresh store of the parametrised backend."""
    return open_store()
