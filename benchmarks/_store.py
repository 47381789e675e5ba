"""Benchmark support: a corpus written into the real SQLite record store, read as recall reads it.

:class:`StoreCorpus` opens a :class:`~meta_memory.agent_memory.store.sqlite.SqliteAgentMemoryStore`
in a temporary directory, lands each corpus record with its id and times through the store's one
validator (application-authored ``CreateOp`` batches; each scope key is an identity of one realm),
and hands out the reader recall's providers get in production
(:class:`~meta_memory.recall.store_reader.StoreReader`), over which the hybrid provider finds the
store's vectors itself. :meth:`StoreCorpus.warm` builds the realm's in-process index so a realm of
2,000 rows or more is answered by it, as a running gateway's would be once built.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.batch import CreateOp, StagedBatch
from meta_memory.agent_memory.model import Author, NewMemoryRecord, Provenance, Scope
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from meta_memory.clock import SystemClock
from meta_memory.limits import MAX_BATCH_OPS
from meta_memory.recall.semantic.embedder import Embedder
from meta_memory.recall.semantic.vectors import encode_vector
from meta_memory.recall.store_reader import StoreReader

__all__ = ["REALM", "StoreCorpus"]

REALM = "default"
_AUTHOR = Author.application()
_PROVENANCE = Provenance(_AUTHOR)


class StoreCorpus:
    """Records (objects with ``memory_id``, ``title``, ``body``, ``description``, ``tags``,
    ``created_at_ms``, ``updated_at_ms``, ``scope_key``) in a fresh SQLite store. ``close`` removes it."""

    def __init__(self) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="meta-memory-bench-")
        self.store = SqliteAgentMemoryStore(Path(self._dir.name) / "agent-memory", SystemClock())

    def close(self) -> None:
        """Close the store and remove its directory."""
        self.store.close()
        self._dir.cleanup()

    def add_many(self, records: Iterable[Any]) -> None:
        """Write ``records`` in order, in batches of at most ``MAX_BATCH_OPS`` (all active)."""
        ops = [
            CreateOp(
                scope=Scope.identity(REALM, r.scope_key),
                record=NewMemoryRecord(title=r.title, body=r.body, provenance=_PROVENANCE,
                                       description=r.description, tags=tuple(r.tags)),
                id=r.memory_id,
                created_at_ms=r.created_at_ms,
                updated_at_ms=r.updated_at_ms,
            )
            for r in records
        ]
        for start in range(0, len(ops), MAX_BATCH_OPS):
            batch = StagedBatch(realm=REALM, author=_AUTHOR, ops=tuple(ops[start:start + MAX_BATCH_OPS]))
            record_writes.apply_batch(self.store, batch)

    def warm(self) -> bool:
        """Build the realm's in-process index now; ``True`` when it answers (a realm of 2,000 rows or more)."""
        index = self.store.lexical_index
        return index.warm(REALM) and index.ready(REALM)

    def reader(self, identity: str) -> StoreReader:
        """The recall reader over ``identity``'s active records."""
        return StoreReader(self.store, REALM, Scope.identity(REALM, identity))

    def fill_vectors(self, embedder: Embedder, batch: int = 64) -> int:
        """Embed every active record without a vector of the embedder's model (what the background
        indexer does, here in this thread); returns how many."""
        done = 0
        while jobs := self.store.missing_vectors(REALM, embedder.model_id, batch):
            embedded = embedder.embed([j.text for j in jobs])
            done += self.store.put_vectors(REALM, embedder.model_id,
                                           [(j.rid, encode_vector(v)) for j, v in zip(jobs, embedded)])
        return done

    def copy_vectors(self, model: str, blob_of: dict[str, bytes], source_id: Any) -> int:
        """Give each record without a vector the blob ``blob_of[source_id(memory_id)]`` (records that
        repeat another's text reuse its vector instead of being embedded again); returns how many."""
        done = 0
        while jobs := self.store.missing_vectors(REALM, model, 1000):
            done += self.store.put_vectors(REALM, model, [(j.rid, blob_of[source_id(j.memory_id)]) for j in jobs])
        return done

    def vectors(self, identity: str, model: str) -> Sequence[tuple[str, bytes]]:
        """``(memory_id, blob)`` of ``identity``'s records with a vector of ``model``."""
        return self.store.scope_vectors(REALM, Scope.identity(REALM, identity), model)
