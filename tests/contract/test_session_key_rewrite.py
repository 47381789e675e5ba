"""Session state an earlier version wrote under a key holding a credential is rewritten once, at open, on
SQLite and PostgreSQL.

An earlier version stored the session key a host gave as it was, a credential included; today such a key
is recorded as ``redacted-session:<32 hex>``. Opening the session state rewrites the stored rows' keys to
that digest in one transaction (recorded in the migration ledger, so it runs once), merging with a row the
digest key holds already and keeping the stricter state: afterwards the credential is nowhere in the
database, and the session's taint is still reached by the same key.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from meta_memory.sdk import Meta, MetaBuilder
from meta_memory.session_state.store import REDACTED_KEYS_DOMAIN

from .pgsupport import DSN, dsn_with_schema, throwaway_schema

ID = "lead:main"
#: a GitHub token's shape: what an earlier version stored in clear
CREDENTIAL = "ghp_" + "Zq7Rk2Lm9Xw4" * 3
OLD_KEY = f"thread-7/{CREDENTIAL}"
MERGED = "AKIA" + "Q7XW2LM9RK4ZP3TB"  # a key whose digest row the current version wrote too
T0 = int(time.time() * 1000) - 60_000  # within the rows' expiry


@pytest.fixture
def state(backend: str, tmp_path: Path) -> Iterator[tuple[Callable[[], MetaBuilder], Callable[[str, tuple[Any, ...]], list[Any]]]]:
    """(a builder of the installation, ``sql(statement, params)`` run on its session-state database as an
    earlier version's rows would be written: ``?`` placeholders, plain table names)."""
    if backend == "sqlite":
        def sqlite_sql(statement: str, params: tuple[Any, ...] = ()) -> list[Any]:
            with closing(sqlite3.connect(tmp_path / "state" / "session-state.db")) as conn, conn:
                return conn.execute(statement, params).fetchall()

        yield (lambda: Meta.builder().persistent_state(tmp_path / "state")), sqlite_sql
        return
    import psycopg

    with throwaway_schema() as schema:
        def pg_sql(statement: str, params: tuple[Any, ...] = ()) -> list[Any]:
            with psycopg.connect(DSN, autocommit=True) as conn:
                conn.execute(f'SET search_path TO "{schema}"')
                cur = conn.execute(statement.replace("?", "%s"), params)
                return cur.fetchall() if cur.description else []

        yield (lambda: Meta.builder().persistent_state(tmp_path / "state").agent_memory(
            store="postgres", dsn=dsn_with_schema(schema))), pg_sql


def _every_text(sql: Callable[[str, tuple[Any, ...]], list[Any]]) -> str:
    rows = sql("SELECT session_key, taint_source, prior_source FROM session_states", ())
    rows += sql("SELECT session_key, record_id, '' FROM session_injected", ())
    rows += sql("SELECT current_session, nonce_session, pending_source FROM session_identities", ())
    return repr(rows)


def test_a_stored_credential_key_becomes_its_digest_and_keeps_its_taint(state: Any, backend: str,
                                                                         tmp_path: Path) -> None:
    build, sql = state
    with build().build() as h:  # the session state exists; then its rows are made as an earlier version's
        h.agent(ID).session(MERGED).note()  # today's row of the digest key, clean
        recorded_merged = h.agent(ID).session(MERGED).note().session_key
    sql("DELETE FROM schema_migrations WHERE domain = ?", (REDACTED_KEYS_DOMAIN,))
    sql("INSERT INTO session_states (realm, identity, session_key, tainted_at_ms, taint_source, injected_bytes, "
        "touched_ms) VALUES ('default', ?, ?, ?, 'web tool ''web_fetch''', 100, ?)", (ID, OLD_KEY, T0, T0))
    sql("INSERT INTO session_states (realm, identity, session_key, tainted_at_ms, taint_source, injected_bytes, "
        "touched_ms) VALUES ('default', ?, ?, ?, 'web tool ''web_search''', 40, ?)", (ID, MERGED, T0 + 1, T0))
    sql("INSERT INTO session_injected (realm, identity, session_key, record_id) VALUES ('default', ?, ?, 'mem-1')",
        (ID, OLD_KEY))
    sql("UPDATE session_identities SET current_session = ?, nonce_session = ? WHERE identity = ?",
        (OLD_KEY, OLD_KEY, ID))
    assert CREDENTIAL in _every_text(sql)

    with build().build() as h:
        assert CREDENTIAL not in _every_text(sql) and MERGED not in _every_text(sql)
        note = h.agent(ID).session(OLD_KEY).note()
        assert note.session_key.startswith("redacted-session:") and note.tainted is True, note
        merged = h.agent(ID).session(MERGED).note()
        assert merged.session_key == recorded_merged and merged.tainted is True, merged  # the stricter state
    rows = sql("SELECT session_key, taint_source, injected_bytes FROM session_states WHERE identity = ?", (ID,))
    assert sorted(rows) == sorted([(note.session_key, "web tool 'web_fetch'", 100),
                                   (recorded_merged, "web tool 'web_search'", 40)]), rows
    assert sql("SELECT session_key FROM session_injected", ()) == [(note.session_key,)]
    if backend == "sqlite":  # nor anywhere in the file (or a write-ahead log left beside it)
        for path in (tmp_path / "state").glob("session-state.db*"):
            data = path.read_bytes()
            assert CREDENTIAL.encode() not in data and MERGED.encode() not in data, path

    # it ran once: a key stored in clear after the rewrite (by a gateway of the earlier version) is left be
    sql("INSERT INTO session_states (realm, identity, session_key, touched_ms) VALUES ('default', ?, ?, ?)",
        (ID, OLD_KEY, T0))
    with build().build():
        pass
    assert sql("SELECT count(*) FROM session_states WHERE session_key = ?", (OLD_KEY,)) == [(1,)]


def test_no_rewrite_under_a_secret_that_would_change_at_the_next_start(tmp_path: Path) -> None:
    """When the installation's session-digest secret cannot be read (its key file damaged), the runtime digests
    under a secret of its process: rewriting under it would leave the stored keys pointing nowhere after a
    restart (their taint lost). The rows are left as they are, and rewritten at a start that reads the secret."""
    def sql(statement: str, params: tuple[Any, ...] = ()) -> list[Any]:
        with closing(sqlite3.connect(tmp_path / "state" / "session-state.db")) as conn, conn:
            return conn.execute(statement, params).fetchall()

    with Meta.builder().persistent_state(tmp_path / "state").build() as h:
        h.agent(ID).session("plain").note()
    sql("DELETE FROM schema_migrations WHERE domain = ?", (REDACTED_KEYS_DOMAIN,))
    sql("INSERT INTO session_states (realm, identity, session_key, tainted_at_ms, taint_source, injected_bytes, "
        "touched_ms) VALUES ('default', ?, ?, ?, 'web tool ''web_fetch''', 0, ?)", (ID, OLD_KEY, T0, T0))
    key_file = tmp_path / "state" / "session-digest.key"
    key_file.write_text("not a key\n")
    with Meta.builder().persistent_state(tmp_path / "state").build():
        pass
    assert sql("SELECT count(*) FROM session_states WHERE session_key = ?", (OLD_KEY,)) == [(1,)]
    assert sql("SELECT count(*) FROM schema_migrations WHERE domain = ?", (REDACTED_KEYS_DOMAIN,)) == [(0,)]
    key_file.unlink()  # made again at the next start
    with Meta.builder().persistent_state(tmp_path / "state").build() as h:
        note = h.agent(ID).session(OLD_KEY).note()
        assert note.session_key.startswith("redacted-session:") and note.tainted is True, note
    assert CREDENTIAL not in _every_text(sql)
