"""PostgreSQL migration 12 ("erasure-folded-hashes"), as SQLite's: an erasure registered before the step
keeps refusing its content by the exact hash, an erase after it refuses every re-spacing, the realm
view shows the new column, and a write's lookup seeks the new index."""

from __future__ import annotations

import pytest

from extras import require_extra

psycopg = require_extra("postgres", "psycopg")  # before the modules that import it

from contract.pgsupport import DSN, require_postgres, throwaway_schema
from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.hashing import content_hash
from meta_memory.agent_memory.model import Scope
from meta_memory.agent_memory.store import pg_schema
from meta_memory.agent_memory.store.postgres import PostgresAgentMemoryStore
from meta_memory.agent_memory.store.shared_ddl import ERASURE_LOOKUP_HASH
from meta_memory.clock import ManualClock
from support import refused_as_erased

R, ID = "default", "ana:main"
FOLDED, SPACED = "the safe code is 4711", "the  safe\tcode is 4712"


def _refused(store: PostgresAgentMemoryStore, title: str, body: str) -> bool:
    return refused_as_erased(store, R, ID, title, body)


def test_old_erasures_keep_refusing_by_their_exact_hash(monkeypatch: pytest.MonkeyPatch) -> None:
    require_postgres()
    clock = ManualClock(1_750_000_000_000)
    with throwaway_schema() as name:
        full = pg_schema.migrations
        with monkeypatch.context() as patch:
            patch.setattr(pg_schema, "migrations", lambda schema: [s for s in full(schema) if s[0] < 12])
            store = PostgresAgentMemoryStore(DSN, schema=name, clock=clock)
            try:
                with store.transaction(R):
                    pass  # the realm, in the schema before step 12
            finally:
                store.close()
        with psycopg.connect(DSN, autocommit=True) as conn:  # what an erase left in the register before
            conn.execute(f'SET search_path = "{name}"')
            for mid, body in (("mem-folded", FOLDED), ("mem-spaced", SPACED)):
                conn.execute("INSERT INTO erasures(realm, memory_id, scope_kind, scope_key, content_hash, erased_at_ms) "
                             "VALUES (%s, %s, 'identity', %s, %s, 1)", (R, mid, ID, content_hash("Safe", body)))

        store = PostgresAgentMemoryStore(DSN, schema=name, clock=clock)
        try:
            assert _refused(store, "Safe", FOLDED) and _refused(store, "Safe", SPACED)  # the exact hash
            assert _refused(store, "Safe", "the safe code\u00a0is\n4711")  # re-spaced content erased in folded form
            assert not _refused(store, "Safe", "the safe code is 4712")  # no folded hash to match: new content
            mid = record_writes.remember(store, R, ID, "Vault", "room  nine, shelf\tthree")[0].memory_id
            store.erase(R, Scope.identity(R, ID), mid, erased_by="dpo")
            assert _refused(store, "Vault", "room nine, shelf three") and _refused(store, "Vault", "room nine,\nshelf three")
        finally:
            store.close()
        with psycopg.connect(DSN, autocommit=True) as conn:
            conn.execute(f'SET search_path = "{name}"')
            rows = dict(conn.execute("SELECT memory_id, folded_hash FROM erasures").fetchall())
            assert rows == {"mem-folded": None, "mem-spaced": None, mid: content_hash("Vault", "room nine, shelf three")}
            assert conn.execute("SELECT 1 FROM pg_indexes WHERE schemaname = %s AND indexname = 'erasures_match_idx'",
                                (name,)).fetchone()
            view = conn.execute("SELECT column_name FROM information_schema.columns WHERE table_schema = %s "
                                "AND table_name = 'erasures' ORDER BY ordinal_position", (name + "_realm",)).fetchall()
            assert "folded_hash" in [c for (c,) in view]
            # a write's lookup seeks its index, with a register of thousands of rows and its statistics
            conn.execute("INSERT INTO erasures(realm, memory_id, scope_kind, scope_key, content_hash, folded_hash, "
                         "erased_at_ms) SELECT %s, 'mem-' || i, 'identity', %s, md5(i::text), md5((i + 1)::text), 1 "
                         "FROM generate_series(1, 3000) AS i", (R, ID))
            conn.execute("ANALYZE erasures")
        store = PostgresAgentMemoryStore(DSN, schema=name, clock=clock)
        try:
            sql, params = store._realm_rows(R, "erasures", "memory_id", f"{ERASURE_LOOKUP_HASH} IN (?, ?)",
                                            (content_hash("Safe", FOLDED), "0" * 64))
        finally:
            store.close()
        with psycopg.connect(DSN) as conn:
            plan = str(conn.execute("EXPLAIN (FORMAT JSON) " + sql, params).fetchone()[0])
        assert "erasures_lookup_idx" in plan and "Seq Scan" not in plan, plan
