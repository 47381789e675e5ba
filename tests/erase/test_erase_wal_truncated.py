"""An erase truncates the realm's WAL even while the store's background checkpoint runs: a checkpoint holding
SQLite's checkpointer lock makes a ``TRUNCATE`` answer busy at once, which left the erased bytes in the WAL
file until the next checkpoint."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.model import Scope
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore, realm_db_path
from meta_memory.clock import ManualClock

R, ID = "default", "ana:main"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteAgentMemoryStore]:
    with SqliteAgentMemoryStore(tmp_path / "am", ManualClock(1_700_000_000_000)) as s:
        yield s


def test_an_erase_leaves_no_erased_byte_in_the_wal_while_checkpoints_run(store: SqliteAgentMemoryStore,
                                                                          tmp_path: Path) -> None:
    record_writes.remember(store, R, ID, "Warm", "the realm's file exists")
    db = store._db(R)
    wal = Path(f"{realm_db_path(tmp_path / 'am', R)}-wal")
    stop = threading.Event()

    def checkpoints() -> None:  # what the upkeep thread does, without pause
        while not stop.is_set():
            db.checkpoint(store._connect)

    hammer = threading.Thread(target=checkpoints, daemon=True)
    hammer.start()
    try:
        for n in range(40):
            canary = f"qzkv{n:04d}marker"
            rec, _ = record_writes.remember(store, R, ID, f"Note {n}", f"{canary} under the third stone")
            store.erase(R, Scope.identity(R, ID), rec.memory_id, erased_by="dpo")
            assert canary.encode() not in (wal.read_bytes() if wal.exists() else b""), n
    finally:
        stop.set()
        hammer.join(10)


def test_a_reader_that_outlasts_the_truncation_holds_writes_back_no_longer_than_one_busy_timeout(
        tmp_path: Path) -> None:
    """The erase retries its truncation under the realm's write lock: a reader holding a snapshot through
    every try must not hold the realm's writes for several busy timeouts."""
    with SqliteAgentMemoryStore(tmp_path / "am", ManualClock(1_700_000_000_000), busy_timeout_ms=1000) as s:
        rec, _ = record_writes.remember(s, R, ID, "Note", "qzkv marker under the third stone")
        reader = sqlite3.connect(realm_db_path(tmp_path / "am", R), isolation_level=None)
        try:
            reader.execute("BEGIN")
            reader.execute("SELECT count(*) FROM sqlite_master").fetchone()  # a snapshot the erase outdates
            started = time.monotonic()
            s.erase(R, Scope.identity(R, ID), rec.memory_id, erased_by="dpo")
            took = time.monotonic() - started
        finally:
            reader.close()
    assert took < 3.0, took  # one busy timeout (1 s) and the erase itself, not five
