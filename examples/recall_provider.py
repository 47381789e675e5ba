"""A custom recall provider: recall that knows the host's synonyms.

Run: ``python examples/recall_provider.py`` (no network). It remembers "I parked the automobile on
level 3" for one agent and asks "where is my car?" twice: with the bundled lexical provider (no
word in common: nothing comes back) and with :class:`SynonymRecallProvider` (``car`` also searches
``automobile``: the record comes back).

A provider receives the raw ``request.query_text`` and the normalised ``request.terms()``, and reads
only the caller's own scope through ``reader``; the runtime re-checks every record it returns
(active, in the caller's identity and realm) and runs it under ``recall_timeout_ms``.

Plug it in:

* embedded: ``Meta.builder().persistent_state(dir).recall_provider(SynonymRecallProvider()).build()``
* a gateway: put this directory on ``PYTHONPATH`` and configure
  ``[agent_memory] recall_provider = "recall_provider:SynonymRecallProvider"``.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

from meta_memory import Meta
from meta_memory.recall.custom import (
    RecallOutcome,
    RecallReader,
    RecallRequest,
    ScoredRecord,
    normalise_terms,
    record_terms,
    search_expression,
)

#: Words the host treats as the same thing (each group is searched as one).
SYNONYMS: tuple[tuple[str, ...], ...] = (
    ("car", "automobile", "vehicle"),
    ("doctor", "physician", "gp"),
    ("flat", "apartment"),
    ("holiday", "vacation"),
)


class SynonymRecallProvider:
    """Lexical recall over the reader's full-text search, with each query term widened to its
    synonyms. A record scores one point per query term it holds (directly or by a synonym), plus
    a tie-break by the search's own rank; the newest records answer an ``always`` selection."""

    def __init__(self, synonyms: Sequence[Sequence[str]] = SYNONYMS, candidates: int = 64) -> None:
        groups = [frozenset(normalise_terms(" ".join(group))) for group in synonyms]
        self.expansions: Mapping[str, frozenset[str]] = {
            term: frozenset().union(*(g for g in groups if term in g)) for g in groups for term in g}
        self.candidates = candidates

    def widen(self, term: str) -> frozenset[str]:
        """``term`` and its synonyms (normalised)."""
        return self.expansions.get(term, frozenset({term}))

    def recall(self, request: RecallRequest, reader: RecallReader[Any]) -> RecallOutcome[Any]:
        if request.selection == "always":
            return RecallOutcome([ScoredRecord(r, 0.0) for r in reader.recent(request.max_entries)])
        terms = request.terms()
        if not terms:
            return RecallOutcome([], "no_query_terms")
        widened = {term: self.widen(term) for term in terms}
        expression = search_expression(sorted(set().union(*widened.values())))
        if expression is None:
            return RecallOutcome([], "no_query_terms")
        hits = reader.search(expression, self.candidates)
        scored: list[ScoredRecord[Any]] = []
        for rank, (record, _bm25) in enumerate(hits):
            held = record_terms(record)
            points = sum(1 for words in widened.values() if words & held)
            scored.append(ScoredRecord(record, points + 1.0 / (rank + 2)))
        scored.sort(key=lambda s: -s.score)
        return RecallOutcome(scored[: request.max_entries])


def recall_both_ways(state_dir: str, question: str = "where is my car?") -> dict[str, list[str]]:
    """Remember one record, then recall ``question`` with the lexical and the synonym provider;
    returns the titles each gave, by provider name."""
    out: dict[str, list[str]] = {}
    with Meta.builder().persistent_state(state_dir).build() as meta:
        meta.agent("agent:valet").remember("Parking", "I parked the automobile on level 3, bay 12.")
        out["lexical"] = [r.title for r in meta.agent("agent:valet").recall(question)]
    with Meta.builder().persistent_state(state_dir).recall_provider(SynonymRecallProvider()).build() as meta:
        out["synonyms"] = [r.title for r in meta.agent("agent:valet").recall(question)]
    return out


def main() -> None:
    with tempfile.TemporaryDirectory() as state_dir:
        for provider, titles in recall_both_ways(state_dir).items():
            print(f"{provider:>8}: {titles}")


if __name__ == "__main__":
    main()
