"""The domain's import planner: what each imported record becomes (present, conflict, duplicate, a key already
stored, fresh), and a dry run answering exactly what the real run then does."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.batch import CreateOp
from meta_memory.agent_memory.import_plan import Landing, StoredKeys, apply_creates, foreign_create, plan_creates
from meta_memory.agent_memory.model import Scope
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from meta_memory.portability.foreign import ForeignRecord, ForeignSummary, import_foreign

R = "default"
ALICE = Scope.identity(R, "alice")
NOW = 1_700_000_000_000


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteAgentMemoryStore]:
    with SqliteAgentMemoryStore(tmp_path / "am") as s:
        yield s


def create(source_id: str, body: str, *, tags: tuple[str, ...] = (), scope: Scope = ALICE) -> CreateOp:
    return foreign_create(scope, "langgraph", source_id, title="Note", body=body, tags=tags,
                          created_at_ms=NOW, updated_at_ms=NOW, expires_at_ms=None, metadata={})


def test_each_op_is_planned_against_the_store_and_the_ops_before_it(store: SqliteAgentMemoryStore) -> None:
    assert apply_creates(store, R, [create("a", "kept as imported"), create("b", "stored first")]) == []
    stored, _ = record_writes.remember(store, R, "alice", "Note", "already remembered")
    ops = [
        create("a", "kept as imported"),            # the same id, the same content: present
        create("b", "changed in the source"),       # the same id, other content: a conflict
        create("c", "already remembered"),          # the content is active in the scope: a duplicate
        create("d", "new twice"),                   # fresh
        create("e", "new twice"),                   # the content of an op before it: a duplicate
        create("f", "keyed", tags=("lg:k:1",)),     # fresh, its key taken
        create("g", "keyed again", tags=("lg:k:1",)),  # the same key as an op before it
    ]
    plans = plan_creates(store, R, ops, ["lg:k:1" if "lg:k:1" in op.record.tags else None for op in ops],
                         StoredKeys("lg:item"))
    assert [(p.landing, p.met) for p in plans] == [
        (Landing.PRESENT, None),
        (Landing.CONFLICT, ops[1].id),
        (Landing.DUPLICATE, stored.memory_id),
        (Landing.FRESH, None),
        (Landing.DUPLICATE, None),
        (Landing.FRESH, None),
        (Landing.KEY_CONFLICT, None),
    ]


def test_a_refused_op_is_left_out_and_the_others_land(store: SqliteAgentMemoryStore) -> None:
    ops = [create("x", "fine"), create("y", "my key is AKIAIOSFODNN7EXAMPLE"), create("z", "also fine")]
    refused = apply_creates(store, R, ops)
    assert [(i, e.reason) for i, e in refused] == [(1, "secret_detected")]
    assert store.get(R, ops[0].id or "") is not None and store.get(R, ops[2].id or "") is not None
    assert store.get(R, ops[1].id or "") is None


def rec(position: int, source_id: str, body: str) -> ForeignRecord:
    return ForeignRecord(position=position, system="mem0", source_id=source_id, identity="alice", title="Tea",
                         body=body, created_at_ms=NOW, updated_at_ms=NOW)


def test_the_dry_run_answers_what_the_real_run_does(store: SqliteAgentMemoryStore) -> None:
    first = [rec(1, "m1", "Alice prefers tea")]
    import_foreign(store, first, ForeignSummary("mem0", "test", R))
    entries = [rec(1, "m1", "Alice prefers tea"), rec(2, "m2", "Alice prefers tea"), rec(3, "m3", "Bob hikes"),
               rec(4, "m4", "Bob hikes"), rec(5, "m5", "Carol reads")]
    dry = import_foreign(store, entries, ForeignSummary("mem0", "test", R, dry_run=True))
    real = import_foreign(store, entries, ForeignSummary("mem0", "test", R))
    assert {**dry.to_json(), "dry_run": False} == real.to_json()
    assert (real.created, real.present, real.duplicates) == (2, 1, 2)
