"""bm25 over the statistics of the scope a recall reads: recall's candidate ranking.

Why not FTS5's ``bm25()``: its statistics (row count, average length, how many rows hold a term)
are the whole full-text table's, i.e. every scope of the realm, so the order of one identity's own
results would tell it which words other identities' records hold (``docs/security.md``, "Ranking
reveals nothing about other scopes"). Here every statistic is the scope's:

* ``N`` — the scope's indexed (active) rows; ``avgdl`` — their tokens / ``N``
  (:data:`meta_memory.recall.fts.SCOPES_TABLE`, kept by the writer in the transaction of each change);
* ``n_i`` — the scope's rows holding phrase ``i``, counted from the scope's rows matching the query
  (which the ranking reads anyway: no scan beyond them);
* per row: ``f_i`` its column-weighted count of phrase ``i`` (title 4, body 2, tags 5:
  :data:`meta_memory.recall.fts.BM25_WEIGHTS`) and ``D`` its token count.

A row's score, summed over the query's phrases in ``MATCH`` order (repeats kept; a phrase the row
lacks adds nothing)::

    idf_i = ln((N - n_i + 0.5) / (n_i + 0.5))            (1e-6 when not positive)
    bm25  = -sum_i idf_i * (f_i * (k1 + 1)) / (f_i + k1 * (1 - b + b * D / avgdl))

with ``k1 = 1.2``, ``b = 0.5`` (:data:`B`): FTS5's formula, fed the scope's statistics. Best first is the
smallest; ties by ``rid``. The same arithmetic in the same order runs on every path, so they give
bit-identical scores: :func:`scoped_candidates` (the SQLite store's FTS5 path), :mod:`meta_memory.recall.lexical_index` (vectorised over numpy arrays, :func:`term_score`
applies to arrays as to floats), and the PostgreSQL store (the same formula in SQL over its per-scope
``fts_stats`` / ``fts_terms``).

Spec: README "Going beyond the reference" (Unicode-aware recall); reference notes §3.3.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any, overload

from meta_memory.recall import fts

if TYPE_CHECKING:  # numpy is the index's; the FTS5 path scores plain floats
    import numpy as np

    from meta_memory.recall.fts_top import TermCounts

__all__ = ["K1", "B", "IDF_FLOOR", "DEGRADED_APPROXIMATE", "weighted", "idf", "term_score", "scope_stats", "scoped_candidates"]

#: bm25's term-frequency saturation (FTS5's).
K1 = 1.2
#: bm25's length normalisation. FTS5 uses 0.75; with statistics per scope (one conversation's turns rather
#: than a whole realm's) LoCoMo's leave-one-conversation-out recall@8 is best from 0.3 to 0.5 and lower at
#: 0.6 to 0.9 (``docs/benchmarks.md``, "Ranking reveals nothing about other identities").
B = 0.5

#: The idf of a phrase at least half the scope's rows hold (FTS5's floor: the phrase still counts).
IDF_FLOOR = 1e-6

#: The ``degraded_reason`` of a recall whose store could not prove its candidates the scope's best: they are the
#: best of the rows it scored. The PostgreSQL store says so in the result (its later ranking rounds stopped short
#: of the budget); the SQLite store's one-scope FTS5 path (:class:`meta_memory.recall.fts_top.Best` ``exact``
#: false) only counts it (``ranking_stats``): there the label would tell the caller the realm holds no other
#: identity's records.
DEGRADED_APPROXIMATE = "approximate_ranking"

_WEIGHT_LIST = [float(w) for w in fts.BM25_WEIGHTS]
_COLUMNS = ", ".join(f"{fts.FTS_TABLE}.{c}" for c in fts.COLUMNS)
#: The scope's indexed rows matching the query, with their columns (the FTS5 match drives; each row's
#: record is read by primary key to keep the scope's; a full-text row exists iff its record is active).
_MATCHING = (f"SELECT {fts.FTS_TABLE}.rowid, {_COLUMNS} FROM {fts.FTS_TABLE} CROSS JOIN records r "
             f"ON r.rowid = {fts.FTS_TABLE}.rowid WHERE {fts.FTS_TABLE} MATCH ? AND r.scope_kind = ? "
             "AND r.scope_key = ? AND r.status_kind = 'active'")
_STATS = f"SELECT n_rows, n_tokens FROM {fts.SCOPES_TABLE} WHERE scope_kind = ? AND scope_key = ?"
_SCOPES = f"SELECT count(*) FROM {fts.SCOPES_TABLE}"


def weighted(columns: Sequence[str]) -> tuple[dict[str, float], int, dict[str, int]]:
    """``(term -> column-weighted count, token count, term -> columns holding it)`` of one full-text
    row's columns (in :data:`meta_memory.recall.fts.COLUMNS` order; bit ``i`` of the last =
    ``fts.COLUMNS[i]``)."""
    freq: dict[str, float] = {}
    bits: dict[str, int] = {}
    size = 0
    for i, (text, weight) in enumerate(zip(columns, _WEIGHT_LIST)):
        toks = text.split()
        size += len(toks)
        bit = 1 << i
        for t in toks:
            freq[t] = freq.get(t, 0.0) + weight
            bits[t] = bits.get(t, 0) | bit
    return freq, size, bits


def _held(columns: Sequence[str], phrases: Sequence[str]) -> tuple[dict[str, float], int, dict[str, int]]:
    """:func:`weighted` of one row restricted to ``phrases`` (distinct): the counts the score needs, without
    counting every token of the row."""
    freq: dict[str, float] = {}
    bits: dict[str, int] = {}
    size = 0
    for i, (text, weight) in enumerate(zip(columns, _WEIGHT_LIST)):
        toks: list[str] | None = None
        for phrase in phrases:
            if phrase not in text:  # a substring test first: most rows hold few of the phrases
                continue
            if toks is None:
                toks = text.split()
            count = toks.count(phrase)
            if count:
                freq[phrase] = freq.get(phrase, 0.0) + count * weight
                bits[phrase] = bits.get(phrase, 0) | (1 << i)
        size += len(toks) if toks is not None else _count_tokens(text)
    return freq, size, bits


def _count_tokens(text: str) -> int:
    """Tokens of a column as :func:`meta_memory.recall.fts.document` writes it (single spaces between)."""
    return text.count(" ") + 1 if text else 0


def idf(n_rows: int, holding: int) -> float:
    """``ln((N - n + 0.5) / (n + 0.5))`` for ``n = holding`` of the scope's ``N = n_rows`` rows, or
    :data:`IDF_FLOOR` when that is not positive."""
    value = math.log((n_rows - holding + 0.5) / (holding + 0.5))
    return value if value > 0.0 else IDF_FLOOR


@overload
def term_score(idf_value: float, f: float, d: float, avgdl: float) -> float: ...
@overload
def term_score(idf_value: float, f: np.ndarray, d: np.ndarray, avgdl: float) -> np.ndarray: ...
def term_score(idf_value: float, f: Any, d: Any, avgdl: float) -> Any:
    """One phrase's share of a row's score: ``idf * (f * (k1 + 1)) / (f + k1 * (1 - b + b * d / avgdl))``.

    ``f`` (column-weighted count) and ``d`` (row length) are floats or numpy float64 arrays (then
    elementwise); either way the operations run in this order, so every path rounds alike.
    """
    return idf_value * ((f * (K1 + 1.0)) / (f + K1 * (1 - B + B * d / avgdl)))


def scope_stats(conn: Any, scope_kind: str, scope_key: str) -> tuple[int, int] | None:
    """``(N, total tokens)`` of a scope's indexed rows in ``conn``'s snapshot; ``None`` when it has none."""
    row = conn.execute(_STATS, (scope_kind, scope_key)).fetchone()
    if row is None or int(row[0]) <= 0:
        return None
    return int(row[0]), int(row[1])


def scoped_candidates(conn: Any, scope_kind: str, scope_key: str, match: str, limit: int,
                      only: Collection[int] | None = None, realm: str | None = None,
                      counts: TermCounts | None = None) -> list[tuple[int, float, dict[str, int]]]:
    """The scope's best ``limit`` rows for ``match`` by bm25 over the scope's statistics, from FTS5.

    Input: ``conn`` a ``sqlite3`` connection holding ``records`` (``rowid``, ``scope_kind``,
    ``scope_key``, ``status_kind``) and the full-text tables of :mod:`meta_memory.recall.fts`; ``match``
    a ``MATCH`` string (:func:`meta_memory.recall.fts.match_expression`). Output: ``(rid, bm25, term
    fields)`` best first (bm25 ascending, then ``rid``), where term fields maps each query phrase the row
    holds to the columns holding it (bit ``i`` = ``fts.COLUMNS[i]``). Only rows scoring above zero.

    Every matching row of the scope is scored, so the answer is exact — with one exception that keeps a
    large realm of a single scope (one identity's realm) inside the time budget: there every indexed row
    is the scope's, and :func:`meta_memory.recall.fts_top.best` skips the rows that cannot enter the best
    ``limit`` (MaxScore over per-phrase bounds; exact unless the rarest phrases' rows are too many to read,
    and common phrases' document counts reused from ``counts``, kept per ``realm``, while the realm
    changed by under 0.1 %). Nothing of another scope is read either way.

    ``only`` (row ids; a filtered recall's matching records): the best ``limit`` among those rows alone,
    scored exactly as without it (every matching row of the scope is read: no pool).

    Raises ``ValueError`` when ``match`` is not quoted strings or words joined by ``OR``
    (:func:`meta_memory.recall.fts.match_phrases`) and what ``conn`` raises (``sqlite3.Error``: an FTS5
    syntax error, or a statement stopped at the time budget).
    """
    phrases = fts.match_phrases(match)
    if limit <= 0 or not phrases:
        return []
    stats = scope_stats(conn, scope_kind, scope_key)
    if stats is None:
        return []
    if only is None and int(conn.execute(_SCOPES).fetchone()[0]) == 1:  # every indexed row is this scope's
        from meta_memory.recall import fts_top  # it scores with this module's formulas

        return fts_top.best(conn, phrases, limit, stats[0], stats[1], realm, counts)
    rows = conn.execute(_MATCHING, (match, scope_kind, scope_key)).fetchall()
    if not rows:
        return []
    n_rows, n_tokens = stats
    avgdl = n_tokens / n_rows
    wanted = list(dict.fromkeys(phrases))
    docs = [(int(row[0]), *_held(row[1:], wanted)) for row in rows]
    acc = [0.0] * len(docs)
    for phrase in phrases:
        holders = [i for i, (_, freq, _, _) in enumerate(docs) if phrase in freq]
        if not holders:
            continue
        weight = idf(n_rows, len(holders))
        for i in holders:
            _, freq, size, _ = docs[i]
            acc[i] += term_score(weight, freq[phrase], float(size), avgdl)
    kept = [i for i in range(len(docs)) if acc[i] > 0.0 and (only is None or docs[i][0] in only)]
    ranked = sorted(kept, key=lambda i: (-acc[i], docs[i][0]))[:limit]
    return [(docs[i][0], -1.0 * acc[i], {t: docs[i][3][t] for t in wanted if t in docs[i][3]}) for i in ranked]
