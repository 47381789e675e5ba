"""PostgreSQL-only behaviour: migrations, schema isolation, realm views, query quoting and bm25 parity with SQLite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extras import require_extra

psycopg = require_extra("postgres", "psycopg")  # before the modules that import it

from contract.pgsupport import DSN, dsn_with_schema, require_postgres, throwaway_schema
from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.batch import CreateOp, StagedBatch
from meta_memory.agent_memory.model import Author, NewMemoryRecord, Provenance, Scope
from meta_memory.agent_memory.store import pg_schema
from meta_memory.agent_memory.store.postgres import (
    PostgresAgentMemoryStore,
    parse_match_expression,
    schema_from_dsn,
)
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from meta_memory.clock import ManualClock
from meta_memory.errors import AgentMemoryError
from meta_memory.recall import fts
from meta_memory.recall.lexical import LexicalRecallProvider
from meta_memory.recall.provider import RecallRequest
from meta_memory.services.recall_reader import guarded_recall
from support import LOCOMO_ENV, locomo_data, raw_rows, run_together

pytestmark = pytest.mark.postgres

R = "default"
ID = "lead:main"
ME = Scope.identity(R, ID)


def test_migrations_are_recorded_once_and_idempotent(schema: str) -> None:
    with PostgresAgentMemoryStore(DSN, schema=schema) as first:
        assert first.applied_migrations[:2] == ["base-schema", "realm-views"]
    with PostgresAgentMemoryStore(DSN, schema=schema) as again:
        assert again.applied_migrations == []
    with psycopg.connect(DSN) as conn:
        rows = conn.execute(
            f"SELECT domain, version, name FROM {pg_schema.quote_ident(schema)}.schema_migrations ORDER BY domain, version"
        ).fetchall()
    assert ("meta-memory", 1, "base-schema") in rows and ("meta-memory", 2, "realm-views") in rows
    assert ("session-state", 1, "session-state-tables") in rows
    assert [r for r in rows if r[0] == "records-fts"] == [("records-fts", 1, f"fts-{pg_schema.fts_fingerprint()}")]


def test_gateways_starting_together_migrate_once(schema: str) -> None:
    stores: list[PostgresAgentMemoryStore] = []

    def start(_: int) -> None:
        stores.append(PostgresAgentMemoryStore(DSN, schema=schema, pool_size=1))

    try:
        run_together(start, 4)
        # 6 schema versions + the session-state tables + the search index
        counts = sorted(len(s.applied_migrations) for s in stores)
        # exactly one of the four applied every migration; the others found them applied
        assert counts[:3] == [0, 0, 0] and counts[3] >= 9
    finally:
        for s in stores:
            s.close()


def test_fts_rows_are_rebuilt_when_the_index_definition_changes(schema: str) -> None:
    clock = ManualClock()
    with PostgresAgentMemoryStore(DSN, clock, schema=schema) as s:
        kept, _ = record_writes.remember(s, R, ID, "Kept", "kept alive")
        gone, _ = record_writes.remember(s, R, ID, "Gone", "kept away")
        record_writes.forget(s, R, ME, gone.memory_id, Author.application())
    q = pg_schema.quote_ident(schema)
    with psycopg.connect(DSN, autocommit=True) as conn:
        conn.execute(f"UPDATE {q}.schema_migrations SET name = 'fts-old' WHERE domain = 'records-fts'")
        conn.execute(f"DELETE FROM {q}.records_fts")
    with PostgresAgentMemoryStore(DSN, clock, schema=schema) as s:
        assert [r.id for r, _ in s.search(R, ME, fts.match_expression("kept"), 10)] == [kept.memory_id]
    with psycopg.connect(DSN) as conn:
        assert conn.execute(f"SELECT n_rows FROM {q}.fts_stats WHERE realm = 'default'").fetchone() == (1,)


def test_schemas_isolate_deployments_and_the_dsn_can_name_one(schema: str) -> None:
    assert schema_from_dsn(dsn_with_schema(schema)) == schema
    assert schema_from_dsn("host=db options='-c search_path=team_a,public'") == "team_a"
    assert schema_from_dsn(DSN) is None
    with throwaway_schema() as other:
        with PostgresAgentMemoryStore(dsn_with_schema(schema)) as a, PostgresAgentMemoryStore(DSN, schema=other) as b:
            assert a.schema == schema
            rec, _ = record_writes.remember(a, R, ID, "Only here", "in one schema")
            assert b.list_realms() == [] and a.list_realms() == [R]
            assert b.get(R, rec.memory_id) is None


def test_unreachable_server_and_bad_settings_are_refused() -> None:
    with pytest.raises(AgentMemoryError) as info:
        PostgresAgentMemoryStore("postgresql://postgres@127.0.0.1:1/none", connect_timeout_s=2)
    assert info.value.reason == "io"
    for bad in ({"schema": "pg_catalog"}, {"schema": "x" * 60}, {"pool_size": 0}):
        with pytest.raises(AgentMemoryError) as info:
            PostgresAgentMemoryStore(DSN, **bad)  # type: ignore[arg-type]
        assert info.value.reason == "invalid_config"
    with pytest.raises(AgentMemoryError):
        PostgresAgentMemoryStore(" ")


def test_realm_views_scope_raw_sql_and_refuse_foreign_inserts(schema: str) -> None:
    with PostgresAgentMemoryStore(DSN, schema=schema) as s:
        record_writes.remember(s, "acme", ID, "Acme note", "acme only")
        record_writes.remember(s, "john_doe", ID, "John note", "john only")
        assert raw_rows(s, "john-doe", "SELECT count(*) FROM records")[0][0] == 0
        assert [r["title"] for r in raw_rows(s, "john_doe", "SELECT title FROM records")] == ["John note"]

        with s.transaction("john_doe") as tx:
            tx._sql.run(
                f"INSERT INTO {pg_schema.quote_ident(schema)}.proposals(realm, proposal_id, scope_kind, scope_key, "
                "record, author, created_at_ms) VALUES ('acme', 'p', 'mob', 'm', '{}', '{}', 0)"
            )
            tx._sql.run(
                "INSERT INTO proposals(proposal_id, scope_kind, scope_key, record, author, created_at_ms) "
                "VALUES ('p2', 'mob', 'm', '{}', '{}', 0)"
            )
        assert [r[0] for r in raw_rows(s, "acme", "SELECT proposal_id FROM proposals")] == ["p"]
        assert [r[0] for r in raw_rows(s, "john_doe", "SELECT proposal_id FROM proposals")] == ["p2"]


@settings(max_examples=60, deadline=None)
@given(terms=st.lists(st.text(min_size=1, max_size=20).filter(lambda t: "\x00" not in t), min_size=1, max_size=5))
def test_match_expressions_round_trip_through_the_parser(terms: list[str]) -> None:
    expression = " OR ".join(fts.quote(t) for t in terms)
    assert parse_match_expression(expression) == list(dict.fromkeys(terms))


@settings(max_examples=60, deadline=None)
@given(term=st.text(min_size=1, max_size=30).filter(lambda t: "\x00" not in t and t.strip() == t and " " not in t))
def test_tsquery_literal_matches_exactly_its_lexeme(term: str) -> None:
    require_postgres()
    lex = pg_schema.lexeme(term)
    with psycopg.connect(DSN) as conn:
        hit, miss = conn.execute(
            "SELECT array_to_tsvector(ARRAY[%s]) @@ %s::tsquery, array_to_tsvector(ARRAY[%s]) @@ %s::tsquery",
            (lex, pg_schema.tsquery_literal([lex]), lex + "x", pg_schema.tsquery_literal([lex])),
        ).fetchone()
    assert hit is True and miss is False


def test_long_tokens_are_indexed_by_digest(schema: str) -> None:
    word = "z" * 3000
    with PostgresAgentMemoryStore(DSN, schema=schema) as s:
        rec, _ = record_writes.remember(s, R, ID, "Long word", word)
        assert [r.id for r, _ in s.search(R, ME, fts.match_expression(word), 10)] == [rec.memory_id]


def _locomo_records(path: Path, limit_conversations: int) -> tuple[list[tuple[str, str, str, int]], list[tuple[str, str, set[str]]]]:
    samples = json.loads(path.read_text(encoding="utf-8"))[:limit_conversations]
    turns: list[tuple[str, str, str, int]] = []
    questions: list[tuple[str, str, set[str]]] = []
    for sample in samples:
        ident = f"conv:{sample['sample_id']}"
        conv = sample["conversation"]
        n, at = 1, 1_600_000_000_000
        while f"session_{n}" in conv:
            for turn in conv[f"session_{n}"]:
                at += 60_000
                turns.append((ident, f"{turn['speaker']} {turn['dia_id']}", str(turn.get("text", "")) or "-", at))
            at += 86_400_000
            n += 1
        for qa in sample["qa"]:
            ev = {f"{ident}/{e.strip()}" for e in qa.get("evidence") or [] if isinstance(e, str)}
            if qa.get("category") in (1, 2, 3, 4) and ev:
                questions.append((ident, str(qa["question"]), ev))
    return turns, questions


def test_bm25_scores_and_recall_match_sqlite_on_locomo(schema: str, tmp_path: Path) -> None:
    data = locomo_data()
    if data is None:
        pytest.skip(f"LoCoMo data file not named ({LOCOMO_ENV})")
    turns, questions = _locomo_records(data, 2)
    clock = ManualClock()
    sqlite = SqliteAgentMemoryStore(tmp_path / "am", clock)
    pg = PostgresAgentMemoryStore(DSN, clock, schema=schema)
    try:
        ids: dict[str, str] = {}
        for store in (sqlite, pg):
            ops = []
            for ident, title, body, at in turns:
                rid = f"{ident.split(':')[1]}-{title.split()[-1].replace(':', '-')}"
                ids[rid] = f"{ident}/{title.split()[-1]}"
                ops.append(CreateOp(id=rid, scope=Scope.identity(R, ident),
                                    record=NewMemoryRecord(title=title, body=body, provenance=Provenance(Author.application())),
                                    created_at_ms=at, updated_at_ms=at))
            for start in range(0, len(ops), 1000):
                record_writes.apply_batch(store, StagedBatch(R, Author.application(), tuple(ops[start:start + 1000])))
        hits = {"sqlite": 0, "postgres": 0}
        provider = LexicalRecallProvider()
        for ident, question, evidence in questions:
            scope = Scope.identity(R, ident)
            expr = fts.match_expression(question)
            if expr is not None:
                a = [(r.id, round(s, 9)) for r, s in sqlite.search(R, scope, expr, 100)]
                b = [(r.id, round(s, 9)) for r, s in pg.search(R, scope, expr, 100)]
                assert sorted(a) == sorted(b)  # the same candidates with the same bm25
            for name, store in (("sqlite", sqlite), ("postgres", pg)):
                req = RecallRequest(identity=ident, realm=R, query_text=question, max_entries=8)
                got = [ids[s.record.id] for s in guarded_recall(provider, store, req, scope).records]
                hits[name] += bool(evidence.intersection(got))
        assert len(questions) > 100
        assert abs(hits["sqlite"] - hits["postgres"]) / len(questions) <= 0.02
    finally:
        sqlite.close()
        pg.close()
