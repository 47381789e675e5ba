"""The default recall provider: full-text candidates re-ranked lexically.

Contextual selection (reference notes §3.3-§3.4, made Unicode-aware):

1. terms = :meth:`RecallRequest.terms` (query text + extra terms through
   :mod:`meta_memory.recall.text`). No term => empty outcome with
   ``skip_reason="no_query_terms"``.
2. candidates = the scope's best ``candidate_limit`` records by bm25 over the
   scope's own statistics (:mod:`meta_memory.recall.bm25`) for the quoted ``OR``
   of the terms: nothing another scope holds moves them.
3. each candidate gets the reference's field score: per term +5 when a tag
   has it, +4 when the title has it (else +1 for a term of >= 5 characters
   found inside the title), +2 when description/body has it (else the same
   +1 substring rule). Candidates under ``min_relevance`` (2) are dropped.
   Each term's points are then scaled by its rarity among the candidates
   (``rarity_weight``, :func:`rarity_weights`): a term nearly every candidate
   holds — a speaker's name in every title, the current year — counts for
   less than one only a few hold. Off by default (0): since bm25's statistics
   are the scope's own, its idf already carries a term's rarity in the scope,
   and the grid search picks 0.
4. score = ``field_weight`` x field score + ``bm25_weight`` x (-bm25) — the
   field score keeps the reference's preferences (tags and titles first), bm25
   adds term rarity and frequency. When the query names a date (``on 9
   November, 2022``, ``in July 2022``, ``in May``) and the record speaks of it
   (its own day — the first full date of its title, else its creation day —
   or a date or relative expression of its body, ``last night``, ``last
   Friday``, resolved against that day: :mod:`meta_memory.recall.dates`), the
   score is multiplied by ``1 + date_weight`` (0.25).
5. context (``context_window_ms`` > 0, default 2 minutes): the records the
   same identity wrote just before and after one of the ``context_anchors``
   best matches (``context_span`` per side in write order, within the window)
   receive ``context_weight`` (0.3) x that match's score, halved per further
   step; only records that matched themselves gain, unless
   ``context_admits_unmatched`` (a question often names the turn *before* its
   answer). A best match that is a question (its body ends with ``?``) lends
   ``reply_weight`` (0.9) x its score to the record written next after it,
   matched or not: in a dialogue the answer follows the question, often in
   words the query does not share (:func:`written_after` decides the side).
6. order: score desc, then ``updated_at_ms`` desc, ``created_at_ms`` desc,
   ``memory_id`` asc; truncate to ``max_entries``.

Always selection: the newest records (``updated_at_ms`` desc, ``created_at_ms``
desc), score 0.

LoCoMo figures for each knob are in the module's benchmark
(``benchmarks/locomo_recall.py``): ``rarity_weight``, ``reply_weight`` and
``date_weight`` are the values its leave-one-conversation-out grid search picks on all five
conversations; each held-out conversation is scored with the values picked on
the other four (``docs/benchmarks.md``).
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from operator import attrgetter, itemgetter
from typing import Any

from meta_memory.recall import fts
from meta_memory.recall.dates import DateQuery, query_dates, record_dates
from meta_memory.recall.provider import (
    SKIP_NO_QUERY_TERMS,
    RecallableRecord,
    RecallOutcome,
    RecallReader,
    RecallRequest,
    ScoredRecord,
    record_id,
)
from meta_memory.recall.term_columns import TermColumns, TermRow
from meta_memory.recall.text import normalize, token_set

__all__ = ["LexicalConfig", "LexicalRecallProvider", "field_score", "term_points", "idf_weights", "rarity_weights",
           "MIN_CONTEXTUAL_RELEVANCE_SCORE"]

#: The reference's floor on the field score of a contextual match.
MIN_CONTEXTUAL_RELEVANCE_SCORE = 2.0

TAG_POINTS = 5
TITLE_POINTS = 4
BODY_POINTS = 2
SUBSTRING_POINTS = 1
SUBSTRING_MIN_CHARS = 5


@dataclass(frozen=True, slots=True)
class LexicalConfig:
    """Tuning of :class:`LexicalRecallProvider` (defaults are the measured best).

    ``candidate_limit``: bm25 candidates re-ranked per recall (1..10000; fewer lose LoCoMo recall@8 for
    little speed, more gain some at a cost: ``docs/benchmarks.md``, "how many candidates").
    ``min_relevance``: floor on the field score of a direct match.
    ``field_weight`` / ``bm25_weight``: mix of field score and -bm25.
    ``context_window_ms``: neighbour window (0 disables context).
    ``context_anchors``: how many top matches lend score to their neighbours.
    ``context_weight``: share of an anchor's score its nearest neighbour receives (halved per
    further step in write order).
    ``context_span``: neighbours per side of an anchor, in write order.
    ``context_admits_unmatched``: let a neighbour that matched no term in
    (off by default: the reference's "only matching records" rule holds).
    ``rarity_weight``: in [0, 1]; how much a term's field points shrink when most candidates
    hold it (:func:`rarity_weights`; 0, the default, disables).
    ``reply_weight``: share of a question anchor's score the record written next after it
    receives, matched or not (0 disables; see the module doc, step 5).
    ``date_weight``: a candidate that speaks of a date the query names scores ``1 + date_weight``
    times as much (:mod:`meta_memory.recall.dates`; 0 disables).
    """

    candidate_limit: int = 100
    min_relevance: float = MIN_CONTEXTUAL_RELEVANCE_SCORE
    field_weight: float = 1.0
    bm25_weight: float = 1.0
    context_window_ms: int = 120_000
    context_anchors: int = 10
    context_weight: float = 0.3
    context_span: int = 2
    context_admits_unmatched: bool = False
    rarity_weight: float = 0.0
    date_weight: float = 0.25
    reply_weight: float = 0.9


#: bit of each full-text column in a record's ``term_fields`` (bit ``i`` = ``fts.COLUMNS[i]``)
_TITLE_BIT, _BODY_BIT, _TAGS_BIT = (1 << fts.COLUMNS.index(c) for c in ("title", "body", "tags"))


class _Fields:
    """What the field score reads of one record: which of its fields hold a term — from the index's
    ``term_fields`` when the store found it there, else from its tokens per field as space-padded
    strings (``" a b c "``: a token ``t`` is held iff ``" t "`` is a substring) — and its normalised
    title and body text (for the substring rule)."""

    __slots__ = ("bits", "tags", "title", "body", "title_norm", "body_norm")

    def __init__(self, bits: Mapping[str, int] | None, tokens: tuple[str, str, str], title_norm: str,
                 body_norm: str) -> None:
        self.bits = bits
        self.tags, self.title, self.body = tokens
        self.title_norm, self.body_norm = title_norm, body_norm

    @classmethod
    def of(cls, record: RecallableRecord) -> _Fields:
        """The fields of ``record``; tokenised only when the store gave no ``term_fields``."""
        body_text = _body_text(record)
        bits = getattr(record, "term_fields", None)
        if bits is not None:
            tokens = ("", "", "")
        else:  # tokens of the text as written, exactly as the full-text index sees it
            tags, title, body = (f" {' '.join(token_set(t))} " for t in (" ".join(record.tags), record.title, body_text))
            tokens = (tags, title, body)
        return cls(bits, tokens, normalize(record.title), normalize(body_text))

    def held(self, term: str, padded: str) -> tuple[bool, bool, bool]:
        """Whether the tags, the title and the body hold the normalised ``term`` (``padded`` = ``" term "``)."""
        if self.bits is not None:
            bits = self.bits.get(term, 0)
            return bool(bits & _TAGS_BIT), bool(bits & _TITLE_BIT), bool(bits & _BODY_BIT)
        return padded in self.tags, padded in self.title, padded in self.body


def _body_text(record: RecallableRecord) -> str:
    return record.description + "\n" + record.body if record.description else record.body


class _FieldCache:
    """A small LRU of per-record :class:`_Fields` read without a full-text row (those are tokenised,
    so worth keeping) and, apart, of the day spans a record speaks of; keyed by id and content. Shared by
    concurrent recalls: its lists are touched under one lock (the values are computed outside it).

    Bounded: at most ``capacity`` records of each kind, and only records whose title and body together hold
    at most ``max_chars`` characters (a longer one is computed afresh each time), so a store of 64 KiB
    bodies cannot make it hold hundreds of MiB."""

    def __init__(self, capacity: int = 4096, max_chars: int = 4096) -> None:
        self.capacity = capacity
        self.max_chars = max_chars
        self._items: OrderedDict[tuple[Any, ...], _Fields] = OrderedDict()
        self._dates: OrderedDict[tuple[Any, ...], list[tuple[int, int]]] = OrderedDict()
        self._lock = threading.Lock()

    def dates(self, record: RecallableRecord) -> list[tuple[int, int]]:
        body_text = _body_text(record)
        if len(body_text) + len(record.title) > self.max_chars:
            return record_dates(record.title, body_text, record.created_at_ms)
        key = (record_id(record), record.title, body_text, record.created_at_ms)
        with self._lock:
            hit = self._dates.get(key)
            if hit is not None:
                self._dates.move_to_end(key)
                return hit
        value = record_dates(record.title, body_text, record.created_at_ms)
        with self._lock:
            self._dates[key] = value
            if len(self._dates) > self.capacity:
                self._dates.popitem(last=False)
        return value

    def get(self, record: RecallableRecord) -> _Fields:
        if getattr(record, "term_fields", None) is not None:
            return _Fields.of(record)  # nothing to tokenise: cheaper than a cache entry
        body_text = _body_text(record)
        if len(body_text) + len(record.title) > self.max_chars:
            return _Fields.of(record)
        key = (record_id(record), record.title, body_text, tuple(record.tags))
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
                return hit
        value = _Fields.of(record)
        with self._lock:
            self._items[key] = value
            if len(self._items) > self.capacity:
                self._items.popitem(last=False)
        return value


_HELD_BITS = _TAGS_BIT | _TITLE_BIT | _BODY_BIT


@lru_cache(maxsize=1)
def _points_of_bits() -> Any:
    """The points a term earns in a record from the full-text columns holding it (index: the columns' bits)."""
    import numpy as np
    return np.array([(TAG_POINTS if b & _TAGS_BIT else 0) + (TITLE_POINTS if b & _TITLE_BIT else 0)
                     + (BODY_POINTS if b & _BODY_BIT else 0) for b in range(256)], dtype=np.int64)


class _Normalized:
    """:func:`~meta_memory.recall.text.normalize` of texts seen lately, by the text itself (a string's hash is
    kept in it, so a title or body the store's kept views hand over again is found without re-hashing it).

    Bounded: at most ``capacity`` texts and ``max_chars`` characters of them (a body may be 64 KiB), oldest
    out first. Thread-safe (reads are plain dict reads; insertions take the lock)."""

    def __init__(self, capacity: int = 8192, max_chars: int = 4 * 1024 * 1024) -> None:
        self.capacity = capacity
        self.max_chars = max_chars
        self._items: OrderedDict[str, str] = OrderedDict()  # oldest first: a FIFO (see ViewCache._items)
        self._chars = 0
        self._lock = threading.Lock()

    def __call__(self, text: str) -> str:
        hit = self._items.get(text)
        if hit is not None:
            return hit
        value = normalize(text)
        size = len(text) + len(value)
        if size * 4 > self.max_chars:
            return value  # too large to keep
        with self._lock:
            items = self._items
            if text not in items:
                items[text] = value
                self._chars += size
                while len(items) > self.capacity or self._chars > self.max_chars:
                    old, value_of_old = items.popitem(last=False)
                    self._chars -= len(old) + len(value_of_old)
        return value

    def many(self, texts: Sequence[str]) -> list[str]:
        """``[self(t) for t in texts]``, the texts seen lately found in one pass."""
        out = list(map(self._items.get, texts))
        if None in out:
            for i, hit in enumerate(out):
                if hit is None:
                    out[i] = self(texts[i])
        return out  # type: ignore[return-value]


class _QueryPlan:
    """What :func:`_planned_points` needs of a query's terms, worked out once per recall: each term's places in
    ``terms`` (a repeated term has several) and the terms of at least :data:`SUBSTRING_MIN_CHARS` characters
    (the substring rule applies to them alone)."""

    __slots__ = ("size", "places", "long")

    def __init__(self, terms: Sequence[str]) -> None:
        self.size = len(terms)
        self.places: dict[str, list[int]] = {}
        for i, term in enumerate(terms):
            self.places.setdefault(term, []).append(i)
        self.long = [(i, term) for i, term in enumerate(terms) if len(term) >= SUBSTRING_MIN_CHARS]


def _planned_points(plan: _QueryPlan, found: Sequence[tuple[RecallableRecord, Mapping[str, int]]], held: list[int],
                    norm: Callable[[str], str] = normalize) -> list[list[int]]:
    """:func:`term_points` of each of ``plan``'s terms for each of ``found`` — records with the index's
    ``term_fields`` (``term -> columns holding it``, for the terms the record holds) — adding 1 to ``held[i]``
    for each record holding ``terms[i]``. The held terms give their points from the columns; the substring
    rule (+1 for a long term a field does not hold as a word but contains) is applied to the long terms
    alone."""
    places = plan.places
    points: list[list[int]] = []
    for _, bits_of in found:
        row = [0] * plan.size
        for term, bits in bits_of.items():
            where = places.get(term)
            if where is None or not bits & _HELD_BITS:
                continue
            p = TAG_POINTS if bits & _TAGS_BIT else 0
            if bits & _TITLE_BIT:
                p += TITLE_POINTS
            if bits & _BODY_BIT:
                p += BODY_POINTS
            for i in where:
                held[i] += 1
                row[i] = p
        points.append(row)
    if plan.long:
        for (record, bits_of), row in zip(found, points):
            title_norm: str | None = None
            body_norm: str | None = None
            for i, term in plan.long:  # the substring rule, where a field does not hold the long term as a word
                bits = bits_of.get(term, 0)
                if not bits & _TITLE_BIT:
                    if title_norm is None:
                        title_norm = norm(record.title)
                    if term in title_norm:
                        row[i] += SUBSTRING_POINTS
                if not bits & _BODY_BIT:
                    if body_norm is None:
                        body_norm = norm(_body_text(record))
                    if term in body_norm:
                        row[i] += SUBSTRING_POINTS
    return points


def _table_points(plan: _QueryPlan, records: Sequence[RecallableRecord], table: TermColumns, columns: Sequence[int],
                  held: list[int], norm: Callable[[str], str] = normalize) -> list[list[int]]:
    """:func:`_planned_points` for records whose ``term_fields`` are the rows ``columns`` of one index table
    (:class:`~meta_memory.recall.term_columns.TermColumns`): :func:`_table_matrix` as one list of points per
    record. The same points."""
    out: list[list[int]] = _table_matrix(plan, records, table, columns, held, norm).T.tolist()
    return out


def _table_matrix(plan: _QueryPlan, records: Sequence[RecallableRecord], table: TermColumns, columns: Sequence[int],
                  held: list[int], norm: Callable[[str], str] = normalize) -> Any:
    """The points of :func:`_planned_points` as one ``int64`` array of shape ``(plan.size, len(records))``
    (``[i, c]``: the points of the plan's ``i``-th term in record ``c``), for records whose ``term_fields`` are
    the rows ``columns`` of one index table (:class:`~meta_memory.recall.term_columns.TermColumns`): the points
    of the held terms for all records in a few array operations, then the substring rule, one search per long
    term and field (:func:`_holding`) through the normalised texts of the records whose field does not hold
    the term as a word. Adds to ``held`` as :func:`_planned_points` does."""
    bits, points = _held_matrix(plan, records, table, columns, held)
    _add_substrings(plan, records, bits, points, norm)
    return points


def _held_matrix(plan: _QueryPlan, records: Sequence[RecallableRecord], table: TermColumns, columns: Sequence[int],
                 held: list[int]) -> tuple[Any, Any]:
    """``(bits, points)`` of :func:`_table_matrix` before the substring rule: ``bits[i, c]``, the columns of record
    ``c`` holding the plan's ``i``-th term (``uint8``), and ``points[i, c]`` the points they earn (``int64``), both
    of shape ``(plan.size, len(records))``. Adds to ``held`` as :func:`_planned_points` does."""
    import numpy as np
    n = len(records)
    bits = np.zeros((plan.size, n), dtype=np.uint8)  # per term of the plan, per record
    mine = [(i, t) for i, term in enumerate(_plan_terms(plan)) if (t := table.place(term)) is not None]
    if mine:
        rows = table.bits[[t for _, t in mine]]
        if n != rows.shape[1] or list(columns) != list(range(n)):
            rows = rows[:, np.asarray(columns, dtype=np.intp)]
        bits[[i for i, _ in mine]] = rows
    points = _points_of_bits()[bits]  # the held terms' points, per column bits
    for i, count in enumerate(np.count_nonzero(bits & _HELD_BITS, axis=1).tolist()):
        held[i] += count
    return bits, points


@lru_cache(maxsize=1)
def _substring_points_of_bits() -> Any:
    """The substring rule's points of a term in a record from the columns holding it inside a word and not as
    one (index: the columns' bits; the title and the body count, the tags do not)."""
    import numpy as np
    return np.array([(SUBSTRING_POINTS if b & _TITLE_BIT else 0) + (SUBSTRING_POINTS if b & _BODY_BIT else 0)
                     for b in range(256)], dtype=np.int64)


def _add_inside(plan: _QueryPlan, table: TermColumns, columns: Sequence[int], bits: Any, points: Any) -> bool:
    """Add the substring rule's points to ``points`` (:func:`_held_matrix`'s pair, in place) from the index's
    ``table.inside`` (which fields of each candidate hold each long term inside a word or as one:
    :mod:`meta_memory.recall.word_runs`), without reading the candidates' texts: a point for each field holding a
    long term but not as a word. ``False`` (``points`` unchanged) when the table does not say it for every long
    term of the plan; the caller applies the rule to the texts then (:func:`_add_substrings`). The same points."""
    if not plan.long:
        return True
    inside = table.inside
    if inside is None:
        return False
    known = {term: k for k, term in enumerate(table.inside_terms)}
    if not all(term in known for _, term in plan.long):
        return False
    import numpy as np
    n = bits.shape[1]
    held_inside = inside[[known[term] for _, term in plan.long]]
    if n != held_inside.shape[1] or list(columns) != list(range(n)):
        held_inside = held_inside[:, np.asarray(columns, dtype=np.intp)]
    long_rows = [i for i, _ in plan.long]
    points[long_rows] += _substring_points_of_bits()[held_inside & ~bits[long_rows]]
    return True


def _add_substrings(plan: _QueryPlan, records: Sequence[RecallableRecord], bits: Any, points: Any,
                    norm: Callable[[str], str] = normalize) -> None:
    """Add the substring rule's points to ``points`` (:func:`_held_matrix`'s pair, in place) for every record: one
    search per long term and field (:func:`_holding`) through the normalised texts of the records whose field does
    not hold the term as a word."""
    import numpy as np
    n = len(records)
    if plan.long and n:  # the substring rule, where a field does not hold a long term as a word
        rows_of_long = [i for i, _ in plan.long]
        long_bits = bits[rows_of_long]
        many = norm.many if isinstance(norm, _Normalized) else lambda texts: list(map(norm, texts))
        for field_bit in (_TITLE_BIT, _BODY_BIT):
            # per long term, the records whose field lacks it as a word: one run of ``lacking`` each
            long_of, lacking = ((long_bits & field_bit) == 0).nonzero()
            lacking = lacking.tolist()
            ends = np.cumsum(np.bincount(long_of, minlength=len(plan.long))).tolist()
            texts: list[str] | None = None
            joined: _Joined | None = None
            for k, (i, term) in enumerate(plan.long):
                where = lacking[ends[k - 1] if k else 0:ends[k]]
                if not where:
                    continue
                if texts is None:
                    texts = many([r.title for r in records] if field_bit == _TITLE_BIT else
                                 [r.description + "\n" + r.body if r.description else r.body for r in records])
                if len(where) * 4 < n:  # few lack it: their texts alone
                    for j in _holding(term, [texts[where[0]]] if len(where) == 1 else itemgetter(*where)(texts)):
                        points[i, where[j]] += SUBSTRING_POINTS
                    continue
                if joined is None:  # most lack it: every record's text, joined once for all the long terms
                    joined = _Joined(texts)
                hits = joined.holding(term)
                if hits and len(where) < n:
                    lack = set(where)
                    hits = [j for j in hits if j in lack]
                for j in hits:
                    points[i, j] += SUBSTRING_POINTS


def _holding(term: str, texts: Sequence[str]) -> list[int]:
    """The places in ``texts`` of the texts holding ``term`` as a substring (ascending): :class:`_Joined`'s
    search, for one term."""
    return _Joined(texts).holding(term)


class _Joined:
    """Texts joined by NUL once and cut into windows at a NUL, for the substring searches of several terms.

    When a term holds no NUL, a match lies inside one text, so one search per window of at most :data:`_WINDOW`
    characters finds the texts holding it, not one per text (CPython's ``str.find`` turns to a slower algorithm
    for a short needle in a haystack of 30,000 characters or more, hence the windows). Otherwise text by text,
    and text by text too once :data:`_DENSE` texts are found holding the term (a common substring)."""

    __slots__ = ("texts", "joined", "starts", "windows")

    def __init__(self, texts: Sequence[str]) -> None:
        self.texts = texts
        self.joined = joined = _SEPARATOR.join(texts)
        #: starts[j]: where text j begins in the joined text
        self.starts = [0, *itertools.accumulate(len(text) + 1 for text in texts)]
        windows: list[tuple[int, int]] = []
        size, lo = len(joined), 0
        while lo < size:
            hi = lo + _WINDOW
            if hi >= size:
                hi = size
            else:
                cut = joined.rfind(_SEPARATOR, lo, hi)
                if cut < 0:  # one text longer than a window: it is the window
                    cut = joined.find(_SEPARATOR, hi)
                hi = size if cut < 0 else cut
            windows.append((lo, hi))
            lo = hi + 1
        self.windows = windows

    def holding(self, term: str) -> list[int]:
        """The places of the texts holding ``term`` as a substring (ascending)."""
        if _SEPARATOR in term:
            return [j for j, text in enumerate(self.texts) if term in text]
        joined, starts = self.joined, self.starts
        out: list[int] = []
        past = 0  # where the text after the last one found begins (a text may hold NUL: windows cut inside it)
        for lo, hi in self.windows:
            lo = max(lo, past)
            while lo < hi:
                at = joined.find(term, lo, hi)
                if at < 0:
                    break
                j = bisect.bisect_right(starts, at) - 1
                out.append(j)
                if len(out) == _DENSE:  # a common substring: each text's own test is cheaper than a search per hit
                    texts = self.texts
                    out.extend(k for k in range(j + 1, len(texts)) if term in texts[k])
                    return out
                lo = past = starts[j + 1]  # on to the next text
        return out


#: the characters one search of :func:`_holding` covers at most (unless one text is longer)
_WINDOW = 24_000
#: the texts found holding a term after which :meth:`_Joined.holding` tests each remaining text on its own (a
#: search and a bisection per hit cost about fifteen times one text's ``in`` test of a short text)
_DENSE = 8
_SEPARATOR = "\x00"


def _plan_terms(plan: _QueryPlan) -> list[str]:
    """The plan's terms in their order (a repeated term at each of its places)."""
    terms = [""] * plan.size
    for term, where in plan.places.items():
        for i in where:
            terms[i] = term
    return terms


def _shared_table(fields: Sequence[Mapping[str, int]]) -> TermColumns | None:
    """The one index table every one of ``fields`` is a row of, else ``None``."""
    first = fields[0] if fields else None
    if not isinstance(first, TermRow):
        return None
    table = first.table
    if all(isinstance(f, TermRow) and f.table is table for f in fields):
        return table
    return None


def _indexed_points(terms: Sequence[str], bits_of: Mapping[str, int], record: RecallableRecord,
                    held: list[int], norm: Callable[[str], str] = normalize) -> list[int]:
    """:func:`term_points` of each term for a record whose ``term_fields`` the index gave (no per-term calls;
    the title and body are normalised by ``norm``), adding 1 to ``held[i]`` for each term the record holds.
    The same points as :class:`_Fields` and :func:`term_points` give (``tests/recall/test_lexical.py``
    compares them)."""
    return _planned_points(_QueryPlan(terms), [(record, bits_of)], held, norm)[0]


def term_points(term: str, in_tags: bool, in_title: bool, in_body: bool, title_norm: str, body_norm: str) -> int:
    """The reference's points of one normalised ``term`` (§3.3): +5 when a tag holds it, +4 when the
    title does (else +1 for a term of >= 5 characters found inside the normalised title), +2 when
    the description/body does (else the same +1 substring rule)."""
    points = 0
    if in_tags:
        points += TAG_POINTS
    if in_title:
        points += TITLE_POINTS
    elif len(term) >= SUBSTRING_MIN_CHARS and term in title_norm:
        points += SUBSTRING_POINTS
    if in_body:
        points += BODY_POINTS
    elif len(term) >= SUBSTRING_MIN_CHARS and term in body_norm:
        points += SUBSTRING_POINTS
    return points


def field_score(
    terms: Sequence[str],
    tag_tokens: frozenset[str],
    title_tokens: frozenset[str],
    body_tokens: frozenset[str],
    title_norm: str,
    body_norm: str,
    weights: Mapping[str, float] | None = None,
) -> float:
    """The reference's per-term field score (§3.3) over normalised tokens.

    Input: normalised query terms, the record's token sets and normalised
    title/body text; optional per-term ``weights`` (a missing term weighs 1).
    Output: the summed points (:func:`term_points`), each term's multiplied by its weight (>= 0;
    without weights, the reference's integer points).
    """
    score = 0.0
    for term in terms:
        points = term_points(term, term in tag_tokens, term in title_tokens, term in body_tokens, title_norm, body_norm)
        score += points * (weights.get(term, 1.0) if weights is not None else 1.0)
    return score


def _order_key(item: ScoredRecord[Any]) -> tuple[float, int, int, str]:
    rec = item.record
    rid = getattr(rec, "memory_id", None)  # record_id's first choice, without the call
    return (-item.score, -rec.updated_at_ms, -rec.created_at_ms, rid if isinstance(rid, str) else record_id(rec) or "")


class LexicalRecallProvider:
    """The default :class:`meta_memory.recall.provider.RecallProvider` (see module doc)."""

    #: its own work between reads is bounded (``candidate_limit`` candidates, ``context_anchors`` anchors),
    #: so over a store that stops its statements at the deadline a recall ends by itself when time is up
    stops_at_deadline = True

    def __init__(self, config: LexicalConfig | None = None) -> None:
        self.config = config or LexicalConfig()
        self._fields = _FieldCache()
        self._norm = _Normalized()

    def recall(self, request: RecallRequest, reader: RecallReader[Any]) -> RecallOutcome[Any]:
        """Rank ``reader``'s records for ``request``; see the module doc for the rules."""
        if request.selection == "always":
            return RecallOutcome([ScoredRecord(r, 0.0) for r in reader.recent(request.max_entries)])
        terms = request.terms()
        if not terms:
            return RecallOutcome([], SKIP_NO_QUERY_TERMS)
        match = " OR ".join(fts.quote(t) for t in terms)
        asked = query_dates(request.query_text) if self.config.date_weight > 0 else []
        return RecallOutcome(self._rank(terms, match, reader, request.max_entries, asked))

    def _rank(
        self, terms: list[str], match: str, reader: RecallReader[Any], max_entries: int, asked: Sequence[DateQuery] = ()
    ) -> list[ScoredRecord[Any]]:
        cfg = self.config
        held = [0] * len(terms)  # per term, how many candidates hold it
        given = reader.search(match, cfg.candidate_limit)
        found = list(given)
        records: Sequence[Any] = ()
        bm25s: Sequence[Any] = ()
        if found:
            records, bm25s = zip(*found)
        table, columns = getattr(given, "table", None), getattr(given, "columns", None)
        matrix: Any = None  # the points as one array, (terms, candidates)
        rows: list[list[int]] | None = None  # else per candidate, per term
        if isinstance(table, TermColumns) and columns is not None and len(columns) == len(found):
            # the store gave the index's term table for all of them: read it whole
            plan = _QueryPlan(terms)
            bits, matrix = _held_matrix(plan, records, table, columns, held)
            if _add_inside(plan, table, columns, bits, matrix):
                pass  # every candidate's substring points from the index: every score is exact below
            elif not cfg.rarity_weight and set(map(type, bm25s)) <= {float}:
                bounded = self._bounded(plan, records, bm25s, bits, matrix, max_entries, asked)
                if bounded is not None:
                    pool, pending = bounded
                    if cfg.context_window_ms > 0 and pool.ids:
                        self._with_context(pool, reader, pending)
                    return [ScoredRecord(pool.records[i], pool.scores[i]) for i in pool.best(max_entries)]
                _add_substrings(plan, records, bits, matrix, self._norm)
            else:
                _add_substrings(plan, records, bits, matrix, self._norm)
        else:
            rows = self._points(terms, given, found, held)
        weights = idf_weights(terms, held, len(found), cfg.rarity_weight) if cfg.rarity_weight else None
        floor, field_weight, bm25_weight = cfg.min_relevance, cfg.field_weight, cfg.bm25_weight
        if matrix is not None and weights is None and set(map(type, bm25s)) <= {float}:
            # every candidate's score at once: the same float operations, in the same order, as below (numpy is
            # there: the index that gave the table needs it; the base install ranks FTS5's candidates below)
            import numpy as np
            totals = matrix.sum(axis=0)
            all_scores = (field_weight * totals.astype(np.float64)
                          + bm25_weight * -np.array(bm25s, dtype=np.float64)).tolist()
            kept = np.flatnonzero(~(totals < floor)).tolist()  # as ``total < floor`` drops one below
            scores = [all_scores[c] for c in kept]
        else:
            if rows is None:
                rows = matrix.T.tolist()
            kept, scores = [], []
            for c, (points, bm25) in enumerate(zip(rows or (), bm25s)):
                total = sum(points)
                if total < floor:
                    continue
                field_points = (sum(n * weights.get(t, 1.0) for t, n in zip(terms, points)) if weights is not None
                                else float(total))
                kept.append(c)
                scores.append(field_weight * field_points + bm25_weight * -bm25)
        if asked:
            for j, c in enumerate(kept):
                if any(q.matches(self._fields.dates(records[c])) for q in asked):
                    scores[j] *= 1.0 + cfg.date_weight
        pool = _Pool([records[c] for c in kept], scores)
        if cfg.context_window_ms > 0 and pool.ids:
            self._with_context(pool, reader)
        return [ScoredRecord(pool.records[i], pool.scores[i]) for i in pool.best(max_entries)]

    def _bounded(self, plan: _QueryPlan, records: Sequence[Any], bm25s: Sequence[float], bits: Any, points: Any,
                 max_entries: int, asked: Sequence[DateQuery]) -> tuple[_Pool, _Pending] | None:
        """The matches of :meth:`_rank` (scores, floor, dates: the same rules, the same float operations) without
        applying the substring rule to the candidates that cannot be among the best: ``(pool, pending)``, or
        ``None`` when nothing can be skipped (the caller applies the rule to every candidate).

        ``points``/``bits``: :func:`_held_matrix`'s pair. Each candidate's score lies between the score of its
        held terms' points alone (the rule only adds) and that score with one more point for each long term a field
        lacks as a word (times ``1 + date_weight`` when the query names a date). Let ``theta`` be the ``m``-th
        largest lower bound among the candidates whose held points alone reach ``min_relevance`` (``m`` the larger
        of ``max_entries`` and the context anchors): ``m`` matches score at least ``theta``. A candidate's
        substrings are tested one (term, field) at a time, its upper bound falling by a point with each one it does
        not contain, and it is left *pending* as soon as the bound is below ``theta``: it scores below ``m``
        matches, so it is neither an anchor nor among the best ``max_entries`` unless a context anchor lends it a
        score. Pending candidates are kept aside (``pending``: :class:`_Pending`); :meth:`_with_context` completes
        those it meets as neighbours before lending, so every record whose score can matter has its
        exact score. The answer is the one applying the rule to every candidate gives, ties included."""
        import numpy as np
        cfg = self.config
        floor, field_weight, bm25_weight = cfg.min_relevance, cfg.field_weight, cfg.bm25_weight
        n = len(records)
        m = max(max_entries, cfg.context_anchors if cfg.context_window_ms > 0 else 0)
        factor = 1.0 + cfg.date_weight
        if not plan.long or not n or not field_weight >= 0.0 or (asked and not factor >= 1.0):
            return None
        word = points.sum(axis=0)
        sure = np.flatnonzero(~(word < floor))  # in the pool whatever the rule adds
        if len(sure) < m or m <= 0:
            return None
        ids = _ids(records)
        if len(set(ids)) < n:
            return None  # an id twice: the pool keeps the last one, the bounds do not follow that
        bm25_part = bm25_weight * -np.array(bm25s, dtype=np.float64)
        low = field_weight * word.astype(np.float64) + bm25_part  # the exact score of a candidate gaining no point
        long_rows = [i for i, _ in plan.long]
        long_bits = bits[long_rows]
        lacking = (np.count_nonzero((long_bits & _TITLE_BIT) == 0, axis=0)
                   + np.count_nonzero((long_bits & _BODY_BIT) == 0, axis=0))
        if asked:  # a date the record speaks of multiplies its score by ``factor``
            low = np.minimum(low, low * factor)
        theta = float(np.partition(low[sure], len(sure) - m)[len(sure) - m])
        # per candidate, the score bound of each total its substrings may still give (held points plus 0, 1, ...
        # of its lacking (term, field) pairs): ``need``, the least total whose bound reaches theta
        steps = np.arange(int(lacking.max()) + 1)
        grid = word[:, None] + steps[None, :] * SUBSTRING_POINTS
        bound = field_weight * grid.astype(np.float64) + bm25_part[:, None]
        if asked:
            bound = np.maximum(bound, bound * factor)
        if not (np.isfinite(low).all() and np.isfinite(bound).all()):
            return None
        need = (word + np.count_nonzero(bound < theta, axis=1) * SUBSTRING_POINTS).tolist()  # the bound only grows
        totals = word.tolist()
        lacks = long_bits.T.tolist()  # per candidate, per long term: the columns holding it as a word
        titles = self._norm.many([r.title for r in records])
        bodies = self._norm.many([r.description + "\n" + r.body if r.description else r.body for r in records])
        pending = _Pending(self, plan, records, bm25s, lacks, totals, titles, bodies, asked)
        long_terms = [term for _, term in plan.long]
        done: list[int] = []
        for c, (w, lack, least) in enumerate(zip(totals, lacking.tolist(), need)):
            most = w + lack * SUBSTRING_POINTS
            if most < least:
                pending.ids[ids[c]] = c
                continue
            if lack:  # the titles first: they are short, and a candidate may drop before its body is read
                for field_bit, text in ((_TITLE_BIT, titles[c]), (_BODY_BIT, bodies[c])):
                    for term, held_in in zip(long_terms, lacks[c]):
                        if not held_in & field_bit and term not in text:
                            most -= SUBSTRING_POINTS
                            if most < least:
                                break
                    if most < least:
                        break
                if most < least:
                    pending.ids[ids[c]] = c
                    continue
                totals[c] = most
            done.append(c)
        kept = [c for c in done if not totals[c] < floor]
        scores = (field_weight * np.array([totals[c] for c in kept], dtype=np.float64)
                  + bm25_part[kept]).tolist() if kept else []
        if asked:
            for j, c in enumerate(kept):
                if any(q.matches(self._fields.dates(records[c])) for q in asked):
                    scores[j] *= factor
        return _Pool([records[c] for c in kept], scores), pending

    def _points(self, terms: list[str], given: Any, found: Sequence[tuple[Any, float]],
                held: list[int]) -> list[list[int]]:
        """Each candidate's :func:`term_points` per term, from the term columns the store (or the record) gave
        where it gave them, else from the record tokenised; adds to ``held`` per term the candidates holding it."""
        points_of: list[list[int] | None] = [None] * len(found)
        known = getattr(given, "fields", None)
        if not isinstance(known, list) or len(known) != len(found):
            known = [getattr(record, "term_fields", None) for record, _ in found]
        indexed = [(k, record, bits) for k, ((record, _), bits) in enumerate(zip(found, known)) if bits is not None]
        if indexed:
            plan = _QueryPlan(terms)
            shared = _shared_table([bits for _, _, bits in indexed])
            if shared is not None:  # rows of one index table: read it whole
                rows = _table_points(plan, [record for _, record, _ in indexed], shared,
                                     [bits.candidate for _, _, bits in indexed], held, self._norm)
            else:
                rows = _planned_points(plan, [(record, bits) for _, record, bits in indexed], held, self._norm)
            for (k, _, _), row in zip(indexed, rows):
                points_of[k] = row
        out: list[list[int]] = []
        padded = [f" {t} " for t in terms]
        for (record, _), points in zip(found, points_of):
            if points is None:
                fields = self._fields.get(record)
                points = []
                for i, (term, pad) in enumerate(zip(terms, padded)):
                    in_tags, in_title, in_body = fields.held(term, pad)
                    held[i] += in_tags or in_title or in_body
                    points.append(term_points(term, in_tags, in_title, in_body, fields.title_norm, fields.body_norm))
            out.append(points)
        return out

    def _with_context(self, pool: _Pool, reader: RecallReader[Any], pending: _Pending | None = None) -> None:
        """Lend each top match's score to the records written just before/after it.

        Neighbours are by write order (at most ``context_span`` per side, within
        ``context_window_ms``), so the signal is the same whether a host wrote
        the turns as they happened or replayed them in a burst. Only matched
        candidates gain, unless ``context_admits_unmatched``. ``pool`` (the matches) is updated in place:
        a record that gains has its score raised, one that gains without having matched is added. A neighbour among
        the ``pending`` candidates (:meth:`_bounded`) gets its exact score first, and joins the matches if it is one.
        """
        cfg = self.config
        records, ids, scores, place = pool.records, pool.ids, pool.scores, pool.place
        anchors = pool.best(cfg.context_anchors)  # the best matches, best first
        adjacency = reader.neighbours([records[a] for a in anchors], cfg.context_span, cfg.context_window_ms)
        near_ids = {anchor_id: _ids(found) for anchor_id, found in adjacency.items()}  # each list's ids, once
        if pending is not None and pending.ids:
            waiting = pending.ids
            for rid in itertools.chain.from_iterable(near_ids.values()):
                if rid in waiting:
                    c = waiting.pop(rid)
                    if rid not in place and (score := pending.settle(c)) is not None:
                        pool.add(pending.records[c], rid, score)
        unmatched: dict[str, Any] = {}  # records that gain without having matched (replies, or when admitted)
        bonus: dict[str, float] = {}
        for a in anchors:
            anchor_id, anchor_score, anchor = ids[a], scores[a], records[a]
            found = adjacency.get(anchor_id, [])
            found_ids = near_ids.get(anchor_id, [])
            reply_id = None
            if cfg.reply_weight > 0 and is_question(anchor.body):
                full = len(found) == 2 * cfg.context_span
                reply_id = next((record_id(r) for i, r in enumerate(found) if written_after(anchor, r, i, full)), None)
            for step, (rec, rid) in enumerate(zip(found, found_ids)):
                if rid == anchor_id:
                    continue
                reply = rid == reply_id
                if rid not in place and rid not in unmatched:
                    if not (cfg.context_admits_unmatched or reply):
                        continue
                    unmatched[rid] = rec
                distance = step // 2 + 1  # neighbours come before/after alternately, nearest first
                lent = cfg.context_weight * anchor_score / (2 ** (distance - 1))
                if reply:
                    lent = max(lent, cfg.reply_weight * anchor_score)
                if lent > bonus.get(rid, 0.0):
                    bonus[rid] = lent
        for rid, extra in bonus.items():
            i = place.get(rid)
            if i is None:
                pool.add(unmatched[rid], rid, 0.0 + extra)
            else:
                scores[i] = scores[i] + extra


class _Pending:
    """The candidates :meth:`LexicalRecallProvider._bounded` left without their substring points: ``ids`` (id ->
    candidate place), and the means to complete one (:meth:`settle`)."""

    __slots__ = ("provider", "plan", "records", "bm25s", "lacks", "word", "titles", "bodies", "asked", "ids")

    def __init__(self, provider: LexicalRecallProvider, plan: _QueryPlan, records: Sequence[Any],
                 bm25s: Sequence[float], lacks: list[list[int]], word: list[int], titles: list[str],
                 bodies: list[str], asked: Sequence[DateQuery]) -> None:
        self.provider, self.plan, self.records, self.bm25s = provider, plan, records, bm25s
        self.lacks = lacks  # per candidate, per long term of the plan: the columns holding it as a word
        self.word = list(word)  # per candidate: its held terms' points
        self.titles, self.bodies = titles, bodies  # per candidate: its normalised title and body text
        self.asked = asked
        self.ids: dict[str, int] = {}

    def settle(self, c: int) -> float | None:
        """Candidate ``c``'s exact score, as :meth:`LexicalRecallProvider._rank` computes it (``None``: its
        points are under ``min_relevance``)."""
        title, body = self.titles[c], self.bodies[c]
        total = self.word[c]
        for (_, term), bits in zip(self.plan.long, self.lacks[c]):
            if not bits & _TITLE_BIT and term in title:
                total += SUBSTRING_POINTS
            if not bits & _BODY_BIT and term in body:
                total += SUBSTRING_POINTS
        cfg = self.provider.config
        if total < cfg.min_relevance:
            return None
        score = cfg.field_weight * float(total) + cfg.bm25_weight * -self.bm25s[c]
        if self.asked and any(q.matches(self.provider._fields.dates(self.records[c])) for q in self.asked):
            score *= 1.0 + cfg.date_weight
        return score


class _Pool:
    """The matches of one recall: ``records``, their ``ids`` (:func:`record_id`, ``""`` for none) and
    ``scores``, ``place`` the index of each id. One entry per id: when two records share an id,
    the later one stands. Ordered by :func:`_best`: score desc, then ``updated_at_ms`` desc,
    ``created_at_ms`` desc, id asc."""

    __slots__ = ("records", "ids", "scores", "place")

    def __init__(self, records: list[Any], scores: list[float]) -> None:
        ids = _ids(records)
        place = dict(zip(ids, range(len(ids))))
        if len(place) < len(ids):  # an id twice: the last one stands
            last = sorted(place.values())
            records, scores, ids = [records[i] for i in last], [scores[i] for i in last], [ids[i] for i in last]
            place = dict(zip(ids, range(len(ids))))
        self.records, self.ids, self.scores, self.place = records, ids, scores, place

    def add(self, record: Any, rid: str, score: float) -> None:
        """One more entry (``rid`` not yet in the pool)."""
        self.place[rid] = len(self.ids)
        self.records.append(record)
        self.ids.append(rid)
        self.scores.append(score)

    def best(self, k: int) -> list[int]:
        """The places of the best ``k`` entries, best first (:func:`_best`)."""
        return _best(self.scores, self.records, self.ids, k)


def _best(scores: Sequence[float], records: Sequence[Any], ids: Sequence[str], k: int) -> list[int]:
    """The places of the ``k`` best of the entries ``(scores[i], records[i], ids[i])``, best first: score desc,
    then the record's ``updated_at_ms`` desc, ``created_at_ms`` desc, id asc (``ids`` distinct).

    The order keys are built only for the entries scoring at least the ``k``-th best score (the ties at the
    boundary among them), since no entry scoring less can be among the best ``k``: the answer is that of
    ``heapq.nsmallest`` of every entry's key, ties included. Scores holding a NaN have no such cut: every
    key is compared then, in the entries' order (what ``heapq.nsmallest`` of the keys in that order gives)."""
    n = len(scores)
    if k <= 0 or not n:
        return []

    def key(i: int) -> tuple[float, int, int, str]:
        return -scores[i], -records[i].updated_at_ms, -records[i].created_at_ms, ids[i]

    total = sum(scores)
    if total != total:  # a NaN among them (or infinities of both signs): no k-th score to cut at
        return heapq.nsmallest(k, range(n), key=key)
    if n > k:
        kth = sorted(scores, reverse=True)[k - 1]
        pool = [i for i, score in enumerate(scores) if score >= kth]
    else:
        pool = list(range(n))
    pool.sort(key=key)
    return pool[:k]


def _ids(records: Sequence[Any]) -> list[str]:
    """:func:`record_id` of each record, ``""`` for none (each record's ``memory_id`` read at once when every
    one of them has a ``str`` one)."""
    try:
        ids: list[Any] = list(map(_MEMORY_ID, records))
    except AttributeError:
        ids = []
    if len(ids) == len(records) and set(map(type, ids)) <= {str}:
        return ids
    return [record_id(r) or "" for r in records]


_MEMORY_ID = attrgetter("memory_id")


def written_after(anchor: RecallableRecord, neighbour: RecallableRecord, position: int, both_sides_full: bool) -> bool:
    """Whether ``neighbour`` (at ``position`` in the reader's neighbour list of ``anchor``) was written after it.

    Distinct ``created_at_ms`` decide. Records written in one batch share a timestamp; then the
    list's order decides when both sides are full (before and after alternate, so odd positions are
    after); otherwise the side is unknown and the answer is ``False``.
    """
    if neighbour.created_at_ms != anchor.created_at_ms:
        return neighbour.created_at_ms > anchor.created_at_ms
    return both_sides_full and position % 2 == 1


def is_question(text: str) -> bool:
    """True when ``text`` (a record's body) ends with a question mark (``?``, ``？``), trailing spaces ignored."""
    return text.rstrip().endswith(("?", "\uff1f"))


def rarity_weights(terms: Sequence[str], candidate_tokens: Sequence[frozenset[str]], strength: float) -> dict[str, float]:
    """Per-term weights from how many of the candidates hold the term (an in-scope inverse document frequency).

    Input: the query terms; each candidate's tokens (all fields); ``strength`` in [0, 1].
    Output: :func:`idf_weights` of the terms' counts among the candidates.
    """
    held = [sum(1 for tokens in candidate_tokens if term in tokens) for term in terms]
    return idf_weights(terms, held, len(candidate_tokens), strength)


def idf_weights(terms: Sequence[str], held: Sequence[int], n: int, strength: float) -> dict[str, float]:
    """Per-term weights from ``held[i]``, how many of ``n`` candidates hold ``terms[i]``.

    A term held by ``df`` of ``n`` candidates weighs ``1 - strength + strength * idf / idf_max`` with
    ``idf = ln((n + 1) / (df + 0.5))`` and ``idf_max`` the idf of a term held by one candidate: a term
    found in one candidate keeps its full points, a term every candidate holds (a speaker's name, the
    current year) keeps ``1 - strength`` of them. Output: term -> weight in [1 - strength, 1]
    (empty when ``n`` is 0 or ``strength`` is not positive).
    """
    if n == 0 or strength <= 0:
        return {}
    idf_max = math.log((n + 1) / 1.5)
    out: dict[str, float] = {}
    for term, df in zip(terms, held):
        idf = math.log((n + 1) / (df + 0.5)) if df else idf_max
        out[term] = 1.0 - strength + strength * min(1.0, max(0.0, idf / idf_max)) if idf_max > 0 else 1.0
    return out
