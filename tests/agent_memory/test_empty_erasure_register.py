"""A write into a realm whose erasure register is empty skips the register's lookup and the folded hashes it
needs (an empty register refuses nothing); whether the register is empty is read in the write's own transaction,
so an erasure landed by any writer of the file, this store or another connection, is in force for the next write.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from meta_memory.agent_memory import erase, hashing, record_writes
from meta_memory.agent_memory.hashing import casefolded_content_hash, content_hash, folded_content_hash
from meta_memory.agent_memory.model import Scope
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore, realm_db_path
from meta_memory.clock import ManualClock
from support import refused_as_erased

R, ID = "default", "ana:main"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteAgentMemoryStore]:
    with SqliteAgentMemoryStore(tmp_path / "am", ManualClock(1_700_000_000_000)) as s:
        yield s


def _traced(store: SqliteAgentMemoryStore, realm: str = R) -> list[str]:
    """The statements the realm's writer runs from now on (appended as they run)."""
    seen: list[str] = []
    db = store._db(realm)
    with db.write_lock:
        db.writer.set_trace_callback(seen.append)
    return seen


def _count_folds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls = [0]
    real = hashing.erasure_hashes

    def counted(*args: Any) -> tuple[str, str, str]:
        calls[0] += 1
        return real(*args)

    monkeypatch.setattr(erase, "erasure_hashes", counted)
    return calls


def test_a_write_into_a_realm_that_never_erased_looks_nothing_up(store: SqliteAgentMemoryStore,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    record_writes.remember(store, R, ID, "Warm", "the realm's file exists")
    folds = _count_folds(monkeypatch)
    seen = _traced(store)
    rec, created = record_writes.remember(store, R, ID, "Harbour", "the ferry leaves at noon")
    assert created and store.get(R, rec.memory_id) is not None
    assert folds[0] == 0
    lookups = [s for s in seen if "FROM erasures" in s]
    assert len(lookups) == 1 and "LIMIT 1" in lookups[0]  # the emptiness check, nothing by hash or id
    assert not [s for s in seen if "erasure_texts" in s]  # nor the field-level register


def test_after_an_erase_every_write_is_checked_again(store: SqliteAgentMemoryStore,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    rec, _ = record_writes.remember(store, R, ID, "Vault", "room nine, shelf three")
    store.erase(R, Scope.identity(R, ID), rec.memory_id, erased_by="dpo")
    folds = _count_folds(monkeypatch)
    assert refused_as_erased(store, R, ID, "Vault", "room nine, shelf three")
    assert refused_as_erased(store, R, ID, "VAULT", "Room  Nine, Shelf THREE")  # fold 2 still computed and matched
    assert folds[0] == 4  # per write: the (title, body) pair, and the body as a field of its own (the title is short)
    assert not refused_as_erased(store, R, ID, "Vault", "room ten")


def test_an_erasure_another_connection_registers_is_in_force_at_the_next_write(
        store: SqliteAgentMemoryStore, tmp_path: Path) -> None:
    """No answer is kept between writes: the register is read afresh in each write transaction."""
    assert not refused_as_erased(store, R, ID, "Warm", "the realm's file exists")
    title, body = "Orchard plan", "meet at the old oak"
    with sqlite3.connect(realm_db_path(tmp_path / "am", R)) as conn:  # another writer of the same file
        conn.execute("INSERT INTO erasures(memory_id, scope_kind, scope_key, content_hash, folded_hash, casefolded_hash, "
                     "erased_at_ms) VALUES ('mem-gone', 'identity', ?, ?, ?, ?, 1)",
                     (ID, content_hash(title, body), folded_content_hash(title, body),
                      casefolded_content_hash(title, body)))
    assert refused_as_erased(store, R, ID, title, body)
    assert refused_as_erased(store, R, ID, title.upper(), body)
    # and in a batch of several writes, the erased one refuses the batch whole
    from meta_memory.agent_memory.batch import CreateOp, StagedBatch
    from meta_memory.agent_memory.model import Author, NewMemoryRecord, Provenance
    from meta_memory.errors import AgentMemoryError

    scope = Scope.identity(R, ID)
    ops = tuple(CreateOp(scope=scope, record=NewMemoryRecord(title=t, body=b, provenance=Provenance(Author.application())))
                for t, b in (("Fine", "a plain note"), (title, body)))
    with pytest.raises(AgentMemoryError) as err:
        record_writes.apply_batch(store, StagedBatch(R, Author.application(), ops))
    assert err.value.data["reason"] == "erased"
    assert [r.title for _, r in store.list_active(R, scope)] == ["Warm"]


def test_a_register_row_without_an_id_still_counts(store: SqliteAgentMemoryStore, tmp_path: Path) -> None:
    """A register holding only rows with no memory id (a hand-repaired file, another tool's write) is not
    empty: its content stays refused."""
    record_writes.remember(store, R, ID, "Warm", "the realm's files exist")
    title, body = "Orchard plan", "meet at the old oak"
    with sqlite3.connect(realm_db_path(tmp_path / "am", R)) as conn:
        conn.execute("INSERT INTO erasures(memory_id, scope_kind, scope_key, content_hash, folded_hash, "
                     "casefolded_hash, erased_at_ms) VALUES (NULL, 'identity', ?, ?, ?, ?, 1)",
                     (ID, content_hash(title, body), folded_content_hash(title, body),
                      casefolded_content_hash(title, body)))
    assert refused_as_erased(store, R, ID, title, body)
