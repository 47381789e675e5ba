"""PostgreSQL at scale: a batch is written set-based in one transaction, and the ranking prunes common terms.

* a ``remember_batch`` of hundreds of records costs a fixed number of statements, its records take row
  ids in the batch's order, a batch that fails half-way leaves nothing behind, and the per-scope term
  statistics always equal those counted from the full-text rows (after creates, forgets, supersedes and
  erases, and after a rebuild);
* ``search`` (MaxScore: rarest terms first, common terms matched only when their bounds could still
  lift a row into the answer) returns exactly what matching every term returns, same rows, same scores
  (to the bit), same order, with and without filters;
* a bulk load keeps the planner statistics of the full-text rows current, so a rare term is not
  looked for by walking the scope's rows (the plan the planner picks when it believes the table empty).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from extras import require_extra

psycopg = require_extra("postgres", "psycopg")  # before the modules that import it

from contract.pgsupport import DSN, require_postgres, throwaway_schema, throwaway_store
from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.filters import parse_filter
from meta_memory.agent_memory.model import Author, Scope
from meta_memory.agent_memory.store import pg_fts, pg_ranking
from meta_memory.agent_memory.store.postgres import PostgresAgentMemoryStore
from meta_memory.agent_memory.writes import RememberItem
from meta_memory.clock import ManualClock
from meta_memory.errors import AgentMemoryError
from meta_memory.recall import fts

pytestmark = pytest.mark.postgres

R, ME, OTHER = "default", "lead:main", "scout:main"

#: A small Zipf-like vocabulary: the first words are in most records, the last in a few.
WORDS = [f"w{i:02d}x" for i in range(40)]


def _text(rng: random.Random, n: int) -> str:
    return " ".join(WORDS[min(int(rng.paretovariate(0.8)) - 1, len(WORDS) - 1)] for _ in range(n))


def _items(seed: int, n: int) -> list[RememberItem]:
    rng = random.Random(seed)
    return [RememberItem(_text(rng, rng.randint(2, 5)), _text(rng, rng.randint(5, 30)), (f"t{rng.randint(0, 3)}",),
                         metadata={"n": i % 3}) for i in range(n)]


def _statistics(store: PostgresAgentMemoryStore) -> tuple[set[tuple[Any, ...]], set[tuple[Any, ...]]]:
    with psycopg.connect(DSN) as conn:
        stats = {tuple(r) for r in conn.execute(f"SELECT realm, scope_kind, scope_key, n_rows, n_tokens FROM {store._qs}fts_stats")}
        terms = {tuple(r) for r in conn.execute(f"SELECT realm, scope_kind, scope_key, term, df FROM {store._qs}fts_terms")}
    return stats, terms


def _counted(store: PostgresAgentMemoryStore) -> tuple[set[tuple[Any, ...]], set[tuple[Any, ...]]]:
    """The statistics counted from the full-text rows themselves."""
    with psycopg.connect(DSN) as conn:
        stats = {tuple(r) for r in conn.execute(
            f"SELECT realm, scope_kind, scope_key, count(*), sum(ntok) FROM {store._qs}records_fts "
            "GROUP BY realm, scope_kind, scope_key")}
        terms = {tuple(r) for r in conn.execute(
            f"SELECT realm, scope_kind, scope_key, t, count(*) FROM {store._qs}records_fts, "
            "unnest(tsvector_to_array(doc)) AS t GROUP BY realm, scope_kind, scope_key, t")}
    return stats, terms


@pytest.fixture
def store() -> Iterator[PostgresAgentMemoryStore]:
    with throwaway_store() as s:
        yield s


def test_a_batch_costs_a_fixed_number_of_statements_and_takes_ids_in_order(
        store: PostgresAgentMemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    record_writes.remember_many(store, R, ME, _items(1, 5))  # the realm exists: its set-up is not counted
    counted = {"n": 0}
    execute, executemany = psycopg.Connection.execute, psycopg.Cursor.executemany

    def count_execute(self: Any, *a: Any, **k: Any) -> Any:
        counted["n"] += 1
        return execute(self, *a, **k)

    def count_many(self: Any, query: Any, params: Any, *a: Any, **k: Any) -> Any:
        params = list(params)
        counted["n"] += len(params)
        return executemany(self, query, params, *a, **k)

    monkeypatch.setattr(psycopg.Connection, "execute", count_execute)
    monkeypatch.setattr(psycopg.Cursor, "executemany", count_many)
    outcomes = record_writes.remember_many(store, R, ME, _items(2, 400))
    monkeypatch.undo()
    created = [o.record.id for o in outcomes if o.record is not None and o.created]
    assert len(created) > 300
    assert counted["n"] < 40  # per record it was four statements or more
    with psycopg.connect(DSN) as conn:
        rids = dict(conn.execute(f"SELECT memory_id, rid FROM {store._qs}records WHERE memory_id = ANY(%s)",
                                 (created,)).fetchall())
    assert [rids[i] for i in created] == sorted(rids.values())  # row ids (recall's tie order) follow the batch


def test_a_batch_failing_half_way_leaves_nothing(store: PostgresAgentMemoryStore,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    record_writes.remember_many(store, R, ME, _items(3, 20))
    before = _statistics(store), [r.id for r in store.recent(R, Scope.identity(R, ME), 1000)]

    def fail(*_: Any, **__: Any) -> None:
        raise psycopg.errors.DiskFull("no space left")

    monkeypatch.setattr(pg_fts.Delta, "write", fail)  # after the records and full-text rows were inserted
    with pytest.raises(AgentMemoryError):
        record_writes.remember_many(store, R, ME, _items(4, 50))
    monkeypatch.undo()
    assert (_statistics(store), [r.id for r in store.recent(R, Scope.identity(R, ME), 1000)]) == before


def test_term_statistics_equal_the_rows_after_every_kind_of_write(store: PostgresAgentMemoryStore) -> None:
    mine = record_writes.remember_many(store, R, ME, _items(5, 300))
    record_writes.remember_many(store, R, OTHER, _items(6, 120))
    ids = [o.record.id for o in mine if o.record is not None]
    scope = Scope.identity(R, ME)
    for memory_id in ids[:40]:
        record_writes.forget(store, R, scope, memory_id, Author.application())
    record_writes.update(store, R, ME, ids[50], title="w00x renamed w39x")
    for memory_id in ids[60:64]:
        store.erase(R, scope, memory_id, erased_by="test")
    assert _statistics(store) == _counted(store)
    with psycopg.connect(DSN) as conn:  # the rebuild (a new index layout) counts the same
        conn.execute("BEGIN")
        store._rebuild_fts(conn)
        conn.execute("COMMIT")
    assert _statistics(store) == _counted(store)
    record_writes.remember_many(store, R, OTHER, _items(7, 10))
    assert _statistics(store) == _counted(store)


@pytest.fixture(scope="module")
def corpus() -> Iterator[PostgresAgentMemoryStore]:
    with throwaway_store() as s:
        record_writes.remember_many(s, R, ME, _items(8, 900))
        record_writes.remember_many(s, R, OTHER, _items(9, 300))
        yield s


def _full_match(store: PostgresAgentMemoryStore, *args: Any, **kwargs: Any) -> list[tuple[str, float]]:
    """The search matching every term (no pruning): what the store answered before MaxScore."""
    first, seed = pg_ranking.first_prefix, pg_ranking.seed_pairs
    pg_ranking.first_prefix = lambda terms, postings=None: len(terms)  # type: ignore[assignment]
    pg_ranking.seed_pairs = lambda terms, k, n_rows: None  # type: ignore[assignment]
    try:
        return [(r.id, s) for r, s in store.search(*args, **kwargs)]
    finally:
        pg_ranking.first_prefix, pg_ranking.seed_pairs = first, seed


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=8), limit=st.integers(1, 40),
       postings=st.sampled_from([1, 10, 60, 2000]), filtered=st.booleans(), who=st.sampled_from([ME, OTHER]))
def test_pruned_ranking_equals_matching_every_term(corpus: PostgresAgentMemoryStore, monkeypatch: pytest.MonkeyPatch,
                                                    words: list[str], limit: int, postings: int, filtered: bool,
                                                    who: str) -> None:
    monkeypatch.setattr(pg_ranking, "FIRST_POSTINGS", postings)  # small: every round and the seed run
    expr = fts.match_expression(" ".join(words))
    assert expr is not None
    scope = Scope.identity(R, who)
    where = parse_filter({"n": {"$in": [0, 2]}}) if filtered else None
    pruned = [(r.id, s) for r, s in corpus.search(R, scope, expr, limit, where=where)]
    assert pruned == _full_match(corpus, R, scope, expr, limit, where=where)
    assert pruned  # every word of the vocabulary is in some record of both scopes


def test_pruned_ranking_honours_a_row_id_restriction(corpus: PostgresAgentMemoryStore,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pg_ranking, "FIRST_POSTINGS", 10)
    scope = Scope.identity(R, ME)
    expr = fts.match_expression("w00x w01x w05x w20x w33x")
    assert expr is not None
    with psycopg.connect(DSN) as conn:
        rids = dict(conn.execute(f"SELECT memory_id, rid FROM {corpus._qs}records WHERE realm = %s", (R,)).fetchall())
    everything = corpus.search(R, scope, expr, 2000)
    kept = {r.id for r, _ in everything[::3]}
    got = [(r.id, s) for r, s in corpus.search(R, scope, expr, 25, only={rids[i] for i in kept})]
    assert got == _full_match(corpus, R, scope, expr, 25, only={rids[i] for i in kept})
    assert len(got) == 25
    assert kept >= {i for i, _ in got}


def test_a_bulk_load_keeps_full_text_statistics_current(store: PostgresAgentMemoryStore,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(PostgresAgentMemoryStore, "ROWS_PER_CHECK", 500)
    with psycopg.connect(DSN, autocommit=True) as conn:
        for table in ("records", "records_fts", "fts_terms"):
            conn.execute(f"ALTER TABLE {store._qs}{table} SET (autovacuum_enabled = false)")
    for seed in range(4):
        record_writes.remember_many(store, R, ME, _items(10 + seed, 300))
    record_writes.remember_many(store, R, ME, [RememberItem("zzrare title", "a body with zzrare once", ())])
    with psycopg.connect(DSN) as conn:
        tuples = float(conn.execute("SELECT reltuples FROM pg_class WHERE oid = %s::regclass",
                                    (store._qs + "records_fts",)).fetchone()[0])
        assert tuples >= 600  # analysed as the load grew, not only at the store's start
        conn.execute(f"SET search_path TO {store._qs[:-1]}")
        plan = "\n".join(r[0] for r in conn.execute(
            "EXPLAIN SELECT rid FROM records_fts WHERE realm = %s AND scope_kind = 'identity' AND scope_key = %s "
            "AND doc @@ %s::tsquery", (R, ME, "'zzrare'")))
    assert "records_fts_scope_idx" not in plan, plan  # not a walk over the scope's rows to find one


def test_write_order_neighbours_seek_past_the_anchor(corpus: PostgresAgentMemoryStore,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch's records share their creation time: the neighbour scans seek (created_at_ms, rid) instead
    of walking the anchor's batch."""
    scope = Scope.identity(R, ME)
    expr = fts.match_expression("w30x w31x")
    assert expr is not None
    anchors = [corpus.get(R, v.id) for v, _ in corpus.search(R, scope, expr, 3)]
    expected = corpus.neighbours(R, scope, [a for a in anchors if a is not None], 2, 120_000)
    assert expected and all(len(v) == 4 for v in expected.values())
    with psycopg.connect(DSN, autocommit=True) as conn:  # as the store does once a realm holds rows
        conn.execute(f"ANALYZE {corpus._qs}records")
    plans: list[str] = []
    query = corpus._query

    def explain(name: str, sql: str, params: Any) -> list[Any]:
        plans.append("\n".join(r[0] for r in query(name, "EXPLAIN " + sql, params)))
        return query(name, sql, params)

    monkeypatch.setattr(corpus, "_query", explain)
    assert corpus.neighbours(R, scope, [a for a in anchors if a is not None], 2, 120_000) == expected
    conditions = [line for line in plans[0].splitlines() if "Index Cond" in line and "ROW(created_at_ms, rid)" in line]
    assert len(conditions) == 2, plans[0]


def test_an_expired_record_among_the_best_is_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """The best rows are picked before their records are read; one whose record expired (not yet swept)
    is not answered, and the rows after it move up, as when every matching record is read."""
    require_postgres()
    clock = ManualClock()
    with throwaway_schema() as name:
        s = PostgresAgentMemoryStore(DSN, clock, schema=name)
        try:
            soon = clock.now_ms() + 1_000
            items = [RememberItem(f"zq{i} w00x", "w00x zq body", (), expires_at_ms=soon if i % 2 else None)
                     for i in range(30)]
            record_writes.remember_many(s, R, ME, items)
            expr = fts.match_expression("zq w00x")
            assert expr is not None
            scope = Scope.identity(R, ME)
            before = [r.id for r, _ in s.search(R, scope, expr, 10)]
            clock.advance(2_000)
            after = [(r.id, sc) for r, sc in s.search(R, scope, expr, 10)]
            assert after == _full_match(s, R, scope, expr, 10)
            assert len(after) == 10 and len(before) == 10
            expired = set(before) - {r.id for r, _ in s.search(R, scope, expr, 30)}
            assert expired  # some of the first ten expired
            assert not expired.intersection(i for i, _ in after)
        finally:
            s.close()
