"""Multi-row ``INSERT`` statements for the SQLite store: one statement per chunk of rows, not one per row.

A bulk write (``remember_batch``: up to 1,024 records in one transaction) used to run one ``INSERT`` per
row into each of the records table, the full-text table and its change log. Each statement is a call
into SQLite that releases the interpreter lock and takes it back, and while another thread of the
gateway holds that lock (the next call's JSON and validation) each of those thousands of hand-offs can
wait for it; ``executemany`` steps once per row too. :func:`insert_many` writes the same rows, in the
same order, with ``INSERT INTO t(cols) VALUES (...), (...), ...``: a chunk of up to :data:`CHUNK_ROWS`
rows is one step.

Chunk sizes are powers of two (a remainder of 232 rows is 128 + 64 + 32 + 8), so a table has at most
nine statement texts and each is prepared once per connection (the driver's statement cache), never
per call. A chunk also stays under the connection's bound-parameter limit.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from functools import lru_cache
from itertools import chain
from typing import Any

__all__ = ["CHUNK_ROWS", "chunk_sizes", "insert_many", "statement"]

#: Most rows one statement inserts (a power of two).
CHUNK_ROWS = 256

#: Bound parameters one statement may hold: SQLite's compile-time default before 3.32 (999) is the
#: floor every build honours; later builds allow 32,766 or more, read from the connection.
_MIN_VARIABLES = 999


def chunk_sizes(rows: int, width: int, max_variables: int) -> list[int]:
    """The chunk sizes (rows per statement, each a power of two, largest first) that cover ``rows`` rows
    of ``width`` values each, no chunk over :data:`CHUNK_ROWS` rows nor ``max_variables`` values.
    ``chunk_sizes(1000, 4, 32766)`` is ``[256, 256, 256, 128, 64, 32, 8]``."""
    if rows < 0 or width < 1:
        raise ValueError("rows must be >= 0 and width >= 1")
    cap = CHUNK_ROWS
    while cap > 1 and cap * width > max_variables:
        cap //= 2
    sizes: list[int] = []
    left = rows
    size = cap
    while left:
        while size > left:
            size //= 2
        sizes.append(size)
        left -= size
    return sizes


@lru_cache(maxsize=256)
def statement(head: str, width: int, rows: int) -> str:
    """``<head> VALUES (?, ...), ...``: ``rows`` groups of ``width`` placeholders (written once per shape).
    ``head`` is ``INSERT INTO <table>(<columns>)``."""
    group = "(" + ", ".join("?" * width) + ")"
    return f"{head} VALUES {', '.join([group] * rows)}"


def insert_many(conn: sqlite3.Connection, head: str, rows: Sequence[Sequence[Any]]) -> None:
    """Insert ``rows`` (each a sequence of the same length: the values of ``head``'s columns, in order)
    in the order given, one statement per chunk (:func:`chunk_sizes`). ``head`` is
    ``INSERT INTO <table>(<columns>)``; no rows is nothing. SQLite errors propagate."""
    if not rows:
        return
    width = len(rows[0])
    limit = max(_MIN_VARIABLES, conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER))
    at = 0
    for size in chunk_sizes(len(rows), width, limit):
        params = list(chain.from_iterable(rows[at:at + size]))
        conn.execute(statement(head, width, size), params)
        at += size
