"""The domain's import planner: what each imported record becomes (present, conflict, duplicate, a key already
stored, fresh), and a dry run answering exactly what the real run then does."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.batch import CreateOp
from meta_memory.agent_memory.import_plan import (
    Landing,
    StoredKeys,
    apply_creates,
    apply_restore,
    foreign_create,
    plan_creates,
    plan_restore,
)
from meta_memory.agent_memory.model import MemoryRecord, Scope
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


def restored(memory_id: str, body: str, *, status: dict[str, str] | None = None,
             supersedes: str | None = None) -> MemoryRecord:
    return MemoryRecord.from_json({
        "id": memory_id, "scope": ALICE.to_json(), "kind": "fact", "title": "Note", "body": body,
        "provenance": {"evidence": [], "author": {"author": "application"}}, "trust": "agent_observed",
        "status": status or {"status": "active"}, "supersedes": supersedes,
        "created_at_ms": NOW, "updated_at_ms": NOW})


def test_a_restore_keeps_one_active_copy_of_each_content_and_every_chain_whole(
        store: SqliteAgentMemoryStore) -> None:
    stored, _ = record_writes.remember(store, R, "alice", "Note", "stored words")
    recs = list(enumerate([
        restored("u", "same words"),                                           # unlinked: skipped
        restored("a1", "old a", status={"status": "superseded", "by": "a2"}),
        restored("a2", "same words", supersedes="a1"),                         # a chain's head: holds it
        restored("b1", "old b", status={"status": "superseded", "by": "b2"}),
        restored("b2", "same words", supersedes="b1"),                         # the same head again
        restored("d1", "old d", status={"status": "superseded", "by": "d2"}),
        restored("d2", "stored words", supersedes="d1"),                       # a head the store holds
        restored("c", "fresh words"),
    ], start=2))
    plan = plan_restore(store, R, recs)
    assert [(d.line, d.memory_id, d.duplicate_of, d.landed) for d in plan.duplicates] == [
        (2, "u", "a2", False), (6, "b2", "a2", True), (8, "d2", stored.memory_id, True)]
    assert plan.present == 1
    assert [(rec.id, rec.status.kind.value) for _, rec in plan.fresh] == [
        ("a1", "superseded"), ("a2", "active"), ("b1", "superseded"), ("b2", "tombstoned"),
        ("d1", "superseded"), ("d2", "tombstoned"), ("c", "active")]
    for batch in plan.batches():
        apply_restore(store, R, batch, rationale="import", plan=plan)
    active = store.list_active(R, ALICE, limit=50)
    assert sorted((r.id, r.body) for _, r in active) == sorted([
        (stored.memory_id, "stored words"), ("a2", "same words"), ("c", "fresh words")])
    assert plan_restore(store, R, recs).fresh == []  # a second run lands nothing
