"""The in-process recall index answers the candidate query exactly as FTS5 does, and never returns a
record the store no longer holds active in the caller's scope.

Each comparison runs the same ``search`` twice on one store: from the warm index, then with the index
turned off (budget 0), i.e. the FTS5 query.
"""

from __future__ import annotations

import random
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.filters import parse_filter
from meta_memory.agent_memory.model import Author, Scope
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore, realm_db_path
from meta_memory.agent_memory.writes import RememberItem
from meta_memory.recall import fts, lexical_index
from meta_memory.recall.lexical_index import CATCH_UP_LIMIT, bm25_top
from meta_memory.recall.text import token_set
from support import raw_rows

REALM = "default"
A = "identity:ana"
B = "identity:ben"
WORDS = ["passport", "travel", "drawer", "tea", "green", "绿茶", "我喜欢", "café", "İstanbul", "multi-agent",
         "hiking", "hikes", "S3", "🎉", "budget", "q3", "notes", "walk", "river", "kitchen"]


def _search(store: SqliteAgentMemoryStore, scope: Scope, query: str, limit: int) -> list[tuple[str, float]]:
    match = fts.match_expression(query)
    assert match is not None
    return [(v.memory_id, s) for v, s in store.search(REALM, scope, match, limit)]


def _both(store: SqliteAgentMemoryStore, scope: Scope, query: str, limit: int = 100) -> tuple[list[Any], list[Any]]:
    """(from the index, from FTS5) for the same query."""
    assert store.lexical_index.ready(REALM)
    budget = store.lexical_index.max_bytes
    ours = _search(store, scope, query, limit)
    store.lexical_index.max_bytes = 0
    try:
        theirs = _search(store, scope, query, limit)
    finally:
        store.lexical_index.max_bytes = budget
    return ours, theirs


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteAgentMemoryStore]:
    with SqliteAgentMemoryStore(tmp_path / "am") as s:
        s.lexical_index.min_rows = 0  # small test realms are indexed too
        yield s


def _fill(store: SqliteAgentMemoryStore, rng: random.Random, n: int) -> list[str]:
    ids = []
    for i in range(n):
        ident = A if rng.random() < 0.6 else B
        title = " ".join(rng.choices(WORDS, k=rng.randint(1, 3)))
        body = " ".join(rng.choices(WORDS, k=rng.randint(1, 25)))
        rec, _ = record_writes.remember(store, REALM, ident, f"{title} {i}", body, rng.sample(WORDS, rng.randint(0, 2)))
        ids.append(rec.memory_id)
    return ids


# ---------------------------------------------------------------------------------------------- same answers

corpus = st.lists(
    st.tuples(st.sampled_from([A, B]), st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),
              st.lists(st.sampled_from(WORDS), min_size=1, max_size=30),
              st.lists(st.sampled_from(WORDS), max_size=3)),
    min_size=1, max_size=60,
)
queries = st.lists(st.lists(st.sampled_from(WORDS + ["absent", "nowhere"]), min_size=1, max_size=6),
                   min_size=1, max_size=8)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=corpus, asks=queries, limit=st.integers(1, 40))
def test_index_matches_fts5_on_random_corpora(docs: list[Any], asks: list[list[str]], limit: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, SqliteAgentMemoryStore(Path(tmp) / "am") as store:
        for i, (ident, title, body, tags) in enumerate(docs):
            record_writes.remember(store, REALM, ident, " ".join(title) + f" n{i}", " ".join(body), tags)
        assert store.lexical_index.warm(REALM)
        for words in asks:
            for ident in (A, B):
                ours, theirs = _both(store, Scope.identity(REALM, ident), " ".join(words), limit)
                assert ours == theirs  # same records, same order, bit-identical bm25


def test_index_matches_fts5_after_mixed_changes(store: SqliteAgentMemoryStore) -> None:
    rng = random.Random(3)
    ids = _fill(store, rng, 150)
    assert store.lexical_index.warm(REALM)
    scope_a = Scope.identity(REALM, A)
    for memory_id in rng.sample(ids, 30):  # forgets and updates, caught up from the change log
        rec = store.get(REALM, memory_id)
        assert rec is not None
        if rng.random() < 0.5:
            record_writes.forget(store, REALM, rec.scope, memory_id, Author.application())
        else:
            record_writes.update(store, REALM, rec.scope.key, memory_id, body="passport river " + rec.body)
    _fill(store, rng, 20)
    for q in ["passport", "tea green", "绿茶 river", "hik", "multi-agent budget notes", "café istanbul 🎉"]:
        ours, theirs = _both(store, scope_a, q)
        assert ours == theirs and ours


def test_ties_break_by_rowid() -> None:
    acc = np.array([0.0, 2.0, 1.0, 2.0, 2.0, 0.5])
    rids = np.array([10, 14, 11, 12, 13, 15])
    assert bm25_top(acc, rids, 2) == [(12, -2.0), (13, -2.0)]
    assert [rid for rid, _ in bm25_top(acc, rids, 10)] == [12, 13, 14, 11, 15]


def test_only_plain_quoted_terms_use_the_index() -> None:
    assert fts.match_terms('"a" OR "b"') == ["a", "b"]
    assert fts.match_terms(fts.match_expression("passport travel")) == ["passport", "travel"]
    for other in ['a OR b', '"a b"', '"a"" OR ""b"', '""', '"a" AND "b"', '"a" OR b']:
        assert fts.match_terms(other) is None


# ---------------------------------------------------------------------------------------------- coherence

def test_a_write_after_warm_up_is_found_and_a_forget_is_gone(store: SqliteAgentMemoryStore) -> None:
    _fill(store, random.Random(1), 40)
    assert store.lexical_index.warm(REALM)
    scope = Scope.identity(REALM, A)
    rec, _ = record_writes.remember(store, REALM, A, "Passport location", "Top drawer zanzibar", ["travel"])
    assert store.lexical_index.ready(REALM)
    assert _search(store, scope, "zanzibar", 8)[0][0] == rec.memory_id
    assert record_writes.forget(store, REALM, scope, rec.memory_id, Author.application())
    assert _search(store, scope, "zanzibar", 8) == []


def test_a_superseded_record_is_replaced_by_its_new_version(store: SqliteAgentMemoryStore) -> None:
    rec, _ = record_writes.remember(store, REALM, A, "Tea", "green tea in the kitchen zanzibar", [])
    assert store.lexical_index.warm(REALM)
    new, old_id = record_writes.update(store, REALM, A, rec.memory_id, body="black tea now zanzibar")
    found = [mid for mid, _ in _search(store, Scope.identity(REALM, A), "zanzibar tea", 8)]
    assert found == [new.memory_id] and old_id == rec.memory_id


def test_another_connections_write_and_forget_are_seen(tmp_path: Path) -> None:
    with SqliteAgentMemoryStore(tmp_path / "am") as first, SqliteAgentMemoryStore(tmp_path / "am") as second:
        record_writes.remember(first, REALM, A, "Seed", "walk by the river", [])
        first.lexical_index.min_rows = 0
        assert first.lexical_index.warm(REALM)
        rec, _ = record_writes.remember(second, REALM, A, "Passport", "the passport is in the zanzibar drawer", [])
        scope = Scope.identity(REALM, A)
        assert first.lexical_index.ready(REALM)
        assert [mid for mid, _ in _search(first, scope, "zanzibar", 8)] == [rec.memory_id]
        assert record_writes.forget(second, REALM, scope, rec.memory_id, Author.application())
        assert _search(first, scope, "zanzibar", 8) == []
        assert _search(first, Scope.identity(REALM, B), "river", 8) == []  # another identity's records never


def test_a_row_the_store_no_longer_holds_active_never_comes_back(store: SqliteAgentMemoryStore) -> None:
    """Fail closed: even an index that missed a change (here: a status changed behind the change log)
    returns only records active in the caller's scope."""
    hidden, _ = record_writes.remember(store, REALM, A, "Secret plan", "zanzibar quarantined", [])
    kept, _ = record_writes.remember(store, REALM, A, "Open plan", "zanzibar public", [])
    other, _ = record_writes.remember(store, REALM, B, "Their plan", "zanzibar theirs", [])
    assert store.lexical_index.warm(REALM)
    conn = sqlite3.connect(realm_db_path(store.root, REALM))
    with conn:
        conn.execute("UPDATE records SET status_kind = 'quarantined' WHERE memory_id = ?", (hidden.memory_id,))
    conn.close()
    assert [mid for mid, _ in _search(store, Scope.identity(REALM, A), "zanzibar", 8)] == [kept.memory_id]
    assert [mid for mid, _ in _search(store, Scope.identity(REALM, B), "zanzibar", 8)] == [other.memory_id]


def test_erase_drops_the_realms_index(store: SqliteAgentMemoryStore) -> None:
    rec, _ = record_writes.remember(store, REALM, A, "Passport", "zanzibar drawer", [])
    record_writes.remember(store, REALM, A, "Walk", "river walk", [])
    assert store.lexical_index.warm(REALM)
    store.erase(REALM, Scope.identity(REALM, A), rec.memory_id, erased_by="test")
    assert not store.lexical_index.ready(REALM)  # its terms left memory with the rows
    assert _search(store, Scope.identity(REALM, A), "zanzibar", 8) == []


def test_a_long_gap_falls_back_to_fts5_and_is_caught_up_in_the_background(store: SqliteAgentMemoryStore) -> None:
    record_writes.remember(store, REALM, A, "Seed", "walk by the river", [])
    assert store.lexical_index.warm(REALM)
    items = [RememberItem(f"Note {i}", f"river zanzibar {i}") for i in range(CATCH_UP_LIMIT + 1)]
    for i in range(0, len(items), 500):
        record_writes.remember_many(store, REALM, A, items[i:i + 500])
    scope = Scope.identity(REALM, A)
    found = _search(store, scope, "zanzibar", 5)  # too far behind: FTS5 answers, the worker catches up
    assert len(found) == 5
    conn = sqlite3.connect(realm_db_path(store.root, REALM))
    head = conn.execute(f"SELECT MAX(seq) FROM {fts.CHANGES_TABLE}").fetchone()[0]
    conn.close()
    until = time.monotonic() + 30
    while store.lexical_index.position(REALM) != head:
        assert time.monotonic() < until, "the recall index did not catch up"
        time.sleep(0.02)
    ours, theirs = _both(store, scope, "zanzibar river", 50)
    assert ours == theirs and len(ours) == 50


def test_the_budget_evicts_the_least_recently_searched_realm(tmp_path: Path) -> None:
    with SqliteAgentMemoryStore(tmp_path / "am") as store:
        store.lexical_index.min_rows = 0
        for realm in ("r1", "r2"):
            for i in range(30):
                record_writes.remember(store, realm, A, f"Note {i}", f"river walk {realm} {i}", [])
        assert store.lexical_index.warm("r1")
        one = store.lexical_index.nbytes()
        store.lexical_index.max_bytes = int(one * 1.5)  # room for one realm only
        assert store.lexical_index.warm("r2")
        assert store.lexical_index.ready("r2") and not store.lexical_index.ready("r1")
        assert store.lexical_index.nbytes() <= store.lexical_index.max_bytes
        match = fts.match_expression("river")
        assert match is not None
        # the evicted realm is answered by FTS5 meanwhile, with the same records
        assert len(store.search("r1", Scope.identity("r1", A), match, 100)) == 30
        store.lexical_index.max_bytes = one // 2  # smaller than any realm: FTS5 only
        assert not store.lexical_index.warm("r1")


def test_a_small_realm_stays_on_fts5(tmp_path: Path) -> None:
    with SqliteAgentMemoryStore(tmp_path / "am") as store:
        assert store.lexical_index.min_rows > 1
        rec, _ = record_writes.remember(store, REALM, A, "Passport", "zanzibar drawer", [])
        assert [mid for mid, _ in _search(store, Scope.identity(REALM, A), "zanzibar", 8)] == [rec.memory_id]
        time.sleep(0.2)
        assert not store.lexical_index.ready(REALM)  # no build was started


def test_a_cold_realm_is_built_in_the_background(store: SqliteAgentMemoryStore) -> None:
    rec, _ = record_writes.remember(store, REALM, A, "Passport", "zanzibar drawer", [])
    assert not store.lexical_index.ready(REALM)
    assert [mid for mid, _ in _search(store, Scope.identity(REALM, A), "zanzibar", 8)] == [rec.memory_id]  # FTS5
    _wait_ready(store)
    assert [mid for mid, _ in _search(store, Scope.identity(REALM, A), "zanzibar", 8)] == [rec.memory_id]


def _wait_ready(store: SqliteAgentMemoryStore, realm: str = REALM) -> None:
    until = time.monotonic() + 30
    while not store.lexical_index.ready(realm):
        assert time.monotonic() < until, "the recall index was not built"
        time.sleep(0.02)


texts = st.text(st.characters(codec="utf-8", categories=["L", "M", "N", "P", "S", "Zs"]), max_size=60)


@settings(max_examples=200, deadline=None)
@given(title=texts, description=texts, body=texts, tags=st.lists(texts, max_size=3))
def test_the_full_text_row_holds_the_token_sets_re_ranking_reads(title: str, description: str, body: str,
                                                                  tags: list[str]) -> None:
    """Re-ranking takes a candidate's token sets from its full-text row when the index served it: the
    same sets it would compute from the text (``recall/lexical.py``)."""
    doc = fts.document(title, description, body, tags)
    body_text = description + "\n" + body if description else body
    assert frozenset(doc["title"].split()) == token_set(title)
    assert frozenset(doc["body"].split()) == token_set(body_text)
    assert frozenset(doc["tags"].split()) == token_set(" ".join(tags))


def test_candidates_from_the_index_carry_the_columns_holding_each_term(store: SqliteAgentMemoryStore) -> None:
    record_writes.remember(store, REALM, A, "Passport drawer", "the zanzibar drawer", ["travel"])
    assert store.lexical_index.warm(REALM)
    match = fts.match_expression("zanzibar drawer travel absent")
    assert match is not None
    found = store.search(REALM, Scope.identity(REALM, A), match, 8)
    assert len(found) == 1
    bit = {c: 1 << i for i, c in enumerate(fts.COLUMNS)}
    assert dict(found.term_fields(0) or {}) == {"zanzibar": bit["body"], "drawer": bit["title"] | bit["body"],
                                                "travel": bit["tags"]}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=corpus, asks=queries)
def test_term_fields_match_the_full_text_rows(docs: list[Any], asks: list[list[str]]) -> None:
    """After writes and forgets, each candidate's term fields are its full-text row's columns holding the term."""
    with tempfile.TemporaryDirectory() as tmp, SqliteAgentMemoryStore(Path(tmp) / "am") as store:
        ids = [record_writes.remember(store, REALM, ident, " ".join(title) + f" n{i}", " ".join(body), tags)[0].memory_id
               for i, (ident, title, body, tags) in enumerate(docs[: len(docs) // 2])]
        assert store.lexical_index.warm(REALM)
        for i, (ident, title, body, tags) in enumerate(docs[len(docs) // 2:]):  # caught up from the change log
            record_writes.remember(store, REALM, ident, " ".join(title) + f" m{i}", " ".join(body), tags)
        for memory_id in ids[::3]:
            rec = store.get(REALM, memory_id)
            assert rec is not None
            record_writes.forget(store, REALM, rec.scope, memory_id, Author.application())
        for words in asks:
            match = fts.match_expression(" ".join(words))
            assert match is not None
            terms = fts.match_terms(match)
            assert terms is not None
            for ident in (A, B):
                found = store.search(REALM, Scope.identity(REALM, ident), match, 40)
                for i, (view, _) in enumerate(found):
                    row = raw_rows(store, REALM, f"SELECT f.title, f.body, f.tags FROM {fts.FTS_TABLE} f JOIN records r "
                                   "ON r.rid = f.rowid WHERE r.memory_id = ?", (view.memory_id,))[0]
                    expected = {t: sum(1 << i for i, col in enumerate(row) if t in col.split()) for t in terms}
                    assert dict(found.term_fields(i) or {}) == {t: b for t, b in expected.items() if b}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gaps=st.lists(st.integers(1, 90_000), min_size=1, max_size=25), owners=st.lists(st.booleans(), max_size=25),
       span=st.integers(1, 3), window_ms=st.integers(0, 200_000), picks=st.lists(st.integers(0, 24), max_size=6))
def test_neighbours_in_one_statement_match_the_write_order_rule(gaps: list[int], owners: list[bool], span: int,
                                                                window_ms: int, picks: list[int]) -> None:
    """The store's neighbour read (all anchors at once) agrees with the rule computed from the whole scope."""
    from meta_memory.clock import ManualClock
    from meta_memory.recall.store_reader import neighbours_from

    clock = ManualClock()
    with tempfile.TemporaryDirectory() as tmp, SqliteAgentMemoryStore(Path(tmp) / "am", clock) as store:
        for i, gap in enumerate(gaps):
            clock.advance(gap)
            mine = owners[i] if i < len(owners) else True
            record_writes.remember(store, REALM, A if mine else B, f"Note {i}", f"body {i}", [])
        scope = Scope.identity(REALM, A)
        records = store.active_records(REALM, scope)
        if not records:
            return
        anchors = [records[p % len(records)] for p in picks] or records[:1]
        got = store.neighbours(REALM, scope, anchors, span, window_ms)
        want = neighbours_from(records, anchors, span, window_ms)
        assert {k: [v.memory_id for v in vs] for k, vs in got.items()} == {
            k: [v.id for v in vs] for k, vs in want.items()}


# ---------------------------------------------------------------------------------------------- write-order neighbours

class _SteppingClock:
    """A clock the test moves: several records share a millisecond, some go back in time."""

    def __init__(self) -> None:
        self.now = 1_700_000_000_000

    def now_ms(self) -> int:
        return self.now



def _forget(store: Any, records: list[Any], forgotten: list[int]) -> None:
    """Forget the records at the drawn positions ``forgotten`` (those past the end ignored)."""
    for i in set(forgotten):
        if i < len(records):
            record_writes.forget(store, REALM, records[i].scope, records[i].memory_id, Author.application())

@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(st.tuples(st.sampled_from([A, B]), st.sampled_from([0, 0, 1, 30_000, 200_000, -5_000])),
                      min_size=2, max_size=60),
       forgotten=st.lists(st.integers(0, 59), max_size=10), span=st.integers(1, 3),
       window_ms=st.sampled_from([0, 60_000, 120_000]), side_steps=st.sampled_from([0, 1, 8]))
def test_index_neighbours_match_the_database(steps: list[Any], forgotten: list[int], span: int, window_ms: int,
                                             side_steps: int) -> None:
    """The index's write-order neighbours are the database's, whether its walk reads rows one by one or in
    chunks (``SIDE_STEPS``)."""
    from meta_memory.recall import lexical_index

    old_steps, lexical_index.SIDE_STEPS = lexical_index.SIDE_STEPS, side_steps
    try:
        _neighbours_match(steps, forgotten, span, window_ms)
    finally:
        lexical_index.SIDE_STEPS = old_steps


def _neighbours_match(steps: list[Any], forgotten: list[int], span: int, window_ms: int) -> None:
    clock = _SteppingClock()
    with tempfile.TemporaryDirectory() as tmp, SqliteAgentMemoryStore(Path(tmp) / "am", clock=clock) as store:
        records = []
        for i, (ident, step) in enumerate(steps):
            clock.now += step
            rec = store.get(REALM, record_writes.remember(store, REALM, ident, f"note {i}", f"passport river {i}", [])[0].memory_id)
            assert rec is not None
            records.append(rec)
        assert store.lexical_index.warm(REALM)
        _forget(store, records, forgotten)
        for ident in (A, B):
            scope = Scope.identity(REALM, ident)
            anchors = [r for r in records if r.scope == scope and _is_active(store, r.memory_id)]
            ours = store.neighbours(REALM, scope, anchors, span, window_ms)
            assert store.lexical_index.ready(REALM)
            store.lexical_index.max_bytes = 0
            try:
                theirs = store.neighbours(REALM, scope, anchors, span, window_ms)
            finally:
                store.lexical_index.max_bytes = 256 * 1024 * 1024
            assert ours == theirs


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=st.lists(st.sampled_from([A, B]), min_size=2, max_size=30), later=st.lists(st.sampled_from([A, B]), max_size=8),
       forgotten=st.lists(st.integers(0, 29), max_size=6), span=st.integers(1, 3))
def test_kept_walks_follow_every_added_and_removed_row(first: list[str], later: list[str], forgotten: list[int],
                                                      span: int) -> None:
    """A write-order walk the index keeps is the one the database gives after rows are added or forgotten."""
    clock = _SteppingClock()
    with tempfile.TemporaryDirectory() as tmp, SqliteAgentMemoryStore(Path(tmp) / "am", clock=clock) as store:
        def write(ident: str, i: int) -> Any:
            clock.now += 1_000
            written = record_writes.remember(store, REALM, ident, f"note {i}", f"passport river {i}", [])[0]
            return store.get(REALM, written.memory_id)

        records = [write(ident, i) for i, ident in enumerate(first)]
        assert store.lexical_index.warm(REALM)
        for ident in (A, B):  # the first walks, kept
            scope = Scope.identity(REALM, ident)
            store.neighbours(REALM, scope, [r for r in records if r.scope == scope], span, 120_000)
        records += [write(ident, len(records) + i) for i, ident in enumerate(later)]
        _forget(store, records, forgotten)
        for ident in (A, B):
            scope = Scope.identity(REALM, ident)
            anchors = [r for r in records if r.scope == scope and _is_active(store, r.memory_id)]
            for _ in range(2):  # walked afresh, then kept
                ours = store.neighbours(REALM, scope, anchors, span, 120_000)
                assert store.lexical_index.ready(REALM)
                store.lexical_index.max_bytes = 0
                try:
                    theirs = store.neighbours(REALM, scope, anchors, span, 120_000)
                finally:
                    store.lexical_index.max_bytes = 256 * 1024 * 1024
                assert ours == theirs


def _is_active(store: SqliteAgentMemoryStore, memory_id: str) -> bool:
    rec = store.get(REALM, memory_id)
    return rec is not None and rec.status.is_active


def _traced(fn: Any) -> int:
    """Bytes still allocated after ``fn()`` that were not before (tracemalloc)."""
    import gc
    import tracemalloc

    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        fn()
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("distinct", [True, False], ids=["distinct-words", "shared-words"])
def test_the_memory_figure_covers_what_the_index_holds(tmp_path: Path, distinct: bool) -> None:
    """The budget is only as good as the figure it is held to: a realm written to be expensive (every
    record of words no other record has, added after the build so they wait unmerged) must not hold
    more memory than ``nbytes`` says."""

    def items(start: int, count: int) -> list[RememberItem]:
        return [RememberItem(f"Note {i}", " ".join(f"q{i:05d}w{j:02d}" if distinct else f"w{j:02d}x"
                                                   for j in range(40)) + f" n{i:05d}z")
                for i in range(start, start + count)]

    with SqliteAgentMemoryStore(tmp_path / "am") as store:
        index = store.lexical_index
        index.min_rows = 0
        index.background = False
        index.on_built = None  # the index's memory alone: the rows kept resident are the view cache's, held to its bounds
        record_writes.remember_many(store, REALM, A, items(0, 1000))
        built = _traced(lambda: index.warm(REALM))
        assert index.ready(REALM)
        assert built <= index.nbytes() * 1.15, (built, index.nbytes())
        match = fts.match_expression("n00001z")
        assert match is not None
        at = index.position(REALM)

        def grow() -> None:
            for start in range(1000, 3000, CATCH_UP_LIMIT // 2):  # each search applies the changes in place
                record_writes.remember_many(store, REALM, B if start % 2 else A, items(start, CATCH_UP_LIMIT // 2))
                store.search(REALM, Scope.identity(REALM, A), match, 8)

        grown = _traced(grow)
        assert index.position(REALM) > at  # type: ignore[operator]  # applied in place: appended postings wait unmerged
        assert built + grown <= index.nbytes() * 1.15, (built + grown, index.nbytes())


def test_the_memory_figure_covers_the_scores_computed_when_a_realm_is_built(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A built realm's mid-frequency words get their per-row scores computed at once (no search pays for
    them); that memory is in ``nbytes``, so the budget still bounds what the index holds, and the index
    grows with them to at most ``PREPARE_SHARE`` of the budget."""
    monkeypatch.setattr(lexical_index, "PREPARE_MIN_POSTINGS", 100)
    words = [f"w{k:02d}" for k in range(40)]
    rng = random.Random(5)
    items = [RememberItem(f"Note {i}", " ".join(rng.sample(words, 8)) + f" n{i:05d}z") for i in range(2000)]
    with SqliteAgentMemoryStore(tmp_path / "am") as store:
        index = store.lexical_index
        index.min_rows = 0
        index.background = False
        index.on_built = None  # the index's memory alone: the rows kept resident are the view cache's, held to its bounds
        for start in range(0, len(items), 1000):
            record_writes.remember_many(store, REALM, A, items[start:start + 1000])
        built = _traced(lambda: index.warm(REALM))
        assert index.ready(REALM)
        realm = index._ready[REALM]
        scored = sum(len(p.scope_scores) for p in realm.postings.values() if p.scope_scores is not None)
        assert scored >= 2000 * 8 * 0.9  # every word is in about a fifth of the rows: all scored ahead
        assert realm.cached == scored
        assert built <= index.nbytes() * 1.15, (built, index.nbytes())
        assert index.nbytes() <= index.max_bytes * lexical_index.PREPARE_SHARE
        match = fts.match_expression("w01 w02 w03")
        assert match is not None
        assert len(store.search(REALM, Scope.identity(REALM, A), match, 10)) == 10
        assert realm.cached == scored  # nothing left for the search to compute


def test_a_realm_of_one_scope_ranks_alike_on_both_paths(store: SqliteAgentMemoryStore) -> None:
    """With every indexed row in one scope, the FTS5 path
    skips the rows that cannot enter the best (``recall.fts_top``): the same answer as the index."""
    rng = random.Random(11)
    for i in range(120):
        record_writes.remember(store, REALM, A, " ".join(rng.choices(WORDS, k=2)) + f" {i}", " ".join(rng.choices(WORDS, k=12)))
    assert store.lexical_index.warm(REALM)
    for q in ["passport", "tea green river", "绿茶 kitchen budget notes", "hiking walk"]:
        ours, theirs = _both(store, Scope.identity(REALM, A), q)
        assert ours == theirs and ours


def test_index_and_fts5_agree_on_the_best_among_a_filtered_set(store: SqliteAgentMemoryStore) -> None:
    """A filtered recall's candidates (``only=``: the matching rows) are the best among those rows, the
    same from the in-process index and from FTS5, scored as without a filter."""
    rng = random.Random(11)
    _fill(store, rng, 120)
    assert store.lexical_index.warm(REALM)
    scope = Scope.identity(REALM, A)
    match = fts.match_expression(" ".join(WORDS[:4]))
    assert match is not None
    everything = store.search(REALM, scope, match, 500)
    only = {rid for rid, _ in store.matching_rids(REALM, scope, parse_filter({"absent": None}))}
    chosen = set(rng.sample(sorted(only), len(only) // 3))
    ids = {memory_id for rid, memory_id in store.matching_rids(REALM, scope, parse_filter({"absent": None}))
           if rid in chosen}
    budget = store.lexical_index.max_bytes
    ours = [(v.memory_id, s) for v, s in store.search(REALM, scope, match, 5, only=chosen)]
    store.lexical_index.max_bytes = 0
    try:
        theirs = [(v.memory_id, s) for v, s in store.search(REALM, scope, match, 5, only=chosen)]
    finally:
        store.lexical_index.max_bytes = budget
    assert ours == theirs
    assert ours == [(v.memory_id, s) for v, s in everything if v.memory_id in ids][:5]


def test_a_build_waits_while_a_recall_is_answered_by_fts5(tmp_path: Path) -> None:
    """While a recall is being answered by FTS5 (``answering``) a build pausing between rows waits, at most
    ``PAUSE_MAX_S`` at a time; with none it goes straight on."""
    from meta_memory.recall import lexical_index

    with SqliteAgentMemoryStore(tmp_path / "am") as s:
        index = s.lexical_index
        t0 = time.monotonic()
        index._pause()
        assert time.monotonic() - t0 < 0.05
        with index.answering():
            t0 = time.monotonic()
            index._pause()
            waited = time.monotonic() - t0
        assert lexical_index.PAUSE_MAX_S * 0.9 <= waited < lexical_index.PAUSE_MAX_S + 0.5
        record_writes.remember_many(s, REALM, A, [RememberItem(f"Note {i}", f"harbour ferry {i}") for i in range(300)])
        index.min_rows = 0
        index.background = False
        index.on_built = None  # the index's memory alone: the rows kept resident are the view cache's, held to its bounds
        with index.answering():  # the build itself pauses: bounded, and it still completes
            t0 = time.monotonic()
            assert index.warm(REALM)
        assert time.monotonic() - t0 >= lexical_index.PAUSE_MAX_S * 0.9


def test_a_steady_stream_of_fts5_recalls_slows_a_build_but_never_stops_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A build pauses for recalls answered by FTS5 only within a credit plus half its time so far: with one
    recall always being answered, 3,000 rows (12 pause points) still build in about twice their time plus the
    credit, not 12 full pauses."""
    from meta_memory.recall import lexical_index

    monkeypatch.setattr(lexical_index, "PAUSE_CREDIT_S", 0.2)
    monkeypatch.setattr(lexical_index, "PAUSE_MAX_S", 1.0)
    with SqliteAgentMemoryStore(tmp_path / "am") as s:
        for start in range(0, 3000, 1000):
            record_writes.remember_many(s, REALM, A, [RememberItem(f"Note {i}", f"harbour ferry {i}")
                                                      for i in range(start, start + 1000)])
        index = s.lexical_index
        index.min_rows = 0
        index.background = False
        index.on_built = None  # the index's memory alone: the rows kept resident are the view cache's, held to its bounds
        with index.answering():
            t0 = time.monotonic()
            assert index.warm(REALM)
            took = time.monotonic() - t0
        assert index._build_paused <= 0.2 + 0.5 * took + 0.05
        assert took < 6.0  # 12 full pauses alone would be 12 s



def test_a_large_build_leaves_the_collector_only_newer_objects_to_walk(store: SqliteAgentMemoryStore,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """After a build of at least ``SETTLE_MIN_ROWS`` rows the objects the process held are frozen out of the
    cyclic collector's walks (a full collection at a million rows paused a recall for 90-160 ms); a smaller
    build freezes nothing, and the index answers as before either way."""
    import gc

    from meta_memory.recall import lexical_index

    _fill(store, random.Random(3), 40)
    gc.unfreeze()
    try:
        monkeypatch.setattr(lexical_index, "_SETTLE", True)  # a gateway process (``serve``, ``gateway --stdio``)
        monkeypatch.setattr(lexical_index, "SETTLE_MIN_ROWS", 1000)
        assert store.lexical_index.warm(REALM)
        assert gc.get_freeze_count() == 0
        store.lexical_index.drop(REALM)
        monkeypatch.setattr(lexical_index, "SETTLE_MIN_ROWS", 40)
        assert store.lexical_index.warm(REALM)
        assert gc.get_freeze_count() > 0
        ours, theirs = _both(store, Scope.identity(REALM, A), "passport travel tea")
        assert ours == theirs
    finally:
        gc.unfreeze()


def test_an_embedding_host_keeps_its_collector_whatever_the_build(store: SqliteAgentMemoryStore,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """In a process that embeds the store (the SDK's default), a large build freezes nothing: a reference
    cycle the host held at that moment and drops later is still collected."""
    import gc
    import weakref

    from meta_memory.recall import lexical_index

    class Node:
        pass

    _fill(store, random.Random(4), 40)
    gc.unfreeze()
    monkeypatch.setattr(lexical_index, "_SETTLE", False)
    monkeypatch.setattr(lexical_index, "SETTLE_MIN_ROWS", 40)
    cycle = Node()
    cycle.me = cycle  # type: ignore[attr-defined]
    alive = weakref.ref(cycle)
    try:
        assert store.lexical_index.warm(REALM)
        assert gc.get_freeze_count() == 0
        del cycle
        gc.collect()
        assert alive() is None
    finally:
        gc.unfreeze()


@pytest.mark.parametrize("spare", [1 << 20, 1 << 30])
def test_a_built_realm_keeps_dense_score_arrays_within_a_share_of_the_budget(tmp_path: Path, spare: int) -> None:
    """A realm's index is built with room for its dense score arrays of at most ``DENSE_SHARE`` of the budget
    (``recall_index_mb``), never more than the built index leaves of it, so they cannot push the realm out."""
    with SqliteAgentMemoryStore(tmp_path / "am") as store:
        store.lexical_index.min_rows = 0
        _fill(store, random.Random(5), 60)
        assert store.lexical_index.warm(REALM)
        size = store.lexical_index._ready[REALM].nbytes()
        store.lexical_index.drop(REALM)
        budget = size + spare
        store.lexical_index.max_bytes = budget
        assert store.lexical_index.warm(REALM)
        index = store.lexical_index._ready[REALM]
        assert index.dense_limit == min(int(budget * lexical_index.DENSE_SHARE), budget - index.nbytes())
        assert 0 < index.dense_limit <= budget * lexical_index.DENSE_SHARE
        assert index.dense_bytes <= index.dense_limit
