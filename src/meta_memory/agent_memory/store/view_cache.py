"""The records recall has read lately, kept decoded so a recall re-reads only a narrow row of each.

A recall reads its ~100 candidates and their write-order neighbours as :class:`RecordView` s; decoding
the title, body and tags of each row anew was a third of a small identity's recall. A view's content
is fixed for a given ``(rid, memory_id, content_hash)``: a record's content never changes in place
(an update or a tag merge writes a new version, a new ``memory_id``; an erase deletes the row), and
only ``updated_at_ms`` of a row may change (a state change). So :meth:`ViewCache.views` reads, in the
caller's snapshot and under the caller's conditions (scope, active, unexpired), only
``rid, memory_id, content_hash, updated_at_ms`` of the wanted rows, and reuses a kept view when all
four match; the other rows are read in full in the same snapshot. Nothing is ever served that the
snapshot does not hold as it is: a write by any process, a record that left the scope, an erased
record whose ``rid`` was reused, another realm's row (the realm is part of the key) are all read anew.

Bounded: :data:`MAX_VIEWS` views and :data:`MAX_VIEW_CHARS` characters of their text across realms, the
oldest kept first out (a record's body may be 64 KiB, so a count alone would not bound the memory).
Thread-safe.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from typing import Any

from meta_memory.agent_memory.model import RecordView
from meta_memory.agent_memory.store.common import VIEW_COLUMNS, row_to_view

__all__ = ["ViewCache", "MAX_VIEWS", "MAX_VIEW_CHARS"]

#: Views kept across every realm of a store.
MAX_VIEWS = 20_000
#: Characters of title, description, body and tags kept across every realm of a store (about 16 MiB of
#: text at one byte a character; more for other scripts).
MAX_VIEW_CHARS = 16 * 1024 * 1024
#: Rows per ``IN (...)`` list (SQLite allows 32,766 host parameters; a recall asks for ~100).
_CHUNK = 500


class ViewCache:
    """``(realm, rid, memory_id, content_hash, updated_at_ms) -> view``: a view is found only under the
    row's current values, so a changed row is never served from here (its old entry ages out)."""

    def __init__(self, capacity: int = MAX_VIEWS, max_chars: int = MAX_VIEW_CHARS) -> None:
        self.capacity = capacity
        self.max_chars = max_chars
        self._items: dict[tuple[Any, ...], RecordView] = {}  # oldest first (insertion order)
        self._chars = 0  # text characters of the kept views
        self._lock = threading.Lock()
        #: views served from the cache / read in full (tests and benchmarks read them)
        self.hits = 0
        self.misses = 0

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._chars = 0

    def views(self, conn: sqlite3.Connection, realm: str, rids: Sequence[int], where: str,
              params: Sequence[Any]) -> dict[int, RecordView]:
        """The views of the rows among ``rids`` that satisfy ``where`` (SQL over alias ``r``, ``?`` bound
        to ``params`` after the rids) in ``conn``'s snapshot of ``realm``, by rid (rows that do not are
        absent). Each is the kept view when the row's ``memory_id``, ``content_hash`` and
        ``updated_at_ms`` are those it was kept with, else the row read in full."""
        wanted = list(dict.fromkeys(rids))
        out: dict[int, RecordView] = {}
        stale: list[int] = []
        items = self._items
        cur = conn.cursor()
        cur.row_factory = None  # plain tuples
        for i in range(0, len(wanted), _CHUNK):
            part = wanted[i:i + _CHUNK]
            for row in cur.execute(
                    f"SELECT r.rid, r.memory_id, r.content_hash, r.updated_at_ms FROM records r "
                    f"WHERE r.rid IN ({', '.join('?' * len(part))}) {where}", (*part, *params)).fetchall():
                view = items.get((realm, *row))  # a plain read of a dict: safe without the lock
                if view is None:
                    stale.append(row[0])
                else:
                    out[row[0]] = view
        for i in range(0, len(stale), _CHUNK):
            part = stale[i:i + _CHUNK]
            rows = conn.execute(
                f"SELECT {VIEW_COLUMNS}, r.content_hash FROM records r WHERE r.rid IN ({', '.join('?' * len(part))})",
                part).fetchall()
            with self._lock:
                for row in rows:
                    view = row_to_view(row)
                    out[row["rid"]] = view
                    key = (realm, row["rid"], view.id, row["content_hash"], view.updated_at_ms)
                    if key not in items:
                        items[key] = view
                        self._chars += _chars(view)
                while items and (len(items) > self.capacity or self._chars > self.max_chars):
                    self._chars -= _chars(items.pop(next(iter(items))))
        with self._lock:
            self.hits += len(out) - len(stale)
            self.misses += len(stale)
        return out


def _chars(view: RecordView) -> int:
    """The text characters ``view`` holds (what bounds the cache's memory)."""
    return len(view.title) + len(view.description) + len(view.body) + sum(len(t) for t in view.tags)
