"""Runs a recall provider over one scope of a store and re-checks what it returns.

The reader only ever yields ACTIVE records of the one scope it was built for;
the runtime additionally re-checks what the provider returns
(:func:`guarded_recall`), so a provider can rank but never widen access.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ..agent_memory.model import MemoryRecord, Scope
from ..observability.tracing import span
from ..recall.guard import enforce_scope
from ..recall.provider import RecallOutcome, RecallProvider, RecallRequest, ScoredRecord, record_id
from ..recall.store_reader import StoreReader

if TYPE_CHECKING:  # pragma: no cover
    from ..agent_memory.store.base import AgentMemoryStore

__all__ = ["guarded_recall"]


class _LiveScope(Mapping[str, MemoryRecord]):
    """``memory_id -> stored record`` for ids that are active (and unexpired) in the scope, looked up on demand
    (:meth:`load` reads a list of ids at once, in one read snapshot)."""

    def __init__(self, store: AgentMemoryStore, realm: str, scope: Scope, reader: StoreReader | None = None) -> None:
        self._store, self._realm, self._scope = store, realm, scope
        self._reader = reader
        self._cache: dict[str, MemoryRecord | None] = {}

    def _admit(self, memory_id: str, rec: MemoryRecord | None, now_ms: int | None = None) -> MemoryRecord | None:
        ok = rec is not None and rec.scope == self._scope and rec.is_live(
            self._store.clock.now_ms() if now_ms is None else now_ms) and (
            self._reader is None or self._reader.admits(memory_id))
        self._cache[memory_id] = rec if ok else None
        return self._cache[memory_id]

    def load(self, ids: Iterable[object]) -> None:
        """Read the records of ``ids`` (strings not read yet) in one snapshot of the realm."""
        todo = [i for i in dict.fromkeys(ids) if isinstance(i, str) and i not in self._cache]
        if not todo or not hasattr(self._store, "snapshot"):
            return
        if self._reader is not None:
            self._reader.admitted(todo)  # the filter read for all of them at once
        kept = getattr(self._store, "recall_records", None)
        if kept is not None:  # the store's own read of them in one snapshot (decoded records it keeps reused)
            found = kept(self._realm, todo)
        else:
            with self._store.snapshot(self._realm) as tx:
                found = tx.get_many(todo)  # one statement for the page, not one per record
        now_ms = self._store.clock.now_ms()  # read after the records: none is judged at an earlier time
        for memory_id in todo:
            self._admit(memory_id, found.get(memory_id), now_ms)

    def _lookup(self, memory_id: object) -> MemoryRecord | None:
        if not isinstance(memory_id, str):
            return None
        if memory_id not in self._cache:
            return self._admit(memory_id, self._store.get(self._realm, memory_id))
        return self._cache[memory_id]

    def __contains__(self, memory_id: object) -> bool:
        return self._lookup(memory_id) is not None

    def __getitem__(self, memory_id: str) -> MemoryRecord:
        rec = self._lookup(memory_id)
        if rec is None:
            raise KeyError(memory_id)
        return rec

    def get(self, memory_id: str, default: Any = None) -> Any:
        """The record of ``memory_id`` when it is live in the scope, else ``default`` (one look-up)."""
        rec = self._lookup(memory_id)
        return default if rec is None else rec

    def __iter__(self) -> Iterator[str]:
        return (k for k, v in self._cache.items() if v is not None)

    def __len__(self) -> int:
        return sum(1 for v in self._cache.values() if v is not None)


def guarded_recall(provider: RecallProvider, store: AgentMemoryStore, request: RecallRequest, scope: Scope) -> RecallOutcome[Any]:
    """Run ``provider`` for ``request`` over ``scope`` and keep only active in-scope records.

    Output: a :class:`RecallOutcome` whose records are the stored versions (not
    the provider's objects; with ``request.where``, only records passing that metadata filter),
    at most ``request.max_entries``, provider order kept
    (``skip_reason`` as the provider gave it; ``degraded_reason`` the provider's, or else the store's when
    its candidate ranking was approximate: ``approximate_ranking``). Provider exceptions propagate.
    """
    reader = StoreReader(store, request.realm, scope, request.where)
    with span("recall.search", **{"gen_ai.data_source.id": request.realm}):
        outcome = provider.recall(request, reader)
        results = list(outcome.records)
    with span("recall.recheck"):
        live = _LiveScope(store, request.realm, scope, reader if request.where is not None else None)
        live.load(record_id(item.record) for item in results[: request.max_entries] if isinstance(item, ScoredRecord))
        kept: list[ScoredRecord[Any]] = enforce_scope(results, live, request.max_entries)
    return RecallOutcome(kept, outcome.skip_reason, outcome.degraded_reason or reader.degraded_reason)
