"""Query-planner statistics of the record store, kept current (SQLite ``sqlite_stat1``; PostgreSQL ``ANALYZE``).

The hot queries (exact-duplicate check, recreation window, record by id, recall's
full-text join, write-order neighbours, recency reads) are written so that one index
answers each of them with every equality column and the requested order, which makes
the right plan the cheapest one whatever the statistics say (see
:mod:`.schema`, migration ``hot-query-indexes``; the plans are asserted in the tests).
Statistics are still kept current, so the planner's row estimates stay close to the
data for every other query (panel listings, review scans):

- at a realm's first open in a process, when the statistics are missing or stale;
- every :data:`CHECK_EVERY_WRITES` write transactions on a realm, the same check;
- ``PRAGMA optimize`` when the store closes.

After each of them, a partial index left without statistics (it holds no row) is given those of a
one-row index (:func:`note_empty_partial_indexes`).

*Stale* means there are no statistics for the current indexes, or the ``records``
row count has grown past twice (or fallen below half) the count noted in
``planner_stats`` when they were taken (``ANALYZE`` under an analysis limit only
estimates counts, so the exact count is noted beside it). Refreshing runs ``ANALYZE`` with ``PRAGMA analysis_limit`` =
:data:`ANALYSIS_LIMIT`, so its cost is bounded (a few milliseconds) however large the
realm grows.

PostgreSQL: without statistics its planner answers the duplicate check by walking the realm's
active records in creation order (measured: the plan tests show it), so the PostgreSQL store runs
``ANALYZE`` on ``records`` when the table has never been analysed or its rows changed by more than
its analysed row count since (:func:`pg_stale`), at open and every :data:`CHECK_EVERY_WRITES` writes
of a process; autovacuum keeps doing the same in the background.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any

__all__ = [
    "ANALYSIS_LIMIT",
    "CHECK_EVERY_WRITES",
    "TABLE_STATEMENTS",
    "analysed_rows",
    "note_empty_partial_indexes",
    "pg_refresh",
    "pg_stale",
    "refresh",
    "stale",
]

#: Rows sampled per index by ``ANALYZE`` (``PRAGMA analysis_limit``).
ANALYSIS_LIMIT = 1000

#: How many write transactions on a realm between two staleness checks.
CHECK_EVERY_WRITES = 1000

#: Indexes whose statistics rows must exist for the statistics to count as current: the duplicate check's,
#: and the quarantine queue's (migration 10), so a realm analysed before that index existed is analysed again.
_PROBE_INDEXES = ("records_scope_status_hash_idx", "records_quarantined_idx")

#: The one-row table noting the exact ``records`` count at the last refresh (created by the ``hot-query-indexes`` migration).
TABLE_STATEMENTS = [
    "CREATE TABLE IF NOT EXISTS planner_stats (id INTEGER PRIMARY KEY CHECK (id = 1), "
    "records INTEGER NOT NULL, analysed_at_ms INTEGER NOT NULL)"
]


def analysed_rows(conn: sqlite3.Connection) -> int | None:
    """The ``records`` row count noted when the statistics were last taken, or ``None`` when there are
    none for the current indexes (no ``sqlite_stat1`` row for the duplicate-check index, or no note)."""
    try:
        stats = conn.execute(
            f"SELECT count(DISTINCT idx) FROM sqlite_stat1 WHERE tbl = 'records' AND idx IN "
            f"({', '.join('?' * len(_PROBE_INDEXES))})", _PROBE_INDEXES).fetchone()
        note = conn.execute("SELECT records FROM planner_stats WHERE id = 1").fetchone()
    except sqlite3.OperationalError:
        return None
    if stats is None or int(stats[0]) < len(_PROBE_INDEXES) or note is None:
        return None
    return int(note[0])


def stale(conn: sqlite3.Connection) -> bool:
    """Whether the statistics are missing, predate the current indexes, or were taken at a row count
    less than half or more than twice today's (an empty table with no statistics is not stale)."""
    rows = int(conn.execute("SELECT count(*) FROM records").fetchone()[0])
    analysed = analysed_rows(conn)
    if analysed is None:
        return rows > 0
    return rows > 2 * analysed + 64 or rows < analysed // 2


def refresh(conn: sqlite3.Connection) -> None:
    """``ANALYZE`` every table with a bounded sample and note the exact ``records`` count, on ``conn``
    inside the caller's write transaction (which holds the realm's write lock)."""
    conn.execute(f"PRAGMA analysis_limit = {int(ANALYSIS_LIMIT)}")
    conn.execute("ANALYZE")
    note_empty_partial_indexes(conn)
    rows = int(conn.execute("SELECT count(*) FROM records").fetchone()[0])
    conn.execute(
        "INSERT INTO planner_stats(id, records, analysed_at_ms) VALUES (1, ?, ?) "
        "ON CONFLICT(id) DO UPDATE SET records = excluded.records, analysed_at_ms = excluded.analysed_at_ms",
        (rows, int(time.time() * 1000)),
    )


def note_empty_partial_indexes(conn: sqlite3.Connection) -> None:
    """Give every partial index of ``records`` that ``ANALYZE`` left without a statistics row (it holds no
    row: no quarantined record, no ranked or expiring one) the statistics of a one-row index. Without a
    row the planner assumes such an index is as large as an unanalysed table and walks a whole index of
    the realm instead (measured: the quarantine queue scanned ``records_scope_updated_idx``); the next
    ``ANALYZE`` replaces the row once the index holds rows."""
    for (name,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'records' AND sql LIKE '% WHERE %' "
            "AND name NOT IN (SELECT idx FROM sqlite_stat1 WHERE tbl = 'records' AND idx IS NOT NULL)").fetchall():
        columns = len(conn.execute("SELECT 1 FROM pragma_index_info(?)", (name,)).fetchall())
        conn.execute("INSERT INTO sqlite_stat1(tbl, idx, stat) VALUES ('records', ?, ?)", (name, " ".join(["1"] * (columns + 1))))


def pg_stale(conn: Any, table: str) -> bool:
    """Whether PostgreSQL's statistics of ``table`` (a schema-qualified, quoted name) are missing while
    it has rows, or more rows changed since the last analysis than it held then."""
    row = conn.execute(
        "SELECT c.reltuples, COALESCE(s.n_mod_since_analyze, 0) "
        "FROM pg_class c LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid WHERE c.oid = %s::regclass",
        (table,),
    ).fetchone()
    if row is None:
        return False
    reltuples, modified = float(row[0]), int(row[1])
    if reltuples < 0:  # never analysed: stale as soon as it holds a row (the activity counters may lag)
        return conn.execute(f"SELECT EXISTS (SELECT 1 FROM {table})").fetchone()[0] is True
    return modified > max(64.0, reltuples)


def pg_refresh(conn: Any, table: str) -> None:
    """``ANALYZE`` ``table`` on ``conn`` (autocommit, or inside the caller's transaction)."""
    conn.execute(f"ANALYZE {table}")
