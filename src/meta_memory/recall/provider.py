"""The typed recall-provider interface.

A recall provider turns a :class:`RecallRequest` into a ranked
:class:`RecallOutcome`. It reads only through the :class:`RecallReader` it
is handed, which the runtime binds to the caller's own scope (the active
records of one identity in one realm), and the runtime re-checks every
record it returns with :func:`meta_memory.recall.guard.enforce_scope`: a
provider can rank, never widen access.

Spec: seed "Agent memory injection" (providers receive raw ``query_text`` and
normalised ``query_terms``; contextual vs always selection; ``maxEntries``);
reference notes §3.4.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, Protocol, TypeVar, runtime_checkable

from meta_memory.errors import InvalidParams
from meta_memory.recall.query_limits import bounded_terms

__all__ = [
    "Selection",
    "SELECTIONS",
    "MAX_ENTRIES_LIMIT",
    "SKIP_NO_QUERY_TERMS",
    "DEGRADED_REASONS",
    "RecallableRecord",
    "RecallReader",
    "RecallRequest",
    "ScoredRecord",
    "RecallOutcome",
    "RecallProvider",
    "record_id",
]

Selection = Literal["contextual", "always"]
SELECTIONS: tuple[str, ...] = ("contextual", "always")

#: Upper bound on ``max_entries`` a request may ask for.
MAX_ENTRIES_LIMIT = 512

#: ``skip_reason`` of a contextual recall whose query has no searchable term.
SKIP_NO_QUERY_TERMS = "no_query_terms"

#: ``degraded_reason`` labels of the hybrid provider, which then answers with the lexical ranking alone:
#: the embedding model is still loading (``model_loading``); the query's embedding did not finish within
#: the dense side's share of the time budget (``embedding_timeout``), or the earlier query embeddings still
#: running left no room for another (``embedder_busy``), or the embedder raised (``embedder_failed``); the
#: scope's vectors (or the records only they found) could not be read within that share
#: (``vector_search_timeout``); the lexical side left no time for the dense side at all (``budget_spent``).
DEGRADED_REASONS: tuple[str, ...] = ("model_loading", "embedding_timeout", "embedder_busy", "embedder_failed",
                                     "vector_search_timeout", "budget_spent")


@runtime_checkable
class RecallableRecord(Protocol):
    """What recall needs of a stored record (the store's record type satisfies it).

    The id is read by :func:`record_id` from ``memory_id`` or, failing that,
    ``id`` (the store's ``MemoryRecord``). Times are UTC epoch milliseconds;
    ``tags`` are the normalised tags.
    """

    @property
    def title(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def body(self) -> str: ...
    @property
    def tags(self) -> Sequence[str]: ...
    @property
    def created_at_ms(self) -> int: ...
    @property
    def updated_at_ms(self) -> int: ...


R = TypeVar("R", bound=RecallableRecord)


def record_id(record: object) -> str | None:
    """The record's id: its ``memory_id`` attribute, else its ``id``; ``None`` when neither is a string."""
    value = getattr(record, "memory_id", None)
    if not isinstance(value, str):
        value = getattr(record, "id", None)
    return value if isinstance(value, str) else None


class RecallReader(Protocol[R]):
    """Read access to the ACTIVE records of one scope (one identity in one realm).

    Every method returns only active records of that scope.
    """

    def search(self, match: str, limit: int) -> list[tuple[R, float]]:
        """Full-text candidates for an FTS5 ``MATCH`` expression (from
        :func:`meta_memory.recall.fts.match_expression`), best first, at most
        ``limit``, each with its bm25 score over the scope's own statistics
        (:mod:`meta_memory.recall.bm25`: negative; smaller = better): no record of
        another scope moves a score or the order."""
        ...

    def active_records(self) -> list[R]:
        """Every active record of the scope (full-scan providers; avoid on large scopes)."""
        ...

    def recent(self, limit: int) -> list[R]:
        """The newest records: ``updated_at_ms`` desc, ``created_at_ms`` desc, at most ``limit``."""
        ...

    def neighbours(self, anchors: Sequence[R], span: int, window_ms: int) -> dict[str, list[R]]:
        """For each anchor (by ``memory_id``): the records the same scope wrote just before and after
        it — at most ``span`` on each side in write order (``created_at_ms``, then insertion), each
        within ``window_ms`` of the anchor — nearest in write order first, anchors included as
        neighbours of each other."""
        ...


@dataclass(frozen=True, slots=True)
class RecallRequest:
    """One recall.

    Fields: ``identity`` (logical identity), ``realm``, ``query_text`` (raw,
    may be ``None``), ``query_terms`` (extra raw terms; normalised by the
    provider through :func:`meta_memory.recall.text.query_terms`),
    ``selection`` (``"contextual"`` | ``"always"``), ``max_entries`` (1..512), ``where`` (a parsed
    metadata filter, :mod:`meta_memory.agent_memory.filters`, or ``None``: the reader a provider gets
    already yields only matching records, and the runtime re-checks what it returns).

    Raises :class:`meta_memory.errors.InvalidParams` on a bad ``selection`` or
    ``max_entries``.
    """

    identity: str
    realm: str
    query_text: str | None = None
    query_terms: tuple[str, ...] = ()
    selection: Selection = "contextual"
    max_entries: int = 8
    where: Any = None

    def __post_init__(self) -> None:
        if self.selection not in SELECTIONS:
            raise InvalidParams("selection must be 'contextual' or 'always'", "selection")
        if (
            not isinstance(self.max_entries, int)
            or isinstance(self.max_entries, bool)
            or not 1 <= self.max_entries <= MAX_ENTRIES_LIMIT
        ):
            raise InvalidParams(f"max_entries must be an integer between 1 and {MAX_ENTRIES_LIMIT}", "max_entries")
        object.__setattr__(self, "query_terms", tuple(self.query_terms))

    def terms(self) -> list[str]:
        """The normalised search terms (sorted, distinct, at most 64: see :mod:`meta_memory.recall.query_limits`)."""
        return bounded_terms(self.query_text, self.query_terms)


@dataclass(frozen=True, slots=True)
class ScoredRecord(Generic[R]):
    """A recalled record and its relevance score (higher = better; provider-specific scale)."""

    record: R
    score: float


@dataclass(frozen=True, slots=True)
class RecallOutcome(Generic[R]):
    """The ranked records of one recall, best first, and why it is empty when it is.

    ``skip_reason`` is ``None`` or a stable label, e.g. :data:`SKIP_NO_QUERY_TERMS`.
    ``degraded_reason`` is ``None`` or a stable label saying why a provider answered with less than
    its full ranking (the hybrid provider's labels: :data:`DEGRADED_REASONS`); the records are then
    its fallback ranking (the hybrid provider's: the lexical one).
    """

    records: list[ScoredRecord[R]] = field(default_factory=list)
    skip_reason: str | None = None
    degraded_reason: str | None = None


class RecallProvider(Protocol):
    """A ranking strategy. Must be side-effect free and read only through ``reader``."""

    def recall(self, request: RecallRequest, reader: RecallReader[R]) -> RecallOutcome[R]:
        """Rank the active records ``reader`` exposes for ``request``; at most ``request.max_entries``."""
        ...
