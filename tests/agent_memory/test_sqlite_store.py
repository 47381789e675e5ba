"""What only the SQLite backend has: one database file per realm, its pragmas and migrations.

The store contract itself (writes, dedup, reads, batches, gates, isolation...)
runs on both backends in ``tests/contract/test_store_contract.py``.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.model import Author, Scope
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore, realm_db_path
from meta_memory.clock import ManualClock
from meta_memory.recall.fts import match_expression

R = "default"
ID = "lead:main"
ME = Scope.identity(R, ID)


def search_ids(store: SqliteAgentMemoryStore, text: str, scope: Scope = ME, realm: str = R) -> list[str]:
    expr = match_expression(text)
    assert expr is not None
    return [rec.id for rec, _ in store.search(realm, scope, expr, 10)]


@pytest.mark.parametrize("realms", [("john_doe", "john-doe"), ("acme", "acme-corp"), ("a%", "a%25")])
def test_each_realm_is_its_own_database_file(tmp_path: Path, clock: ManualClock, realms: tuple[str, str]) -> None:
    root = tmp_path / "am"
    with SqliteAgentMemoryStore(root, clock) as s:
        for realm in realms:
            record_writes.remember(s, realm, ID, "Secret plan", f"only in {realm}")
        assert sorted(s.list_realms()) == sorted(realms)
    assert len(list(root.glob("*.sqlite3"))) == 2


def test_file_is_durable_and_self_describing(tmp_path: Path, clock: ManualClock) -> None:
    root = tmp_path / "am"
    with SqliteAgentMemoryStore(root, clock) as s:
        rec, _ = record_writes.remember(s, R, ID, "Durable", "survives reopen")
        writer = s._db(R).writer
        assert writer.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
        assert writer.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn = sqlite3.connect(realm_db_path(root, "default"))
    try:
        rows = conn.execute("SELECT domain, version, name FROM schema_migrations ORDER BY domain, version").fetchall()
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        conn.close()
    assert ("meta-memory", 1, "base-schema") in rows
    assert any(d == "records-fts" for d, _, _ in rows)
    assert {
        "records",
        "proposals",
        "audit",
        "stage",
        "injections",
        "pending_harvests",
        "pending_promotions",
        "dream_runs",
        "dream_audit_verdicts",
        "records_fts",
    } <= tables
    with SqliteAgentMemoryStore(root, clock) as s:
        assert s.get(R, rec.memory_id).body == "survives reopen"
        assert search_ids(s, "survives") == [rec.memory_id]


def test_fts_index_is_rebuilt_when_its_definition_changes(tmp_path: Path, clock: ManualClock) -> None:
    root = tmp_path / "am"
    with SqliteAgentMemoryStore(root, clock) as s:
        active, _ = record_writes.remember(s, R, ID, "Kept", "kept alive")
        gone, _ = record_writes.remember(s, R, ID, "Gone", "kept away")
        record_writes.forget(s, R, ME, gone.memory_id, Author.application())
    conn = sqlite3.connect(realm_db_path(root, "default"))
    conn.execute("UPDATE schema_migrations SET name = 'fts-old' WHERE domain = 'records-fts'")
    conn.execute("DELETE FROM records_fts")
    conn.commit()
    conn.close()
    with SqliteAgentMemoryStore(root, clock) as s:
        assert search_ids(s, "kept") == [active.memory_id]
