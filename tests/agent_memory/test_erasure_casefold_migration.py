"""Migration 15 ("erasure-casefolded-hashes"): the erasure register keeps a fold-2 hash, of the content
folded also for compatibility forms (NFKC) and case.

A realm is written with the schema before 15 and holds erasures as the register kept them then (id,
scope, content hash, fold-1 hash: the content itself is gone). Opened with today's steps, it is migrated
in place: each old erasure still refuses its exact content and its re-spaced forms (fold 1), and the
case and width variants of content that was erased in lower case (whose fold-1 hash is its fold-2
hash); a case variant of content it kept in capitals has nothing to fold from (the documented residual).
An erase after the migration refuses every case and width variant.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.hashing import casefolded_content_hash, content_hash, folded_content_hash
from meta_memory.agent_memory.model import Scope
from meta_memory.agent_memory.store import schema
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore, realm_db_path
from meta_memory.clock import ManualClock
from support import refused_as_erased

R, ID = "default", "ana:main"
#: erased before the migration: one in capitals, one already in lower case
CAPS, LOWER = ("Erase Me Plan", "The launch code word is bluebird"), ("vault", "room nine, shelf three")


def old_rows() -> list[tuple[str, str, str]]:
    """``(id, content hash, fold-1 hash)`` of the two erasures as the register kept them before step 15."""
    return [(mid, content_hash(*c), folded_content_hash(*c)) for mid, c in (("mem-caps", CAPS), ("mem-lower", LOWER))]


def test_old_fold_erasures_keep_refusing_and_new_ones_fold_case(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "am"
    clock = ManualClock(1_750_000_000_000)
    with monkeypatch.context() as patch:
        patch.setattr(schema, "MIGRATIONS", [step for step in schema.MIGRATIONS if step[0] < 15])
        with SqliteAgentMemoryStore(root, clock) as store, store.transaction(R):
            pass  # the realm's database, of the schema before step 15
    path = realm_db_path(root, R)
    with sqlite3.connect(path) as conn:  # what an erase left in the register before step 15
        conn.executemany("INSERT INTO erasures(memory_id, scope_kind, scope_key, content_hash, folded_hash, "
                         "erased_at_ms) VALUES (?, 'identity', ?, ?, ?, 1)",
                         [(mid, ID, exact, folded) for mid, exact, folded in old_rows()])
        assert "casefolded_hash" not in {r[1] for r in conn.execute("PRAGMA table_info(erasures)")}

    with SqliteAgentMemoryStore(root, clock) as store:
        def refused(title: str, body: str) -> bool:
            return refused_as_erased(store, R, ID, title, body)

        # the old fold still holds: the exact content and its re-spaced forms
        assert refused(*CAPS) and refused("Erase  Me Plan", "The launch\tcode word is\u00a0bluebird")
        assert refused(*LOWER) and refused("vault", "room  nine,\nshelf three")
        # content erased in lower case: its fold-1 hash is its fold-2 hash, so every case and width form is refused
        assert refused("VAULT", "Room Nine, Shelf THREE") and refused("ｖａｕｌｔ", "ｒｏｏｍ nine, shelf three")
        # the residual: content erased in capitals before the step has no fold-2 hash to match its lower case
        assert not refused(CAPS[0].lower(), CAPS[1].lower())
        with sqlite3.connect(path) as conn:  # migrated at the realm's first open
            assert {r[0]: r[1] for r in conn.execute("SELECT memory_id, casefolded_hash FROM erasures")} == {
                "mem-caps": None, "mem-lower": None}
            assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'erasures_lookup_idx'").fetchone()
            assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'erasures_match_idx'").fetchone()
        # an erase after the migration registers all three hashes and refuses the case and width forms
        mid = record_writes.remember(store, R, ID, "Orchard Plan", "Meet at the Old Oak")[0].memory_id
        store.erase(R, Scope.identity(R, ID), mid, erased_by="dpo")
        assert refused("orchard plan", "MEET AT THE OLD OAK") and refused("Ｏｒｃｈａｒｄ Plan", "meet at the old oak")
        with sqlite3.connect(path) as conn:
            row = conn.execute("SELECT content_hash, folded_hash, casefolded_hash FROM erasures WHERE memory_id = ?",
                               (mid,)).fetchone()
        assert row == (content_hash("Orchard Plan", "Meet at the Old Oak"),
                       content_hash("Orchard Plan", "Meet at the Old Oak"),
                       content_hash("orchard plan", "meet at the old oak"))
        assert row[2] == casefolded_content_hash("ORCHARD PLAN", "Meet at the Old Oak")
