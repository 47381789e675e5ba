"""The record listing's pager: one keyset-paged listing across every realm, cut from readable rows.

Seed: "Console Memory panel" — ``meta/memory/panel/records``: newest-updated
first; without ``realm`` every realm is one listing and its cursor resumes them
all; the page is cut from the rows the caller may read; ``next_cursor`` names
the page's last row and comes exactly when more readable rows follow; a page
holds at most ``limit`` rows, more only to keep together the rows two realms
hold under one memory id and update time; a store whose cursor does not move
is refused.

The pager is pure: each realm is a :class:`RowSource` (the store's
``records_page`` with the request's filters bound), visibility is a predicate.
Given each realm's newest keys (:class:`RealmHead`), it merges the realms newest
first and reads a realm only once its rows can come next, so a page of the
every-realm listing reads the realms holding its rows and the next one, not every realm.

Order
    ``(updated_at_ms DESC, memory_id DESC)``, ties of the same key across realms
    in the order the realms are given. A cursor ``u:id`` resumes every realm
    strictly after ``(u, id)``; hence all rows sharing the page's last key stay
    on that page.

Guarantee of a walk (first page, then each ``next_cursor`` until ``None``)
    * every page holds only rows the predicate accepted when the page was cut;
    * pages are in listing order and no row appears twice, provided a row's
      ``updated_at_ms`` never decreases (an update moves a row to the front,
      behind the cursor, so a row already listed is not listed again);
    * every row that is readable and keeps its ``(updated_at_ms, memory_id)``
      key for the whole walk appears exactly once — no gaps. Rows created or
      updated during the walk land in front of the cursor and are not part of
      it (a fresh walk shows them), and a row whose readability changes is
      judged when its page is cut;
    * ``next_cursor`` is ``None`` exactly when no readable row follows the
      page's last row at the time the page is cut; with ``max_reads`` a page
      may also end early, with a ``next_cursor`` that resumes it (see
      :func:`page_records`).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from ..errors import AgentMemoryError, InvalidParams
from .cursor import Cursor

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "MAX_REALM_READS",
    "Page",
    "RealmHead",
    "RowSource",
    "SourcePage",
    "StalledCursor",
    "bound_above",
    "default_key",
    "limit_then_filter",
    "newest_rows",
    "page_records",
    "parse_limit",
]

DEFAULT_LIMIT = 50
MAX_LIMIT = 200
#: Most realms one page of the every-realm record listing starts reading (``max_reads`` of
#: :func:`page_records`): past it the page ends early, with a ``next_cursor`` that resumes it.
MAX_REALM_READS = 200

Row = TypeVar("Row")


def parse_limit(value: Any, default: int = DEFAULT_LIMIT, maximum: int = MAX_LIMIT) -> int:
    """The ``limit`` param: ``None`` => ``default``; an integer is clamped to ``[1, maximum]``;
    anything else (bools, floats, strings) raises ``InvalidParams("limit must be an integer", "limit")``."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidParams("limit must be an integer", "limit")
    return max(1, min(maximum, value))


def default_key(row: Any) -> Cursor:
    """The listing key of a row: ``updated_at_ms`` and ``memory_id`` (or ``id``), read as
    attributes or mapping keys."""
    if isinstance(row, Mapping):
        ms, mid = row.get("updated_at_ms"), row.get("memory_id", row.get("id"))
    else:
        ms, mid = getattr(row, "updated_at_ms", None), getattr(row, "memory_id", getattr(row, "id", None))
    if not isinstance(ms, int) or not isinstance(mid, str):
        raise TypeError("a listed row needs int updated_at_ms and str memory_id/id")
    return Cursor(ms, mid)


@dataclass(frozen=True)
class SourcePage(Generic[Row]):
    """One answer of a :class:`RowSource`: up to ``limit`` rows strictly after the given cursor,
    in listing order, and ``next_cursor`` (``None`` when the source has nothing more)."""

    rows: Sequence[Row]
    next_cursor: Cursor | None


class RowSource(Protocol[Row]):
    """One realm's filtered rows: ``fetch(after, limit)`` returns rows strictly after ``after``
    (``None`` = from the newest) in ``(updated_at_ms DESC, memory_id DESC)`` order, at most
    ``limit`` of them, and a ``next_cursor`` past ``after`` (or ``None`` when exhausted).
    A source may return fewer rows than ``limit`` and still a ``next_cursor``."""

    def __call__(self, after: Cursor | None, limit: int) -> SourcePage[Row]: ...


class StalledCursor(AgentMemoryError):
    """The store broke the paging contract (a ``next_cursor`` or a row not past the given cursor).

    -32040, ``reason = "io"``. The listing refuses rather than loop or repeat rows.
    """

    def __init__(self, realm: str, detail: str) -> None:
        super().__init__("io", f"memory panel store for realm '{realm}' {detail}")
        self.realm = realm


@dataclass(frozen=True)
class Page(Generic[Row]):
    """A listing page: ``rows`` as ``(realm, row)`` pairs in listing order, and ``next_cursor``
    (``"<updated_at_ms>:<memory_id>"`` of the last row) or ``None``."""

    rows: list[tuple[str, Row]]
    next_cursor: str | None
    fetches: int = field(default=0, compare=False)


class _RealmStream(Generic[Row]):
    """Readable rows of one realm, fetched lazily in growing batches."""

    def __init__(
        self,
        realm: str,
        source: RowSource[Row],
        after: Cursor | None,
        readable: Callable[[str, Row], bool],
        key: Callable[[Row], Cursor],
        batch: int,
        max_batch: int,
    ) -> None:
        self.realm = realm
        self.source = source
        self.after = after
        self.readable = readable
        self.key = key
        self.batch = batch
        self.max_batch = max_batch
        self.buffer: list[tuple[Cursor, Row]] = []
        self.pos = 0
        self.done = False
        self.fetches = 0

    def _fill(self) -> None:
        while self.pos >= len(self.buffer) and not self.done:
            answer = self.source(self.after, self.batch)
            self.fetches += 1
            self.buffer, self.pos = [], 0
            last: Cursor | None = self.after
            if len(answer.rows) > self.batch:
                raise StalledCursor(self.realm, f"returned {len(answer.rows)} rows for a limit of {self.batch}")
            for row in answer.rows:
                k = self.key(row)
                if last is not None and not k < last:
                    raise StalledCursor(
                        self.realm, f"returned row '{k.encode()}' that is not past cursor '{last.encode()}'"
                    )
                last = k
                if self.readable(self.realm, row):
                    self.buffer.append((k, row))
            nxt = answer.next_cursor
            if nxt is None:
                self.done = True
            else:
                if self.after is not None and not nxt < self.after:
                    raise StalledCursor(
                        self.realm, f"returned next_cursor '{nxt.encode()}' that does not move past '{self.after.encode()}'"
                    )
                if last is not None and last < nxt:
                    raise StalledCursor(
                        self.realm, f"returned next_cursor '{nxt.encode()}' before its own last row '{last.encode()}'"
                    )
                self.after = nxt
            self.batch = min(self.max_batch, self.batch * 2)

    def peek(self) -> tuple[Cursor, Row] | None:
        self._fill()
        return self.buffer[self.pos] if self.pos < len(self.buffer) else None

    def pop(self) -> tuple[Cursor, Row]:
        item = self.peek()
        assert item is not None
        self.pos += 1
        return item


def bound_above(head: Cursor) -> Cursor:
    """A position above ``head`` in listing order (``"<ms>:<id>~"``): reading strictly after it returns ``head``
    and every row after it. Used as the start of a realm whose newest row is ``head``: a row between the two
    would be newer than ``head``, written after it was read."""
    return Cursor(head.updated_at_ms, head.memory_id + "~")


@dataclass(frozen=True)
class RealmHead:
    """What a listing knows of one realm's rows without reading them: ``keys``, the keys of its newest rows of
    any status, newest first (as they were when read), and ``complete``: whether those are all its rows."""

    keys: tuple[Cursor, ...]
    complete: bool

    def start(self, cursor: Cursor | None) -> tuple[bool, Cursor | None]:
        """``(listed, after)`` for a page resuming after ``cursor``: whether the realm can hold a row of it, and
        the position to read it from (no row of the realm lies between ``after`` and its first row after
        ``cursor``, or ``after`` is ``cursor``)."""
        for k in self.keys:
            if cursor is None or k < cursor:
                above = bound_above(k)
                return True, above if cursor is None or above < cursor else cursor
        if self.complete:
            return False, None
        return True, cursor


class _Newest:
    """A heap entry's order: the greatest :class:`Cursor` first."""

    __slots__ = ("key",)

    def __init__(self, key: Cursor) -> None:
        self.key = key

    def __lt__(self, other: _Newest) -> bool:
        return other.key < self.key

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Newest) and other.key == self.key


def page_records(
    sources: Mapping[str, RowSource[Row]],
    readable: Callable[[str, Row], bool],
    limit: int,
    cursor: Cursor | None = None,
    key: Callable[[Row], Cursor] = default_key,
    max_batch: int = 1000,
    heads: Mapping[str, RealmHead] | None = None,
    max_reads: int | None = None,
    stop_empty: bool = True,
) -> Page[Row]:
    """Cut one page of the listing (see the module docstring for order and guarantee).

    ``sources`` maps realm -> :class:`RowSource` (iteration order breaks ties of one key
    across realms); ``readable(realm, row)`` is the caller's visibility;
    ``limit >= 1`` (use :func:`parse_limit`); ``cursor`` is the parsed ``cursor``
    param. Each source is asked for ``limit + 1`` rows first, then for doubling
    batches (capped at ``max_batch``) while its rows are unreadable.

    ``heads`` (optional) maps a realm to its :class:`RealmHead` (the keys of its newest rows, read when the
    page is cut). A realm with a head is asked for rows only once every row the page has taken is newer
    than the first of those keys after ``cursor``, and not at all when it has none and they are all its
    rows; so a page reads the realms that can hold its rows (and the one holding the row after them), not
    every realm. A realm without an entry is asked as before. A realm's rows newer than its head (written
    meanwhile) are left out of this walk, as rows written in front of the cursor are.

    ``max_reads`` (with ``heads``) bounds how many realms one page starts reading: when the next row could
    come from one more realm past it, the page ends there, with fewer rows than ``limit`` (none, perhaps)
    and a ``next_cursor`` that resumes the listing exactly where it stopped: its last row's key, or, for a
    page without rows, the position above the realm it did not read (``"<ms>:<id>~"``). Every row is
    still listed once, in order, by the walk. A page that could not move past ``cursor`` without it reads
    on (so a walk always ends), and so does a page without rows when ``stop_empty`` is false (its cursor
    would name a row no page showed: under access control, a row the caller may not read).

    Raises :class:`StalledCursor` when a source returns a row or a ``next_cursor``
    that does not move past the cursor it was given, more rows than asked, or a
    ``next_cursor`` before its own last row; ``ValueError`` for ``limit < 1``.
    """
    if limit < 1:
        raise ValueError("limit must be at least 1")
    streams: list[_RealmStream[Row]] = []
    # (order, 0 = not yet read / 1 = its next readable row, realm order, stream): the newest first; a realm
    # not yet read sorts by the position above its rows (its ``after``), so it is read before any row older
    heap: list[tuple[_Newest, int, int, _RealmStream[Row]]] = []
    for realm, source in sources.items():
        after = cursor
        if heads is not None and realm in heads:
            listed, after = heads[realm].start(cursor)
            if not listed:
                continue
        stream = _RealmStream(realm, source, after, readable, key, limit + 1, max(max_batch, limit + 1))
        index = len(streams)
        streams.append(stream)
        if heads is not None and realm in heads and after is not None:
            heap.append((_Newest(after), 0, index, stream))
        else:
            first = stream.peek()
            if first is not None:
                heap.append((_Newest(first[0]), 1, index, stream))
    heapq.heapify(heap)

    rows: list[tuple[str, Row]] = []
    reads = 0
    stopped: list[Cursor] = []  # the position above the realm the page stopped short of reading

    def best() -> _RealmStream[Row] | None:
        """The stream holding the next row of the listing (reading the realms above it first); ``None`` at
        the end, or when ``max_reads`` stops the page (``stopped`` then holds where)."""
        nonlocal reads
        while heap:
            top, ready, index, stream = heap[0]
            if ready:
                return stream
            if (max_reads is not None and reads >= max_reads and (cursor is None or top.key < cursor)
                    and (rows or stop_empty)):
                stopped.append(top.key)
                return None
            reads += 1
            heapq.heappop(heap)
            first = stream.peek()
            if first is not None:
                heapq.heappush(heap, (_Newest(first[0]), 1, index, stream))
        return None

    last: Cursor | None = None
    while not stopped:
        chosen = best()
        if chosen is None:
            break
        head_key = chosen.peek()[0]  # type: ignore[index]
        if len(rows) >= limit and head_key != last:
            break
        _, _, index, _ = heapq.heappop(heap)
        k, row = chosen.pop()
        rows.append((chosen.realm, row))
        last = k
        following = chosen.peek()
        if following is not None:
            heapq.heappush(heap, (_Newest(following[0]), 1, index, chosen))
    more = bool(stopped)
    if not more:
        more = best() is not None or bool(stopped)  # stopped at max_reads: more rows may follow
    resume = last if last is not None else (stopped[0] if stopped else None)
    fetches = sum(s.fetches for s in streams)
    return Page(rows=rows, next_cursor=resume.encode() if more and resume is not None else None, fetches=fetches)


def newest_rows(
    realms: Sequence[str],
    newest: Mapping[str, Row | None],
    fetch: Callable[[str], Sequence[Row]],
    key: Callable[[Row], Any],
    limit: int,
) -> dict[str, Sequence[Row]]:
    """``{realm: fetch(realm)}`` of the realms of ``realms`` that can hold one of the ``limit`` newest rows
    across them (each realm's rows newest first by ``key``, at most ``limit`` of them), given each realm's
    newest row (``newest``; ``None`` or absent: the realm lists none and is not read).

    Realms are read newest head first, until ``limit`` rows are read and the next realm's newest row is
    older than the ``limit``-th newest of them: so the ``limit`` newest rows of the answer's realms are the
    ``limit`` newest of every realm (ties of ``key`` kept whole), and at most ``limit`` realms holding a row
    are read (each read adds its newest row, newer than or tied with every realm not read yet)."""
    order = sorted((r for r in realms if newest.get(r) is not None),
                   key=lambda r: key(newest[r]), reverse=True)  # type: ignore[arg-type]
    got: dict[str, Sequence[Row]] = {}
    top: list[Any] = []  # keys of the ``limit`` newest rows read, newest first
    for realm in order:
        if len(top) >= limit and key(newest[realm]) < top[limit - 1]:  # type: ignore[arg-type]
            break
        rows = fetch(realm)
        got[realm] = rows
        top = sorted([*top, *(key(row) for row in rows)], reverse=True)[:limit]
    return got


def limit_then_filter(rows: Sequence[Row], limit: int, readable: Callable[[Row], bool]) -> list[Row]:
    """The other filtered listings (``injections``, ``proposals``, the quarantine queue's side lists, ...): ``limit`` is
    applied to the store's rows first, then the access filter, so a restricted caller can receive
    fewer than ``limit`` rows (seed). ``rows`` are in the listing's order."""
    return [row for row in rows[: max(0, limit)] if readable(row)]
