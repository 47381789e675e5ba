"""A realm written before schema step 19 and full-text index version 5 is upgraded when a gateway opens it,
on SQLite and PostgreSQL: canonically equal text finds its stored record, and a word with an invisible
character inside is recallable.

The realm is written by this code with the previous rules put back: content hashes over the text as written
(not its NFC form), the full-text rows splitting a word at a zero-width space, step 19 not applied and the
index recorded at version 4. A gateway then opens it: step 19 hashes the non-NFC rows again, and the changed
index version rebuilds the full-text rows.
"""

from __future__ import annotations

import sqlite3
import time
import unicodedata
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from contract.pgsupport import DSN, dsn_with_schema, require_postgres, throwaway_schema
from meta_memory.agent_memory import hashing, record_writes
from meta_memory.agent_memory.store import pg_schema, schema
from meta_memory.agent_memory.store.base import AgentMemoryStore
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from meta_memory.clock import ManualClock
from meta_memory.recall import fts
from meta_memory.recall import text as recall_text
from support import GatewayProcess, write_config

pytestmark = pytest.mark.gateway

IDENT = "agent:upgraded"
NFC_BODY = "Lunch at the Café Noël"
NFD_BODY = unicodedata.normalize("NFD", NFC_BODY)
HIDDEN_BODY = "pass\u200bport in the drawer"
ZOE = "Zoë's notebook"  # written decomposed only


def _clock() -> ManualClock:
    return ManualClock(int(time.time() * 1000) - 60_000)


def _before_step_19(step: tuple[int, str, Sequence[Any]]) -> bool:
    return step[0] < 19


@contextmanager
def _previous_rules(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This code writing as the previous release did (see the module's docstring)."""
    with monkeypatch.context() as patch:
        patch.setattr(hashing, "canonical", lambda text: text)
        index_text = recall_text.index_text  # the previous tokeniser split a word at a zero-width space
        patch.setattr(recall_text, "index_text", lambda text: index_text(text.replace("\u200b", " ")))
        patch.setattr(fts, "INDEX_VERSION", 4)
        patch.setattr(schema, "MIGRATIONS", [s for s in schema.MIGRATIONS if _before_step_19(s)])
        migrations = pg_schema.migrations
        patch.setattr(pg_schema, "migrations", lambda name: [s for s in migrations(name) if _before_step_19(s)])
        yield


def _fill(store: AgentMemoryStore) -> dict[str, str]:
    """The previous release's realm: one body in both forms as two records (the composed form first: the
    previous duplicate check told them apart), another in the decomposed form only, the hidden word, and a
    plain record."""
    ids = {}
    for name, title, body in (("nfc", "Café", NFC_BODY), ("nfd", "Café", NFD_BODY),
                              ("zoe", "Zoe\u0308", unicodedata.normalize("NFD", ZOE)),
                              ("hidden", "Travel", HIDDEN_BODY), ("plain", "Keys", "keys on the hook")):
        rec, created = record_writes.remember(store, "default", IDENT, title, body)
        assert created, name
        ids[name] = rec.memory_id
    return ids


def _check_written_as_before(versions: list[int], hashes: dict[str, str], ids: dict[str, str]) -> None:
    assert 18 in versions and 19 not in versions
    assert hashes[ids["nfd"]] != hashes[ids["nfc"]]  # the previous hash: over the text as written


def _check_upgraded(gw: GatewayProcess, ids: dict[str, str]) -> None:
    again = gw.result("meta/agent_memory/remember", {"identity": IDENT, "title": "Zoë", "body": ZOE})
    assert not again["created"] and again["memory_id"] == ids["zoe"]  # found by its hash of step 19
    again = gw.result("meta/agent_memory/remember", {"identity": IDENT, "title": "Café", "body": NFC_BODY})
    assert not again["created"] and again["memory_id"] == ids["nfc"]  # the oldest of the two equal records
    again = gw.result("meta/agent_memory/remember", {"identity": IDENT, "title": "Cafe\u0301", "body": NFD_BODY})
    assert not again["created"] and again["memory_id"] == ids["nfc"]
    found = gw.result("meta/agent_memory/recall", {"identity": IDENT, "query_text": "where is my passport"})
    assert [r["memory_id"] for r in found["records"]] == [ids["hidden"]]
    found = gw.result("meta/agent_memory/recall", {"identity": IDENT, "query_text": "keys hook"})
    assert [r["memory_id"] for r in found["records"]] == [ids["plain"]]


def test_a_sqlite_realm_of_the_previous_schema_is_upgraded(monkeypatch: pytest.MonkeyPatch, gateway_factory: Any,
                                                           tmp_path: Path) -> None:
    state = tmp_path / "state"
    with _previous_rules(monkeypatch), SqliteAgentMemoryStore(state / "agent-memory", _clock()) \
            as store:
        ids = _fill(store)
    with sqlite3.connect(state / "agent-memory" / "default.sqlite3") as conn:
        versions = [v for (v,) in conn.execute("SELECT version FROM schema_migrations WHERE domain = 'meta-memory'")]
        hashes = dict(conn.execute("SELECT memory_id, content_hash FROM records").fetchall())
        fts_rows = [r for (r,) in conn.execute(f"SELECT body FROM {fts.FTS_TABLE}")]
    _check_written_as_before(versions, hashes, ids)
    assert "pass port drawer" in fts_rows  # the previous tokeniser split the word
    _check_upgraded(gateway_factory(state), ids)
    with sqlite3.connect(state / "agent-memory" / "default.sqlite3") as conn:
        assert conn.execute("SELECT name FROM schema_migrations WHERE domain = 'meta-memory' AND version = 19"
                            ).fetchone() == ("canonical-content-hashes",)
        hashes = dict(conn.execute("SELECT memory_id, content_hash FROM records").fetchall())
    assert hashes[ids["nfd"]] == hashes[ids["nfc"]] == hashing.content_hash("Café", NFC_BODY)


@pytest.mark.postgres
def test_a_postgres_schema_of_the_previous_release_is_upgraded(monkeypatch: pytest.MonkeyPatch,
                                                                gateway_factory: Any, tmp_path: Path) -> None:
    require_postgres()
    import psycopg

    from meta_memory.agent_memory.store.postgres import PostgresAgentMemoryStore

    with throwaway_schema() as name:
        q = pg_schema.quote_ident(name)
        with _previous_rules(monkeypatch):
            store = PostgresAgentMemoryStore(DSN, _clock(), schema=name)
            try:
                ids = _fill(store)
            finally:
                store.close()
        with psycopg.connect(DSN) as conn:
            versions = [v for (v,) in conn.execute(f"SELECT version FROM {q}.schema_migrations "
                                                   "WHERE domain = 'meta-memory'")]
            hashes = dict(conn.execute(f"SELECT memory_id, content_hash FROM {q}.records").fetchall())
        _check_written_as_before(versions, hashes, ids)
        body = f'[agent_memory]\nstore = "postgres"\ndsn = "{dsn_with_schema(name)}"\n'
        gw = gateway_factory(tmp_path / "state", config=write_config(tmp_path / "meta.toml", body))
        try:
            _check_upgraded(gw, ids)
        finally:
            gw.stop()
        with psycopg.connect(DSN) as conn:
            hashes = dict(conn.execute(f"SELECT memory_id, content_hash FROM {q}.records").fetchall())
            assert conn.execute(f"SELECT name FROM {q}.schema_migrations WHERE domain = 'meta-memory' "
                                "AND version = 19").fetchone() == ("canonical-content-hashes",)
        assert hashes[ids["nfd"]] == hashes[ids["nfc"]] == hashing.content_hash("Café", NFC_BODY)
