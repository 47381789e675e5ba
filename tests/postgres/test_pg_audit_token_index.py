"""PostgreSQL migration 11 ("looked-up-audit-tokens"): a plain write's audit row leaves the token index.

A schema is written with every step but 11 (remembers, an update, a forget, a quarantined agent write
released by a review, an erase), then opened with today's steps: the index becomes partial, every read
answers as before (the review's replay and the erase's rows are read by token), new plain writes add no
index entry, and the lookups by token are planned on the index.
"""

from __future__ import annotations

from typing import Any

import pytest

from extras import require_extra

psycopg = require_extra("postgres", "psycopg")  # before the modules that import it

from contract.pgsupport import DSN, require_postgres, throwaway_schema
from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.history import record_history
from meta_memory.agent_memory.model import Author, NewMemoryRecord, Provenance, Scope
from meta_memory.agent_memory.store import pg_schema
from meta_memory.agent_memory.store.postgres import PostgresAgentMemoryStore
from meta_memory.clock import ManualClock
from meta_memory.recall import fts
from meta_memory.review.model import Reviewer
from meta_memory.review.quarantine import decide

pytestmark = pytest.mark.postgres

R, ANA, BEN = "default", "ana:main", "ben:main"


class _Quarantining:
    def quarantine_reason(self, author: Author, batch_kind: str, evidence: list[Any], *, realm: str) -> str | None:
        return "session tainted by web tool 'web_search'" if author.kind.value == "agent" else None


def _write(store: PostgresAgentMemoryStore, clock: ManualClock) -> dict[str, str]:
    ids: dict[str, str] = {}
    for name, identity, title, body in (
        ("trip", ANA, "Trip notes", "zebra sighting at the river crossing"),
        ("island", ANA, "Island", "quokka on the island, very friendly"),
        ("kettle", ANA, "Kitchen", "the kettle is broken"),
        ("garden", ANA, "Garden", "water the tomatoes every morning"),
        ("ben", BEN, "Zebra facts", "every zebra has its own stripes"),
    ):
        clock.advance(1000)
        ids[name] = record_writes.remember(store, R, identity, title, body)[0].memory_id
    clock.advance(1000)
    ids["island v2"] = record_writes.update(store, R, ANA, ids["island"], body="quokka and a zebra")[0].memory_id
    clock.advance(1000)
    assert record_writes.forget(store, R, Scope.identity(R, ANA), ids["kettle"], Author.application())
    clock.advance(1000)
    held, _ = record_writes.remember_authored(
        store, R, Scope.identity(R, ANA),
        NewMemoryRecord(title="Reader", body="the reader prefers zebra summaries", provenance=Provenance(Author.agent(ANA))),
        Author.agent(ANA), gate=_Quarantining())
    ids["held"] = held.id
    clock.advance(1000)
    released = decide(store, R, ANA, held.id, "release", held.content_hash, None, Reviewer.operator("op"), clock=clock)
    assert released.successor is not None
    ids["released"] = released.successor["memory_id"]
    clock.advance(1000)
    store.erase(R, Scope.identity(R, ANA), ids["garden"], erased_by="operator")
    return ids


def _answers(store: PostgresAgentMemoryStore, clock: ManualClock, ids: dict[str, str]) -> dict[str, Any]:
    scope = Scope.identity(R, ANA)
    out: dict[str, Any] = {}
    for query in ("zebra", "quokka", "kettle", "tomatoes"):
        expr = fts.match_expression(query)
        assert expr is not None
        out[f"recall {query}"] = [(rec.id, round(score, 9)) for rec, score in store.search(R, scope, expr, 10)]
    out["listing"] = [(key, rec.id) for key, rec in store.list_active(R, scope, limit=50)]
    with store.snapshot(R) as tx:
        for name in ("island v2", "kettle", "held", "released", "garden"):
            out[f"history {name}"] = record_history(tx, scope, ids[name], clock.now_ms())
        out["audit"] = [(r.audit_id, r.stage_token, r.op_index, r.op_kind, r.memory_id)
                        for r in tx.audit.of_records(list(ids.values()))]
        review = next(r.stage_token for r in tx.audit.of_records([ids["held"]]) if r.op_kind == "tombstone")
        out["review op 0"] = tx.audit.at(review, 0)
        out["plain op 0"] = tx.audit.at(next(r.stage_token for r in tx.audit.of_records([ids["trip"]])), 0)
        out["erasure"] = tx.audit.erasure_of(ids["garden"])
    assert out["review op 0"] is not None and out["review op 0"].memory_id == ids["released"]
    assert out["plain op 0"] is not None and out["plain op 0"].memory_id == ids["trip"]
    assert [r.memory_id for r in out["erasure"]] == [ids["garden"]]
    return out


def _index(schema: str) -> tuple[str, int, int]:
    """``(definition, entries, distinct tokens of the rows a token lookup may need)`` of the schema's
    ``audit_token_idx`` (its entries are counted as PostgreSQL keeps them: equal keys share one entry)."""
    with psycopg.connect(DSN, autocommit=True) as conn:
        definition = conn.execute("SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND indexname = 'audit_token_idx'",
                                  (schema,)).fetchone()[0]
        conn.execute("CREATE EXTENSION IF NOT EXISTS pgstattuple")
        entries = conn.execute("SELECT tuple_count FROM pgstattuple(%s::regclass)",
                               (f'"{schema}".audit_token_idx',)).fetchone()[0]
        looked_up = conn.execute(f"SELECT count(DISTINCT stage_token) FROM \"{schema}\".audit WHERE stage_token NOT LIKE 'direct-%%'"
                                 ).fetchone()[0]
        return str(definition), int(entries), int(looked_up)


def test_a_schema_of_the_previous_steps_is_migrated_and_reads_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    require_postgres()
    clock = ManualClock(1_750_000_000_000)
    with throwaway_schema() as name:
        full = pg_schema.migrations
        with monkeypatch.context() as patch:
            patch.setattr(pg_schema, "migrations", lambda schema: [s for s in full(schema) if s[0] != 11])
            store = PostgresAgentMemoryStore(DSN, schema=name, clock=clock)
            try:
                ids = _write(store, clock)
                before = _answers(store, clock, ids)
            finally:
                store.close()
        definition, entries, looked_up = _index(name)
        assert "WHERE" not in definition and entries > looked_up  # every row, the plain writes' too

        store = PostgresAgentMemoryStore(DSN, schema=name, clock=clock)
        try:
            assert _answers(store, clock, ids) == before
            definition, entries, looked_up = _index(name)
            assert "WHERE (stage_token !~~ 'direct-%'::text)" in definition
            assert 0 < entries == looked_up  # the review's and the erase's rows only
            for i in range(10):
                clock.advance(1000)
                record_writes.remember(store, R, ANA, f"after {i}", f"a note written after the upgrade ({i})")
            assert _index(name)[1:] == (looked_up, looked_up)
            with psycopg.connect(DSN, autocommit=True) as conn:
                conn.execute(f'SET search_path = "{name}"')
                # a realm's worth of plain writes' rows beside the looked-up ones, and statistics
                conn.execute("INSERT INTO audit(realm, stage_token, op_index, op_kind, memory_id, detail, applied_at_ms) "
                             "SELECT 'default', 'direct-x' || g, 0, 'create', 'mem-x' || g, '{}', g "
                             "FROM generate_series(1, 20000) AS g")
                conn.execute("ANALYZE audit")
                # the question is whether the partial index can serve these lookups (their conditions imply
                # its predicate), not what the planner picks under a loaded machine's costs: with scans of
                # the whole table priced out, an index not implied would still leave a sequential scan
                conn.execute("SET enable_seqscan = off")
                for sql in (
                    "SELECT * FROM audit WHERE realm = 'default' AND stage_token = 'review-1' "
                    "AND stage_token NOT LIKE 'direct-%' AND op_index = 0 ORDER BY audit_id LIMIT 1",
                    "SELECT * FROM audit WHERE realm = 'default' AND stage_token = 'erase-1' "
                    "AND stage_token NOT LIKE 'direct-%' AND op_kind = 'erase' ORDER BY op_index",
                ):
                    plan = " ".join(r[0] for r in conn.execute("EXPLAIN " + sql).fetchall())
                    assert "audit_token_idx" in plan, (sql, plan)
        finally:
            store.close()
