"""Which full-text columns of each candidate row hold each query term, as one table for all candidates.

The in-process recall index (:mod:`meta_memory.recall.lexical_index`) answers a candidate query with, per
candidate, the columns of its row holding each query term (bit ``i`` = :data:`meta_memory.recall.fts.COLUMNS`
``[i]``). It gives them as one :class:`TermColumns` table (a byte per term and candidate) and each candidate
a :class:`TermRow`: the read-only ``term -> bits`` mapping of its column of the table (terms it does not hold
are absent), which is what a record's ``term_fields`` promises. Re-ranking (:mod:`meta_memory.recall.lexical`)
reads the table itself when all its candidates share one, instead of one mapping per candidate.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported by the index that builds a table
    import numpy as np

__all__ = ["TermColumns", "TermRow"]


class TermColumns:
    """``bits[t, c]``: the columns of candidate ``c``'s row holding ``terms[t]`` (0: it does not hold it).

    ``terms``: distinct terms; ``bits``: a ``uint8`` array of shape ``(len(terms), candidates)``.

    ``inside`` (or ``None``: not known): ``inside[k, c]``, whether candidate ``c``'s normalised title (bit of
    ``"title"``) and normalised title/description and body (bit of ``"body"``) hold ``inside_terms[k]`` as a
    substring, word or not (the substring rule's test, :mod:`meta_memory.recall.word_runs`); ``uint8``, shape
    ``(len(inside_terms), candidates)``."""

    __slots__ = ("terms", "bits", "_place", "inside", "inside_terms")

    def __init__(self, terms: Sequence[str], bits: np.ndarray) -> None:
        self.terms = tuple(terms)
        self.bits = bits
        self._place = {term: t for t, term in enumerate(self.terms)}
        self.inside: np.ndarray | None = None
        self.inside_terms: Sequence[str] = ()

    def row(self, candidate: int) -> TermRow:
        """Candidate ``candidate``'s ``term -> bits`` mapping."""
        return TermRow(self, candidate)

    def place(self, term: str) -> int | None:
        """The table row of ``term`` (``None``: not one of the table's terms)."""
        return self._place.get(term)


class TermRow(Mapping[str, int]):
    """One candidate's column of a :class:`TermColumns`: ``term -> bits`` for the terms its row holds."""

    __slots__ = ("table", "candidate")

    def __init__(self, table: TermColumns, candidate: int) -> None:
        self.table = table
        self.candidate = candidate

    def __getitem__(self, term: str) -> int:
        t = self.table.place(term)
        if t is None:
            raise KeyError(term)
        bits = int(self.table.bits[t, self.candidate])
        if not bits:
            raise KeyError(term)
        return bits

    def get(self, term: str, default: int | None = None) -> int | None:  # type: ignore[override]
        try:
            return self[term]
        except KeyError:
            return default

    def __iter__(self) -> Iterator[str]:
        column = self.table.bits[:, self.candidate].tolist()
        return (term for term, bits in zip(self.table.terms, column) if bits)

    def __len__(self) -> int:
        return sum(1 for _ in self)
