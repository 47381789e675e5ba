"""The record listing's keyset cursor: ``<updated_at_ms>:<memory_id>``.

Seed: "Console Memory panel" (``meta/memory/panel/records``); reference §7.

Rows are listed newest-updated first: ordered by ``(updated_at_ms DESC,
memory_id DESC)``. Memory ids compare by Unicode code point, which is the
order of their UTF-8 bytes and of SQLite's ``BINARY`` collation, so a store
query ``updated_at_ms < ? OR (updated_at_ms = ? AND memory_id < ?)`` and
:meth:`Cursor.precedes` agree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import InvalidParams

__all__ = ["Cursor", "Keyed", "MAX_CURSOR_MS", "parse_cursor", "row_cursor"]

MAX_CURSOR_MS = 2**64 - 1
_DIGITS = re.compile(r"[0-9]+")
_MAX_DIGITS = len(str(MAX_CURSOR_MS)) + 8  # leading zeros allowed; longer text is refused before int()


class Keyed(Protocol):
    """A listed row: anything with ``updated_at_ms`` (int, ms) and ``memory_id`` (str)."""

    @property
    def updated_at_ms(self) -> int: ...

    @property
    def memory_id(self) -> str: ...


@dataclass(frozen=True, order=True)
class Cursor:
    """A position in the listing: just after the row ``(updated_at_ms, memory_id)``.

    Ordering of ``Cursor`` values is ascending by ``(updated_at_ms, memory_id)``;
    the listing walks them from greatest to least.
    """

    updated_at_ms: int
    memory_id: str

    def encode(self) -> str:
        """``"<updated_at_ms>:<memory_id>"``."""
        return f"{self.updated_at_ms}:{self.memory_id}"

    def precedes(self, row: Keyed) -> bool:
        """``True`` when ``row`` comes strictly after this cursor in listing order
        (``updated < ms`` or ``updated == ms and memory_id < id``)."""
        return (row.updated_at_ms, row.memory_id) < (self.updated_at_ms, self.memory_id)

    def __str__(self) -> str:
        return self.encode()


def row_cursor(row: Keyed) -> Cursor:
    """The cursor that names ``row`` (a page's last row gives ``next_cursor``)."""
    return Cursor(row.updated_at_ms, row.memory_id)


def parse_cursor(value: Any) -> Cursor | None:
    """Parse the ``cursor`` param. ``None`` => ``None`` (start of the listing).

    Split at the first ``':'``; the left part must be at most 28 ASCII digits
    forming a non-negative integer <= 2**64-1 (longer text is refused before it
    is read as a number); the right part (the memory id, which may
    itself contain ``':'``) must be non-empty. Anything else raises
    ``InvalidParams("malformed cursor", "cursor")``.
    """
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidParams("malformed cursor", "cursor")
    ms, sep, memory_id = value.partition(":")
    if not sep or not memory_id or len(ms) > _MAX_DIGITS or not _DIGITS.fullmatch(ms):
        raise InvalidParams("malformed cursor", "cursor")
    number = int(ms)
    if number > MAX_CURSOR_MS:
        raise InvalidParams("malformed cursor", "cursor")
    return Cursor(number, memory_id)
