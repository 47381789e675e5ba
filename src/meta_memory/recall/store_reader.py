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

__all__ = ["StoreReader"]


class StoreReader:
    """A :class:`RecallReader` over ``store`` for one ``(realm, scope)``."""

    def __init__(self, store: Any, realm: str, scope: Any) -> None:
        self.store = store
        self.realm = realm
        self.scope = scope

    def search(self, match: str, limit: int) -> list[tuple[Any, float]]:
        """Delegates to ``store.search(realm, scope, match, limit)``."""
        return list(self.store.search(self.realm, self.scope, match, limit))

    def active_records(self) -> list[Any]:
        """Delegates to ``store.active_records(realm, scope)``."""
        return list(self.store.active_records(self.realm, self.scope))

    def recent(self, limit: int) -> list[Any]:
        """Newest updated first (ties: created desc, id asc)."""
        native = getattr(self.store, "recent", None)
        if native is not None:
            return list(native(self.realm, self.scope, limit))
        records = self.active_records()
        records.sort(key=lambda r: (-r.updated_at_ms, -r.created_at_ms, record_id(r) or ""))
        return records[:limit]

    def neighbours(self, anchors: Sequence[Any], window_ms: int, limit: int) -> list[Any]:
        """Records created within ``window_ms`` of an anchor, closest first, anchors excluded."""
        native = getattr(self.store, "neighbours", None)
        if native is not None:
            return list(native(self.realm, self.scope, anchors, window_ms, limit))
        if not anchors or window_ms <= 0 or limit <= 0:
            return []
        anchor_ids = {record_id(a) for a in anchors}
        best: dict[str, tuple[int, Any]] = {}
        for rec in self.active_records():
            rid = record_id(rec)
            if rid is None or rid in anchor_ids:
                continue
            distance = min(abs(rec.created_at_ms - a.created_at_ms) for a in anchors)
            if distance <= window_ms and (rid not in best or distance < best[rid][0]):
                best[rid] = (distance, rec)
        ordered = sorted(best.items(), key=lambda item: (item[1][0], item[0]))
        return [rec for _, (_, rec) in ordered[:limit]]
