"""The predecessor's recall, kept as a provider: a full scan with ASCII tokens.

This is the reference's algorithm as documented (reference notes §3.1-§3.4):
tokens are runs of ASCII letters, digits, ``_`` and ``-`` (every other
character, including non-ASCII letters, separates), lower-cased, at least 3
bytes, stopwords dropped; every active record is scored with the field
weights (tags +5, title +4, body +2, +1 substring for terms of >= 5 chars),
records under 2 points are dropped, and the rest are ordered by score,
``updated_at_ms`` desc, ``created_at_ms`` desc.

It reads every active record of the scope on every call, so it is meant as a
compatibility option and as the baseline the benchmarks compare against, not
as the default.
"""

from __future__ import annotations

import re
from typing import Any

from meta_memory.recall.provider import (
    SKIP_NO_QUERY_TERMS,
    RecallOutcome,
    RecallReader,
    RecallRequest,
    ScoredRecord,
    record_id,
)
from meta_memory.recall.text import STOPWORDS

__all__ = ["ascii_terms", "reference_score", "FullScanRecallProvider"]

_SEPARATORS = re.compile(r"[^A-Za-z0-9_\-]+")


def ascii_terms(text: str) -> set[str]:
    """The reference tokeniser: distinct lower-cased ASCII tokens (>= 3 bytes, no stopwords)."""
    out: set[str] = set()
    for piece in _SEPARATORS.split(text):
        piece = piece.strip()
        if len(piece) >= 3:
            low = piece.lower()
            if low not in STOPWORDS:
                out.add(low)
    return out


def reference_score(terms: set[str], title: str, body: str, tags: tuple[str, ...] | list[str]) -> int:
    """The reference field score of one record for a set of ASCII terms (§3.3)."""
    tag_terms: set[str] = set()
    for tag in tags:
        tag_terms |= ascii_terms(tag)
    title_terms, body_terms = ascii_terms(title), ascii_terms(body)
    title_low, body_low = title.lower(), body.lower()
    score = 0
    for term in terms:
        if term in tag_terms:
            score += 5
        if term in title_terms:
            score += 4
        elif len(term) >= 5 and term in title_low:
            score += 1
        if term in body_terms:
            score += 2
        elif len(term) >= 5 and term in body_low:
            score += 1
    return score


class FullScanRecallProvider:
    """Recall exactly as the predecessor did (see module doc)."""

    def recall(self, request: RecallRequest, reader: RecallReader[Any]) -> RecallOutcome[Any]:
        """Score every active record; contextual with no term => ``no_query_terms``."""
        if request.selection == "always":
            return RecallOutcome([ScoredRecord(r, 0.0) for r in reader.recent(request.max_entries)])
        terms = ascii_terms(request.query_text or "")
        for extra in request.query_terms:
            terms |= ascii_terms(extra)
        if not terms:
            return RecallOutcome([], SKIP_NO_QUERY_TERMS)
        scored = []
        for rec in reader.active_records():
            points = reference_score(terms, rec.title, rec.body, tuple(rec.tags))
            if points >= 2:
                scored.append(ScoredRecord(rec, float(points)))
        scored.sort(key=lambda s: (-s.score, -s.record.updated_at_ms, -s.record.created_at_ms, record_id(s.record) or ""))
        return RecallOutcome(scored[: request.max_entries])
