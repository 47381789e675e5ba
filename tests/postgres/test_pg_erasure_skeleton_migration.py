"""PostgreSQL migration 22 ("erasure-skeleton-hashes"), as SQLite's: an erasure registered before the step
keeps refusing its exact content and its case variants (a look-alike spelling of it has no fold-3 hash to
match: the documented residual); an erase after it refuses every look-alike spelling, the realm view
shows the new column, and a write's fold-3 lookup seeks the new index."""

from __future__ import annotations

import pytest

from extras import require_extra

psycopg = require_extra("postgres", "psycopg")  # before the modules that import it

from agent_memory.test_erasure_skeleton_migration import (
    ASCII,
    ASCII_LOOK_ALIKE,
    CYRILLIC,
    CYRILLIC_LOOK_ALIKE,
    old_rows,
)
from contract.pgsupport import DSN, require_postgres, throwaway_schema
from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.hashing import erasure_hashes
from meta_memory.agent_memory.model import Scope
from meta_memory.agent_memory.store import pg_schema
from meta_memory.agent_memory.store.postgres import PostgresAgentMemoryStore
from meta_memory.agent_memory.store.shared_ddl import ERASURE_SKELETON_HASH
from meta_memory.clock import ManualClock
from support import refused_as_erased

pytestmark = pytest.mark.postgres

R, ID = "default", "ana:main"


def test_old_erasures_keep_refusing_and_new_ones_fold_look_alikes(monkeypatch: pytest.MonkeyPatch) -> None:
    require_postgres()
    clock = ManualClock(1_750_000_000_000)
    with throwaway_schema() as name:
        full = pg_schema.migrations
        with monkeypatch.context() as patch:
            patch.setattr(pg_schema, "migrations", lambda schema: [s for s in full(schema) if s[0] < 22])
            store = PostgresAgentMemoryStore(DSN, schema=name, clock=clock)
            try:
                with store.transaction(R):
                    pass  # the realm, in the schema before step 22
            finally:
                store.close()
        with psycopg.connect(DSN, autocommit=True) as conn:  # what an erase left in the register before
            conn.execute(f'SET search_path = "{name}"')
            assert not conn.execute("SELECT 1 FROM information_schema.columns WHERE table_schema = %s AND "
                                    "table_name = 'erasures' AND column_name = 'skeleton_hash'", (name,)).fetchone()
            for mid, exact, folded, casefolded in old_rows():
                conn.execute("INSERT INTO erasures(realm, memory_id, scope_kind, scope_key, content_hash, folded_hash, "
                             "casefolded_hash, erased_at_ms) VALUES (%s, %s, 'identity', %s, %s, %s, %s, 1)",
                             (R, mid, ID, exact, folded, casefolded))

        store = PostgresAgentMemoryStore(DSN, schema=name, clock=clock)
        try:
            def refused(title: str, body: str) -> bool:
                return refused_as_erased(store, R, ID, title, body)

            assert refused(*ASCII) and refused(ASCII[0].upper(), ASCII[1].lower()) and refused(*CYRILLIC)
            assert not refused(*ASCII_LOOK_ALIKE)  # the documented residual
            assert not refused(*CYRILLIC_LOOK_ALIKE)  # the documented residual
            mid = record_writes.remember(store, R, ID, "Larder", "the word is сахар")[0].memory_id
            store.erase(R, Scope.identity(R, ID), mid, erased_by="dpo")
            assert refused("Larder", "the word is caxap") and refused("LARDER", "THE WORD IS CAXAP")
        finally:
            store.close()
        with psycopg.connect(DSN, autocommit=True) as conn:
            conn.execute(f'SET search_path = "{name}"')
            rows = dict(conn.execute("SELECT memory_id, skeleton_hash FROM erasures").fetchall())
            assert rows["mem-ascii"] is None and rows["mem-cyrillic"] is None
            assert rows[mid] == erasure_hashes("Larder", "the word is сахар")[3]
            # the look-alike copy written above (the residual) shows the erased body's text in its body: the
            # erase takes it too (the field-level register's closure), so it is registered as well
            assert len(rows) == 4
            view = conn.execute("SELECT column_name FROM information_schema.columns WHERE table_schema = %s "
                                "AND table_name = 'erasures' ORDER BY ordinal_position", (name + "_realm",)).fetchall()
            assert [c for (c,) in view][-1] == "skeleton_hash"
            conn.execute("INSERT INTO erasures(realm, memory_id, scope_kind, scope_key, content_hash, folded_hash, "
                         "casefolded_hash, skeleton_hash, erased_at_ms) SELECT %s, 'mem-' || i, 'identity', %s, "
                         "md5(i::text), md5((i + 1)::text), md5((i + 2)::text), md5((i + 3)::text), 1 "
                         "FROM generate_series(1, 3000) AS i", (R, ID))
            conn.execute("ANALYZE erasures")
        store = PostgresAgentMemoryStore(DSN, schema=name, clock=clock)
        try:
            sql, params = store._realm_rows(R, "erasures", "memory_id", f"{ERASURE_SKELETON_HASH} IN (?, ?, ?)",
                                            (erasure_hashes(*ASCII)[3], "0" * 64, "1" * 64))
        finally:
            store.close()
        with psycopg.connect(DSN) as conn:
            plan = str(conn.execute("EXPLAIN (FORMAT JSON) " + sql, params).fetchone()[0])
        assert "erasures_skeleton_idx" in plan and "Seq Scan" not in plan, plan
