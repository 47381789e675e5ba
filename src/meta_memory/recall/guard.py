"""The runtime's re-check of what a recall provider returned.

A provider ranks; it never decides access. Whatever it returns, only records
that are active and in the caller's scope survive, each at most once, in the
provider's order, capped at ``max_entries``. When the runtime passes the
authoritative records (a mapping ``memory_id -> record``), the stored record
replaces whatever object the provider returned, so a provider cannot alter
a record's text on the way out either.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping
from typing import Any

from meta_memory.recall.provider import ScoredRecord, record_id

__all__ = ["enforce_scope"]

#: what ``allowed_ids.get`` answers for an id the mapping does not hold
_ABSENT = object()


def enforce_scope(
    results: Iterable[ScoredRecord[Any]],
    allowed_ids: Container[str] | Mapping[str, Any],
    max_entries: int | None = None,
) -> list[ScoredRecord[Any]]:
    """Drop every result whose record is not in ``allowed_ids``.

    Input: the provider's results (best first); ``allowed_ids``: the ids of the
    caller's active, in-scope records — any container, or a mapping
    ``memory_id -> stored record`` (then the stored record is returned in place
    of the provider's object); ``max_entries``: optional cap.
    Output: the surviving results, de-duplicated by id, order kept.
    Anything that is not a :class:`ScoredRecord` whose record has a string id
    (``memory_id`` or ``id``) is
    dropped. Never raises.
    """
    kept: list[ScoredRecord[Any]] = []
    seen: set[str] = set()
    substitute = isinstance(allowed_ids, Mapping)
    for item in results:
        if max_entries is not None and len(kept) >= max_entries:
            break
        if not isinstance(item, ScoredRecord):
            continue
        rid = record_id(item.record)
        if rid is None or rid in seen:
            continue
        if substitute:  # one look-up: whether the id is allowed, and its stored record
            stored = allowed_ids.get(rid, _ABSENT)  # type: ignore[union-attr]
            if stored is _ABSENT:
                continue
            seen.add(rid)
            kept.append(ScoredRecord(stored, item.score))
        elif rid in allowed_ids:
            seen.add(rid)
            kept.append(item)
    return kept
