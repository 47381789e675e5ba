"""The default recall provider: full-text candidates re-ranked lexically.

Contextual selection (reference notes §3.3-§3.4, made Unicode-aware):

1. terms = :meth:`RecallRequest.terms` (query text + extra terms through
   :mod:`meta_memory.recall.text`). No term => empty outcome with
   ``skip_reason="no_query_terms"``.
2. candidates = the scope's best ``candidate_limit`` records by FTS5 bm25
   (:data:`meta_memory.recall.fts.BM25_EXPR`) for the quoted ``OR`` of the terms.
3. each candidate gets the reference's field score: per term +5 when a tag
   has it, +4 when the title has it (else +1 for a term of >= 5 characters
   found inside the title), +2 when description/body has it (else the same
   +1 substring rule). Candidates under ``min_relevance`` (2) are dropped.
4. score = ``field_weight`` x field score + ``bm25_weight`` x (-bm25) — the
   field score keeps the reference's preferences (tags and titles first), bm25
   adds term rarity and frequency.
5. context (``context_window_ms`` > 0, default 2 minutes): the records the
   same identity wrote just before and after one of the ``context_anchors``
   best matches (``context_span`` per side in write order, within the window)
   receive ``context_weight`` (0.3) x that match's score, halved per further
   step; only records that matched themselves gain, unless
   ``context_admits_unmatched`` (a question often names the turn *before* its
   answer).
6. order: score desc, then ``updated_at_ms`` desc, ``created_at_ms`` desc,
   ``memory_id`` asc; truncate to ``max_entries``.

Always selection: the newest records (``updated_at_ms`` desc, ``created_at_ms``
desc), score 0.

LoCoMo figures for each knob are in the module's benchmark
(``benchmarks/locomo_recall.py``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from meta_memory.recall import fts
from meta_memory.recall.provider import (
    SKIP_NO_QUERY_TERMS,
    RecallableRecord,
    RecallOutcome,
    RecallReader,
    RecallRequest,
    ScoredRecord,
    record_id,
)
from meta_memory.recall.text import normalize, token_set

__all__ = ["LexicalConfig", "LexicalRecallProvider", "field_score", "MIN_CONTEXTUAL_RELEVANCE_SCORE"]

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

    ``candidate_limit``: bm25 candidates re-ranked per recall (1..10000).
    ``min_relevance``: floor on the field score of a direct match.
    ``field_weight`` / ``bm25_weight``: mix of field score and -bm25.
    ``context_window_ms``: neighbour window (0 disables context).
    ``context_anchors``: how many top matches lend score to their neighbours.
    ``context_weight``: share of an anchor's score its nearest neighbour receives (halved per
    further step in write order).
    ``context_span``: neighbours per side of an anchor, in write order.
    ``context_admits_unmatched``: let a neighbour that matched no term in
    (off by default: the reference's "only matching records" rule holds).
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


class _TokenCache:
    """A small LRU of per-record token sets, keyed by id and content."""

    def __init__(self, capacity: int = 4096) -> None:
        self.capacity = capacity
        self._items: OrderedDict[tuple[Any, ...], tuple[frozenset[str], frozenset[str], frozenset[str], str, str]] = (
            OrderedDict()
        )

    def get(self, record: RecallableRecord) -> tuple[frozenset[str], frozenset[str], frozenset[str], str, str]:
        body_text = record.description + "\n" + record.body if record.description else record.body
        key = (record_id(record), record.title, body_text, tuple(record.tags))
        hit = self._items.get(key)
        if hit is not None:
            self._items.move_to_end(key)
            return hit
        title_norm = normalize(record.title)
        body_norm = normalize(body_text)
        value = (  # token sets from the text as written, exactly as the full-text index sees it
            token_set(" ".join(record.tags)),
            token_set(record.title),
            token_set(body_text),
            title_norm,
            body_norm,
        )
        self._items[key] = value
        if len(self._items) > self.capacity:
            self._items.popitem(last=False)
        return value


def field_score(
    terms: Sequence[str],
    tag_tokens: frozenset[str],
    title_tokens: frozenset[str],
    body_tokens: frozenset[str],
    title_norm: str,
    body_norm: str,
) -> int:
    """The reference's per-term field score (§3.3) over normalised tokens.

    Input: normalised query terms, the record's token sets and normalised
    title/body text. Output: the summed points (int >= 0).
    """
    score = 0
    for term in terms:
        if term in tag_tokens:
            score += TAG_POINTS
        if term in title_tokens:
            score += TITLE_POINTS
        elif len(term) >= SUBSTRING_MIN_CHARS and term in title_norm:
            score += SUBSTRING_POINTS
        if term in body_tokens:
            score += BODY_POINTS
        elif len(term) >= SUBSTRING_MIN_CHARS and term in body_norm:
            score += SUBSTRING_POINTS
    return score


def _order_key(item: ScoredRecord[Any]) -> tuple[float, int, int, str]:
    rec = item.record
    return (-item.score, -rec.updated_at_ms, -rec.created_at_ms, record_id(rec) or "")


class LexicalRecallProvider:
    """The default :class:`meta_memory.recall.provider.RecallProvider` (see module doc)."""

    def __init__(self, config: LexicalConfig | None = None) -> None:
        self.config = config or LexicalConfig()
        self._tokens = _TokenCache()

    def recall(self, request: RecallRequest, reader: RecallReader[Any]) -> RecallOutcome[Any]:
        """Rank ``reader``'s records for ``request``; see the module doc for the rules."""
        if request.selection == "always":
            return RecallOutcome([ScoredRecord(r, 0.0) for r in reader.recent(request.max_entries)])
        terms = request.terms()
        if not terms:
            return RecallOutcome([], SKIP_NO_QUERY_TERMS)
        match = " OR ".join(fts.quote(t) for t in terms)
        return RecallOutcome(self._rank(terms, match, reader, request.max_entries))

    def _rank(self, terms: list[str], match: str, reader: RecallReader[Any], max_entries: int) -> list[ScoredRecord[Any]]:
        cfg = self.config
        scored: dict[str, ScoredRecord[Any]] = {}
        for record, bm25 in reader.search(match, cfg.candidate_limit):
            points = field_score(terms, *self._tokens.get(record))
            if points < cfg.min_relevance:
                continue
            scored[record_id(record) or ""] = ScoredRecord(record, cfg.field_weight * points + cfg.bm25_weight * -bm25)
        if cfg.context_window_ms > 0 and scored:
            scored = self._with_context(scored, reader)
        ranked = sorted(scored.values(), key=_order_key)
        return ranked[:max_entries]

    def _with_context(self, scored: dict[str, ScoredRecord[Any]], reader: RecallReader[Any]) -> dict[str, ScoredRecord[Any]]:
        """Lend each top match's score to the records written just before/after it.

        Neighbours are by write order (at most ``context_span`` per side, within
        ``context_window_ms``), so the signal is the same whether a host wrote
        the turns as they happened or replayed them in a burst. Only matched
        candidates gain, unless ``context_admits_unmatched``.
        """
        cfg = self.config
        anchors = sorted(scored.values(), key=_order_key)[: cfg.context_anchors]
        adjacency = reader.neighbours([a.record for a in anchors], cfg.context_span, cfg.context_window_ms)
        records: dict[str, Any] = {rid: item.record for rid, item in scored.items()}
        bonus: dict[str, float] = {}
        for anchor in anchors:
            anchor_id = record_id(anchor.record) or ""
            for step, rec in enumerate(adjacency.get(anchor_id, ())):
                rid = record_id(rec) or ""
                if rid == anchor_id or (rid not in records and not cfg.context_admits_unmatched):
                    continue
                records.setdefault(rid, rec)
                distance = step // 2 + 1  # neighbours come before/after alternately, nearest first
                lent = cfg.context_weight * anchor.score / (2 ** (distance - 1))
                if lent > bonus.get(rid, 0.0):
                    bonus[rid] = lent
        out = dict(scored)
        for rid, extra in bonus.items():
            base = out.get(rid)
            out[rid] = ScoredRecord(records[rid], (base.score if base else 0.0) + extra)
        return out
