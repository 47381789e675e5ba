"""A self-contained SQLite record index that implements the recall reader contract.

It keeps the record-store layout recall relies on — a ``records`` table
(integer ``rowid``; ``memory_id``, ``scope_key``, ``title``, ``description``,
``body``, ``tags`` JSON, ``status_kind``, ``created_at_ms``,
``updated_at_ms``) and the full-text table from
:func:`meta_memory.recall.fts.create_statements` with the same ``rowid``,
written in one transaction; a record is in the full-text table iff it is
active, and the full-text table's per-scope statistics beside it — so recall
behaves the same here as over the real store (candidates ranked by bm25 over the
statistics of the scope searched alone: :mod:`meta_memory.recall.bm25`). Used by
the recall tests and benchmarks, and usable wherever a small embedded index is
enough. One scope key stands for one identity.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import zip_longest

from meta_memory.recall import bm25, fts

__all__ = ["IndexedRecord", "StandaloneIndex", "StandaloneReader"]


@dataclass(frozen=True, slots=True)
class IndexedRecord:
    """A record as the index stores it (times in UTC epoch ms)."""

    memory_id: str
    title: str
    body: str
    description: str = ""
    tags: tuple[str, ...] = ()
    created_at_ms: int = 0
    updated_at_ms: int = 0
    scope_key: str = ""
    status_kind: str = "active"
    extra: dict[str, str] = field(default_factory=dict, compare=False, hash=False)


_RECORDS_DDL = """
CREATE TABLE IF NOT EXISTS records (
    memory_id TEXT PRIMARY KEY,
    scope_kind TEXT NOT NULL DEFAULT 'identity',
    scope_key TEXT NOT NULL,
    title TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    body TEXT NOT NULL,
    tags TEXT NOT NULL DEFAULT '[]',
    status_kind TEXT NOT NULL DEFAULT 'active',
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL
)"""
_RECORDS_IDX = (
    "CREATE INDEX IF NOT EXISTS records_scope_idx ON records(scope_key, status_kind, created_at_ms)",
    "CREATE INDEX IF NOT EXISTS records_scope_updated_idx ON records(scope_key, status_kind, updated_at_ms)",
)
#: Every record here is in an identity scope (its ``scope_key``).
_KIND = "identity"
_COLS = "r.memory_id, r.title, r.body, r.description, r.tags, r.created_at_ms, r.updated_at_ms, r.scope_key, r.status_kind"


def _int(value: object) -> int:
    if not isinstance(value, int):
        raise TypeError(f"expected an integer column, got {type(value).__name__}")
    return value


def _row_to_record(row: Sequence[object]) -> IndexedRecord:
    return IndexedRecord(
        memory_id=str(row[0]),
        title=str(row[1]),
        body=str(row[2]),
        description=str(row[3]),
        tags=tuple(json.loads(str(row[4]))),
        created_at_ms=_int(row[5]),
        updated_at_ms=_int(row[6]),
        scope_key=str(row[7]),
        status_kind=str(row[8]),
    )


class StandaloneIndex:
    """Records plus their full-text rows in one SQLite database.

    ``path``: a file path or ``":memory:"`` (default). Not thread-safe; one
    connection per index.
    """

    def __init__(self, path: str = ":memory:") -> None:
        self.conn = sqlite3.connect(path)
        if path != ":memory:":
            self.conn.execute("PRAGMA journal_mode = WAL")
        with self.conn:
            self.conn.execute(_RECORDS_DDL)
            for stmt in _RECORDS_IDX:
                self.conn.execute(stmt)
            for stmt in fts.create_statements():
                self.conn.execute(stmt)

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    def _insert(self, rec: IndexedRecord) -> None:
        cur = self.conn.execute(
            "INSERT INTO records(memory_id, scope_key, title, description, body, tags, status_kind,"
            " created_at_ms, updated_at_ms) VALUES (?,?,?,?,?,?,?,?,?)",
            (
                rec.memory_id,
                rec.scope_key,
                rec.title,
                rec.description,
                rec.body,
                json.dumps(list(rec.tags)),
                rec.status_kind,
                rec.created_at_ms,
                rec.updated_at_ms,
            ),
        )
        if rec.status_kind == "active":
            self._index(int(cur.lastrowid or 0), rec.scope_key, rec.title, rec.description, rec.body, rec.tags)

    def _index(self, rowid: int, scope_key: str, title: str, description: str, body: str,
               tags: Sequence[str]) -> None:
        doc = fts.document(title, description, body, tags)
        cols = ", ".join(doc)
        marks = ", ".join("?" for _ in doc)
        self.conn.execute(f"INSERT INTO {fts.FTS_TABLE}(rowid, {cols}) VALUES (?, {marks})", (rowid, *doc.values()))
        fts.note_scope(self.conn, _KIND, scope_key, 1, fts.document_size(doc.values()))

    def add(self, record: IndexedRecord) -> None:
        """Insert one record (and its full-text row when active) in one transaction.

        Raises ``sqlite3.IntegrityError`` on a duplicate ``memory_id``.
        """
        with self.conn:
            self._insert(record)

    def add_many(self, records: Iterable[IndexedRecord]) -> None:
        """Insert many records in one transaction."""
        with self.conn:
            for rec in records:
                self._insert(rec)

    def set_status(self, memory_id: str, status_kind: str, now_ms: int) -> None:
        """Change a record's status; leaving ``active`` removes its full-text row (same transaction)."""
        with self.conn:
            row = self.conn.execute(
                "SELECT rowid, scope_key, title, description, body, tags, status_kind FROM records WHERE memory_id = ?",
                (memory_id,),
            ).fetchone()
            if row is None:
                return
            rowid, scope_key, title, description, body, tags, old = row
            self.conn.execute(
                "UPDATE records SET status_kind = ?, updated_at_ms = ? WHERE rowid = ?", (status_kind, now_ms, rowid)
            )
            if old == "active" and status_kind != "active":
                cols = self.conn.execute(f"SELECT {', '.join(fts.COLUMNS)} FROM {fts.FTS_TABLE} WHERE rowid = ?",
                                         (rowid,)).fetchone()
                self.conn.execute(f"DELETE FROM {fts.FTS_TABLE} WHERE rowid = ?", (rowid,))
                fts.note_scope(self.conn, _KIND, scope_key, -1, -fts.document_size(cols))
            elif old != "active" and status_kind == "active":
                self._index(rowid, scope_key, title, description, body, json.loads(tags))

    def reader(self, scope_key: str) -> StandaloneReader:
        """A :class:`meta_memory.recall.provider.RecallReader` over one scope's active records."""
        return StandaloneReader(self.conn, scope_key)

    def active_ids(self, scope_key: str) -> set[str]:
        """The ids of a scope's active records (what the runtime's guard allows)."""
        rows = self.conn.execute(
            "SELECT memory_id FROM records WHERE scope_key = ? AND status_kind = 'active'", (scope_key,)
        )
        return {r[0] for r in rows}


class StandaloneReader:
    """Reader over the active records of one scope of a :class:`StandaloneIndex`."""

    def __init__(self, conn: sqlite3.Connection, scope_key: str) -> None:
        self.conn = conn
        self.scope_key = scope_key

    def search(self, match: str, limit: int) -> list[tuple[IndexedRecord, float]]:
        """Full-text candidates, best first, by bm25 over this scope's statistics alone
        (:func:`meta_memory.recall.bm25.scoped_candidates`; see the reader protocol)."""
        hits = bm25.scoped_candidates(self.conn, _KIND, self.scope_key, match, limit)
        if not hits:
            return []
        rows = self.conn.execute(
            f"SELECT r.rowid, {_COLS} FROM records r WHERE r.rowid IN ({', '.join('?' * len(hits))})",
            [rid for rid, _, _ in hits],
        ).fetchall()
        by_rowid = {row[0]: row[1:] for row in rows}
        return [(_row_to_record(by_rowid[rid]), score) for rid, score, _ in hits if rid in by_rowid]

    def recent(self, limit: int) -> list[IndexedRecord]:
        """Newest updated first (ties: created desc, rowid desc)."""
        rows = self.conn.execute(
            f"SELECT {_COLS} FROM records r WHERE r.scope_key = ? AND r.status_kind = 'active'"
            " ORDER BY r.updated_at_ms DESC, r.created_at_ms DESC, r.rowid DESC LIMIT ?",
            (self.scope_key, limit),
        ).fetchall()
        return [_row_to_record(row) for row in rows]

    def active_records(self) -> list[IndexedRecord]:
        """Every active record of the scope (for full-scan providers)."""
        rows = self.conn.execute(
            f"SELECT {_COLS} FROM records r WHERE r.scope_key = ? AND r.status_kind = 'active'", (self.scope_key,)
        ).fetchall()
        return [_row_to_record(row) for row in rows]

    def neighbours(self, anchors: Sequence[IndexedRecord], span: int, window_ms: int) -> dict[str, list[IndexedRecord]]:
        """Write-order neighbours of each anchor: at most ``span`` records on each side (by
        ``created_at_ms`` then ``rowid``), each within ``window_ms`` of it, nearest first."""
        if not anchors or span <= 0:
            return {}
        out: dict[str, list[IndexedRecord]] = {}
        base = f"SELECT {_COLS} FROM records r WHERE r.scope_key = ? AND r.status_kind = 'active' "
        for anchor in anchors:
            row = self.conn.execute("SELECT rowid FROM records WHERE memory_id = ?", (anchor.memory_id,)).fetchone()
            if row is None:
                continue
            at, rid = anchor.created_at_ms, row[0]
            before = self.conn.execute(
                base + "AND r.created_at_ms >= ? AND (r.created_at_ms, r.rowid) < (?, ?)"
                " ORDER BY r.created_at_ms DESC, r.rowid DESC LIMIT ?",
                (self.scope_key, at - window_ms, at, rid, span),
            ).fetchall()
            after = self.conn.execute(
                base + "AND r.created_at_ms <= ? AND (r.created_at_ms, r.rowid) > (?, ?)"
                " ORDER BY r.created_at_ms, r.rowid LIMIT ?",
                (self.scope_key, at + window_ms, at, rid, span),
            ).fetchall()
            pairs = zip_longest(before, after)
            out[anchor.memory_id] = [_row_to_record(r) for pair in pairs for r in pair if r is not None]
        return out
