"""The best rows of a realm of ONE scope from FTS5, without scoring every matching row (MaxScore).

A realm whose every indexed row belongs to one scope (one identity holding all its records) can be
large: at a million rows the most common query words match most of them, and scoring every matching
row (or letting FTS5's own ``ORDER BY bm25() LIMIT`` do it) takes seconds. This module answers
:func:`meta_memory.recall.bm25.scoped_candidates` for such a realm when the in-process index
(:mod:`meta_memory.recall.lexical_index`) is cold, evicted or refused for its size:

1. **document counts** — each query phrase's ``n_i`` (rows holding it) is counted in the full-text
   table (the realm's rows are the scope's, so the realm-wide count is the scope's): exactly up to
   :data:`COUNT_ROWS` rows (a few milliseconds); past that the count stops and is extrapolated from
   where its ``COUNT_ROWS``-th row falls among the row ids (``COUNT_ROWS * largest rid / that rid``:
   it assumes the phrase spread evenly over the realm's rows in write order). Such a phrase holds at
   least a tenth of a million rows, its idf is at most about 2.2, and an error of a few percent in
   its count moves its idf by a few hundredths. A count of at least :data:`CACHE_SHARE` of the rows
   is kept in :class:`TermCounts` (in process, per realm) and reused while fewer than
   :data:`STALE_SHARE` of the rows changed since it was taken: each change moves a count by at most
   one, so a reused count is off by at most ``N / 1000`` on a count of at least ``N / 100`` (at most
   10 %, an idf off by at most about 0.1). Rarer phrases are counted afresh at every search, exactly.
   The fallback path was approximate before (FTS5's own ranking picked its rows, ``n_i`` counted
   among them); these approximations are on common words only;
2. **bounds** — phrase ``i`` adds at most ``idf_i * (k1 + 1)`` to a row's score (per repeat in the
   query): :func:`meta_memory.recall.bm25.term_score` stays below it for any frequency and length;
3. **exact phase** — phrases are read rarest (largest bound) first, each one's rows in full while
   the rows read stay within :data:`READ_ROWS`, and every row read is scored exactly (every query
   phrase's share, summed in ``MATCH`` order, as the other paths do). The threshold is the
   ``limit``-th best score so far; as soon as the bounds of the phrases not yet read sum below it,
   no unread row can enter the best ``limit`` and the answer is exact: the same rows, scores and
   order as scoring every matching row (``tests/recall/test_fts_top.py``);
4. **bounded phase** — otherwise an unread row can still enter only if it holds one of the smallest
   sets of unread phrases whose bounds reach the threshold (a row holding only common words cannot):
   FTS5 finds those rows (``(a AND b) OR (a AND c) ...``), and when they are at most ``READ_ROWS``
   all are read and scored: exact again. When they are more, the threshold is raised first from the
   rows holding two of the rarer unread phrases (FTS5's own ``bm25()`` picks :data:`POOL` of them,
   pairs expected to hold up to :data:`PAIR_ROWS` rows) and the sets recomputed; still too many, FTS5's
   ``bm25()`` picks ``POOL`` rows among those of the sets cheapest to walk (up to :data:`WALK_ROWS`
   postings) and those are scored exactly. Only then can the answer miss a row: one that ``b = 0.5``
   ranks among the best but FTS5's ``b`` of 0.75 ranks below the pool, or one holding only phrase
   sets too costly to walk.

When less than :data:`RESERVE_MS` of the recall's time budget is left, the bounded phase answers
with the best of the rows it has scored (the rarest phrases' rows, the pairs') instead of running its
next statement, so a slow machine gets an approximate answer rather than none. Either approximate
answer says so to the store (:class:`Best` ``exact`` false), which counts it for the operator
(``approximate_ranking`` in ``meta_memory_recall_degraded_total``) but does not put it in the recall's
result: only a realm of one scope takes this path, so the label would tell the caller that no other
identity holds a record in the realm.

Nothing here writes: the counts are read at search time (no table is kept on the write path). The
store stops each statement at the recall's time budget; the loops here check it between statements.

Spec: README "Going beyond the reference" (recall speed); reference notes §3.3.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from meta_memory import deadline
from meta_memory.recall import bm25, fts

__all__ = ["CACHE_SHARE", "STALE_SHARE", "READ_ROWS", "COUNT_ROWS", "POOL", "MAX_PHRASES", "Best", "TermCounts", "best"]

#: A phrase's count is kept (and reused) only when at least this share of the realm's rows hold it.
CACHE_SHARE = 0.01
#: A kept count is reused while fewer than this share of the realm's rows changed since it was taken.
STALE_SHARE = 0.001
#: Most rows the exact phase reads (columns included) before the bounded phase takes over.
READ_ROWS = 3_000
#: A phrase's rows counted exactly up to this many; past it the count is extrapolated (see :func:`_counts`).
COUNT_ROWS = 100_000
#: Rows the bounded phase expects (phrases taken as independent) among the pairs of phrases it ranks for a first
#: threshold (rows holding two of the rarer phrases).
PAIR_ROWS = 8_000
#: Rows FTS5's own ranking hands the bounded phase to score exactly.
POOL = 400
#: Most AND-groups the bounded phase lists (past it, each unread phrase is its own group).
MAX_GROUPS = 48
#: Most postings (the rows of each phrase of each group, summed) one statement of the bounded phase has FTS5
#: walk: the cheapest groups first, at least one.
WALK_ROWS = 1_000_000
#: Milliseconds of the recall's time budget the bounded phase leaves to the rest of the recall: with less left it
#: answers with the rows it has scored (when at least ``limit``) rather than run its next statement. Of a budget
#: under 500 ms, 30 % of it (:func:`meta_memory.deadline.reserve_ms`).
RESERVE_MS = 150
#: Relative margin on every bound comparison: covers the rounding of the sums many times over.
BOUND_MARGIN = 1e-9
#: Realms whose counts are kept (least recently searched dropped first).
MAX_REALMS = 64
#: Phrases whose counts one realm keeps (least recently counted dropped first). In a small realm nearly every
#: word reaches :data:`CACHE_SHARE`, so without this cap a stream of recalls naming new words would keep one
#: entry (about 200 bytes) per distinct word of the realm's text.
MAX_PHRASES = 4096

_T = fts.FTS_TABLE
_COLUMNS = ", ".join(f"{_T}.{c}" for c in fts.COLUMNS)
_HEAD = f"SELECT COALESCE(MAX(seq), 0) FROM {fts.CHANGES_TABLE}"
_COUNT = f"SELECT count(*), max(rowid) FROM (SELECT rowid FROM {_T} WHERE {_T} MATCH ? LIMIT ?)"
#: the largest row id of the full-text table
_LAST = f"SELECT rowid FROM {_T} ORDER BY rowid DESC LIMIT 1"
_SEP1 = "char(1)"
_SEP2 = "char(2)"
_HOLDERS = f"SELECT count(*) FROM (SELECT rowid FROM {_T} WHERE {_T} MATCH ? LIMIT ?)"
_ROWS = f"SELECT {_T}.rowid AS rid, {_COLUMNS} FROM {_T} WHERE {_T} MATCH ?"
_RANKED = f"SELECT {_T}.rowid AS rid, {_COLUMNS} FROM {_T} WHERE {_T} MATCH ? ORDER BY {fts.BM25_EXPR}, rowid LIMIT ?"


class Best(list[tuple[int, float, dict[str, int]]]):
    """:func:`best`'s rows ``(rid, bm25, term fields)``, best first, and ``exact``: ``True`` when the search
    proved that no row it did not score could enter them (the exact phase ended it, or the bounded phase read
    every row that could), ``False`` when it answered from the rows it had scored: its time budget nearly
    spent, or FTS5's ``bm25()`` picking the pool among too many rows. A list like any other."""

    __slots__ = ("exact",)

    def __init__(self, items: Any = (), *, exact: bool = True) -> None:
        super().__init__(items)
        self.exact = exact


class TermCounts:
    """Per realm, the document counts of its common phrases: ``realm -> phrase -> (count, change-log head
    when counted)``. Thread-safe; bounded by :data:`MAX_REALMS` realms and, per realm, by
    :data:`MAX_PHRASES` phrases, each held by at least :data:`CACHE_SHARE` of its rows."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._realms: OrderedDict[str, dict[str, tuple[int, int]]] = OrderedDict()

    def get(self, realm: str, phrase: str, head: int, n_rows: int) -> int | None:
        """The kept count of ``phrase`` when fewer than ``STALE_SHARE * n_rows`` changes were logged since
        (``head``: the change log's current ``max(seq)``); else ``None``."""
        with self._lock:
            kept = self._realms.get(realm, {}).get(phrase)
        if kept is None:
            return None
        count, at = kept
        return count if 0 <= head - at < STALE_SHARE * n_rows else None

    def put(self, realm: str, phrase: str, count: int, head: int, n_rows: int) -> None:
        """Keep ``count`` (taken at change-log head ``head``) when it is at least ``CACHE_SHARE * n_rows``."""
        if count < CACHE_SHARE * n_rows:
            return
        with self._lock:
            terms = self._realms.pop(realm, None) or {}
            terms.pop(phrase, None)
            terms[phrase] = (count, head)
            while len(terms) > MAX_PHRASES:
                del terms[next(iter(terms))]
            self._realms[realm] = terms
            while len(self._realms) > MAX_REALMS:
                self._realms.popitem(last=False)

    def drop(self, realm: str) -> None:
        """Forget a realm's counts (its rows were erased or its database replaced)."""
        with self._lock:
            self._realms.pop(realm, None)


def _counts(conn: Any, phrases: Sequence[str], n_rows: int, realm: str | None,
            cache: TermCounts | None) -> dict[str, int]:
    """Rows holding each phrase: exact below :data:`COUNT_ROWS`, else extrapolated from where the
    ``COUNT_ROWS``-th holder falls among the row ids (``COUNT_ROWS * largest rid / that rid``, at most ``N``)."""
    head = int(conn.execute(_HEAD).fetchone()[0]) if cache is not None and realm is not None else 0
    out: dict[str, int] = {}
    last: int | None = None
    for phrase in phrases:
        deadline.check()
        if cache is not None and realm is not None:
            kept = cache.get(realm, phrase, head, n_rows)
            if kept is not None:
                out[phrase] = kept
                continue
        count, at = conn.execute(_COUNT, (fts.quote(phrase), COUNT_ROWS)).fetchone()
        count = int(count)
        if count >= COUNT_ROWS:
            if last is None:
                last = int(conn.execute(_LAST).fetchone()[0])
            count = min(n_rows, max(count, round(count * last / max(1, int(at)))))
        out[phrase] = count
        if cache is not None and realm is not None:
            cache.put(realm, phrase, count, head, n_rows)
    return out


def _rows(conn: Any, sql: str, params: tuple[Any, ...]) -> list[Any]:
    """The rows of ``sql`` (``rowid`` and the columns) as ``(rowid, *columns)``, read in ONE step: the rows are
    joined inside SQLite with control characters (never inside a token: the tokenizer splits on them), so
    the interpreter lock is released and taken again once per statement, not once per row (a recall
    beside an index build on another thread of the process waits for that lock each time it takes it)."""
    row = conn.execute(f"SELECT group_concat(rid || {_SEP1} || ifnull(title, '') || {_SEP1} || ifnull(body, '') || "
                       f"{_SEP1} || ifnull(tags, ''), {_SEP2}) FROM ({sql})", params).fetchone()
    if row is None or row[0] is None:
        return []
    return [part.split("\x01") for part in row[0].split("\x02")]


def _short(limit: int, have: int) -> bool:
    """True when the bounded phase should answer with the rows scored so far: it holds ``limit`` of them and
    less than :data:`RESERVE_MS` of the recall's time budget is left, or less than a share of a budget too
    short for that (:func:`meta_memory.deadline.reserve_ms`): the rest of the recall needs it."""
    left = deadline.remaining_ms()
    return have >= limit and left is not None and left < deadline.reserve_ms(RESERVE_MS)


def _groups(order: Sequence[str], bound: dict[str, float], threshold: float) -> list[list[str]] | None:
    """Smallest sets of ``order`` (bounds descending) whose bounds reach ``threshold``: every row that
    could score ``threshold`` holding only these phrases holds one whole set. ``None`` past
    :data:`MAX_GROUPS` sets."""
    out: list[list[str]] = []
    tail = list(itertools.accumulate(reversed([bound[p] for p in order])))[::-1] + [0.0]
    need = threshold * (1 - BOUND_MARGIN)

    def walk(start: int, chosen: list[str], total: float) -> bool:
        for i in range(start, len(order)):
            if total + tail[i] < need:  # even every remaining phrase cannot reach it
                return True
            now = total + bound[order[i]]
            if now >= need:
                out.append([*chosen, order[i]])
                if len(out) > MAX_GROUPS:
                    return False
            elif not walk(i + 1, [*chosen, order[i]], now):
                return False
        return True

    return out if walk(0, [], 0.0) else None


def best(conn: Any, phrases: Sequence[str], limit: int, n_rows: int, n_tokens: int,
         realm: str | None = None, cache: TermCounts | None = None) -> Best:
    """The realm's best ``limit`` full-text rows for ``phrases`` (a ``MATCH``'s phrases in order, repeats
    kept) by bm25 over ``n_rows`` rows of ``n_tokens`` tokens — the realm's one scope's statistics.

    ``conn``: a ``sqlite3`` connection holding the full-text tables of :mod:`meta_memory.recall.fts`,
    in a read transaction; every indexed row must belong to the scope searched. ``realm`` and ``cache``
    (both or neither): where common phrases' counts are kept between searches. Output: ``(rid, bm25,
    term fields)`` best first (bm25 ascending, then ``rid``), only rows scoring above zero, as
    :func:`meta_memory.recall.bm25.scoped_candidates`, as a :class:`Best` whose ``exact`` says whether the
    search proved them the best (see the module docstring). Raises what ``conn`` raises (``sqlite3.Error``, e.g. a statement stopped at the
    time budget) and ``AgentMemoryError("timeout")`` from :func:`meta_memory.deadline.check`.
    """
    if limit <= 0 or not phrases or n_rows <= 0:
        return Best()
    wanted = list(dict.fromkeys(phrases))
    counts = _counts(conn, wanted, n_rows, realm, cache)
    held_phrases = [p for p in wanted if counts[p] > 0]
    if not held_phrases:
        return Best()
    avgdl = n_tokens / n_rows
    weight = {p: bm25.idf(n_rows, counts[p]) for p in held_phrases}
    repeats = {p: phrases.count(p) for p in held_phrases}
    bound = {p: repeats[p] * weight[p] * (bm25.K1 + 1.0) for p in held_phrases}
    order = sorted(held_phrases, key=lambda p: (-bound[p], counts[p], p))
    scored: dict[int, tuple[float, dict[str, int]]] = {}
    top: list[float] = []  # a min-heap of the best ``limit`` scores so far

    def score(rows: list[Any]) -> None:
        for i, row in enumerate(rows):
            rid = int(row[0])
            if rid in scored:
                continue
            if i % 1024 == 1023:
                deadline.check()
            freq, size, bits = bm25._held(row[1:], wanted)
            acc = 0.0
            for phrase in phrases:
                f = freq.get(phrase)
                if f is not None:
                    acc += bm25.term_score(weight[phrase], f, float(size), avgdl)
            scored[rid] = (acc, bits)
            if len(top) < limit:
                heapq.heappush(top, acc)
            elif acc > top[0]:
                heapq.heapreplace(top, acc)

    def done() -> bool:  # no row holding only unread phrases can reach the best ``limit``
        return len(top) >= limit and sum(bound[p] for p in unread) < top[0] * (1 - BOUND_MARGIN)

    read = 0
    unread = list(order)
    proven = True  # whether no row left unscored can enter the answer
    while unread and not done() and read + counts[unread[0]] <= READ_ROWS:  # exact phase
        deadline.check()
        rows = _rows(conn, _ROWS, (fts.quote(unread[0]),))
        read += len(rows)
        score(rows)
        unread.pop(0)
    if unread and not done():  # bounded phase
        proven = False
        pool = max(POOL, 4 * limit)
        paired = False

        def pairs() -> None:  # a threshold (or a higher one) from rows holding two of the rarer unread phrases
            chosen: list[str] = []
            expected = 0.0
            for a, b in sorted(itertools.combinations(unread, 2), key=lambda ab: counts[ab[0]] * counts[ab[1]]):
                expected += counts[a] * counts[b] / n_rows  # as if the phrases were independent
                if expected > PAIR_ROWS and (chosen or expected > 8 * PAIR_ROWS):
                    break
                chosen.append(f"({fts.quote(a)} AND {fts.quote(b)})")
            if chosen:
                deadline.check()
                score(_rows(conn, _RANKED, (" OR ".join(chosen), pool)))

        if len(top) < limit:
            pairs()
            paired = True
            if len(top) < limit:  # still none: some of the rarest unread phrase's rows
                deadline.check()
                score(_rows(conn, _ROWS + " LIMIT ?", (fts.quote(unread[0]), pool)))
        ranked = False
        while not _short(limit, len(top)):  # the rows holding enough unread phrases to reach the threshold
            groups = _groups(unread, bound, top[0]) if len(top) >= limit else None
            if groups is not None and not groups:
                proven = True  # no unread row can reach the threshold: exact
                break
            if groups is None:
                groups = [[p] for p in unread]
            # FTS5 walks the postings of every phrase of every group: a group costs the sum of its phrases' rows
            sized = sorted((sum(counts[p] for p in g), g) for g in groups)
            cost = sum(size for size, _ in sized)

            def expression(chosen: Sequence[tuple[int, list[str]]]) -> str:
                return " OR ".join("(" + " AND ".join(fts.quote(p) for p in g) + ")" for _, g in chosen)

            if cost <= WALK_ROWS:
                deadline.check()
                if int(conn.execute(_HOLDERS, (expression(sized), READ_ROWS + 1)).fetchone()[0]) <= READ_ROWS:
                    score(_rows(conn, _ROWS, (expression(sized),)))  # every row that could enter: exact
                    proven = True
                    break
            if _short(limit, len(top)):
                break
            if not paired:  # too many: first try to raise the threshold
                pairs()
                paired = True
                continue
            if ranked:
                break
            # FTS5's own ranking picks the pool among the rows of the cheapest groups (at least one)
            part = [sg for sg in itertools.accumulate(sized, lambda acc, sg: (acc[0] + sg[0], sg[1]))
                    if sg[0] <= WALK_ROWS] or sized[:1]
            deadline.check()
            picked = _rows(conn, _RANKED, (expression(part), pool))
            score(picked)
            ranked = True
            if len(picked) < pool and len(part) == len(sized):
                proven = True  # the pool held every row of every group: exact after all
                break
    kept = [rid for rid, (acc, _) in scored.items() if acc > 0.0]
    first = sorted(kept, key=lambda rid: (-scored[rid][0], rid))[:limit]
    return Best([(rid, -1.0 * scored[rid][0], {t: scored[rid][1][t] for t in wanted if t in scored[rid][1]})
                 for rid in first], exact=proven)
