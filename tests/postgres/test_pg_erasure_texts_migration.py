"""PostgreSQL migration 23 ("erasure-texts"), as SQLite's: a schema written before the step gains the
field-level erasure register (and its realm view); an erasure registered before keeps refusing its pair
and has no field-level row; an erase after it registers its body's field hashes and refuses the body
written as a metadata string."""

from __future__ import annotations

import pytest

from extras import require_extra

psycopg = require_extra("postgres", "psycopg")  # before the modules that import it

from agent_memory.test_erasure_texts import NEW, OLD
from contract.pgsupport import DSN, require_postgres, throwaway_schema
from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.erase import field_hashes
from meta_memory.agent_memory.hashing import erasure_hashes
from meta_memory.agent_memory.model import Scope
from meta_memory.agent_memory.store import pg_schema
from meta_memory.agent_memory.store.postgres import PostgresAgentMemoryStore
from meta_memory.clock import ManualClock
from meta_memory.errors import AgentMemoryError
from support import refused_as_erased

pytestmark = pytest.mark.postgres

R, ID = "default", "ana:main"


def test_an_existing_schema_gains_the_table_and_an_erase_after_it_registers_fields(
        monkeypatch: pytest.MonkeyPatch) -> None:
    require_postgres()
    clock = ManualClock(1_750_000_000_000)
    with throwaway_schema() as name:
        full = pg_schema.migrations
        with monkeypatch.context() as patch:
            patch.setattr(pg_schema, "migrations", lambda schema: [s for s in full(schema) if s[0] < 23])
            store = PostgresAgentMemoryStore(DSN, schema=name, clock=clock)
            try:
                with store.transaction(R):
                    pass  # the realm, in the schema before step 23
            finally:
                store.close()
        with psycopg.connect(DSN, autocommit=True) as conn:
            conn.execute(f'SET search_path = "{name}"')
            assert conn.execute("SELECT to_regclass('erasure_texts')").fetchone() == (None,)
            exact, fold1, fold2, _fold3 = erasure_hashes(*OLD)
            conn.execute("INSERT INTO erasures(realm, memory_id, scope_kind, scope_key, content_hash, folded_hash, "
                         "casefolded_hash, erased_at_ms) VALUES (%s, 'mem-old', 'identity', %s, %s, %s, %s, 1)",
                         (R, ID, exact, fold1, fold2))

        store = PostgresAgentMemoryStore(DSN, schema=name, clock=clock)
        try:
            assert refused_as_erased(store, R, ID, *OLD)
            assert not refused_as_erased(store, R, ID, "Another title", OLD[1])  # the documented residual
            mid = record_writes.remember(store, R, ID, *NEW)[0].memory_id
            store.erase(R, Scope.identity(R, ID), mid, erased_by="dpo")
            with pytest.raises(AgentMemoryError) as caught:
                record_writes.remember_record(store, R, ID, "x", "y", metadata={"note": NEW[1].upper()})
            assert caught.value.data["reason"] == "erased"
        finally:
            store.close()
        with psycopg.connect(DSN, autocommit=True) as conn:
            conn.execute(f'SET search_path = "{name}"')
            rows = conn.execute("SELECT hash, scope_kind, scope_key, memory_id FROM erasure_texts").fetchall()
            assert {r[0] for r in rows} == field_hashes([NEW[1]]) and {r[1:] for r in rows} == {("identity", ID, mid)}
            view = conn.execute("SELECT column_name FROM information_schema.columns WHERE table_schema = %s "
                                "AND table_name = 'erasure_texts' ORDER BY ordinal_position", (name + "_realm",)).fetchall()
            assert [c for (c,) in view] == list(pg_schema.TABLES["erasure_texts"])
