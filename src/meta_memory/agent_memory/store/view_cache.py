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

A recall's candidates and neighbours are asked for as live in one scope (:meth:`ViewCache.live_views`): active,
unexpired, of that scope. The realm's file keeps a generation per scope that every change of a row of that scope
moves, in the writing transaction itself (``scope_rows.g``, beside the scope's row count, bumped by triggers on an
insert, a delete and an update of any column but ``usage_stats``, whoever writes: :mod:`.schema` step 20); a
usage mark does not move it. Each row read live is remembered with its scope, its expiry and the generation its
scope had then, and while the caller's snapshot holds that same generation of that scope such a row is served
without reading it again: nothing it rests on can have changed (its expiry is compared with the caller's time in
memory). A write of any kind by any process into the scope moves its generation, and its rows are then read again
as above; a write into another scope of the realm (another identity's remember) leaves them served. The rows of a
scope served at one generation are also kept in a map of their own (:class:`_Served`, the latest
:data:`SERVED_SCOPES` scopes of a realm), each row's view found by one look-up while the caller's time is before
the soonest expiry among them: the same rows under the same rules, without reading each row's remembered scope,
expiry and generation again.

The runtime's re-check of what a recall returns reads those few records whole (:meth:`ViewCache.records`):
the decoded records are kept too, each under its scope's generation when it was read, and served while the
caller's snapshot holds that generation of its scope, so a kept record differs from its row by its usage
counters alone, which every recall that returns the record bumps: a served record's counters are those it
was kept with (the re-check's answer projects none; reading and decoding them anew cost three quarters of
the re-check).

Bounded: ``max_bytes`` of memory across realms, views and records together (``[agent_memory] view_cache_mb``,
:data:`DEFAULT_VIEW_CACHE_BYTES`), the oldest kept first out: the records a quarter of it and :data:`MAX_RECORDS`
(:func:`record_bytes`), the views the rest and :data:`MAX_VIEWS`. A view's memory is counted as its strings'
sizes (``sys.getsizeof``: a character of another script costs 2 or 4 bytes) plus :data:`VIEW_BYTES` for the
object, its key and the map's entry (a record's body may be 64 KiB, so a count alone would not bound the
memory). A view larger than its share is not kept. Thread-safe.

A realm kept resident (:meth:`ViewCache.warm`): when a realm's recall index is built, its active rows' views and
whole records are read and kept in one snapshot, newest first, into the room the bounds leave (half the views'
share, the records' whole share), evicting nothing. The kept entries are served under exactly the rules above, so
a write moves the generation and they are validated again as any other.
"""

from __future__ import annotations

import copy
import dataclasses
import operator
import sqlite3
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from meta_memory.agent_memory.model import MemoryRecord, RecordView
from meta_memory.agent_memory.store.common import VIEW_COLUMNS, row_to_view
from meta_memory.agent_memory.store.dialect import unexpired
from meta_memory.limits import DEFAULT_VIEW_CACHE_MB

__all__ = ["ViewCache", "MAX_VIEWS", "MAX_RECORDS", "WARM_SHARE", "DEFAULT_VIEW_CACHE_BYTES", "VIEW_BYTES", "RECORD_BYTES",
           "view_bytes", "record_bytes"]

#: Views kept across every realm of a store.
MAX_VIEWS = 20_000
#: Default memory of the kept views, every realm together (``[agent_memory] view_cache_mb``).
DEFAULT_VIEW_CACHE_BYTES = DEFAULT_VIEW_CACHE_MB * 1024 * 1024
#: Whole records kept for the re-check of a recall's answer (:meth:`ViewCache.records`), every realm together.
MAX_RECORDS = 4096
#: Memory of a kept record beyond its strings' own sizes (the object, its scope, provenance, status and usage
#: values, the key and the map's entry), rounded up.
RECORD_BYTES = 1600
#: Share of the views' bounds (count and bytes) that :meth:`ViewCache.warm` fills with a realm's rows when its
#: recall index is built: the rest stays for other realms and for the rows recalls read later. The records kept for
#: the re-check (a small bound of their own) are filled up to their bounds; neither ever evicts what is kept.
WARM_SHARE = 0.5
#: Measured memory of a view beyond its strings' own sizes (CPython 3.11: the object, its id and the
#: timestamps, the key tuple with the content hash, the map's entry, about 640 bytes; its entry among the rows
#: read live, about 160; its entry in its scope's served map, about 100), rounded up.
VIEW_BYTES = 900
#: Scopes of a realm whose rows read live are also kept in a map of their own (:class:`_Served`), the latest used.
SERVED_SCOPES = 8
#: The liveness :meth:`ViewCache.live_views` asks of a row (scope kind, scope key, now: epoch ms).
_LIVE_WHERE = f"AND +r.scope_kind = ? AND +r.scope_key = ? AND +r.status_kind = 'active' AND {unexpired('r.')}"
#: Rows per ``IN (...)`` list (SQLite allows 32,766 host parameters; a recall asks for ~100).
_CHUNK = 500


class _Served:
    """The rows of one scope found live at one ``generation`` of it: ``views`` (rid -> view) and ``soonest``, the
    earliest expiry among them (epoch ms; ``None``: none expires). While a snapshot holds that generation of the
    scope and the caller's time is before ``soonest``, each of them is active, of the scope and unexpired.

    Read without the lock: once the map is in use, ``generation`` and ``soonest`` never change (a row expiring
    before ``soonest`` is not added; a reader that saw the map serve may be handed any row of it), and ``views``
    only grows but for the views the cache evicts (a reader that misses one judges that row as any other)."""

    __slots__ = ("generation", "soonest", "views")

    def __init__(self, generation: int, rows: Sequence[tuple[int, RecordView, int | None]]) -> None:
        self.generation = generation
        self.views: dict[int, RecordView] = {rid: view for rid, view, _ in rows}
        expiries = [expires_at_ms for _, _, expires_at_ms in rows if expires_at_ms is not None]
        self.soonest: int | None = min(expiries) if expiries else None

    def serves(self, generation: int, now_ms: int) -> bool:
        """Whether every row held is live at ``now_ms`` in a snapshot holding ``generation`` of the scope."""
        return self.generation == generation and (self.soonest is None or self.soonest > now_ms)

    def add(self, rows: Sequence[tuple[int, RecordView, int | None]]) -> None:
        """Hold ``rows`` (``(rid, view, expires_at_ms)``, found live at this generation), those that expire no
        sooner than the map's rows (the others are judged row by row)."""
        soonest = self.soonest
        for rid, view, expires_at_ms in rows:
            if expires_at_ms is None or (soonest is not None and expires_at_ms >= soonest):
                self.views[rid] = view


class ViewCache:
    """``(realm, rid, memory_id, content_hash, updated_at_ms) -> view``: a view is found only under the
    row's current values, so a changed row is never served from here (its old entry ages out)."""

    def __init__(self, capacity: int = MAX_VIEWS, max_bytes: int = DEFAULT_VIEW_CACHE_BYTES) -> None:
        if capacity < 0 or max_bytes < 0:
            raise ValueError("capacity and max_bytes must be >= 0")
        self.capacity = capacity
        self.max_bytes = max_bytes
        #: oldest first (insertion order); an ``OrderedDict`` because it is a FIFO: a plain dict's first key, once
        #: many have been popped from its front, is found by walking past their deleted slots
        self._items: OrderedDict[tuple[Any, ...], RecordView] = OrderedDict()
        self._bytes = 0  # memory of the kept views (view_bytes)
        self._lock = threading.Lock()
        #: per realm: ``rid -> (view, scope kind, scope key, expires_at_ms, scope generation)`` of the rows read live,
        #: each under its scope's generation then (views kept in ``_items`` only, dropped from here when evicted)
        self._live: dict[str, dict[int, tuple[RecordView, str, str, int | None, int]]] = {}
        #: per realm: ``(scope kind, scope key) -> _Served`` of its latest :data:`SERVED_SCOPES` scopes (views kept
        #: in ``_items`` only, dropped from here when evicted)
        self._served: dict[str, dict[tuple[str, str], _Served]] = {}
        #: views served from the cache / read in full, and rows whose liveness was read from the file (tests and
        #: benchmarks read them)
        self.hits = 0
        self.misses = 0
        self.live_reads = 0
        #: ``(realm, memory_id) -> ((scope kind, scope key, its generation), record)``, oldest first: :meth:`records`
        self._records: OrderedDict[tuple[str, str], tuple[tuple[str, str, int], MemoryRecord]] = OrderedDict()
        self._record_bytes = 0
        #: records served from memory / read whole (tests and benchmarks read them)
        self.record_hits = 0
        self.record_misses = 0

    @property
    def record_limit(self) -> int:
        """Bytes the whole records of :meth:`records` may take: a quarter of ``max_bytes``."""
        return self.max_bytes // 4

    @property
    def view_limit(self) -> int:
        """Bytes the views may take: ``max_bytes`` less the records' quarter, so the two stay within it."""
        return self.max_bytes - self.record_limit

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._live.clear()
            self._served.clear()
            self._bytes = 0
            self._records.clear()
            self._record_bytes = 0

    def stats(self) -> dict[str, int]:
        """``{bytes, limit_bytes, views}``: the memory of the kept views and records (:func:`view_bytes`,
        :func:`record_bytes`), its bound (``max_bytes``), and how many views are kept."""
        with self._lock:
            return {"bytes": self._bytes + self._record_bytes, "limit_bytes": self.max_bytes, "views": len(self._items)}

    def forget(self, realm: str) -> None:
        """Read every row of ``realm`` live again before serving it (its file was closed: it may be replaced)."""
        with self._lock:
            self._live.pop(realm, None)
            self._served.pop(realm, None)
            for item in [k for k in self._records if k[0] == realm]:
                self._record_bytes -= record_bytes(self._records.pop(item)[1])

    def records(self, conn: sqlite3.Connection, realm: str, ids: Sequence[str],
                read: Callable[[list[str]], dict[str, MemoryRecord]],
                generations: dict[tuple[str, str], int] | None = None) -> dict[str, MemoryRecord]:
        """The records of ``ids`` that exist in ``conn``'s snapshot of ``realm`` (any status), by id: a record
        kept at the generation its scope holds in the snapshot is served from memory (equal to its row in every
        column but ``usage_stats``: its usage counters are those read when it was kept), the others are read whole
        by ``read`` (a read of those ids in the same snapshot) and kept. ``generations``: the scope generations
        already read in this same snapshot (used, and added to), so a recall's reads read each scope's once."""
        kept = self._records
        wanted = list(dict.fromkeys(ids))
        found = {memory_id: hit for memory_id in wanted if (hit := kept.get((realm, memory_id))) is not None}
        current = _scope_generations(conn, [(hit[0][0], hit[0][1]) for hit in found.values()], generations)
        out: dict[str, MemoryRecord] = {}
        todo: list[str] = []
        for memory_id in wanted:
            hit = found.get(memory_id)
            if hit is not None and current.get((hit[0][0], hit[0][1])) == hit[0][2]:
                rec = hit[1]
                # a record's metadata is its own dict: never one another caller holds
                out[memory_id] = _with_metadata(rec, copy.deepcopy(dict(rec.metadata))) if rec.metadata else rec
            else:
                todo.append(memory_id)
        self.record_hits += len(out)  # a statistic: a lost update under a race is harmless
        if not todo:
            return out
        read_whole = read(todo)
        out.update(read_whole)
        scopes = {rec.scope.storage() for rec in read_whole.values()}
        current.update(_scope_generations(conn, [scope for scope in scopes if scope not in current], generations))
        with self._lock:
            self.record_misses += len(todo)
            kept, limit = self._records, self.record_limit
            for memory_id, rec in read_whole.items():
                kind, key = rec.scope.storage()
                generation = current.get((kind, key))
                if generation is None:  # a file without scope generations: not kept
                    continue
                size = record_bytes(rec)
                old = kept.pop((realm, memory_id), None)
                if old is not None:
                    self._record_bytes -= record_bytes(old[1])
                if size <= limit:  # kept with a metadata dict of its own (the caller holds the one read)
                    own = _with_metadata(rec, copy.deepcopy(dict(rec.metadata))) if rec.metadata else rec
                    kept[(realm, memory_id)] = ((kind, key, generation), own)
                    self._record_bytes += size
            while kept and (len(kept) > MAX_RECORDS or self._record_bytes > limit):
                self._record_bytes -= record_bytes(kept.popitem(last=False)[1][1])
        return out

    def warm(self, conn: sqlite3.Connection, realm: str, now_ms: int,
             read: Callable[[list[str]], dict[str, MemoryRecord]]) -> tuple[int, int]:
        """Keep the views and whole records of ``realm``'s active rows unexpired at ``now_ms`` (epoch ms), as
        :meth:`live_views` and :meth:`records` keep what they read, all read in ``conn``'s snapshot and kept at
        the generation each one's scope holds there: the newest rows first, into the room the bounds leave, never
        evicting what is kept (the views up to :data:`WARM_SHARE` of their count and bytes; the records up to
        their own bounds). A recall of a realm that fits then decodes no row on its first sight of it. ``read``: a
        read of records by id in the same snapshot. Returns ``(views, records)`` this call made servable
        (``(0, 0)`` for a file without scope generations)."""
        generations = _scope_generations(conn, None)
        if not generations:
            return 0, 0
        most_views = int(self.capacity * WARM_SHARE)
        cur = conn.cursor()
        cur.row_factory = sqlite3.Row
        rows = cur.execute(
            f"SELECT {VIEW_COLUMNS}, r.content_hash, r.scope_kind, r.scope_key, r.expires_at_ms FROM records r "
            f"WHERE r.status_kind = 'active' AND {unexpired('r.')} ORDER BY r.rid DESC LIMIT ?",
            (now_ms, max(most_views, MAX_RECORDS))).fetchall()
        views = 0
        with self._lock:
            known, items = self._live.setdefault(realm, {}), self._items
            for row in rows[:most_views]:
                generation = generations.get((row["scope_kind"], row["scope_key"]))
                if generation is None:
                    continue
                item = (realm, row["rid"], row["memory_id"], row["content_hash"], row["updated_at_ms"])
                view = items.get(item)
                if view is None:
                    view = row_to_view(row)
                    size = view_bytes(view)
                    if len(items) >= most_views or self._bytes + size > self.view_limit * WARM_SHARE:
                        break
                    items[item] = view
                    self._bytes += size
                known[row["rid"]] = (view, row["scope_kind"], row["scope_key"], row["expires_at_ms"], generation)
                views += 1
        wanted = [row["memory_id"] for row in rows[:MAX_RECORDS]]
        whole = read(wanted) if wanted else {}
        records = 0
        with self._lock:
            kept, limit = self._records, self.record_limit
            for memory_id in wanted:
                rec = whole.get(memory_id)
                if rec is None or (realm, memory_id) in kept:
                    continue
                kind, key = rec.scope.storage()
                generation = generations.get((kind, key))
                if generation is None:
                    continue
                size = record_bytes(rec)
                if len(kept) >= MAX_RECORDS or self._record_bytes + size > limit:
                    break
                kept[(realm, memory_id)] = ((kind, key, generation), rec)  # read here: no caller holds its metadata
                self._record_bytes += size
                records += 1
        return views, records

    def live_views(self, conn: sqlite3.Connection, realm: str, rids: Sequence[int], kind: str, key: str,
                   now_ms: int, generations: dict[tuple[str, str], int] | None = None) -> dict[int, RecordView]:
        """The views of the rows among ``rids`` that are active in scope ``(kind, key)`` and unexpired at
        ``now_ms`` (epoch ms) in ``conn``'s snapshot of ``realm``, by rid (the others are absent): those read
        live in that scope at the generation the scope holds in the snapshot are served from memory (a write
        to another scope of the realm moves only that scope's), the rest read as :meth:`views` does (one
        statement for their liveness, the changed ones in full). ``generations``: as for :meth:`records`."""
        generation = _scope_generations(conn, [(kind, key)], generations).get((kind, key))
        known = self._live.get(realm) if generation is not None else None  # a plain read of a dict: no lock
        out: dict[int, RecordView] = {}
        if known is None or generation is None:
            todo = list(rids)
        else:
            todo = self._known_views(realm, known, rids, kind, key, generation, now_ms, out)
            self.hits += len(out)  # a statistic: a lost update under a race is harmless
        if not todo:
            return out
        kept: dict[int, tuple[tuple[Any, ...], int | None]] = {}
        self.live_reads += len(todo)  # a statistic: a lost update under a race is harmless
        read = self.views(conn, realm, todo, _LIVE_WHERE, (kind, key, now_ms), kept)
        out.update(read)
        if generation is None:
            return out
        with self._lock:
            known, items = self._live.setdefault(realm, {}), self._items
            fresh: list[tuple[int, RecordView, int | None]] = []
            for rid, view in read.items():
                cached = kept.get(rid)
                if cached is not None and items.get(cached[0]) is view:  # only views kept (the bound is theirs)
                    known[rid] = (view, kind, key, cached[1], generation)
                    fresh.append((rid, view, cached[1]))
            self._serve(realm, kind, key, generation, now_ms, fresh)
        return out

    def _known_views(self, realm: str, known: dict[int, tuple[RecordView, str, str, int | None, int]],
                     rids: Sequence[int], kind: str, key: str, generation: int, now_ms: int,
                     out: dict[int, RecordView]) -> list[int]:
        """Put in ``out`` the views of ``rids`` known live in scope ``(kind, key)`` at ``generation`` and unexpired at
        ``now_ms``: one look-up each in the scope's :class:`_Served` map when it serves them, else the row's
        remembered scope, expiry and generation (the rows found so join the map). Returns the others."""
        served = self._served.get(realm, {}).get((kind, key))  # plain reads of dicts: no lock
        views = served.views if served is not None and served.serves(generation, now_ms) else {}
        todo: list[int] = []
        fresh: list[tuple[int, RecordView, int | None]] = []
        for rid in rids:
            view = views.get(rid)
            if view is not None:
                out[rid] = view
                continue
            hit = known.get(rid)
            if (hit is not None and hit[4] == generation and hit[1] == kind and hit[2] == key
                    and (hit[3] is None or hit[3] > now_ms)):
                out[rid] = hit[0]
                fresh.append((rid, hit[0], hit[3]))
            else:
                todo.append(rid)
        if fresh:
            with self._lock:
                self._serve(realm, kind, key, generation, now_ms,
                            [row for row in fresh if (hit := known.get(row[0])) is not None and hit[0] is row[1]])
        return todo

    def _serve(self, realm: str, kind: str, key: str, generation: int, now_ms: int,
               rows: Sequence[tuple[int, RecordView, int | None]]) -> None:
        """Add ``rows`` (``(rid, view, expires_at_ms)``: kept views found live at ``generation`` of scope ``(kind,
        key)`` of ``realm`` at ``now_ms``) to the scope's :class:`_Served` map: a new one when the scope's holds
        another generation or a row of it has expired since; the realm's latest :data:`SERVED_SCOPES` scopes keep
        theirs. Caller holds the lock."""
        if not rows:
            return
        scopes = self._served.setdefault(realm, {})
        served = scopes.pop((kind, key), None)  # taken out and put back: the latest used last
        if served is None or not served.serves(generation, now_ms):
            served = _Served(generation, rows)
        else:
            served.add(rows)
        scopes[(kind, key)] = served
        while len(scopes) > SERVED_SCOPES:
            del scopes[next(iter(scopes))]

    def views(self, conn: sqlite3.Connection, realm: str, rids: Sequence[int], where: str,
              params: Sequence[Any], kept: dict[int, tuple[tuple[Any, ...], int | None]] | None = None,
              ) -> dict[int, RecordView]:
        """The views of the rows among ``rids`` that satisfy ``where`` (SQL over alias ``r``, ``?`` bound
        to ``params`` after the rids) in ``conn``'s snapshot of ``realm``, by rid (rows that do not are
        absent). Each is the kept view when the row's ``memory_id``, ``content_hash`` and
        ``updated_at_ms`` are those it was kept with, else the row read in full. ``kept``, when given,
        receives each returned row's cache key and ``expires_at_ms``."""
        wanted = list(dict.fromkeys(rids))
        out: dict[int, RecordView] = {}
        stale: list[int] = []
        items = self._items
        cur = conn.cursor()
        cur.row_factory = None  # plain tuples
        for i in range(0, len(wanted), _CHUNK):
            part = wanted[i:i + _CHUNK]
            for rid, memory_id, content_hash, updated_at_ms, expires_at_ms in cur.execute(
                    f"SELECT r.rid, r.memory_id, r.content_hash, r.updated_at_ms, r.expires_at_ms FROM records r "
                    f"WHERE r.rid IN ({', '.join('?' * len(part))}) {where}", (*part, *params)).fetchall():
                item = (realm, rid, memory_id, content_hash, updated_at_ms)
                view = items.get(item)  # a plain read of a dict: safe without the lock
                if kept is not None:
                    kept[rid] = (item, expires_at_ms)
                if view is None:
                    stale.append(rid)
                else:
                    out[rid] = view
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
                    size = view_bytes(view)
                    if key not in items and size <= self.view_limit:
                        items[key] = view
                        self._bytes += size
                while items and (len(items) > self.capacity or self._bytes > self.view_limit):
                    old, gone = items.popitem(last=False)
                    self._bytes -= view_bytes(gone)
                    live = self._live.get(old[0])
                    if live is not None and (hit := live.get(old[1])) is not None and hit[0] is gone:
                        del live[old[1]]
                    for served in self._served.get(old[0], {}).values():
                        if served.views.get(old[1]) is gone:
                            del served.views[old[1]]
        with self._lock:
            self.hits += len(out) - len(stale)
            self.misses += len(stale)
        return out


#: A :class:`MemoryRecord`'s fields in its constructor's order, read at once (``dataclasses.replace`` looks each
#: field up anew, several times slower).
_FIELDS = tuple(f.name for f in dataclasses.fields(MemoryRecord))
_VALUES = operator.attrgetter(*_FIELDS)
_METADATA_AT = _FIELDS.index("metadata")


def _with_metadata(record: MemoryRecord, metadata: Mapping[str, Any]) -> MemoryRecord:
    """``record`` with ``metadata`` in place of its own."""
    values = list(_VALUES(record))
    values[_METADATA_AT] = metadata
    return MemoryRecord(*values)


def _scope_generations(conn: sqlite3.Connection, scopes: Sequence[tuple[str, str]] | None,
                       known: dict[tuple[str, str], int] | None = None) -> dict[tuple[str, str], int]:
    """``(scope kind, scope key) -> generation`` in ``conn``'s snapshot for those of ``scopes`` (``None``: every
    scope of the realm) the file holds a row of (``scope_rows.g``, moved by triggers with every change of a row of
    that scope: :mod:`.schema` step 20); ``{}`` for a file without the column (nothing is then kept). ``known``:
    the generations already read in this same snapshot (they cannot move inside it): those are not read again,
    and the ones read are added to it."""
    wanted = None if scopes is None else list(dict.fromkeys(scopes))
    if wanted is not None and not wanted:
        return {}
    out: dict[tuple[str, str], int] = {}
    if known is not None and wanted is not None:
        out = {scope: known[scope] for scope in wanted if scope in known}
        if len(out) == len(wanted):
            return out
        wanted = [scope for scope in wanted if scope not in out]
    cur = conn.cursor()
    cur.row_factory = None  # plain tuples
    try:
        if wanted is None:
            rows = cur.execute("SELECT scope_kind, scope_key, g FROM scope_rows").fetchall()
        elif len(wanted) == 1:
            rows = cur.execute("SELECT scope_kind, scope_key, g FROM scope_rows WHERE scope_kind = ? AND scope_key = ?",
                               wanted[0]).fetchall()
        else:
            rows = []
            for i in range(0, len(wanted), _CHUNK):
                part = wanted[i:i + _CHUNK]
                rows += cur.execute(
                    "SELECT scope_kind, scope_key, g FROM scope_rows WHERE (scope_kind, scope_key) IN "
                    f"(VALUES {', '.join('(?, ?)' for _ in part)})", [v for scope in part for v in scope]).fetchall()
    except sqlite3.OperationalError:  # a file without scope generations: every row is read
        return {}
    for kind, key, generation in rows:
        out[(kind, key)] = int(generation)
    if known is not None:
        known.update(out)
    return out


def record_bytes(record: MemoryRecord) -> int:
    """The memory a kept ``record`` is counted for: its text's strings and tags (``sys.getsizeof``) plus
    :data:`RECORD_BYTES`."""
    return (RECORD_BYTES + sys.getsizeof(record.title) + sys.getsizeof(record.description)
            + sys.getsizeof(record.body) + sum(map(sys.getsizeof, record.tags)))


def view_bytes(view: RecordView) -> int:
    """The memory ``view`` is counted for (what bounds the cache): its text's strings and tags as
    ``sys.getsizeof`` measures them, plus :data:`VIEW_BYTES`."""
    return (VIEW_BYTES + sys.getsizeof(view.title) + sys.getsizeof(view.description) + sys.getsizeof(view.body)
            + sys.getsizeof(view.tags) + sum(map(sys.getsizeof, view.tags)))
