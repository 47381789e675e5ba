"""Migration 12 ("erasure-folded-hashes"): the erasure register keeps a second hash, of the
whitespace-folded content.

A realm is written with the schema before 12 and holds an erasure as the register kept it then (id,
scope, content hash: the content itself is gone). Opened with today's steps, it is migrated in place:
the old erasure still refuses its content by the exact hash (and the re-spaced forms of content that was
erased in folded form, whose exact hash is its folded hash); content it kept in another spacing has
nothing to fold from, so that content written in folded form is new. An erase after the migration
refuses every re-spacing.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.hashing import content_hash
from meta_memory.agent_memory.model import Scope
from meta_memory.agent_memory.store import schema
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore, realm_db_path
from meta_memory.clock import ManualClock
from support import refused_as_erased

R, ID = "default", "ana:main"
FOLDED, SPACED = "the safe code is 4711", "the  safe\tcode is 4712"


def _refused(store: SqliteAgentMemoryStore, title: str, body: str) -> bool:
    return refused_as_erased(store, R, ID, title, body)


def test_old_erasures_keep_refusing_by_their_exact_hash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "am"
    clock = ManualClock(1_750_000_000_000)
    with monkeypatch.context() as patch:
        patch.setattr(schema, "MIGRATIONS", [step for step in schema.MIGRATIONS if step[0] < 12])
        with SqliteAgentMemoryStore(root, clock) as store, store.transaction(R):
            pass  # the realm's database, of the schema before step 12
    path = realm_db_path(root, R)
    with sqlite3.connect(path) as conn:  # what an erase left in the register before step 12
        conn.executemany("INSERT INTO erasures(memory_id, scope_kind, scope_key, content_hash, erased_at_ms) "
                         "VALUES (?, 'identity', ?, ?, 1)",
                         [("mem-folded", ID, content_hash("Safe", FOLDED)), ("mem-spaced", ID, content_hash("Safe", SPACED))])
        assert "folded_hash" not in {r[1] for r in conn.execute("PRAGMA table_info(erasures)")}

    with SqliteAgentMemoryStore(root, clock) as store:
        assert _refused(store, "Safe", FOLDED) and _refused(store, "Safe", SPACED)  # the exact hash
        with sqlite3.connect(path) as conn:  # migrated at the realm's first open
            assert {r[0]: r[1] for r in conn.execute("SELECT memory_id, folded_hash FROM erasures")} == {
                "mem-folded": None, "mem-spaced": None}
            assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'erasures_match_idx'").fetchone()
        assert _refused(store, "Safe", "the safe code\u00a0is\n4711")  # re-spaced content erased in folded form
        assert not _refused(store, "Safe", "the safe code is 4712")  # no folded hash to match: new content
        # an erase after the migration registers the folded hash too
        mid = record_writes.remember(store, R, ID, "Vault", "room  nine, shelf\tthree")[0].memory_id
        store.erase(R, Scope.identity(R, ID), mid, erased_by="dpo")
        assert _refused(store, "Vault", "room nine, shelf three") and _refused(store, "Vault", "room nine,\nshelf three")
        with sqlite3.connect(path) as conn:
            (folded,) = conn.execute("SELECT folded_hash FROM erasures WHERE memory_id = ?", (mid,)).fetchone()
        assert folded == content_hash("Vault", "room nine, shelf three")
