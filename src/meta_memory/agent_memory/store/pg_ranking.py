"""Which query terms the PostgreSQL ranking must match to find the exact top results (MaxScore pruning).

The PostgreSQL store ranks a scope's records by bm25 (:mod:`meta_memory.recall.bm25`) in SQL. Matching
every row that holds ANY query term costs as many rows as the commonest term's posting list: at 10,000
records a query with one common word scores three rows in four. Yet a term's share of a row's score is
bounded: ``idf_i * f * (k1 + 1) / (f + k1 * norm) < idf_i * (k1 + 1)`` (``norm >= 1 - b > 0``), so a row
holding only common terms scores below the sum of their bounds. Hence (MaxScore):

1. sort the terms rarest first (by ``n_i``, the scope's rows holding each);
2. match only a prefix of them (the *essential* terms), scoring every matched row exactly with ALL the
   terms, and keep the best ``limit`` rows passing the recall's filters; call the ``limit``-th best
   score's magnitude ``theta``;
3. if the bounds of the terms left out sum to less than ``theta``, no row outside the match can reach the
   ``limit``-th place, not even on a tie (the inequality is strict): the answer is exactly the one
   matching every term gives, same rows, same scores, same order. Otherwise widen the prefix to the
   shortest one whose left-out bounds sum below ``theta`` (``theta`` only grows as the match widens) and
   match again; with fewer than ``limit`` rows found there is no ``theta`` yet and the prefix widens by
   postings (:func:`wider_prefix`). The widest prefix is every term: the full match, as before;
4. when even the rarest term is held by many rows, a first round matches only the rows holding two of the
   rarest few terms (:func:`seed_pairs`), to learn a ``theta`` before any long posting list is read;
5. once ``theta`` is known and the prefix must widen, the next match is the last: the rows holding every
   term of one of the minimal term sets whose bounds reach ``theta`` (:func:`covering_sets`, one
   ``a & b | ...`` query the GIN index answers from its posting lists), exactly the rows whose own bound
   (the bounds of the query terms they hold) can reach ``theta``; a row outside them scores below the
   ``limit``-th row already found, so it cannot enter the answer, and the rows that can are all scored
   exactly. With too many terms or sets for that, the prefix widens as in step 3 and each row whose own
   bound is below ``theta`` is skipped before scoring (a few ``tsvector`` lookups).

Each round runs under the recall's time budget. A round after the first is stopped :data:`RESERVE_MS` before
its end and the best rows found so far answer; the first prefix, run before any row is scored, is stopped
:func:`first_reserve_ms` before it, and the first :func:`sample_rows` rows of its own match are scored
instead. The seeding pairs of step 4, whose match is large by construction, score that sample first, while
most of the budget is left, and then run as a later round does. Either answer is named
``approximate_ranking``; an answer not so named is exact.

The scores are the SQL's (this module only chooses what to match); the bounds it compares are computed
here in floating point with a relative margin (:data:`MARGIN`) far above the rounding of either side.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from meta_memory.recall import bm25

__all__ = [
    "FIRST_POSTINGS", "GROWTH", "MARGIN", "RESERVE_MS", "MIN_ROUND_MS", "FIRST_RESERVE_MS", "FIRST_RESERVE_SHARE",
    "FIRST_ROOM_SHARE", "SAMPLE_ROWS", "SAMPLE_MIN_ROWS", "SAMPLE_SHARES", "first_reserve_ms", "sample_rows",
    "TermStat", "bound", "rarest_first", "first_prefix", "seed_pairs", "wider_prefix", "settled", "row_bounds", "cut", "covering_sets",
]

#: Postings (rows holding a term, summed over the prefix) the first match may read.
FIRST_POSTINGS = 2_000
#: How much wider (in postings) a round matches when the one before found fewer than ``limit`` rows.
GROWTH = 8
#: The rarest terms whose pairs seed a costly first match (:func:`seed_pairs`).
SEED_TERMS = 4
#: Most terms, and most term sets, a query's candidates are matched by as sets (:func:`covering_sets`).
MAX_COVER_TERMS = 16
MAX_COVER_SETS = 64
#: A bound sum must stay under ``theta * (1 - MARGIN)`` to prune (floating point rounding is ~1e-16).
MARGIN = 1e-9
#: Milliseconds of the recall's budget a ranking round after the first leaves to the rest of the recall: it is
#: stopped that long before the budget ends, and the search answers with the best rows the earlier rounds
#: found (not proven the best: ``approximate_ranking``) rather than fail. Of a budget under 500 ms, 30 % of it
#: (:func:`meta_memory.deadline.reserve_ms`).
RESERVE_MS = 150
#: A later round is not started with less than this many milliseconds to run in (before the reserve).
MIN_ROUND_MS = 20
#: Milliseconds of the recall's budget the first prefix's round (a round before any row is scored; not the
#: seeding pairs, which score their sample first) leaves to the rest: :data:`RESERVE_MS` for the rest of the recall and the rest for a sample of the
#: round's own match (:func:`sample_rows`) to answer from when the round is stopped there. Of a budget under
#: 500 ms, :data:`FIRST_RESERVE_SHARE` of it.
FIRST_RESERVE_MS = 250
FIRST_RESERVE_SHARE = 0.5
#: Yet a first round may always run for this share of what is left when it starts (a search begun late in its
#: budget still tries to rank rather than answer from a sample, or nothing).
FIRST_ROOM_SHARE = 0.5
#: The rows of a stopped first round's match that are scored instead (the first ones the index hands over,
#: each scored with every term; the answer is the best of them, ``approximate_ranking``): as many as make
#: :data:`SAMPLE_SHARES` term shares to compute, between :data:`SAMPLE_MIN_ROWS` and :data:`SAMPLE_ROWS`
#: (:func:`sample_rows`).
SAMPLE_ROWS = 1000
SAMPLE_MIN_ROWS = 100
SAMPLE_SHARES = 8000


def first_reserve_ms(budget_ms: float | None, left_ms: float) -> float:
    """Milliseconds a first round leaves of a recall's budget of ``budget_ms`` (``None``: no budget) when
    ``left_ms`` of it are left: :data:`FIRST_RESERVE_MS`, or :data:`FIRST_RESERVE_SHARE` of the budget when
    that is less, but never more than ``(1 - FIRST_ROOM_SHARE) * left_ms``."""
    keep = FIRST_RESERVE_MS if budget_ms is None else min(FIRST_RESERVE_MS, FIRST_RESERVE_SHARE * budget_ms)
    return min(keep, (1 - FIRST_ROOM_SHARE) * left_ms)


def sample_rows(n_terms: int) -> int:
    """How many rows of a stopped first round's match are scored instead, for a query of ``n_terms`` lexemes:
    ``SAMPLE_SHARES // n_terms``, at least :data:`SAMPLE_MIN_ROWS` and at most :data:`SAMPLE_ROWS`."""
    return max(SAMPLE_MIN_ROWS, min(SAMPLE_ROWS, SAMPLE_SHARES // max(1, n_terms)))


@dataclass(frozen=True, slots=True)
class TermStat:
    """One query lexeme and ``df``, the scope's active rows holding it (0: none)."""

    term: str
    df: int


def bound(df: int, n_rows: float) -> float:
    """The most one term held by ``df`` of ``n_rows`` rows can add to a row's score magnitude:
    ``idf * (k1 + 1)`` with bm25's idf (floored at :data:`~meta_memory.recall.bm25.IDF_FLOOR`)."""
    idf = math.log((n_rows - df + 0.5) / (df + 0.5))
    return (idf if idf > 0 else bm25.IDF_FLOOR) * (bm25.K1 + 1)


def rarest_first(stats: Sequence[TermStat]) -> list[TermStat]:
    """The terms some row of the scope holds (``df > 0``), rarest first (ties in query order)."""
    return sorted((s for s in stats if s.df > 0), key=lambda s: s.df)


def first_prefix(terms: Sequence[TermStat], postings: int | None = None) -> int:
    """How many of ``terms`` (rarest first) the first match takes: as many as fit in ``postings``
    (default :data:`FIRST_POSTINGS`), at least one."""
    if postings is None:
        postings = FIRST_POSTINGS
    total, k = 0, 0
    for s in terms:
        total += s.df
        if k and total > postings:
            break
        k += 1
    return k


def settled(terms: Sequence[TermStat], k: int, n_rows: float, theta: float) -> int:
    """The shortest prefix length ``>= k`` of ``terms`` (rarest first) whose left-out terms' bounds sum
    strictly below ``theta * (1 - MARGIN)``; ``len(terms)`` when only the full match will do."""
    bounds = [bound(s.df, n_rows) for s in terms]
    rest = sum(bounds[k:])
    limit = theta * (1 - MARGIN)
    while k < len(terms) and not rest < limit:
        k += 1
        rest = sum(bounds[k:])  # re-summed each time: no drift from repeated subtraction
    return k


def seed_pairs(terms: Sequence[TermStat], k: int, n_rows: float) -> list[tuple[str, str]] | None:
    """When the first prefix (``k`` terms, rarest first) is costly (over :data:`FIRST_POSTINGS` postings):
    pairs of the :data:`SEED_TERMS` rarest terms whose rows holding both are to be matched, to find a first
    ``theta`` cheaply (a row holding two rare terms tends to rank high). The pairs go smallest expected
    match first (``df_a * df_b / n_rows``, as if independent), as many as fit in :data:`FIRST_POSTINGS`
    expected rows, at least one. ``None`` when the prefix is cheap or there are fewer than two terms."""
    if k != 1 or len(terms) < 2 or terms[0].df <= FIRST_POSTINGS:
        return None
    top = terms[:SEED_TERMS]
    pairs = sorted(((a.df * b.df / max(n_rows, 1.0), a.term, b.term) for i, a in enumerate(top) for b in top[i + 1:]),
                   key=lambda p: p[0])
    out: list[tuple[str, str]] = []
    expected = 0.0
    for size, a_term, b_term in pairs:
        expected += size
        if out and expected > FIRST_POSTINGS:
            break
        out.append((a_term, b_term))
    return out


def wider_prefix(terms: Sequence[TermStat], k: int, limit: int) -> int:
    """The prefix of the next round when the last (prefix ``k``) found fewer than ``limit`` rows: at least
    one more term, as many as fit in ``max(2 * limit, GROWTH * postings of the last)`` postings."""
    return max(k + 1, first_prefix(terms, max(2 * limit, GROWTH * sum(s.df for s in terms[:k]))))


def covering_sets(terms: Sequence[TermStat], bounds: Sequence[float], cut_at: float) -> list[list[str]] | None:
    """The minimal sets of terms whose bounds (``bounds[i]`` of ``terms[i]``) sum to at least ``cut_at``: a
    row can stay a candidate only if it holds every term of one of them, so matching their conjunctions
    (one ``a & b | ...`` query the GIN index answers from its posting lists) finds exactly the rows
    whose own bound reaches ``cut_at``. ``None`` when there are more than :data:`MAX_COVER_TERMS` terms
    or more than :data:`MAX_COVER_SETS` sets (the caller matches term by term instead)."""
    n = len(terms)
    if n > MAX_COVER_TERMS:
        return None
    order = sorted(range(n), key=lambda i: -bounds[i])
    after = [0.0] * (n + 1)  # after[j]: the bounds of order[j:] summed (a branch that cannot reach the cut stops)
    for j in range(n - 1, -1, -1):
        after[j] = after[j + 1] + bounds[order[j]]
    out: list[list[str]] = []

    def grow(start: int, chosen: list[int], total: float) -> bool:
        for j in range(start, n):
            if total + after[j] < cut_at:
                return True
            i = order[j]
            now = total + bounds[i]
            picked = [*chosen, i]
            if now >= cut_at:
                # minimal: dropping any member (the smallest is the last picked) falls below the cut
                if now - bounds[i] < cut_at:
                    out.append([terms[x].term for x in picked])
                    if len(out) > MAX_COVER_SETS:
                        return False
                continue
            if not grow(j + 1, picked, now):
                return False
        return True

    return out if grow(0, [], 0.0) else None


def row_bounds(terms: Sequence[TermStat], n_rows: float) -> list[float]:
    """Each term's :func:`bound`, raised by :data:`MARGIN` (a row's bound is the sum over the terms it holds)."""
    return [bound(s.df, n_rows) * (1 + MARGIN) for s in terms]


def cut(theta: float) -> float:
    """The least row bound a row needs to stay a candidate once ``theta`` is known: a row whose bound sums
    below it scores below ``theta``, which is at most the final ``limit``-th score."""
    return theta * (1 - MARGIN)
