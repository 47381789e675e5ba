"""Telemetry never fails a read, on both backends: a usage mark or an injection-ledger row that cannot
be written (a full disk) is dropped and counted, and a full disk is refused as ``disk_full``."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.model import UsageEvent, UsageStats
from meta_memory.agent_memory.store.base import AgentMemoryStore, InjectionRow
from meta_memory.clock import ManualClock
from meta_memory.errors import AgentMemoryError
from meta_memory.storage.disk import is_disk_full

IDENT = "lead:main"


def test_telemetry_that_cannot_be_written_is_dropped_and_counted(agent_store: AgentMemoryStore,
                                                                  monkeypatch: Any) -> None:
    record, _ = record_writes.remember(agent_store, "default", IDENT, "Apples", "apples are red")
    assert agent_store.telemetry_stats() == {"dropped": 0}

    def full(*args: Any, **kwargs: Any) -> Any:
        raise AgentMemoryError("disk_full", "write refused: no space left on the disk")

    monkeypatch.setattr(agent_store, "_telemetry_tx", full)
    agent_store.mark_usage("default", [record.memory_id], UsageEvent("explicit_recall"))
    agent_store.log_injections("default", [InjectionRow(record.memory_id, IDENT, "turn", 1_700_000_000_000, "s")])
    assert agent_store.telemetry_stats() == {"dropped": 2}
    monkeypatch.undo()
    agent_store.mark_usage("default", [record.memory_id], UsageEvent("explicit_recall"))  # room again: written
    assert agent_store.telemetry_stats() == {"dropped": 2}


def test_a_full_disk_is_recognised_on_every_backend() -> None:
    assert is_disk_full(sqlite3.OperationalError("database or disk is full"))
    assert is_disk_full(OSError(28, "No space left on device"))
    assert not is_disk_full(sqlite3.OperationalError("database is locked"))
    psycopg = pytest.importorskip("psycopg")
    assert is_disk_full(psycopg.errors.DiskFull("could not extend file: No space left on device"))
    from meta_memory.agent_memory.store.postgres import _write_error

    refusal = _write_error(psycopg.errors.DiskFull("could not extend file"))
    assert refusal.reason == "disk_full" and "the database server's disk" in refusal.message
    assert _write_error(psycopg.errors.UniqueViolation("x")).reason == "io"


def test_usage_marks_count_every_call_and_stamp_the_last(agent_store: AgentMemoryStore, clock: ManualClock) -> None:
    """However the store batches them (SQLite queues the marks and writes a batch with SQL's JSON
    functions), the counts and stamps are those of the marks applied one by one, in order; duplicate
    ids in one call count once, unknown ids change nothing."""
    a, _ = record_writes.remember(agent_store, "default", IDENT, "Apples", "apples are red")
    b, _ = record_writes.remember(agent_store, "default", IDENT, "Pears", "pears are green")
    calls = [([a.memory_id, a.memory_id, b.memory_id], "explicit_recall"), ([a.memory_id], "injected"),
             ([b.memory_id, "m_unknown"], "explicit_recall"), ([a.memory_id], "judged_useful"),
             ([a.memory_id], "explicit_recall")]
    want = {a.memory_id: UsageStats(), b.memory_id: UsageStats()}
    for ids, event in calls:
        clock.advance(1_000)
        agent_store.mark_usage("default", ids, UsageEvent(event))
        for memory_id in dict.fromkeys(ids):
            if memory_id in want:
                want[memory_id] = want[memory_id].bump(UsageEvent(event), clock.now_ms())
    for memory_id, usage in want.items():
        got = agent_store.get("default", memory_id)
        assert got is not None and got.usage == usage
    assert agent_store.telemetry_stats() == {"dropped": 0}
