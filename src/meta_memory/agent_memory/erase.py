"""Erase: a record's content removed for good (beyond the spec, next to ``forget``).

``forget`` keeps a tombstone (the spec's rule: reviewers may still read it). Erase is for privacy
requests and mistakes: it removes a record **and its content closure** — every version of its
supersede chain and every record derived from any of them (a released successor, a promoted copy),
following links both ways within the realm — from every table that holds content, in one
transaction:

- the record rows (title, body, description, tags, provenance) and their full-text and vector rows;
- the injection-ledger rows and dream usage-audit verdicts that name them;
- the audit rows' details for them (replaced by ``{"erased": true}``) and staged batches that carry
  them (their pending promotions are expired);

and leaves one ``erase`` audit row per record with what an audit needs: the id, scope, content hash,
who erased it, when, and the caller's reason. A closure holding a record under quarantine review, or
one a gated promotion is waiting on, is refused (``review_pending``): decide it first.

After the commit, SQLite rewrites its full-text index (``optimize``), and every connection runs with
``secure_delete`` so freed pages are zeroed; the WAL is checkpointed and truncated. PostgreSQL deletes
the rows in the same transaction; the bytes leave the data files when (auto)vacuum reclaims them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .model import MemoryRecord, Scope, StatusKind

__all__ = ["ErasedRecord", "EraseReport", "content_closure", "MAX_ERASE_RECORDS"]

#: The most records one erase may remove (a closure larger than this is refused, not cut).
MAX_ERASE_RECORDS = 100_000


@dataclass(frozen=True, slots=True)
class ErasedRecord:
    """What stays of an erased record: ``{memory_id, scope, content_hash, status}`` (status before erase)."""

    memory_id: str
    scope: Scope
    content_hash: str
    status: str

    def to_json(self) -> dict[str, Any]:
        return {"memory_id": self.memory_id, "scope": self.scope.to_json(), "content_hash": self.content_hash,
                "status": self.status}


@dataclass(frozen=True, slots=True)
class EraseReport:
    """The result of an erase (or of its dry run): the records, and when (``None`` for a dry run)."""

    records: tuple[ErasedRecord, ...]
    dry_run: bool
    erased_at_ms: int | None

    def to_json(self) -> dict[str, Any]:
        scopes = sorted({r.scope.describe() for r in self.records})
        return {"dry_run": self.dry_run, "erased_at_ms": self.erased_at_ms, "count": len(self.records),
                "scopes": scopes, "records": [r.to_json() for r in self.records]}


def _neighbours(rec: MemoryRecord) -> Iterable[str]:
    if rec.supersedes:
        yield rec.supersedes
    if rec.status.kind is StatusKind.SUPERSEDED and rec.status.detail:
        yield rec.status.detail
    yield from rec.derived_from


def content_closure(
    start: Iterable[MemoryRecord],
    get: Callable[[str], MemoryRecord | None],
    children: Callable[[list[str]], list[MemoryRecord]],
) -> list[MemoryRecord]:
    """Every record linked to ``start`` by supersede or derived-from edges, in either direction.

    ``get(id)`` reads one record; ``children(ids)`` the records that supersede or derive from any of
    ``ids``. Raises ``ValueError`` past :data:`MAX_ERASE_RECORDS`.
    """
    found: dict[str, MemoryRecord] = {}
    frontier = list(start)
    while frontier:
        batch = [r for r in frontier if r.id not in found]
        for r in batch:
            found[r.id] = r
        if len(found) > MAX_ERASE_RECORDS:
            raise ValueError(f"the content closure holds more than {MAX_ERASE_RECORDS} records")
        nxt: list[MemoryRecord] = []
        for r in batch:
            for rid in _neighbours(r):
                if rid not in found:
                    other = get(rid)
                    if other is not None:
                        nxt.append(other)
        ids = [r.id for r in batch]
        for i in range(0, len(ids), 500):
            nxt.extend(c for c in children(ids[i:i + 500]) if c.id not in found)
        frontier = nxt
    return list(found.values())
