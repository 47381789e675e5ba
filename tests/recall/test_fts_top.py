"""The FTS5 path of a realm of one scope (:mod:`meta_memory.recall.fts_top`) skips rows that cannot enter the
best ``limit`` and still answers what scoring every matching row answers: the same rows, the same scores bit
for bit, ties by rid — whether its exact phase ends the search or its bounded phase (FTS5 finding the rows
that hold enough of the common phrases) does, as long as that phase's pool holds every such row.

Rows go straight into the full-text tables (the columns as the store writes them: space-joined tokens) over a
small skewed vocabulary, so common words (idf at its floor), rare words, repeated query words and exact ties
are all frequent. The exhaustive answer is :func:`meta_memory.recall.bm25.scoped_candidates` asked for the
best among every row (``only``), which scores every matching row of the scope.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from meta_memory import deadline
from meta_memory.errors import AgentMemoryError
from meta_memory.recall import bm25, fts, fts_top
from meta_memory.recall.fts_top import TermCounts

VOCAB = ["w0"] * 8 + ["w1"] * 5 + ["w2"] * 3 + ["w3", "w3", "w4", "w4", "w5", "w6", "w7", "w8", "w9", "w10"]
QUERY_WORDS = sorted(set(VOCAB)) + ["absent"]
SCOPE = ("identity", "ana")

words = st.lists(st.sampled_from(VOCAB), min_size=0, max_size=10)
doc = st.tuples(st.lists(st.sampled_from(VOCAB), min_size=1, max_size=4), words,
                st.lists(st.sampled_from(VOCAB), max_size=2), st.integers(1, 3))


def _db(docs: Sequence[tuple[list[str], list[str], list[str], int]],
        scopes: Sequence[tuple[str, str]] = (SCOPE,)) -> sqlite3.Connection:
    """An in-memory realm: ``records`` and the full-text tables, each doc written ``copies`` times (identical
    rows tie), the i-th doc in ``scopes[i % len(scopes)]``."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute("CREATE TABLE records (rid INTEGER PRIMARY KEY, scope_kind TEXT, scope_key TEXT, status_kind TEXT)")
    for statement in fts.create_statements():
        conn.execute(statement)
    conn.execute("BEGIN")
    rid = 0
    for i, (title, body, tags, copies) in enumerate(docs):
        kind, key = scopes[i % len(scopes)]
        for _ in range(copies):
            rid += 1
            columns = (" ".join(title), " ".join(body), " ".join(tags))
            conn.execute("INSERT INTO records VALUES (?, ?, ?, 'active')", (rid, kind, key))
            conn.execute(f"INSERT INTO {fts.FTS_TABLE}(rowid, title, body, tags) VALUES (?, ?, ?, ?)", (rid, *columns))
            fts.note_change(conn, rid)
            fts.note_scope(conn, kind, key, 1, fts.document_size(columns))
    conn.execute("COMMIT")
    return conn


def _exhaustive(conn: sqlite3.Connection, terms: Sequence[str], limit: int,
                scope: tuple[str, str] = SCOPE) -> list[Any]:
    every = {int(r[0]) for r in conn.execute("SELECT rid FROM records")}
    return bm25.scoped_candidates(conn, *scope, " OR ".join(fts.quote(t) for t in terms), limit, only=every)


@contextmanager
def _setting(name: str, value: int) -> Iterator[None]:
    old = getattr(fts_top, name)
    setattr(fts_top, name, value)
    try:
        yield
    finally:
        setattr(fts_top, name, old)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=st.lists(doc, min_size=1, max_size=50),
       queries=st.lists(st.lists(st.sampled_from(QUERY_WORDS), min_size=1, max_size=8), min_size=1, max_size=4),
       limit=st.integers(1, 12), read_rows=st.sampled_from([1, 5, 20, 12_000]))
def test_the_pruned_answer_is_the_exhaustive_one(docs: list[Any], queries: list[list[str]], limit: int,
                                                 read_rows: int) -> None:
    """Every query (repeated words included) and ``limit``, whichever phase ends the search: the rows, their
    scores bit for bit and their order (ties by rid) are what scoring every matching row gives."""
    conn = _db(docs)
    with _setting("READ_ROWS", read_rows), _setting("POOL", 10_000):
        for terms in queries:
            match = " OR ".join(fts.quote(t) for t in terms)
            pruned = bm25.scoped_candidates(conn, *SCOPE, match, limit)
            assert pruned == _exhaustive(conn, terms, limit), (terms, limit)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=st.lists(doc, min_size=1, max_size=50),
       queries=st.lists(st.lists(st.sampled_from(QUERY_WORDS), min_size=1, max_size=8), min_size=1, max_size=4),
       limit=st.integers(1, 6), read_rows=st.sampled_from([1, 5, 20]), pool=st.sampled_from([1, 4, 10]),
       walk_rows=st.sampled_from([1, 30, 1_000_000]))
def test_an_answer_said_to_be_exact_is_the_exhaustive_one(docs: list[Any], queries: list[list[str]], limit: int,
                                                          read_rows: int, pool: int, walk_rows: int) -> None:
    """With a pool too small for FTS5's ranking to hold every row that could enter, the answer may miss a row;
    it then says so (``exact`` false, the recall's ``approximate_ranking``). An answer that says it is exact
    is always the exhaustive one."""
    conn = _db(docs)
    with _setting("READ_ROWS", read_rows), _setting("POOL", pool), _setting("WALK_ROWS", walk_rows):
        for terms in queries:
            pruned = bm25.scoped_candidates(conn, *SCOPE, " OR ".join(fts.quote(t) for t in terms), limit)
            assert isinstance(pruned, fts_top.Best)
            if pruned.exact:
                assert pruned == _exhaustive(conn, terms, limit), (terms, limit)


def test_a_pool_too_small_for_the_rows_that_could_enter_is_not_called_exact() -> None:
    """Every row holds both common words, so the AND-group holds them all: FTS5's ranking picks the pool, which
    cannot hold them, and the answer says it is not proven; a pool holding them all is exact again."""
    docs = [(["note"], ["alpha"] * (1 + i % 3) + ["beta"] * (1 + i % 2) + ["filler"] * (i % 5), [], 1)
            for i in range(300)]
    conn = _db(docs)
    with _setting("READ_ROWS", 5), _setting("POOL", 8):
        small = bm25.scoped_candidates(conn, *SCOPE, '"alpha" OR "beta"', 2)
    with _setting("READ_ROWS", 5), _setting("POOL", 1_000):
        whole = bm25.scoped_candidates(conn, *SCOPE, '"alpha" OR "beta"', 2)
    assert isinstance(small, fts_top.Best) and not small.exact and len(small) == 2
    assert isinstance(whole, fts_top.Best) and whole.exact
    assert whole == _exhaustive(conn, ["alpha", "beta"], 2)


def test_rows_holding_only_common_words_are_not_read() -> None:
    """One rare and one common word, three rows wanted: the rare word's rows set a threshold no row holding
    only the common word can reach, so those rows are never read — and the answer is the exhaustive one."""
    docs = [(["note"], ["common", "filler"] + (["rare"] if i % 500 == 0 else []), [], 1) for i in range(3000)]
    conn = _db(docs)
    read: list[str] = []
    conn.set_trace_callback(read.append)
    best = bm25.scoped_candidates(conn, *SCOPE, '"rare" OR "common"', 3)
    conn.set_trace_callback(None)
    assert [rid for rid, _, _ in best] == [1, 501, 1001]
    assert best == _exhaustive(conn, ["rare", "common"], 3)
    assert isinstance(best, fts_top.Best) and best.exact
    row_reads = [s for s in read if s.startswith("SELECT group_concat")]
    assert row_reads and all('"common"' not in s for s in row_reads), row_reads


def test_a_query_too_heavy_to_read_asks_fts5_for_the_rows_holding_enough_words() -> None:
    """Past ``READ_ROWS``, the rows that could still reach the threshold are those holding both common words
    (each alone is too weak): FTS5 is asked for them (an AND), never for every row of either word."""
    docs = [(["note"], ["alpha"] * (1 + i % 3) + (["beta"] if i % 4 == 0 else []) + ["filler"] * (i % 7)
             + (["gamma"] if i % 3 == 0 else []), [], 1) for i in range(400)]
    docs.append((["rare"], ["alpha", "beta"], [], 1))
    conn = _db(docs)
    read: list[str] = []
    conn.set_trace_callback(read.append)
    with _setting("READ_ROWS", 5):
        best = bm25.scoped_candidates(conn, *SCOPE, '"rare" OR "alpha" OR "beta" OR "gamma"', 2)
    conn.set_trace_callback(None)
    assert best == _exhaustive(conn, ["rare", "alpha", "beta", "gamma"], 2)
    assert any('" AND "' in s for s in read)


def test_another_scope_is_never_read_and_changes_nothing() -> None:
    """In a realm of two scopes the FTS5 path scores the scope's own matching rows: the answer for one
    scope is the same with the other scope's rows there or not."""
    docs = [(["note", f"t{i % 5}"], ["w0", "w1"] + (["w9"] if i % 3 == 0 else []), [], 1) for i in range(60)]
    both = _db(docs, scopes=[SCOPE, ("identity", "ben")])
    alone = _db([d for i, d in enumerate(docs) if i % 2 == 0])
    for terms in (["w9", "w0"], ["t1", "w1", "w9"]):
        match = " OR ".join(fts.quote(t) for t in terms)
        ours = bm25.scoped_candidates(both, *SCOPE, match, 5)
        mine = bm25.scoped_candidates(alone, *SCOPE, match, 5)
        assert [s for _, s, _ in ours] == [s for _, s, _ in mine]
        assert all(rid % 2 == 1 for rid, _, _ in ours)  # the odd rids are ana's


def test_the_search_stops_at_the_time_budget() -> None:
    docs = [(["note"], ["common", "filler", f"u{i}"], [], 1) for i in range(2000)]
    conn = _db(docs)
    with deadline.bound(deadline.Deadline(time.monotonic() - 1)), pytest.raises((AgentMemoryError, sqlite3.Error)):
        bm25.scoped_candidates(conn, *SCOPE, '"common" OR "u7"', 3)


def test_common_counts_are_reused_while_the_realm_barely_changed() -> None:
    """A count of a phrase at least 1 % of the rows hold is kept and reused while under 0.1 % of the rows
    changed since; a rarer phrase's count is never kept (it is cheap to take afresh and must be exact)."""
    counts = TermCounts()
    counts.put("r", "common", 50_000, head=1000, n_rows=1_000_000)
    counts.put("r", "rare", 500, head=1000, n_rows=1_000_000)
    assert counts.get("r", "common", 1999, 1_000_000) == 50_000
    assert counts.get("r", "common", 2000, 1_000_000) is None  # 1,000 changes: counted again
    assert counts.get("r", "common", 999, 1_000_000) is None  # a log behind the count: another database
    assert counts.get("r", "rare", 1000, 1_000_000) is None
    counts.drop("r")
    assert counts.get("r", "common", 1000, 1_000_000) is None


def test_a_kept_count_answers_the_next_search() -> None:
    """The second search of a common word reads its count from memory (no count statement), and gives the
    same answer."""
    docs = [(["note"], ["common", "filler", f"u{i}"], [], 1) for i in range(300)]
    conn = _db(docs)
    counts = TermCounts()
    first = bm25.scoped_candidates(conn, *SCOPE, '"common" OR "u7"', 3, None, "r", counts)
    read: list[str] = []
    conn.set_trace_callback(read.append)
    again = bm25.scoped_candidates(conn, *SCOPE, '"common" OR "u7"', 3, None, "r", counts)
    conn.set_trace_callback(None)
    assert again == first == _exhaustive(conn, ["common", "u7"], 3)
    counted = [s for s in read if s.startswith("SELECT count(*), max(rowid)")]
    assert len(counted) == 1  # "u7" (under 1 % of the rows) only


def test_a_count_past_its_cap_is_extrapolated_from_where_its_last_counted_row_falls() -> None:
    """Counting stops at ``COUNT_ROWS`` rows; a phrase spread evenly over the rows is then estimated from the
    row id of its last counted row, within a few percent, and a rarer phrase is still counted exactly."""
    docs = [(["note"], ["even" if i % 2 == 0 else "odd", "rare" if i % 97 == 0 else "filler"], [], 1)
            for i in range(2000)]
    conn = _db(docs)
    with _setting("COUNT_ROWS", 100):
        counts = fts_top._counts(conn, ["even", "rare"], 2000, None, None)
    assert abs(counts["even"] - 1000) <= 20
    assert counts["rare"] == 21


def test_near_the_end_of_the_budget_the_rows_scored_so_far_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """With less than ``RESERVE_MS`` of the budget left once the rarest words' rows are scored, the search
    answers with the best of those instead of asking FTS5 for more (and instead of failing), and says it did
    not prove them the best: the rows holding both of the rarer common words could still have beaten them."""
    docs = [(["note"], ["alpha"] * (1 + i % 3) + (["beta", "gamma"] if i % 20 == 0 else []) + ["filler"] * (i % 7),
             [], 1) for i in range(400)]
    docs += [(["rare"], ["alpha"], [], 1)] * 3
    conn = _db(docs)
    match = '"rare" OR "alpha" OR "beta" OR "gamma"'
    monkeypatch.setattr(deadline, "RESERVE_SHARE", 1.0)  # the whole budget kept back: always "near the end"
    with _setting("READ_ROWS", 5), _setting("RESERVE_MS", 10_000_000):
        read: list[str] = []
        conn.set_trace_callback(read.append)
        with deadline.bound(deadline.Deadline(time.monotonic() + 60)):
            short = bm25.scoped_candidates(conn, *SCOPE, match, 2)
        conn.set_trace_callback(None)
        full = bm25.scoped_candidates(conn, *SCOPE, match, 2)
    assert [rid for rid, _, _ in short] == [401, 402]  # the rare word's rows, read before the bounded phase
    assert isinstance(short, fts_top.Best) and not short.exact  # and it says it did not prove them the best
    assert not any('" AND "' in s for s in read)  # nothing more asked of FTS5
    assert isinstance(full, fts_top.Best) and full.exact  # with time left, the bounded phase proves its answer
    assert full == _exhaustive(conn, ["rare", "alpha", "beta", "gamma"], 2)


def test_a_budget_shorter_than_the_reserve_keeps_back_only_a_share_of_it() -> None:
    """A 140 ms budget (under the 150 ms reserve) still lets the bounded phase run: only 30 % of it (42 ms) is
    kept back for the rest of the recall, so the answer is proven and exact rather than cut short at once."""
    docs = [(["note"], ["alpha"] * (1 + i % 3) + (["beta", "gamma"] if i % 20 == 0 else []) + ["filler"] * (i % 7),
             [], 1) for i in range(400)]
    docs += [(["rare"], ["alpha"], [], 1)] * 3
    conn = _db(docs)
    with _setting("READ_ROWS", 5), deadline.bound(deadline.Deadline.after_ms(140)):
        assert deadline.reserve_ms(fts_top.RESERVE_MS) == pytest.approx(42, abs=1)
        got = bm25.scoped_candidates(conn, *SCOPE, '"rare" OR "alpha" OR "beta" OR "gamma"', 2)
    assert isinstance(got, fts_top.Best) and got.exact
    assert got == _exhaustive(conn, ["rare", "alpha", "beta", "gamma"], 2)
