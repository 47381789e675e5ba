"""PostgreSQL: the exact-duplicate check and the recreation window use the scope/status/hash index.

``EXPLAIN`` of the statements the store runs, on a realm with thousands of active records in one
identity (other identities and tombstones beside them), before and after ``ANALYZE``: a plan
walking the identity's records in creation order (the mis-pick that made writes grow with the
store) would show as an index on ``created_at_ms`` without ``content_hash`` in its condition.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from extras import require_extra

psycopg = require_extra("postgres", "psycopg")  # before the modules that import it

from contract.pgsupport import DSN, require_postgres, throwaway_schema
from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.batch import CreateOp, StagedBatch, TombstoneOp
from meta_memory.agent_memory.hashing import content_hash
from meta_memory.agent_memory.model import Author, NewMemoryRecord, Provenance, Scope
from meta_memory.agent_memory.store import common, planner
from meta_memory.agent_memory.store.postgres import PostgresAgentMemoryStore

pytestmark = pytest.mark.postgres

R, ME = "default", "lead:main"


def _load(s: PostgresAgentMemoryStore) -> None:
    for identity, n in ((ME, 6000), ("scout:main", 1000)):
        scope = Scope.identity(R, identity)
        for first in range(0, n, 1000):
            ops = tuple(CreateOp(scope=scope, record=NewMemoryRecord(
                title=f"note {i}", body=f"body {i} of {identity}", provenance=Provenance(Author.application())),
                created_at_ms=1_700_000_000_000 + i) for i in range(first, first + 1000))
            receipt = record_writes.apply_batch(s, StagedBatch(R, Author.application(), ops))
            if identity == ME and first == 0:
                record_writes.apply_batch(s, StagedBatch(R, Author.application(),
                                                      tuple(TombstoneOp(id=r.memory_id) for r in receipt.results[:200])))


def _no_autovacuum(store: PostgresAgentMemoryStore) -> None:
    """Statistics in these tests must come from the store, not from autovacuum running meanwhile."""
    with psycopg.connect(DSN, autocommit=True) as conn:
        conn.execute(f"ALTER TABLE {store._qs}records SET (autovacuum_enabled = false)")


def _reltuples(store: PostgresAgentMemoryStore) -> float:
    with psycopg.connect(DSN) as conn:
        return float(conn.execute("SELECT reltuples FROM pg_class WHERE oid = %s::regclass",
                                  (store._qs + "records",)).fetchone()[0])


@pytest.fixture(scope="module")
def store() -> Iterator[PostgresAgentMemoryStore]:
    require_postgres()
    with throwaway_schema() as schema:
        first = PostgresAgentMemoryStore(DSN, schema=schema)
        try:
            _no_autovacuum(first)
            _load(first)
            assert _reltuples(first) < 0
        finally:
            first.close()
        s = PostgresAgentMemoryStore(DSN, schema=schema)  # a new process opening a store with rows
        try:
            yield s
        finally:
            s.close()


def _plan(store: PostgresAgentMemoryStore, sql: str, params: tuple[Any, ...]) -> str:
    with psycopg.connect(DSN) as conn:
        rows = conn.execute("EXPLAIN (FORMAT JSON) " + sql, params).fetchone()[0]
    return str(rows)


def _statements(store: PostgresAgentMemoryStore) -> dict[str, tuple[str, tuple[Any, ...]]]:
    scope = Scope.identity(R, ME)
    chash = content_hash("note 4321", f"body 4321 of {ME}")
    return {
        "duplicate check": store._active_sql(R, scope, common._OLDEST_DUPLICATE, (chash,)),
        "bulk duplicate check": store._active_sql(
            R, scope, "AND content_hash IN (?, ?) ORDER BY content_hash, created_at_ms, rid", (chash, "0" * 64)),
        "recreation window": (store._sql("SELECT 1 FROM §records WHERE realm = %s AND scope_kind = %s AND scope_key = %s "
                                         "AND content_hash = %s AND status_kind = 'tombstoned' AND tombstoned_at_ms >= %s "
                                         "LIMIT 1"), (R, "identity", ME, chash, 0)),
    }


def test_statistics_are_taken_at_open(store: PostgresAgentMemoryStore) -> None:
    assert _reltuples(store) >= 7000 * 0.9


@pytest.mark.parametrize("analysed", [False, True])
def test_duplicate_lookups_seek_the_hash(store: PostgresAgentMemoryStore, analysed: bool) -> None:
    if analysed:
        with psycopg.connect(DSN, autocommit=True) as conn:
            conn.execute(f"ANALYZE {store._qs}records")
    for what, (sql, params) in _statements(store).items():
        plan = _plan(store, sql, params)
        assert "records_scope_status_hash_idx" in plan and "content_hash" in plan, (what, plan)
        assert "Seq Scan" not in plan and "records_scope_created" not in plan, (what, plan)


def test_statistics_are_refreshed_as_writes_accumulate(monkeypatch: pytest.MonkeyPatch) -> None:
    require_postgres()
    monkeypatch.setattr(planner, "CHECK_EVERY_WRITES", 3)
    with throwaway_schema() as schema:
        s = PostgresAgentMemoryStore(DSN, schema=schema)
        try:
            _no_autovacuum(s)
            scope = Scope.identity(R, ME)
            ops = tuple(CreateOp(scope=scope, record=NewMemoryRecord(
                title=f"n {i}", body=f"b {i}", provenance=Provenance(Author.application()))) for i in range(500))
            record_writes.apply_batch(s, StagedBatch(R, Author.application(), ops))
            assert _reltuples(s) < 0  # never analysed yet
            record_writes.remember(s, R, ME, "one", "more")
            record_writes.remember(s, R, ME, "two", "more")
            assert _reltuples(s) >= 400
        finally:
            s.close()
