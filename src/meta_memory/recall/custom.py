"""Custom recall providers: the public seam for a host's own retrieval.

Seed "Agent memory injection": custom providers receive both the raw ``query_text`` and the
normalised ``query_terms``, so they can implement stronger retrieval without changing the runtime's
authority. A provider is any object with one method::

    class MyProvider:
        def recall(self, request: RecallRequest, reader: RecallReader) -> RecallOutcome: ...

``request.query_text`` is the raw text (``None`` without one), ``request.terms()`` the normalised
terms (NFKC, casefolded, stopwords dropped, at most 64: the ones the bundled providers search for),
``request.identity`` / ``request.realm`` the scope asked for, ``request.selection`` and
``request.max_entries`` the rest of the call. ``reader`` reads the caller's own scope only (the
ACTIVE records of that identity in that realm): ``search(match, limit)``, ``active_records()``,
``recent(limit)``, ``neighbours(anchors, span, window_ms)``; the ``memory`` tool's recall naming a
mob runs the provider once more with the same request, its reader then reading that mob's active
records (ids of the identity's records are dropped from that pass). A provider answers with a
:class:`RecallOutcome` of :class:`ScoredRecord` values, best first; the record may be one the reader
gave, or a :class:`RecordRef` (an id from the provider's own index). Three helpers share the
runtime's tokeniser: :func:`normalise_terms` (a text's search terms), :func:`record_terms` (a
record's index tokens) and :func:`search_expression` (terms -> the expression ``reader.search``
takes).

Register one on an embedded runtime with ``Meta.builder().recall_provider(MyProvider())``, or in the
gateway's configuration as an importable class (instantiated once, with no arguments, at start-up)::

    [agent_memory]
    recall_provider = "mypkg.recall:MyProvider"

What the runtime guarantees around a custom provider, whatever it does:

* **It ranks; it never widens access.** Every id it returns is read again from the store in the
  caller's realm and kept only when it is active in the caller's scope
  (:func:`meta_memory.services.recall_reader.guarded_recall`): ids of another identity, another
  realm, or quarantined, tombstoned or superseded records are dropped, each id counts once, and the
  stored record replaces whatever object the provider returned (its text cannot be altered on the
  way out). At most ``max_entries`` survive; the provider's first :data:`MAX_PROVIDER_RESULTS`
  results are looked at.
* **It runs under the recall time budget** (``recall_timeout_ms``) on the time box's worker thread
  (a custom provider is never run inline, whatever it declares): past the budget an explicit recall
  is refused (``-32040``, reason ``timeout``) and an injection follows ``recall_failure_policy``; a
  late answer is discarded.
* **Its failures are its own.** An exception, or an answer that is not a :class:`RecallOutcome`, is
  an ``AgentMemoryError`` (reason ``io``, ``recall provider failed: <type>``) for an explicit recall
  and a recall failure for injection (``recall_failure_policy``). A ``skip_reason`` or
  ``degraded_reason`` that is not a short label (``[a-z0-9_]``, at most 64 characters) is dropped.
* **It sees only its reader.** The reader handed to a custom provider exposes the four read methods
  and nothing else (no store, no connection).

:func:`load_provider` resolves the configuration's ``"module:Class"`` (``StartupError`` naming
``agent_memory.recall_provider`` when it cannot be imported, is not a class or callable, or its
object has no ``recall`` method); :func:`check_provider` is the builder's check.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any

from meta_memory.errors import ConfigError, StartupError
from meta_memory.plugins import load_object
from meta_memory.recall.fts import match_expression
from meta_memory.recall.provider import (
    RecallOutcome,
    RecallProvider,
    RecallReader,
    RecallRequest,
    ScoredRecord,
)
from meta_memory.recall.text import query_terms, token_set

__all__ = [
    "RecallProvider",
    "RecallReader",
    "RecallRequest",
    "RecallOutcome",
    "ScoredRecord",
    "RecordRef",
    "CustomRecallProvider",
    "MAX_PROVIDER_RESULTS",
    "BUNDLED_PROVIDERS",
    "is_provider_reference",
    "load_provider",
    "check_provider",
    "normalise_terms",
    "record_terms",
    "search_expression",
]

#: The names of the bundled providers (``[agent_memory] recall_provider``).
BUNDLED_PROVIDERS: tuple[str, ...] = ("lexical", "hybrid")

#: How many of a custom provider's results the runtime looks at (the largest ``max_entries`` any
#: surface asks for); the rest are dropped unread, so an endless answer costs nothing.
MAX_PROVIDER_RESULTS = 512

_DOTTED = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"
_REFERENCE = re.compile(rf"^({_DOTTED}):({_DOTTED})$")
_LABEL = re.compile(r"^[a-z0-9_]{1,64}$")
_KEY = "agent_memory.recall_provider"


@dataclass(frozen=True, slots=True)
class RecordRef:
    """A record named by id only (``memory_id``): what a provider with its own index returns.

    The runtime replaces it with the stored record when that record is active in the caller's
    scope, and drops it otherwise."""

    memory_id: str


def normalise_terms(text: str | None, extra: Iterable[str] = ()) -> list[str]:
    """The search terms of ``text`` (and of each ``extra`` string): NFKC, casefolded, stemmed,
    stopwords and one-letter words dropped (but a single digit, and a single letter written in capitals other
    than ``A`` and ``I``), sorted and distinct. ``request.terms()`` is this over
    the request's ``query_text`` and ``query_terms`` (capped at 64)."""
    return query_terms(text, extra)


def record_terms(record: object) -> frozenset[str]:
    """The index tokens of a record's title, description, body and tags (the terms a search for
    :func:`normalise_terms` of a query can match)."""
    parts = [getattr(record, f, "") or "" for f in ("title", "description", "body")]
    parts += list(getattr(record, "tags", ()) or ())
    return token_set("\n".join(str(p) for p in parts))


def search_expression(terms: Iterable[str]) -> str | None:
    """The expression ``reader.search`` takes for ``terms`` (each term normalised and quoted,
    joined by ``OR``; at most 64), or ``None`` when no term is searchable."""
    return match_expression(None, list(terms))


def is_provider_reference(value: str) -> bool:
    """Whether ``value`` has the ``"package.module:Class"`` shape (ASCII identifiers, dotted)."""
    return _REFERENCE.match(value) is not None


def load_provider(reference: str) -> RecallProvider:
    """Import ``"package.module:Attr"`` and return its provider: the attribute itself when it is an
    object with a ``recall`` method, else the result of calling it with no arguments (a class or a
    factory). Raises :class:`StartupError` naming ``agent_memory.recall_provider`` and the cause."""
    m = _REFERENCE.match(reference)
    if m is None:
        raise StartupError(f"{_KEY}: {reference!r} is not 'lexical', 'hybrid' or 'package.module:Class'")
    provider = load_object(_KEY, m.group(1), m.group(2), is_object=lambda t: callable(getattr(t, "recall", None)),
                           what="a provider object")
    return check_provider(provider, reference)


def check_provider(provider: object, name: str = "recall_provider") -> RecallProvider:
    """``provider`` itself when it is an object (not a class) with a callable ``recall`` method;
    :class:`ConfigError` (a ``StartupError``) otherwise."""
    if isinstance(provider, type):
        raise ConfigError(f"{_KEY}: {name} is a class; give an instance (or name the class in the configuration)")
    if not callable(getattr(provider, "recall", None)):
        raise ConfigError(f"{_KEY}: {name} ({type(provider).__name__}) has no recall(request, reader) method")
    return provider  # type: ignore[return-value]


class _ScopedReader:
    """The four read methods of the scope's reader, and nothing else (the store stays out of reach)."""

    __slots__ = ("_search", "_active_records", "_recent", "_neighbours")

    def __init__(self, reader: RecallReader[Any]) -> None:
        self._search = reader.search
        self._active_records = reader.active_records
        self._recent = reader.recent
        self._neighbours = reader.neighbours

    def search(self, match: str, limit: int) -> list[tuple[Any, float]]:
        """Full-text candidates of the scope for an FTS5 ``MATCH`` expression (see ``RecallReader``)."""
        return self._search(match, limit)

    def active_records(self) -> list[Any]:
        """Every active record of the scope."""
        return self._active_records()

    def recent(self, limit: int) -> list[Any]:
        """The scope's newest records."""
        return self._recent(limit)

    def neighbours(self, anchors: Sequence[Any], span: int, window_ms: int) -> dict[str, list[Any]]:
        """Write-order neighbours of each anchor (see ``RecallReader``)."""
        return self._neighbours(anchors, span, window_ms)


class CustomRecallProvider:
    """A host's provider run inside the runtime's guarantees (see the module doc).

    ``stops_at_deadline`` is false, so the time box always runs it on a worker thread it can abandon
    at the deadline. The scope re-check happens after this returns
    (:func:`~meta_memory.services.recall_reader.guarded_recall`), for every provider alike."""

    stops_at_deadline = False

    def __init__(self, inner: RecallProvider, name: str) -> None:
        self.inner = inner
        self.name = name

    def __repr__(self) -> str:
        return f"CustomRecallProvider({self.name!r})"

    def recall(self, request: RecallRequest, reader: RecallReader[Any]) -> RecallOutcome[Any]:
        """The provider's outcome, its results cut to :data:`MAX_PROVIDER_RESULTS` and its
        ``skip_reason`` kept only when it is a short label. Raises ``TypeError`` when the provider
        answers something other than a :class:`RecallOutcome` (and whatever the provider raises)."""
        outcome = self.inner.recall(request, _ScopedReader(reader))
        if not isinstance(outcome, RecallOutcome):
            raise TypeError(f"recall provider {self.name} returned {type(outcome).__name__}, not a RecallOutcome")
        records = outcome.records
        if isinstance(records, (str, bytes)) or not isinstance(records, Iterable):
            raise TypeError(f"recall provider {self.name} returned records as {type(records).__name__}, not a list")
        kept: list[ScoredRecord[Any]] = [r for r in islice(records, MAX_PROVIDER_RESULTS) if isinstance(r, ScoredRecord)]
        return RecallOutcome(kept, _label(outcome.skip_reason), _label(getattr(outcome, "degraded_reason", None)))


def _label(value: object) -> str | None:
    """``value`` when it is a short label (``[a-z0-9_]``, at most 64 characters), else ``None``."""
    return value if isinstance(value, str) and _LABEL.match(value) else None
