"""Migration 22 ("erasure-skeleton-hashes"): the erasure register keeps a fold-3 hash, of the content with
look-alike letters of other scripts read as the Latin letters they look like.

A realm is written with the schema before 22 and holds erasures as the register kept them then (id,
scope, content hash, fold-1 and fold-2 hashes: the content itself is gone). Opened with today's steps, it is
migrated in place and gains the column (``NULL`` for the old rows) and its index. Each old erasure still
refuses its exact content and its case and width variants; a look-alike spelling of content erased before
has no fold-3 hash to match (the documented residual: fold 3 also takes whitespace out, so it equals no
older fold). An erase after the migration registers all four hashes and refuses every look-alike spelling.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.hashing import content_hash, erasure_hashes, skeleton_content_hash
from meta_memory.agent_memory.model import Scope
from meta_memory.agent_memory.store import schema
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore, realm_db_path
from meta_memory.clock import ManualClock
from support import refused_as_erased

R, ID = "default", "ana:main"
#: erased before the migration: one all ASCII, one holding a Cyrillic word (с, а, х, р look Latin)
ASCII, CYRILLIC = ("Erase Me Plan", "The launch code word is bluebird"), ("Vault", "the word is сахар")
#: look-alike spellings of each (Cyrillic а, е, о, Greek ο; and сахар spelled with Latin c, a, x, p)
ASCII_LOOK_ALIKE = ("Er\u0430se Me Pl\u0430n", "The launch c\u03bfde w\u043erd is bluebird")
CYRILLIC_LOOK_ALIKE = ("Vault", "the word is caxap")


def old_rows() -> list[tuple[str, str, str, str]]:
    """``(id, content hash, fold-1 hash, fold-2 hash)`` of the two erasures as the register kept them before
    step 22."""
    return [(mid, *erasure_hashes(*c)[:3]) for mid, c in (("mem-ascii", ASCII), ("mem-cyrillic", CYRILLIC))]


def test_old_erasures_keep_refusing_and_new_ones_fold_look_alikes(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "am"
    clock = ManualClock(1_750_000_000_000)
    with monkeypatch.context() as patch:
        patch.setattr(schema, "MIGRATIONS", [step for step in schema.MIGRATIONS if step[0] < 22])
        with SqliteAgentMemoryStore(root, clock) as store, store.transaction(R):
            pass  # the realm's database, of the schema before step 22
    path = realm_db_path(root, R)
    with sqlite3.connect(path) as conn:  # what an erase left in the register before step 22
        conn.executemany("INSERT INTO erasures(memory_id, scope_kind, scope_key, content_hash, folded_hash, "
                         "casefolded_hash, erased_at_ms) VALUES (?, 'identity', ?, ?, ?, ?, 1)",
                         [(mid, ID, *hashes) for mid, *hashes in old_rows()])
        assert "skeleton_hash" not in {r[1] for r in conn.execute("PRAGMA table_info(erasures)")}

    with SqliteAgentMemoryStore(root, clock) as store:
        def refused(title: str, body: str) -> bool:
            return refused_as_erased(store, R, ID, title, body)

        # the old folds still hold: the exact content, its case and width variants
        assert refused(*ASCII) and refused(ASCII[0].upper(), ASCII[1].lower())
        assert refused(*CYRILLIC) and refused("VAULT", CYRILLIC[1].upper())
        # content erased before the step has no fold-3 hash: a look-alike spelling of it is new content
        assert ASCII_LOOK_ALIKE != ASCII and not refused(*ASCII_LOOK_ALIKE)
        # the residual: content erased with letters fold 3 maps has no fold-3 hash to match
        assert not refused(*CYRILLIC_LOOK_ALIKE)
        with sqlite3.connect(path) as conn:  # migrated at the realm's first open
            assert {r[0]: r[1] for r in conn.execute("SELECT memory_id, skeleton_hash FROM erasures")} == {
                "mem-ascii": None, "mem-cyrillic": None}
            names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
            assert {"erasures_skeleton_idx", "erasures_lookup_idx", "erasures_match_idx"} <= names
        # an erase after the migration registers all four hashes and refuses every look-alike spelling
        mid = record_writes.remember(store, R, ID, "Larder", "the word is сахар")[0].memory_id
        store.erase(R, Scope.identity(R, ID), mid, erased_by="dpo")
        assert refused("Larder", "the word is caxap") and refused("LARDER", "THE WORD IS CAXAP")
        assert refused("Larder", "the word is саxар")  # Latin x inside the Cyrillic word
        with sqlite3.connect(path) as conn:
            row = conn.execute("SELECT content_hash, folded_hash, casefolded_hash, skeleton_hash FROM erasures "
                               "WHERE memory_id = ?", (mid,)).fetchone()
        assert row == erasure_hashes("Larder", "the word is сахар")
        assert row[3] == skeleton_content_hash("larder", "the word is caxap") != row[2]
        assert row[2] == content_hash("larder", "the word is сахар")
