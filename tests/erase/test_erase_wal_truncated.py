"""An erase truncates the realm's WAL even while the store's background checkpoint runs: a checkpoint holding
SQLite's checkpointer lock makes a ``TRUNCATE`` answer busy at once, which left the erased bytes in the WAL
file until the next checkpoint."""

from __future__ import annotations

import threading
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
