"""A recall on SQLite reads its realm in one read transaction (candidates, neighbours, the runtime's re-check):
one ``BEGIN`` a recall instead of one per read, the same answer, and nothing served from it to a read of
another thread or another store."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.model import Scope
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from meta_memory.clock import ManualClock
from meta_memory.recall.lexical import LexicalRecallProvider
from meta_memory.recall.provider import RecallRequest
from meta_memory.services.recall_reader import guarded_recall

R = "default"
A = "lead:alice"


def _store(root: Path) -> SqliteAgentMemoryStore:
    return SqliteAgentMemoryStore(root, clock=ManualClock(1_700_000_000_000))


def _traced(store: SqliteAgentMemoryStore) -> list[str]:
    """Every statement the store's read connections run from now on."""
    seen: list[str] = []
    checkout = store._checkout

    def traced(db: Any) -> Any:
        conn = checkout(db)
        conn.set_trace_callback(seen.append)
        return conn

    store._checkout = traced  # type: ignore[method-assign]
    return seen


def _recall(store: SqliteAgentMemoryStore, query: str) -> list[str]:
    request = RecallRequest(realm=R, identity=A, query_text=query, max_entries=3)
    with store.recall_reads():
        outcome = guarded_recall(LexicalRecallProvider(), store, request, Scope.identity(R, A))
    return [s.record.title for s in outcome.records]


def test_a_recall_reads_its_realm_in_one_transaction(tmp_path: Path) -> None:
    with _store(tmp_path) as store:
        for i in range(6):
            record_writes.remember(store, R, A, f"Harbour note {i}", f"the harbour ferry leaves at {i} o'clock")
        expected = _recall(store, "harbour ferry")
        seen = _traced(store)
        assert _recall(store, "harbour ferry") == expected and len(expected) == 3
        assert sum(1 for s in seen if s.strip().upper().startswith("BEGIN")) == 1
        assert sum(1 for s in seen if s.strip().upper().startswith("COMMIT")) == 1


def test_the_recall_s_transaction_serves_no_other_thread_nor_store(tmp_path: Path) -> None:
    with _store(tmp_path / "one") as store, _store(tmp_path / "two") as other:
        record_writes.remember(store, R, A, "Harbour", "the harbour ferry leaves at noon")
        record_writes.remember(other, R, A, "Lighthouse", "the lighthouse keeper sleeps at noon")
        seen: list[object] = []
        with store.recall_reads():
            assert [v.title for v, _ in store.search(R, Scope.identity(R, A), '"harbour"', 5)] == ["Harbour"]
            # another store's realm of the same name is its own file
            assert [v.title for v, _ in other.search(R, Scope.identity(R, A), '"keeper"', 5)] == ["Lighthouse"]
            late, _ = record_writes.remember(store, R, A, "Harbour late", "the harbour ferry leaves late")
            # this thread's reads stay in the recall's snapshot; another thread's see the write
            assert store.get(R, late.memory_id) is None
            worker = threading.Thread(target=lambda: seen.append(store.get(R, late.memory_id)))
            worker.start()
            worker.join()
        assert seen and getattr(seen[0], "memory_id", None) == late.memory_id
        assert store.get(R, late.memory_id) is not None  # the block's end ended its transaction


def test_with_the_index_warm_a_recall_reads_the_change_log_once(tmp_path: Path) -> None:
    with _store(tmp_path) as store:
        store.lexical_index.min_rows = 0  # a small realm is indexed too
        for i in range(6):
            record_writes.remember(store, R, A, f"Harbour note {i}", f"the harbour ferry leaves at {i} o'clock")
        assert store.lexical_index.warm(R)
        expected = _recall(store, "harbour ferry")
        seen = _traced(store)
        assert _recall(store, "harbour ferry") == expected and len(expected) == 3
        assert sum(1 for s in seen if "MAX(seq)" in s) == 1  # the index caught up once, for the candidates
        assert not any(s.strip().startswith("SELECT memory_id, rid") for s in seen)  # anchors: from the candidates
        assert sum(1 for s in seen if s.strip().upper().startswith("BEGIN")) == 1
