"""The in-process recall index's early termination (MaxScore) and its chunked build give exactly what
scoring every posting of a one-pass build gives: the same rows, the same scores bit for bit, ties by rid.

Rows are built straight into :class:`~meta_memory.recall.lexical_index._RealmIndex` (the columns as the
full-text table holds them: space-joined tokens), over a small skewed vocabulary so that common words
(idf at its floor), rare words, repeated query terms and exact ties are all frequent.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from meta_memory.recall import lexical_index
from meta_memory.recall.lexical_index import SCORED_TERM_BYTES, _RealmIndex

#: skewed: the first words are drawn far more often than the last
VOCAB = ["w0"] * 8 + ["w1"] * 5 + ["w2"] * 3 + ["w3", "w3", "w4", "w4", "w5", "w6", "w7", "w8", "w9", "w10"]
QUERY_WORDS = sorted(set(VOCAB)) + ["absent"]
SCOPES = [("identity", "ana"), ("identity", "ben")]

words = st.lists(st.sampled_from(VOCAB), min_size=0, max_size=10)
doc = st.tuples(st.sampled_from([0, 0, 0, 1]), st.lists(st.sampled_from(VOCAB), min_size=1, max_size=4), words,
                st.lists(st.sampled_from(VOCAB), max_size=2), st.integers(1, 3))


def _rows(docs: Sequence[tuple[int, list[str], list[str], list[str], int]]) -> list[tuple[Any, ...]]:
    """Full-text rows ``(rid, scope_kind, scope_key, created_at_ms, title, body, tags)``; a doc's last
    field repeats it (identical rows tie)."""
    out: list[tuple[Any, ...]] = []
    for scope, title, body, tags, copies in docs:
        for _ in range(copies):
            rid = len(out) + 1
            out.append((rid, *SCOPES[scope], 1000 * rid, " ".join(title), " ".join(body), " ".join(tags)))
    return out


@contextmanager
def _setting(name: str, value: int) -> Iterator[None]:
    old = getattr(lexical_index, name)
    setattr(lexical_index, name, value)
    try:
        yield
    finally:
        setattr(lexical_index, name, old)


def _built(rows: Sequence[tuple[Any, ...]]) -> _RealmIndex:
    index = _RealmIndex.build(7, rows)
    assert index is not None
    return index


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=st.lists(doc, min_size=1, max_size=50),
       queries=st.lists(st.lists(st.sampled_from(QUERY_WORDS), min_size=1, max_size=8), min_size=1, max_size=4),
       limit=st.integers(1, 12), pool=st.integers(1, 30), lookup=st.sampled_from([0, 1, 4]),
       refresh=st.sampled_from([0, 5, 10**9]), removed=st.lists(st.integers(1, 150), max_size=4))
def test_pruned_top_k_is_exhaustive_top_k(docs: list[Any], queries: list[list[str]], limit: int, pool: int,
                                          lookup: int, refresh: int, removed: list[int]) -> None:
    """For every scope, query (repeated terms included) and ``limit``: the pruned best rows are the
    exhaustive ones, scores bit for bit, ties by rid — in a realm of one scope (bounds from the terms'
    peak frequency and shortest row, common words scored only at the candidates) and of two scopes or
    with removed rows (bounds from cached scores)."""
    index = _built(_rows(docs))
    for rid in removed:
        index.remove(rid)
    with (_setting("PRUNE_POOL", pool), _setting("LOOKUP_COST", lookup), _setting("PRUNE_MIN_POSTINGS", 0),
          _setting("REFRESH_POSTINGS", refresh)):
        for scope in SCOPES:
            for terms in queries:
                pruned = index.top(scope, terms, limit)
                exhaustive = index.top(scope, terms, limit, exhaustive=True)
                assert pruned == exhaustive, (scope, terms, limit)
                # asked again: the terms' scores are cached now, the answer the same
                assert index.top(scope, terms, limit) == exhaustive


def test_a_rare_term_skips_the_rows_holding_only_common_words() -> None:
    """A query of one rare and one common word, few rows wanted: the rows holding only the common word
    cannot reach the threshold, so they are skipped (the pruned path answers) — and the answer is the
    exhaustive one."""
    rows = [(i + 1, "identity", "ana", i, f"note {i}", "common filler" + (" rare" if i % 500 == 0 else ""), "")
            for i in range(3000)]
    index = _built(rows)
    sid = index.scopes[("identity", "ana")]
    whole = True
    pruned = index._pruned(sid, ["rare", "common"], 3, whole)
    assert pruned is not None
    assert pruned == index.top(("identity", "ana"), ["rare", "common"], 3, exhaustive=True)
    assert [rid for rid, _ in pruned] == [1, 501, 1001]


def test_rows_holding_one_of_two_mid_frequency_words_are_dropped_by_looking_the_other_up() -> None:
    """Two words each in a fifth of the rows and one in every row, ten rows wanted: the best hold both
    words. A row holding only the first could still reach the threshold by its bound for the second, so
    the first word's rows are all candidates at first; the second word is then looked up at them, the
    threshold raised to the partial sums' tenth best, and the rows lacking it dropped — the pruned path
    answers (it used to hand every posting to the exhaustive path), with the exhaustive answer."""
    rows = [(i + 1, "identity", "ana", i, f"note {i}",
             "common filler" + (" alpha" if i % 5 == 0 else "") + (" beta" if i % 7 < 2 else ""), "")
            for i in range(3000)]
    index = _built(rows)
    sid = index.scopes[("identity", "ana")]
    terms = ["alpha", "beta", "common"]
    pruned = index._pruned(sid, terms, 10, True)
    assert pruned is not None
    assert pruned == index.top(("identity", "ana"), terms, 10, exhaustive=True)


def test_a_query_whose_best_rows_hold_only_common_words_is_scored_in_full() -> None:
    """More rows wanted than hold the rare word: the best include rows holding only the common word, none
    can be skipped, and every posting is scored (the pruned path declines)."""
    rows = [(i + 1, "identity", "ana", i, f"note {i}", "common filler" + (" rare" if i % 500 == 0 else ""), "")
            for i in range(3000)]
    index = _built(rows)
    sid = index.scopes[("identity", "ana")]
    assert index._pruned(sid, ["rare", "common"], 50, True) is None
    best = index.top(("identity", "ana"), ["rare", "common"], 50)
    assert len(best) == 50 and [rid for rid, _ in best[:6]] == [1, 501, 1001, 1501, 2001, 2501]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=st.lists(doc, min_size=1, max_size=40), chunk=st.integers(1, 20),
       terms=st.lists(st.sampled_from(QUERY_WORDS), min_size=1, max_size=6))
def test_a_build_in_chunks_holds_what_a_build_in_one_pass_holds(docs: list[Any], chunk: int, terms: list[str]) -> None:
    """Rows read ``BUILD_CHUNK`` at a time give the same postings, slots, statistics and answers."""
    rows = _rows(docs)
    whole = _built(rows)
    with _setting("BUILD_CHUNK", chunk):
        parts = _built(rows)
    assert parts.used == whole.used and parts.live == whole.live and parts.tokens == whole.tokens
    assert parts.n_postings == whole.n_postings and parts.nbytes() == whole.nbytes()
    for name in ("slot_rid", "slot_scope", "slot_len", "slot_at"):
        assert np.array_equal(getattr(parts, name)[: parts.used], getattr(whole, name)[: whole.used])
    assert sorted(parts.postings) == sorted(whole.postings)
    for term, p in whole.postings.items():
        q = parts.postings[term]
        assert np.array_equal(p.slots, q.slots) and np.array_equal(p.freqs, q.freqs)
        assert np.array_equal(p.fields, q.fields)
    with _setting("PRUNE_MIN_POSTINGS", 0):
        for scope in SCOPES:
            assert parts.top(scope, terms, 5) == whole.top(scope, terms, 5)


def test_a_build_past_the_budget_stops_early() -> None:
    """A build whose memory passes ``max_bytes`` gives up (``None``) after the chunk that passed it,
    without reading the rest of the rows."""
    read = 0

    def rows() -> Iterator[tuple[Any, ...]]:
        nonlocal read
        for i in range(10_000):
            read += 1
            yield (i + 1, "identity", "ana", i, f"title{i} words", f"body{i} more words here", "")

    with _setting("BUILD_CHUNK", 100):
        assert _RealmIndex.build(1, rows(), max_bytes=64 * 1024) is None
    assert read < 1000
    with _setting("BUILD_CHUNK", 100):
        built = _RealmIndex.build(1, rows(), max_bytes=1 << 30)
    assert built is not None and built.live == 10_000


def test_a_query_of_few_postings_is_scored_in_full_without_trying_to_prune(monkeypatch: Any) -> None:
    """Below ``PRUNE_MIN_POSTINGS`` postings the pruned path is not even tried (its set-up costs more than
    summing every posting), and the answer is the exhaustive one."""
    rows = [(i + 1, "identity", "ana", i, f"note {i}", "common filler" + (" rare" if i % 500 == 0 else ""), "")
            for i in range(3000)]
    index = _built(rows)
    want = index.top(("identity", "ana"), ["rare", "common"], 3, exhaustive=True)

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the pruned path was tried")

    monkeypatch.setattr(index, "_pruned", refuse)
    assert index.top(("identity", "ana"), ["rare", "common"], 3) == want
    with _setting("PRUNE_MIN_POSTINGS", 0):
        try:
            index.top(("identity", "ana"), ["rare", "common"], 3)
        except AssertionError:
            pass
        else:
            raise AssertionError("over the threshold the pruned path is tried")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=st.lists(doc, min_size=1, max_size=50),
       queries=st.lists(st.lists(st.sampled_from(QUERY_WORDS), min_size=1, max_size=8), min_size=1, max_size=4),
       limit=st.integers(1, 12), least=st.integers(0, 40), room=st.sampled_from([0, 2000, 6000, None]),
       removed=st.lists(st.integers(1, 150), max_size=4), added=st.lists(doc, max_size=2), everything=st.booleans())
def test_scores_computed_when_the_realm_is_built_change_no_answer(
        docs: list[Any], queries: list[list[str]], limit: int, least: int, room: int | None, removed: list[int],
        added: list[Any], everything: bool) -> None:
    """A realm whose terms' scores were computed ahead (``prepare``: any threshold of postings, any room,
    one scope or two, removed rows) answers every query as a realm that computes them on first use: the
    same rows, scores bit for bit, ties by rid, pruned, exhaustive and among given rids — and so after
    rows are added and removed later (the scores computed ahead are then stale and recomputed)."""
    rows = _rows(docs)
    lazy, ahead = _built(rows), _built(rows)
    for index in (lazy, ahead):
        for rid in removed:
            index.remove(rid)
    before = ahead.nbytes()
    with _setting("PREPARE_MIN_POSTINGS", least), _setting("PREPARE_ALL_POSTINGS", 10**9 if everything else 0):
        ahead.prepare(None if room is None else before + room)
    assert ahead.nbytes() == before + 12 * ahead.cached + SCORED_TERM_BYTES * ahead.scored
    assert room is None or ahead.nbytes() <= before + room
    only = {rid for rid in range(1, len(rows) + 1, 3)}

    def answers(index: _RealmIndex) -> list[Any]:
        with _setting("PRUNE_MIN_POSTINGS", 0), _setting("PRUNE_POOL", 3):
            return [(index.top(scope, terms, limit), index.top(scope, terms, limit, exhaustive=True),
                     index.top(scope, terms, limit, only)) for scope in SCOPES for terms in queries]

    assert answers(ahead) == answers(lazy)
    for index in (lazy, ahead):
        for extra in _rows(added):
            index.add((extra[0] + 1000, *extra[1:]))
        index.remove(2)
    assert answers(ahead) == answers(lazy)


def test_a_small_realm_has_every_word_above_the_floor_scored_when_built() -> None:
    """A realm of at most ``PREPARE_ALL_POSTINGS`` postings: ``prepare`` scores its rare and common words too, so a search
    computes no score on first meeting a word (the index's kept scores do not grow), and answers as before."""
    rows = [(i + 1, "identity", "ana", i, f"note {i}", "common filler" + (" alpha" if i % 5 == 0 else ""), "")
            for i in range(3000)]
    index = _built(rows)
    index.prepare(None)
    assert index.postings["3"].scope_scores is not None and index.postings["alpha"].scope_scores is not None
    assert index.postings["common"].scope_scores is not None  # a small realm's searches score it whole
    cached = index.cached
    fresh = _built(rows)
    for terms in (["7", "alpha"], ["2999", "common"], ["note", "15"]):
        assert index.top(("identity", "ana"), terms, 10) == fresh.top(("identity", "ana"), terms, 10)
    assert index.cached == cached
    with _setting("PREPARE_ALL_POSTINGS", 0):
        lazy = _built(rows)
        lazy.prepare(None)
    assert lazy.postings["3"].scope_scores is None


def test_a_built_realm_has_its_mid_frequency_words_scored_and_counted() -> None:
    """After ``prepare`` a search meets no term of at least ``PREPARE_MIN_POSTINGS`` postings unscored but the
    common ones (held by half the rows or more: read only at candidates); the scores are counted in
    ``nbytes`` (12 bytes a posting), and a room too small for a term's scores leaves it to the first search."""
    rows = [(i + 1, "identity", "ana", i, f"note {i}",
             "common filler" + (" alpha" if i % 5 == 0 else "") + (" beta" if i % 7 < 2 else ""), "")
            for i in range(3000)]
    index = _built(rows)
    before = index.nbytes()
    with _setting("PREPARE_MIN_POSTINGS", 100), _setting("PREPARE_ALL_POSTINGS", 0):
        done = index.prepare(before + 12 * 600 + SCORED_TERM_BYTES)  # room for alpha's 600 postings, not beta's 858
        assert done == 600
        assert index.postings["alpha"].scope_scores is not None and index.postings["beta"].scope_scores is None
        assert index.nbytes() == before + 12 * 600 + SCORED_TERM_BYTES
        index.prepare(None)
    assert index.postings["beta"].scope_scores is not None and index.postings["3"].scope_scores is None
    assert index.postings["common"].scope_scores is None and index.postings["note"].scope_scores is None
    assert index.nbytes() == before + 12 * (600 + 858) + 2 * SCORED_TERM_BYTES
    fresh = _built(rows)
    for terms in (["alpha", "beta", "common"], ["beta", "filler"], ["alpha"]):
        assert index.top(("identity", "ana"), terms, 10) == fresh.top(("identity", "ana"), terms, 10)



@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=st.lists(doc, min_size=1, max_size=50),
       queries=st.lists(st.lists(st.sampled_from(QUERY_WORDS), min_size=1, max_size=8), min_size=1, max_size=4),
       limit=st.integers(1, 12), pool=st.integers(1, 30), lookup=st.sampled_from([0, 1, 4]),
       refresh=st.sampled_from([0, 5, 10**9]), room=st.sampled_from([0, 8, 800, 10**9]),
       share=st.sampled_from([0.0, 0.3]), removed=st.lists(st.integers(1, 150), max_size=3),
       added=st.lists(doc, max_size=2))
def test_dense_score_arrays_change_no_answer(docs: list[Any], queries: list[list[str]], limit: int, pool: int,
                                             lookup: int, refresh: int, room: int, share: float, removed: list[int],
                                             added: list[Any]) -> None:
    """Terms' scores kept as one array over every slot when the realm is built (room for any number of them)
    give the exhaustive answer bit for bit, ties by rid, in a realm of one scope or two, with removed rows, and
    again after rows are added and removed (the arrays are then stale and dropped, none made by a search)."""
    index = _built(_rows(docs))
    for rid in removed:
        index.remove(rid)
    index.dense_limit = room
    with (_setting("PRUNE_POOL", pool), _setting("LOOKUP_COST", lookup), _setting("PRUNE_MIN_POSTINGS", 0),
          _setting("REFRESH_POSTINGS", refresh), _setting("DENSE_MIN_SHARE", share),
          _setting("DENSE_MIN_CANDIDATES", 0)):
        kept = index.prepare_dense()
        assert kept == len(index.dense_terms)
        assert index.dense_bytes == sum(len(p.dense) * 8 for p in index.dense_terms.values()) <= room
        for round_ in range(2):
            for _ in range(2):
                for scope in SCOPES:
                    for terms in queries:
                        assert index.top(scope, terms, limit) == index.top(scope, terms, limit, exhaustive=True)
            if round_ == 0:
                for extra in _rows(added):
                    index.add((extra[0] + 1000, *extra[1:]))
                index.remove(2)
        assert index.dense_bytes == sum(len(p.dense) * 8 for p in index.dense_terms.values())


def test_common_words_dense_arrays_are_made_when_built_counted_and_dropped_once_stale() -> None:
    """The words held by a quarter of the rows or more get their scores as one array over every slot when the
    realm is built, most postings first, within ``dense_limit`` (counted in ``nbytes``); the answers are the
    exhaustive ones; a change to a row of the scope makes them stale: the next search drops them all and
    makes none."""
    rows = [(i + 1, "identity", "ana", i, f"note {i}",
             "common filler" + (" alpha" if i % 3 == 0 else "") + (" beta" if i % 4 == 0 else "")
             + (" gamma" if i % 7 == 0 else ""), "")
            for i in range(3000)]
    index = _built(rows)
    scope = ("identity", "ana")
    index.dense_limit = 4 * index.used * 8  # room for four of the five words held by a quarter of the rows
    before = index.nbytes()
    assert index.prepare_dense() == 4
    made = {term for term, p in index.postings.items() if p.dense is not None}
    assert made == {"note", "common", "filler", "alpha"}  # most postings first; beta (750 rows) finds no room
    assert index.dense_bytes == 4 * index.used * 8 and index.nbytes() == before + index.dense_bytes
    terms = ["gamma", "alpha", "beta", "common", "filler"]
    with _setting("PRUNE_MIN_POSTINGS", 0):
        assert index.top(scope, terms, 100) == index.top(scope, terms, 100, exhaustive=True)
        index.add((5000, "identity", "ana", 5000, "note new", "common filler gamma", ""))
        assert index.top(scope, terms, 100) == index.top(scope, terms, 100, exhaustive=True)
        assert index.dense_bytes == 0 and not index.dense_terms  # stale: every one dropped, none made by the search
