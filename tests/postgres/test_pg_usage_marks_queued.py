"""On PostgreSQL too, usage marks and injection-ledger rows are off the recall's path: a recall queues
the marks of the records it returned and answers; one background writer lands a realm's queue in one
transaction, any other read of the realm in this process lands it first, closing the store lands it,
a full queue is written by the caller (back-pressure), and a batch that cannot be written is counted.
Nothing is lost: the counts are exact once written, also for another gateway reading the same schema."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from extras import require_extra

psycopg = require_extra("postgres", "psycopg")  # before the modules that import it

from contract.pgsupport import DSN
from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.model import Scope, UsageEvent
from meta_memory.agent_memory.store.base import InjectionRow
from meta_memory.agent_memory.store.postgres import PostgresAgentMemoryStore
from meta_memory.errors import AgentMemoryError
from meta_memory.recall.lexical import LexicalRecallProvider
from meta_memory.recall.provider import RecallRequest
from meta_memory.services.recall_reader import guarded_recall

pytestmark = pytest.mark.postgres

R = "default"
ID = "lead:reader"


def _committed(schema: str) -> dict[str, int]:
    """explicit_recall_count per record as committed (read on a connection of its own)."""
    with psycopg.connect(DSN) as conn:
        rows = conn.execute(f'SELECT memory_id, usage_stats FROM "{schema}".records WHERE realm = %s', (R,)).fetchall()
    return {mid: json.loads(stats or "{}").get("explicit_recall_count", 0) for mid, stats in rows}


def _injections(schema: str) -> int:
    with psycopg.connect(DSN) as conn:
        return int(conn.execute(f'SELECT count(*) FROM "{schema}".injections WHERE realm = %s', (R,)).fetchone()[0])


def _recall(store: PostgresAgentMemoryStore) -> list[str]:
    """A recall as the service runs it: its reads marked as a recall's, then the marks of what it returned."""
    request = RecallRequest(identity=ID, realm=R, query_text="harbour ferry", selection="contextual", max_entries=8)
    with store.recall_reads():
        ids = [s.record.memory_id for s in guarded_recall(LexicalRecallProvider(), store, request,
                                                         Scope.identity(R, ID)).records]
    store.mark_usage(R, ids, UsageEvent("explicit_recall"))
    return ids


def _held(store: PostgresAgentMemoryStore) -> PostgresAgentMemoryStore:
    store._pending.delay_s = 60.0  # the background writer waits: only reads, back-pressure and close write
    return store


def _open(schema: str) -> PostgresAgentMemoryStore:
    return PostgresAgentMemoryStore(DSN, schema=schema, pool_size=2)


def test_a_recall_writes_nothing_and_the_next_read_lands_every_mark(schema: str) -> None:
    with _open(schema) as store:
        rec, _ = record_writes.remember(store, R, ID, "Harbour", "the harbour ferry leaves at noon")
        _held(store)
        for _ in range(3):
            assert _recall(store) == [rec.memory_id]
        assert _committed(schema)[rec.memory_id] == 0  # three recalls, no write
        with _open(schema) as other:  # another gateway sees only what is committed
            got = other.get(R, rec.memory_id)
            assert got is not None and got.usage.explicit_recall_count == 0
            fetched = store.get(R, rec.memory_id)  # a read outside a recall lands the queue first
            assert fetched is not None and fetched.usage.explicit_recall_count == 3
            assert _committed(schema)[rec.memory_id] == 3
            again = other.get(R, rec.memory_id)
            assert again is not None and again.usage.explicit_recall_count == 3
        assert store.telemetry_stats() == {"dropped": 0}


def test_the_background_writer_lands_marks_without_any_read(schema: str) -> None:
    with _open(schema) as store:
        rec, _ = record_writes.remember(store, R, ID, "Harbour", "the harbour ferry leaves at noon")
        for _ in range(5):
            _recall(store)
        deadline = time.monotonic() + 10
        while _committed(schema)[rec.memory_id] < 5 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _committed(schema)[rec.memory_id] == 5


def test_a_full_queue_is_written_by_the_caller_and_nothing_is_dropped(schema: str) -> None:
    with _open(schema) as store:
        rec, _ = record_writes.remember(store, R, ID, "Harbour", "the harbour ferry leaves at noon")
        _held(store)._pending.max_pending = 3
        for _ in range(10):
            _recall(store)
        assert _committed(schema)[rec.memory_id] >= 8  # the queue never held more than 4 marks
        fetched = store.get(R, rec.memory_id)
        assert fetched is not None and fetched.usage.explicit_recall_count == 10
        assert store.telemetry_stats() == {"dropped": 0}


def test_closing_the_store_lands_the_queue_and_injection_rows(schema: str) -> None:
    with _open(schema) as store:
        rec, _ = record_writes.remember(store, R, ID, "Harbour", "the harbour ferry leaves at noon")
        _held(store)
        _recall(store)
        _recall(store)
        store.log_injections(R, [InjectionRow(rec.memory_id, ID, "turn", 1_700_000_000_000, "s1")])
        assert _injections(schema) == 0  # queued, not written
    assert _committed(schema)[rec.memory_id] == 2
    assert _injections(schema) == 1


def test_a_batch_that_cannot_be_written_is_counted_once_per_queued_write(schema: str, monkeypatch: Any) -> None:
    with _open(schema) as store:
        rec, _ = record_writes.remember(store, R, ID, "Harbour", "the harbour ferry leaves at noon")
        _held(store)

        def full(*args: Any, **kwargs: Any) -> Any:
            raise AgentMemoryError("disk_full", "write refused: no space left on the disk")

        monkeypatch.setattr(store, "_telemetry_tx", full)
        _recall(store)
        _recall(store)
        assert store.telemetry_stats() == {"dropped": 2}
        monkeypatch.undo()
        _recall(store)
        fetched = store.get(R, rec.memory_id)
        assert fetched is not None and fetched.usage.explicit_recall_count == 1
        assert store.telemetry_stats() == {"dropped": 2}


def test_the_panel_s_figures_are_exact_once_it_reads(schema: str) -> None:
    """The panel reads through snapshots, which land the realm's queue first: its usage figures and
    injection rows count every recall and injection made before it read."""
    with _open(schema) as store:
        rec, _ = record_writes.remember(store, R, ID, "Harbour", "the harbour ferry leaves at noon")
        _held(store)
        for _ in range(4):
            _recall(store)
        store.log_injections(R, [InjectionRow(rec.memory_id, ID, "turn", 1_700_000_000_000, "s1")])
        store.mark_usage(R, [rec.memory_id], UsageEvent("injected"))
        with store.snapshot(R) as tx:
            row = tx.panel.record(rec.memory_id)
            assert row is not None
            assert row.data["usage"]["explicit_recall_count"] == 4
            assert row.data["usage"]["injected_count"] == 1
            assert len(tx.panel.record_injections(rec.memory_id, 10)) == 1
