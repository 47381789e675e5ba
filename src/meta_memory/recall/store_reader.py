"""Adapt a realm/scope record store to the recall reader contract.

The store exposes ``search(realm, scope, match, limit)`` and
``active_records(realm, scope)``; recall wants a reader bound to one scope
(:class:`meta_memory.recall.provider.RecallReader`). When the store also has
``recent(realm, scope, limit)`` or ``neighbours(realm, scope, anchors,
window_ms, limit)`` they are used; otherwise both are derived from
``active_records`` (correct, but a full read of the scope per call).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from meta_memory.recall.provider import record_id

__all__ = ["StoreReader", "neighbours_from"]


class StoreReader:
    """A :class:`RecallReader` over ``store`` for one ``(realm, scope)``.

    ``where``: a metadata filter (:mod:`meta_memory.agent_memory.filters`): every read yields only
    matching records. ``search`` and ``recent`` filter in the store (the best among the matching
    records); the others keep the records whose ids pass (``store.passing``, read by id).

    ``degraded_reason``: ``None``, or the ``degraded_reason`` of the last ``search`` whose candidates the store
    could not prove the scope's best (its list's ``degraded_reason``, e.g. ``approximate_ranking``); the
    recall's result carries it (:func:`meta_memory.services.recall_reader.guarded_recall`)."""

    def __init__(self, store: Any, realm: str, scope: Any, where: Any = None) -> None:
        self.store = store
        self.realm = realm
        self.scope = scope
        self.where = where
        self.degraded_reason: str | None = None
        self._passed: dict[str, bool] = {}

    def admitted(self, memory_ids: Sequence[object]) -> set[str]:
        """The ids among ``memory_ids`` whose records pass the reader's filter (every string id without one)."""
        ids = [i for i in memory_ids if isinstance(i, str)]
        if self.where is None:
            return set(ids)
        todo = [i for i in dict.fromkeys(ids) if i not in self._passed]
        if todo:
            passing = self.store.passing(self.realm, self.scope, self.where, todo)
            self._passed.update((i, i in passing) for i in todo)
        return {i for i in ids if self._passed[i]}

    def admits(self, memory_id: object) -> bool:
        """Whether the record ``memory_id`` passes the reader's filter (every id without one)."""
        return memory_id in self.admitted([memory_id])

    def _kept(self, records: Sequence[Any]) -> list[Any]:
        if self.where is None:
            return list(records)
        ok = self.admitted([record_id(r) for r in records])
        return [r for r in records if record_id(r) in ok]

    def search(self, match: str, limit: int) -> list[tuple[Any, float]]:
        """Delegates to ``store.search(realm, scope, match, limit)`` (with the filter as ``where=``); a list
        the store returns is handed on as it is (it may carry the candidates' term columns:
        :class:`~meta_memory.agent_memory.model.Candidates`)."""
        if self.where is None:
            found = self.store.search(self.realm, self.scope, match, limit)
        else:
            found = self.store.search(self.realm, self.scope, match, limit, where=self.where)
        reason = getattr(found, "degraded_reason", None)
        if isinstance(reason, str):
            self.degraded_reason = reason
        return found if isinstance(found, list) else list(found)

    def active_records(self) -> list[Any]:
        """Delegates to ``store.active_records(realm, scope)``."""
        return self._kept(self.store.active_records(self.realm, self.scope))

    def recent(self, limit: int) -> list[Any]:
        """Newest updated first (ties: created desc, id asc)."""
        native = getattr(self.store, "recent", None)
        if native is not None:
            if self.where is None:
                return list(native(self.realm, self.scope, limit))
            return list(native(self.realm, self.scope, limit, where=self.where))
        records = self.active_records()
        records.sort(key=lambda r: (-r.updated_at_ms, -r.created_at_ms, record_id(r) or ""))
        return records[:limit]

    def neighbours(self, anchors: Sequence[Any], span: int, window_ms: int) -> dict[str, list[Any]]:
        """Write-order neighbours of each anchor (see :class:`~meta_memory.recall.provider.RecallReader`);
        with a filter, only matching neighbours (a filtered recall never returns a record outside it)."""
        native = getattr(self.store, "neighbours", None)
        if native is not None:
            found = dict(native(self.realm, self.scope, anchors, span, window_ms))
            if self.where is None:
                return found
            self.admitted([record_id(r) for rs in found.values() for r in rs])  # one read for all of them
            return {k: self._kept(v) for k, v in found.items()}
        return neighbours_from(self.active_records(), anchors, span, window_ms)


def neighbours_from(records: Sequence[Any], anchors: Sequence[Any], span: int, window_ms: int) -> dict[str, list[Any]]:
    """Write-order neighbours computed from a scope's full record list (for readers without an index)."""
    if not anchors or span <= 0:
        return {}
    ordered = sorted(records, key=lambda r: (r.created_at_ms, record_id(r) or ""))
    position = {record_id(r): i for i, r in enumerate(ordered)}
    out: dict[str, list[Any]] = {}
    for anchor in anchors:
        aid = record_id(anchor)
        i = position.get(aid)
        if aid is None or i is None:
            continue
        found: list[Any] = []
        for step in range(1, span + 1):
            for j in (i - step, i + step):
                if 0 <= j < len(ordered) and abs(ordered[j].created_at_ms - anchor.created_at_ms) <= window_ms:
                    found.append(ordered[j])
        out[aid] = found
    return out
