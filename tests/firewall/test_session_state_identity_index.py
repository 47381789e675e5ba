"""Version 3 of the session-state tables (``session-state-identity-index``): an index of each table by identity
alone, which the count of an identity's rows in every realm reads. Applied once to a file at version 2, a no-op
the second time, and the same step, by version and name, on PostgreSQL as on SQLite."""

from __future__ import annotations

import sqlite3

from meta_memory.agent_memory.store import pg_schema
from meta_memory.agent_memory.store.dialect import SQLITE
from meta_memory.agent_memory.store.migration_steps import apply_domain_steps
from meta_memory.agent_memory.store.schema import (
    _LEDGER,
    SESSION_STATE_DOMAIN,
    SESSION_STATE_MIGRATIONS,
    migrate_session_state,
)

INDEXES = {"session_states_identity_idx", "session_identities_identity_idx"}


def _indexes(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}


def test_a_version_two_file_gets_the_identity_indexes_once() -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute(_LEDGER)
    apply_domain_steps(conn.execute, SQLITE, SESSION_STATE_DOMAIN, SESSION_STATE_MIGRATIONS[:2], 1)
    conn.execute("INSERT INTO session_states (realm, identity, session_key, touched_ms) VALUES ('r', 'bob', 's', 1)")
    assert not INDEXES & _indexes(conn)
    assert migrate_session_state(conn, 2) == ["session-state-identity-index"]
    assert INDEXES <= _indexes(conn)
    assert migrate_session_state(conn, 3) == []
    assert conn.execute("SELECT COUNT(*) FROM session_states WHERE identity = 'bob'").fetchone()[0] == 1
    plan = " ".join(str(r) for r in conn.execute(
        "EXPLAIN QUERY PLAN SELECT COUNT(*) FROM session_states WHERE identity = ?", ("bob",)))
    assert "session_states_identity_idx" in plan, plan


def test_postgresql_applies_the_same_steps() -> None:
    pg = pg_schema.session_state_migrations()
    assert [(v, n) for v, n, _ in pg] == [(v, n) for v, n, _ in SESSION_STATE_MIGRATIONS]
    assert all("IF NOT EXISTS" in s for s in pg[2][2])
