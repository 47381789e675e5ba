"""Vector storage beside the records: the table, the blob format and the SQL the store runs.

This module needs only the standard library (the record store imports it
whether or not the ``semantic`` extra is installed).

The contract, mirroring the full-text index (:mod:`meta_memory.recall.fts`):

* :data:`VECTOR_TABLE` holds at most one vector per record (``rid`` = the
  record's ``rowid``, which the store's ``records.rid`` aliases), with the
  record's scope copied in (a scope's vectors are read by index) and the id of
  the model that produced it.
* A vector row exists only while its record is ``active``: the store deletes
  it (:func:`delete_vector`) in the same transaction as any change that takes
  the record out of ``active`` (forget, supersede, quarantine, tombstone), and
  :func:`put_vectors` inserts only for records that are active at that moment
  (checked inside the inserting transaction).
* Vectors are filled after the record is written, by the background
  :class:`meta_memory.recall.semantic.indexer.VectorIndexer`
  (:func:`missing_vectors` finds active records without a vector of the
  current model). Until then recall ranks the record lexically only.

Blob format: little-endian IEEE float32, ``dim`` values, unit length (the
embedder normalises). ``vid`` is an ``AUTOINCREMENT`` key: any insert or
delete in a scope changes :func:`scope_signature`, which readers use to
refresh a cached matrix.

Spec: the optional semantic extra (vectors stored beside the records,
removed with them).
"""

from __future__ import annotations

import sqlite3
import sys
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "VECTOR_TABLE",
    "create_statements",
    "embedding_text",
    "encode_vector",
    "decode_vector",
    "VectorJob",
    "delete_vector",
    "missing_vectors",
    "count_missing_vectors",
    "put_vectors",
    "scope_signature",
    "scope_vectors",
]

VECTOR_TABLE = "record_vectors"

#: Characters of a record's text given to the embedder (the bundled model reads 256 word pieces).
MAX_EMBED_CHARS = 2000


def create_statements() -> list[str]:
    """DDL of the vector table and its scope index (idempotent)."""
    return [
        f"""CREATE TABLE IF NOT EXISTS {VECTOR_TABLE} (
            vid INTEGER PRIMARY KEY AUTOINCREMENT,
            rid INTEGER NOT NULL UNIQUE,
            scope_kind TEXT NOT NULL,
            scope_key TEXT NOT NULL,
            model TEXT NOT NULL,
            vector BLOB NOT NULL
        )""",
        f"CREATE INDEX IF NOT EXISTS {VECTOR_TABLE}_scope_idx ON {VECTOR_TABLE}(scope_kind, scope_key, model, vid)",
    ]


def embedding_text(title: str, description: str, body: str, tags: Sequence[str]) -> str:
    """The text embedded for a record: title, description, body and tags, one per line
    (empty parts skipped), cut to :data:`MAX_EMBED_CHARS` characters."""
    parts = [title.strip(), description.strip(), body.strip(), " ".join(t for t in tags if t)]
    return "\n".join(p for p in parts if p)[:MAX_EMBED_CHARS]


def encode_vector(values: Iterable[float]) -> bytes:
    """float32 little-endian blob of ``values``."""
    arr = array("f", values)
    if sys.byteorder != "little":  # pragma: no cover - big-endian hosts
        arr.byteswap()
    return arr.tobytes()


def decode_vector(blob: bytes) -> list[float]:
    """The floats of a blob written by :func:`encode_vector`.

    Raises ``ValueError`` when the length is not a multiple of 4."""
    if len(blob) % 4:
        raise ValueError("vector blob length is not a multiple of 4")
    arr = array("f")
    arr.frombytes(blob)
    if sys.byteorder != "little":  # pragma: no cover
        arr.byteswap()
    return arr.tolist()


@dataclass(frozen=True, slots=True)
class VectorJob:
    """An active record that has no vector of the current model: its ``rid`` and the text to embed."""

    rid: int
    memory_id: str
    text: str


def delete_vector(conn: sqlite3.Connection, rid: int) -> None:
    """Remove a record's vector (call in the transaction that takes the record out of ``active``)."""
    conn.execute(f"DELETE FROM {VECTOR_TABLE} WHERE rid = ?", (rid,))


def missing_vectors(conn: sqlite3.Connection, model: str, limit: int) -> list[VectorJob]:
    """Up to ``limit`` active records without a vector of ``model``, oldest first."""
    rows = conn.execute(
        f"SELECT r.rowid, r.memory_id, r.title, r.description, r.body, r.tags FROM records r "
        f"LEFT JOIN {VECTOR_TABLE} v ON v.rid = r.rowid AND v.model = ? "
        "WHERE r.status_kind = 'active' AND v.rid IS NULL ORDER BY r.rowid LIMIT ?",
        (model, max(0, limit)),
    ).fetchall()
    import json

    jobs = []
    for rid, memory_id, title, description, body, tags_json in rows:
        try:
            tags = [t for t in json.loads(tags_json or "[]") if isinstance(t, str)]
        except ValueError:
            tags = []
        jobs.append(VectorJob(int(rid), str(memory_id), embedding_text(title, description or "", body, tags)))
    return jobs


def count_missing_vectors(conn: sqlite3.Connection, model: str) -> int:
    """How many active records have no vector of ``model`` yet (the indexer's backlog)."""
    row = conn.execute(
        f"SELECT count(*) FROM records r LEFT JOIN {VECTOR_TABLE} v ON v.rid = r.rowid AND v.model = ? "
        "WHERE r.status_kind = 'active' AND v.rid IS NULL",
        (model,),
    ).fetchone()
    return int(row[0])


def put_vectors(conn: sqlite3.Connection, model: str, items: Sequence[tuple[int, bytes]]) -> int:
    """Store ``(rid, blob)`` vectors of ``model``, each only if its record is active now
    (replacing a vector of another model). Call inside one write transaction.
    Returns how many were stored."""
    stored = 0
    for rid, blob in items:
        row = conn.execute(
            "SELECT scope_kind, scope_key FROM records WHERE rowid = ? AND status_kind = 'active'", (rid,)
        ).fetchone()
        if row is None:
            continue
        conn.execute(f"DELETE FROM {VECTOR_TABLE} WHERE rid = ?", (rid,))
        conn.execute(
            f"INSERT INTO {VECTOR_TABLE}(rid, scope_kind, scope_key, model, vector) VALUES (?, ?, ?, ?, ?)",
            (rid, row[0], row[1], model, blob),
        )
        stored += 1
    return stored


def scope_signature(conn: sqlite3.Connection, scope_kind: str, scope_key: str, model: str) -> tuple[int, int]:
    """``(count, max vid)`` of a scope's vectors of ``model``: changes on every insert or delete."""
    row = conn.execute(
        f"SELECT count(*), coalesce(max(vid), 0) FROM {VECTOR_TABLE} WHERE scope_kind = ? AND scope_key = ? AND model = ?",
        (scope_kind, scope_key, model),
    ).fetchone()
    return int(row[0]), int(row[1])


def scope_vectors(conn: sqlite3.Connection, scope_kind: str, scope_key: str, model: str) -> list[tuple[str, bytes]]:
    """``(memory_id, blob)`` of every vector of ``model`` in a scope whose record is active."""
    rows = conn.execute(
        f"SELECT r.memory_id, v.vector FROM {VECTOR_TABLE} v JOIN records r ON r.rowid = v.rid "
        "WHERE v.scope_kind = ? AND v.scope_key = ? AND v.model = ? AND r.status_kind = 'active'",
        (scope_kind, scope_key, model),
    ).fetchall()
    return [(str(m), bytes(b)) for m, b in rows]
