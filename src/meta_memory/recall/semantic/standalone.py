"""Vectors for a :class:`~meta_memory.recall.standalone.StandaloneIndex` (benchmarks, tests, small hosts).

:class:`VectorSidecar` adds the record store's vector table
(:mod:`meta_memory.recall.semantic.vectors`) to a standalone index's database
and fills it with an embedder; :meth:`VectorSidecar.reader` returns a reader
that is both a recall reader and a
:class:`~meta_memory.recall.semantic.hybrid.VectorSource`, so the hybrid
provider ranks over it exactly as over the store. Leaving ``active`` through
:meth:`VectorSidecar.set_status` removes the vector in the same transaction.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Sequence
from typing import Any

from meta_memory.recall.semantic import vectors
from meta_memory.recall.semantic.embedder import Embedder
from meta_memory.recall.standalone import IndexedRecord, StandaloneIndex, StandaloneReader

__all__ = ["VectorSidecar", "VectorReader"]


class VectorSidecar:
    """The vector table of one :class:`StandaloneIndex`, filled by ``embedder``."""

    def __init__(self, index: StandaloneIndex, embedder: Embedder) -> None:
        self.index = index
        self.embedder = embedder
        with index.conn:
            for stmt in vectors.create_statements():
                index.conn.execute(stmt)

    def fill(self, batch: int = 64) -> int:
        """Embed every active record without a vector of the embedder's model; returns how many."""
        done = 0
        while True:
            jobs = vectors.missing_vectors(self.index.conn, self.embedder.model_id, batch)
            if not jobs:
                return done
            embedded = self.embedder.embed([j.text for j in jobs])
            with self.index.conn:
                done += vectors.put_vectors(
                    self.index.conn,
                    self.embedder.model_id,
                    [(j.rid, vectors.encode_vector(v)) for j, v in zip(jobs, embedded)],
                )

    def set_status(self, memory_id: str, status_kind: str, now_ms: int) -> None:
        """:meth:`StandaloneIndex.set_status`, and the record's vector removed when it leaves ``active``."""
        self.index.set_status(memory_id, status_kind, now_ms)
        if status_kind != "active":
            with self.index.conn:
                row = self.index.conn.execute("SELECT rowid FROM records WHERE memory_id = ?", (memory_id,)).fetchone()
                if row is not None:
                    vectors.delete_vector(self.index.conn, int(row[0]))

    def vector_count(self) -> int:
        """Stored vectors (all scopes)."""
        return int(self.index.conn.execute(f"SELECT count(*) FROM {vectors.VECTOR_TABLE}").fetchone()[0])

    def reader(self, scope_key: str) -> VectorReader:
        """A recall reader with vector access over one scope's active records."""
        return VectorReader(self.index.reader(scope_key))


class VectorReader:
    """A :class:`StandaloneReader` plus the :class:`~meta_memory.recall.semantic.hybrid.VectorSource` methods."""

    def __init__(self, inner: StandaloneReader) -> None:
        self.inner = inner
        self.conn = inner.conn
        self.scope_key = inner.scope_key

    @property
    def cache_key(self) -> Hashable:
        return (id(self.conn), self.scope_key)

    def search(self, match: str, limit: int) -> list[tuple[IndexedRecord, float]]:
        return self.inner.search(match, limit)

    def recent(self, limit: int) -> list[IndexedRecord]:
        return self.inner.recent(limit)

    def active_records(self) -> list[IndexedRecord]:
        return self.inner.active_records()

    def neighbours(self, anchors: Sequence[IndexedRecord], span: int, window_ms: int) -> dict[str, list[IndexedRecord]]:
        return self.inner.neighbours(anchors, span, window_ms)

    def vector_signature(self, model: str) -> tuple[int, int]:
        return vectors.scope_signature(self.conn, "identity", self.scope_key, model)

    def vectors(self, model: str) -> list[tuple[str, bytes]]:
        return vectors.scope_vectors(self.conn, "identity", self.scope_key, model)

    def records(self, ids: Sequence[str]) -> dict[str, Any]:
        if not ids:
            return {}
        marks = ", ".join("?" for _ in ids)
        rows = self.conn.execute(
            "SELECT memory_id, title, body, description, tags, created_at_ms, updated_at_ms, scope_key, status_kind "
            f"FROM records WHERE scope_key = ? AND status_kind = 'active' AND memory_id IN ({marks})",
            (self.scope_key, *ids),
        ).fetchall()
        return {
            r[0]: IndexedRecord(r[0], r[1], r[2], r[3], tuple(json.loads(r[4])), int(r[5]), int(r[6]), r[7], r[8])
            for r in rows
        }
