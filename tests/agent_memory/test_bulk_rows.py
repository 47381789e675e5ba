"""A bulk remember writes what the same records remembered one by one write (SQLite backend).

``remember_batch`` inserts its new records, their full-text rows and change-log entries with multi-row
statements and moves each scope's statistics once: every row must still be the one a single remember
after another would leave, so recall, the in-process index's catch-up and the panel read the same data.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.store import multirow
from meta_memory.agent_memory.store.common import SqlAgentMemoryStore
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore, realm_db_path
from meta_memory.agent_memory.writes import RememberItem
from meta_memory.clock import ManualClock

R = "default"
ID = "lead:main"


def _items(n: int) -> list[RememberItem]:
    """``n`` records; every fifth repeats an earlier one's content (a duplicate), some with new tags (a
    tag merge: an update between the creates)."""
    items: list[RememberItem] = []
    for i in range(n):
        if i % 5 == 4:
            first = items[i - 3]
            items.append(RememberItem(first.title, first.body, ("merged",) if i % 10 == 4 else first.tags))
        else:
            items.append(RememberItem(f"Note {i} about deploys", f"the {i}th runbook step: restart worker {i % 7}",
                                      (f"t{i % 3}",)))
    return items


def _rows(root: Path) -> dict[str, list[tuple[Any, ...]]]:
    """What the realm's database holds, ids and times left out (they differ between two runs)."""
    conn = sqlite3.connect(realm_db_path(root, R))
    try:
        ids = {mid: f"#{n}" for n, (mid,) in enumerate(conn.execute("SELECT memory_id FROM records ORDER BY rid"))}
        return {
            "records": [(rid, scope_key, title, body, tags, status, ids.get(status_detail, status_detail),
                         ids.get(supersedes, supersedes), chash)
                        for rid, scope_key, title, body, tags, status, status_detail, supersedes, chash in conn.execute(
                            "SELECT rid, scope_key, title, body, tags, status_kind, status_detail, supersedes, "
                            "content_hash FROM records ORDER BY rid")],
            "fts": conn.execute("SELECT rowid, title, body, tags FROM records_fts ORDER BY rowid").fetchall(),
            "log": conn.execute("SELECT seq, rid FROM records_fts_log ORDER BY seq").fetchall(),
            "scopes": conn.execute("SELECT * FROM records_fts_scopes").fetchall(),
            "audit": [(op_index, op_kind, ids.get(mid, mid)) for op_index, op_kind, mid in conn.execute(
                "SELECT op_index, op_kind, memory_id FROM audit ORDER BY audit_id")],
        }
    finally:
        conn.close()


def test_a_bulk_remember_writes_the_rows_one_insert_after_another_writes(tmp_path: Path, monkeypatch: Any) -> None:
    """The multi-row path against the row-by-row one (each record inserted, then indexed, in turn): the
    same records, row ids, full-text rows, change-log order, scope statistics and audit rows, with tag
    merges (updates) between the creates and a record stored before the batch."""
    items = _items(600)  # more than one chunk of every multi-row statement, and a remainder

    def load(root: Path) -> list[Any]:
        with SqliteAgentMemoryStore(root, ManualClock(1_700_000_000_000)) as store:
            record_writes.remember(store, R, ID, "Before", "a record written before the batch")
            record_writes.remember(store, R, ID, "Note 8 about deploys", "the 8th runbook step: restart worker 1")
            return record_writes.remember_many(store, R, ID, items)

    bulk_outcomes = load(tmp_path / "bulk")
    with monkeypatch.context() as m:
        m.setattr(SqliteAgentMemoryStore, "_write_new_records", SqlAgentMemoryStore._write_new_records)
        one_outcomes = load(tmp_path / "one")
    assert [(o.created, o.error) for o in bulk_outcomes] == [(o.created, o.error) for o in one_outcomes]
    one, bulk = _rows(tmp_path / "one"), _rows(tmp_path / "bulk")
    assert len(one["records"]) > 500 and any(r[5] == "superseded" for r in one["records"])
    assert bulk == one


def test_a_bulk_remember_is_found_by_recall_right_after(tmp_path: Path) -> None:
    with SqliteAgentMemoryStore(tmp_path / "am", ManualClock(1_700_000_000_000)) as store:
        record_writes.remember_many(store, R, ID, [RememberItem(f"Title {i}", f"body zebra{i} words")
                                                   for i in range(300)])
        from meta_memory.agent_memory.model import Scope
        from meta_memory.recall.fts import match_expression

        expr = match_expression("zebra257")
        assert expr is not None
        found = [rec.title for rec, _ in store.search(R, Scope.identity(R, ID), expr, 10)]
    assert found == ["Title 257"]


@settings(deadline=None, max_examples=200)
@given(st.integers(0, 3000), st.integers(1, 40), st.sampled_from([999, 32766, 250000]))
def test_chunks_cover_the_rows_within_the_limits(rows: int, width: int, limit: int) -> None:
    sizes = multirow.chunk_sizes(rows, width, limit)
    assert sum(sizes) == rows
    assert all(s & (s - 1) == 0 for s in sizes)  # powers of two: a few statement texts, each prepared once
    assert all(s <= multirow.CHUNK_ROWS and s * width <= max(limit, width) for s in sizes)
    assert sizes == sorted(sizes, reverse=True)


def test_insert_many_keeps_the_order_given() -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (seq INTEGER PRIMARY KEY, v TEXT, w INTEGER)")
    rows = [(f"v{i}", i * 3) for i in range(1000)]
    multirow.insert_many(conn, "INSERT INTO t(v, w)", rows)
    assert conn.execute("SELECT v, w FROM t ORDER BY seq").fetchall() == rows
