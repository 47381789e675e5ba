"""The ranking tests' records, written into a real agent-memory store (SQLite or PostgreSQL).

:class:`StoreIndex` lands records with the ids, titles, bodies, tags, times and statuses a test
gives them through the store's one validator (``CreateOp`` batches with named ids and times,
``TombstoneOp`` for a status change, the write gate for a record that lands quarantined): no SQL
into the store's tables. :meth:`StoreIndex.reader` is the recall reader a provider gets in
production (:class:`~meta_memory.recall.store_reader.StoreReader` over one identity's scope), so a
ranking asserted here is the store's ranking: bm25 over the scope's own statistics
(``recall/bm25.py``), FTS5 below 2,000 rows a realm and the in-process index above.

Scopes are identities of one realm (``REALM``); a record's ``scope`` is the identity's name.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import groupby
from typing import Any

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.batch import CreateOp, StagedBatch, TombstoneOp
from meta_memory.agent_memory.model import Author, NewMemoryRecord, Provenance, Scope
from meta_memory.agent_memory.store.base import AgentMemoryStore
from meta_memory.clock import ManualClock
from meta_memory.limits import MAX_BATCH_OPS
from meta_memory.recall.store_reader import StoreReader

__all__ = ["REALM", "Rec", "StoreIndex"]

REALM = "default"
_AUTHOR = Author.application()
_PROVENANCE = Provenance(_AUTHOR)
#: the statuses a record can be written in (``superseded`` needs a successor: write it with an update)
_STATUSES = ("active", "quarantined", "tombstoned")


@dataclass(frozen=True, slots=True)
class Rec:
    """A record to write: its id, content, identity (``scope``), times (UTC epoch ms) and status."""

    memory_id: str
    title: str
    body: str
    scope: str
    description: str = ""
    tags: tuple[str, ...] = ()
    created_at_ms: int = 0
    updated_at_ms: int = 0
    status: str = "active"


class _Quarantine:
    """The write gate of a batch whose records land quarantined."""

    def quarantine_reason(self, author: Author, batch_kind: str, evidence: list[Any], *, realm: str) -> str | None:
        return "held for review"


class StoreIndex:
    """Records of a test written into ``store`` (whose clock is ``clock``), in one realm.

    ``add``/``add_many`` write in the order given (the store's write order: the neighbours'
    tie-break); a run of consecutive records with one status is one batch (at most
    ``MAX_BATCH_OPS`` ops). A refusal raises the validator's ``AgentMemoryError`` and writes nothing
    of that batch.
    """

    def __init__(self, store: AgentMemoryStore, clock: ManualClock, *, in_process_index: bool = False) -> None:
        self.store = store
        self.clock = clock
        self.lexical = getattr(store, "lexical_index", None) if in_process_index else None
        if in_process_index and self.lexical is None:
            raise ValueError("only the SQLite store has an in-process index")
        if self.lexical is not None:
            self.lexical.min_rows = 0  # a test's small realm is indexed too
            self.lexical.background = False  # built by :meth:`reader`, in this thread

    def close(self) -> None:
        """Close the store."""
        self.store.close()

    def add(self, record: Rec) -> None:
        """Write one record."""
        self.add_many([record])

    def add_many(self, records: Iterable[Rec]) -> None:
        """Write records in order, a batch per run of one status."""
        for status, run in groupby(records, key=lambda r: r.status):
            if status not in _STATUSES:
                raise ValueError(f"status must be one of {_STATUSES}, got {status!r}")
            for chunk in _chunks(list(run), MAX_BATCH_OPS // 2):
                self._write(status, chunk)

    def _write(self, status: str, records: list[Rec]) -> None:
        ops: list[CreateOp | TombstoneOp] = [
            CreateOp(
                scope=Scope.identity(REALM, r.scope),
                record=NewMemoryRecord(title=r.title, body=r.body, provenance=_PROVENANCE,
                                       description=r.description, tags=r.tags),
                id=r.memory_id,
                created_at_ms=r.created_at_ms,
                updated_at_ms=r.updated_at_ms,
            )
            for r in records
        ]
        if status == "tombstoned":
            ops += [TombstoneOp(id=r.memory_id) for r in records]
        gate = _Quarantine() if status == "quarantined" else None
        record_writes.apply_batch(self.store, StagedBatch(realm=REALM, author=_AUTHOR, ops=tuple(ops)), gate=gate)

    def set_status(self, memory_id: str, status_kind: str, now_ms: int) -> None:
        """Take an active record out of recall at ``now_ms`` (only ``tombstoned``: a forget)."""
        if status_kind != "tombstoned":
            raise ValueError("only 'tombstoned' is supported")
        self.clock.set(now_ms)
        record_writes.apply_batch(self.store, StagedBatch(realm=REALM, author=_AUTHOR, ops=(TombstoneOp(id=memory_id),)))

    def reader(self, identity: str) -> StoreReader:
        """The recall reader over ``identity``'s active records (what a provider gets in production).

        With the in-process index on, the realm's index is built (or caught up) first, so it answers."""
        if self.lexical is not None and self.store.list_realms():
            assert self.lexical.warm(REALM), "the in-process index did not build"
        return StoreReader(self.store, REALM, Scope.identity(REALM, identity))

    def active_ids(self, identity: str) -> set[str]:
        """The ids of ``identity``'s active records."""
        return {r.id for r in self.store.active_records(REALM, Scope.identity(REALM, identity))}


def _chunks(items: list[Rec], size: int) -> Iterator[list[Rec]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]
