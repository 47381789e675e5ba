"""PostgreSQL migration 15 ("erasure-casefolded-hashes"), as SQLite's: an erasure registered before the
step keeps refusing its exact content and its re-spaced forms (its fold-1 hash), an erase after it refuses
every case and width form, the realm view shows the new column, and a write's lookup seeks the new index."""

from __future__ import annotations

import pytest

from extras import require_extra

psycopg = require_extra("postgres", "psycopg")  # before the modules that import it

from agent_memory.test_erasure_casefold_migration import CAPS, LOWER, old_rows
from contract.pgsupport import DSN, require_postgres, throwaway_schema
from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.hashing import content_hash
from meta_memory.agent_memory.model import Scope
from meta_memory.agent_memory.store import pg_schema
from meta_memory.agent_memory.store.postgres import PostgresAgentMemoryStore
from meta_memory.agent_memory.store.shared_ddl import ERASURE_LOOKUP_HASH
from meta_memory.clock import ManualClock
from support import refused_as_erased

pytestmark = pytest.mark.postgres

R, ID = "default", "ana:main"


def test_old_fold_erasures_keep_refusing_and_new_ones_fold_case(monkeypatch: pytest.MonkeyPatch) -> None:
    require_postgres()
    clock = ManualClock(1_750_000_000_000)
    with throwaway_schema() as name:
        full = pg_schema.migrations
        with monkeypatch.context() as patch:
            patch.setattr(pg_schema, "migrations", lambda schema: [s for s in full(schema) if s[0] < 15])
            store = PostgresAgentMemoryStore(DSN, schema=name, clock=clock)
            try:
                with store.transaction(R):
                    pass  # the realm, in the schema before step 15
            finally:
                store.close()
        with psycopg.connect(DSN, autocommit=True) as conn:  # what an erase left in the register before
            conn.execute(f'SET search_path = "{name}"')
            for mid, exact, folded in old_rows():
                conn.execute("INSERT INTO erasures(realm, memory_id, scope_kind, scope_key, content_hash, folded_hash, "
                             "erased_at_ms) VALUES (%s, %s, 'identity', %s, %s, %s, 1)", (R, mid, ID, exact, folded))

        store = PostgresAgentMemoryStore(DSN, schema=name, clock=clock)
        try:
            def refused(title: str, body: str) -> bool:
                return refused_as_erased(store, R, ID, title, body)

            assert refused(*CAPS) and refused("Erase  Me Plan", "The launch\tcode word is\u00a0bluebird")
            assert refused(*LOWER) and refused("VAULT", "Room Nine, Shelf THREE")
            assert not refused(CAPS[0].lower(), CAPS[1].lower())  # the documented residual
            mid = record_writes.remember(store, R, ID, "Orchard Plan", "Meet at the Old Oak")[0].memory_id
            store.erase(R, Scope.identity(R, ID), mid, erased_by="dpo")
            assert refused("orchard plan", "MEET AT THE OLD OAK") and refused("Ｏｒｃｈａｒｄ Plan", "meet at the old oak")
        finally:
            store.close()
        with psycopg.connect(DSN, autocommit=True) as conn:
            conn.execute(f'SET search_path = "{name}"')
            rows = dict(conn.execute("SELECT memory_id, casefolded_hash FROM erasures").fetchall())
            assert rows == {"mem-caps": None, "mem-lower": None, mid: content_hash("orchard plan", "meet at the old oak")}
            view = conn.execute("SELECT column_name FROM information_schema.columns WHERE table_schema = %s "
                                "AND table_name = 'erasures' ORDER BY ordinal_position", (name + "_realm",)).fetchall()
            assert "casefolded_hash" in [c for (c,) in view]
            conn.execute("INSERT INTO erasures(realm, memory_id, scope_kind, scope_key, content_hash, folded_hash, "
                         "casefolded_hash, erased_at_ms) SELECT %s, 'mem-' || i, 'identity', %s, md5(i::text), "
                         "md5((i + 1)::text), md5((i + 2)::text), 1 FROM generate_series(1, 3000) AS i", (R, ID))
            conn.execute("ANALYZE erasures")
        store = PostgresAgentMemoryStore(DSN, schema=name, clock=clock)
        try:
            sql, params = store._realm_rows(R, "erasures", "memory_id", f"{ERASURE_LOOKUP_HASH} IN (?, ?, ?)",
                                            (content_hash(*CAPS), "0" * 64, "1" * 64))
        finally:
            store.close()
        with psycopg.connect(DSN) as conn:
            plan = str(conn.execute("EXPLAIN (FORMAT JSON) " + sql, params).fetchone()[0])
        assert "erasures_lookup_idx" in plan and "Seq Scan" not in plan, plan
