"""PostgreSQL's ranking inside the recall's budget: a ranking round after the first stops
:data:`~meta_memory.agent_memory.store.pg_ranking.RESERVE_MS` before the budget ends, and the search then
answers with the best rows its earlier rounds scored, saying so (``degraded_reason`` ``approximate_ranking``,
counted in ``ranking_stats``) instead of failing; an answer that does not say so is the exact one.

The round is stopped for real: a statement made to sleep past its room is cancelled by PostgreSQL's
``statement_timeout``, the transaction goes on from its savepoint, and the recall ends inside its budget.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from extras import require_extra

psycopg = require_extra("postgres", "psycopg")  # before the modules that import it

from contract.pgsupport import throwaway_store
from meta_memory import deadline
from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.model import Scope
from meta_memory.agent_memory.store import pg_ranking
from meta_memory.agent_memory.store.postgres import PostgresAgentMemoryStore
from meta_memory.agent_memory.writes import RememberItem
from meta_memory.recall import fts
from meta_memory.recall.lexical import LexicalRecallProvider
from meta_memory.recall.provider import RecallRequest
from meta_memory.services.recall_reader import guarded_recall

pytestmark = pytest.mark.postgres

R, ME = "default", "lead:main"
#: ``rare`` is in 5 records, ``common`` in every one: with ``limit`` above 5 the first round (the rare word's
#: rows) cannot settle the answer, and the next must read every row holding ``common``.
N = 400


def _items() -> list[RememberItem]:
    return [RememberItem(f"Entry {i}", "common filler " * (1 + i % 4) + ("rare" if i % 80 == 0 else "")
                         + (" middle" if i % 3 == 0 else ""), ()) for i in range(N)]


@pytest.fixture(scope="module")
def store() -> Iterator[PostgresAgentMemoryStore]:
    with throwaway_store() as s:
        record_writes.remember_many(s, R, ME, _items())
        yield s


def _search(store: PostgresAgentMemoryStore, words: str, limit: int) -> Any:
    expr = fts.match_expression(words)
    assert expr is not None
    return store.search(R, Scope.identity(R, ME), expr, limit)


def _within(seconds: float) -> Any:
    return deadline.bound(deadline.Deadline(time.monotonic() + seconds))


def test_no_room_for_a_later_round_answers_from_the_first_and_says_so(store: PostgresAgentMemoryStore,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    exact = _search(store, "rare common", 20)
    assert exact.degraded_reason is None and len(exact) == 20
    before = store.ranking_stats()["approximate_ranking"]
    monkeypatch.setattr(pg_ranking, "FIRST_POSTINGS", 10)  # the first round: the rare word's rows alone
    monkeypatch.setattr(pg_ranking, "RESERVE_MS", 10_000_000)  # as if the budget were nearly spent
    monkeypatch.setattr(deadline, "RESERVE_SHARE", 1.0)  # the whole budget kept back
    with _within(60):
        short = _search(store, "rare common", 20)
    assert short.degraded_reason == "approximate_ranking"
    assert [r.id for r, _ in short] == [r.id for r, _ in exact][:5]  # the rare word's rows, best first
    assert [s for _, s in short] == [s for _, s in exact][:5]  # scored with every word, as the exact ones
    assert store.ranking_stats()["approximate_ranking"] == before + 1
    with _within(60):
        rare_only = _search(store, "rare", 20)  # one round settles it: nothing to cut short
    assert rare_only.degraded_reason is None and len(rare_only) == 5


def test_a_round_past_its_room_is_cancelled_and_the_recall_answers_inside_its_budget(
        store: PostgresAgentMemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """The second round sleeps 5 s in PostgreSQL: ``statement_timeout`` stops it at the room left before the
    reserve, the savepoint keeps the snapshot usable, and the answer (the first round's rows) comes back
    well inside the 1.5 s budget."""
    original = PostgresAgentMemoryStore._pruned_rows

    def slow_later_rounds(run: Any, ranked: str, params: Any, stats: Any, limit: int, run_short: Any = None,
                          best: Any = None, run_first: Any = None) -> Any:
        def sleepy(head: str, values: Any) -> Any:
            return run_short(head.replace("WITH ", "WITH nap AS MATERIALIZED (SELECT pg_sleep(5)), ", 1)
                             .replace(" WHERE ", " WHERE (SELECT count(*) FROM nap) = 1 AND ", 1), values)
        return original(run, ranked, params, stats, limit, sleepy, best, run_first)

    monkeypatch.setattr(PostgresAgentMemoryStore, "_pruned_rows", staticmethod(slow_later_rounds))
    monkeypatch.setattr(pg_ranking, "FIRST_POSTINGS", 10)
    started = time.monotonic()
    with _within(1.5):
        short = _search(store, "rare common", 20)
        after = _search(store, "rare", 20)  # the store is still usable under the same budget
    took = time.monotonic() - started
    assert short.degraded_reason == "approximate_ranking" and len(short) == 5
    assert after.degraded_reason is None and [r.id for r, _ in after] == [r.id for r, _ in short]
    assert took < 1.5 - pg_ranking.RESERVE_MS / 1000 + 0.1, took


def test_the_reason_reaches_the_recall_result(store: PostgresAgentMemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pg_ranking, "FIRST_POSTINGS", 10)
    monkeypatch.setattr(pg_ranking, "RESERVE_MS", 10_000_000)
    monkeypatch.setattr(deadline, "RESERVE_SHARE", 1.0)  # the whole budget kept back
    request = RecallRequest(identity=ME, realm=R, query_text="rare common", selection="contextual", max_entries=8)
    with _within(60):
        out = guarded_recall(LexicalRecallProvider(), store, request, Scope.identity(R, ME))
    assert out.degraded_reason == "approximate_ranking"
    assert out.records and all("rare" in s.record.body for s in out.records)


def test_a_first_round_without_room_answers_from_a_sample_of_its_match(store: PostgresAgentMemoryStore,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The first round (``common``: every row) is left no room of the budget: the first rows of its match are
    scored instead, each with every word exactly as the full ranking scores it, and the best of them answer,
    said to be approximate and counted."""
    every = {r.id: s for r, s in _search(store, "common middle", N)}
    before = store.ranking_stats()["approximate_ranking"]
    monkeypatch.setattr(pg_ranking, "FIRST_RESERVE_MS", 10_000_000)
    monkeypatch.setattr(pg_ranking, "FIRST_RESERVE_SHARE", 1.0)  # the whole budget kept back from the first round
    monkeypatch.setattr(pg_ranking, "FIRST_ROOM_SHARE", 0.0)
    monkeypatch.setattr(pg_ranking, "SAMPLE_ROWS", 30)
    monkeypatch.setattr(pg_ranking, "SAMPLE_MIN_ROWS", 30)
    with _within(60):
        short = _search(store, "common middle", 20)
    assert short.degraded_reason == "approximate_ranking" and len(short) == 20
    assert all(every[r.id] == s for r, s in short)
    assert [s for _, s in short] == sorted(s for _, s in short)
    assert [(r.id, s) for r, s in short] != list(every.items())[:20]  # 30 of 400 rows: not the exact answer
    assert store.ranking_stats()["approximate_ranking"] == before + 1


def test_a_first_round_and_its_sample_without_room_answer_nothing(store: PostgresAgentMemoryStore,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pg_ranking, "FIRST_RESERVE_MS", 10_000_000)
    monkeypatch.setattr(pg_ranking, "RESERVE_MS", 10_000_000)
    monkeypatch.setattr(pg_ranking, "FIRST_RESERVE_SHARE", 1.0)
    monkeypatch.setattr(pg_ranking, "FIRST_ROOM_SHARE", 0.0)
    monkeypatch.setattr(deadline, "RESERVE_SHARE", 1.0)
    with _within(60):
        short = _search(store, "common middle", 20)
    assert short.degraded_reason == "approximate_ranking" and len(short) == 0


def test_a_first_round_past_its_share_is_cancelled_and_the_sample_answers_inside_the_budget(
        store: PostgresAgentMemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each row the ranking reads sleeps 3 ms in PostgreSQL: the first round (``common``: 400 rows, 1.2 s) is
    stopped by ``statement_timeout`` at its share of a 500 ms budget, the savepoint keeps the snapshot usable,
    and the sample of its match (10 rows) answers inside the budget."""
    original = PostgresAgentMemoryStore._pruned_rows
    match = "AND f.doc @@ %(tsq)s::tsquery"

    def slow_rows(run: Any, ranked: str, params: Any, stats: Any, limit: int, run_short: Any = None,
                  best: Any = None, run_first: Any = None) -> Any:
        assert match in ranked
        slow = ranked.replace(match, match + " AND length(pg_sleep(0.003 * (f.rid > 0)::int)::text) >= 0", 1)
        return original(run, slow, params, stats, limit, run_short, best, run_first)

    monkeypatch.setattr(PostgresAgentMemoryStore, "_pruned_rows", staticmethod(slow_rows))
    monkeypatch.setattr(pg_ranking, "SAMPLE_ROWS", 10)
    monkeypatch.setattr(pg_ranking, "SAMPLE_MIN_ROWS", 10)
    started = time.monotonic()
    with _within(0.5):
        short = _search(store, "common middle", 20)
    took = time.monotonic() - started
    assert short.degraded_reason == "approximate_ranking" and len(short) == 10
    assert took < 0.5, took


def test_costly_seeding_pairs_score_their_sample_first_with_the_budget_still_left(
        store: PostgresAgentMemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """The seeding pairs (``middle`` and ``common`` each held by more rows than the first round may read)
    match 134 rows and each row the ranking reads sleeps 3 ms. Even when a first round leaves only the
    recall's reserve after it (no room for a sample once it is stopped), the pairs' sample (10 rows) was
    scored before the pairs' round began, so it answers inside the 500 ms budget."""
    original = PostgresAgentMemoryStore._pruned_rows
    match = "AND f.doc @@ %(tsq)s::tsquery"

    def slow_rows(run: Any, ranked: str, params: Any, stats: Any, limit: int, run_short: Any = None,
                  best: Any = None, run_first: Any = None) -> Any:
        slow = ranked.replace(match, match + " AND length(pg_sleep(0.003 * (f.rid > 0)::int)::text) >= 0", 1)
        return original(run, slow, params, stats, limit, run_short, best, run_first)

    every = {r.id: s for r, s in _search(store, "common middle", N)}
    monkeypatch.setattr(PostgresAgentMemoryStore, "_pruned_rows", staticmethod(slow_rows))
    monkeypatch.setattr(pg_ranking, "FIRST_POSTINGS", 10)  # middle's 134 rows are too many: seeding pairs
    monkeypatch.setattr(pg_ranking, "FIRST_RESERVE_MS", pg_ranking.RESERVE_MS)  # nothing left for a late sample
    monkeypatch.setattr(pg_ranking, "SAMPLE_ROWS", 10)
    monkeypatch.setattr(pg_ranking, "SAMPLE_MIN_ROWS", 10)
    with _within(0.5):  # past it, the search would raise timeout instead of answering
        short = _search(store, "common middle", 20)
    assert short.degraded_reason == "approximate_ranking" and len(short) == 10
    assert all(every[r.id] == s and "middle" in r.body for r, s in short)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=st.lists(st.sampled_from(["rare", "common", "middle", "filler", "entry"]), min_size=1, max_size=4),
       limit=st.integers(1, 30), reserve=st.sampled_from([0, 10_000_000]), postings=st.sampled_from([1, 50, 2000]),
       first=st.sampled_from([0, 10_000_000]), sample=st.sampled_from([1, 7, 1000]))
def test_an_answer_not_called_approximate_is_the_exact_one(store: PostgresAgentMemoryStore,
                                                            monkeypatch: pytest.MonkeyPatch, words: list[str],
                                                            limit: int, reserve: int, postings: int, first: int,
                                                            sample: int) -> None:
    monkeypatch.setattr(pg_ranking, "FIRST_POSTINGS", postings)
    exact = [(r.id, s) for r, s in _search(store, " ".join(words), limit)]
    monkeypatch.setattr(pg_ranking, "RESERVE_MS", reserve)
    monkeypatch.setattr(pg_ranking, "FIRST_RESERVE_MS", first)
    monkeypatch.setattr(pg_ranking, "SAMPLE_ROWS", sample)
    monkeypatch.setattr(pg_ranking, "SAMPLE_MIN_ROWS", sample)
    monkeypatch.setattr(pg_ranking, "FIRST_RESERVE_SHARE", 1.0)
    monkeypatch.setattr(pg_ranking, "FIRST_ROOM_SHARE", 0.0)
    monkeypatch.setattr(deadline, "RESERVE_SHARE", 1.0)  # a reserve as long as the budget is kept whole
    with _within(60):
        got = _search(store, " ".join(words), limit)
    if got.degraded_reason is None:
        assert [(r.id, s) for r, s in got] == exact
    else:  # the best of the rows scored: each scored with every word, exactly as the full ranking scores it
        every = {r.id: s for r, s in _search(store, " ".join(words), N)}
        assert got or reserve  # nothing only when the sample had no room (a costly round scores it first)
        assert all(every[r.id] == s for r, s in got)
        assert [s for _, s in got] == sorted(s for _, s in got) and len(got) <= limit


def test_a_short_answer_holds_only_the_realm_asked(store: PostgresAgentMemoryStore,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The same identity and words in a second realm: a search cut short in either realm answers only from that
    realm's rows, and says so in each."""
    other = "harbour"
    record_writes.remember_many(store, other, ME, _items())
    expr = fts.match_expression("rare common")
    assert expr is not None
    own = {realm: {r.id for r, _ in store.search(realm, Scope.identity(realm, ME), expr, N)} for realm in (R, other)}
    assert own[R] and own[other] and not own[R] & own[other]
    monkeypatch.setattr(pg_ranking, "FIRST_POSTINGS", 10)
    monkeypatch.setattr(pg_ranking, "RESERVE_MS", 10_000_000)
    monkeypatch.setattr(deadline, "RESERVE_SHARE", 1.0)
    for realm in (R, other):
        with _within(60):
            short = store.search(realm, Scope.identity(realm, ME), expr, 20)
        assert short.degraded_reason == "approximate_ranking" and len(short) == 5
        assert {r.id for r, _ in short} <= own[realm]
