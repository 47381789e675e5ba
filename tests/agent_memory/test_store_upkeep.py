"""Index merges and WAL checkpoints run off the write path: the writer does neither, a background thread does."""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
import uuid
from pathlib import Path

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.model import Scope
from meta_memory.agent_memory.store import upkeep as ckpt
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore, realm_db_path
from meta_memory.agent_memory.store.upkeep import BackgroundUpkeep
from meta_memory.errors import AgentMemoryError
from meta_memory.storage.disk import disk_full_error


def _wait(predicate, timeout_s: float = 10.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_committed_records_reach_the_database_file_without_the_writer_checkpointing(tmp_path: Path) -> None:
    with SqliteAgentMemoryStore(tmp_path / "am") as store:
        marker = uuid.uuid4().hex
        record_writes.remember(store, "default", "lead:main", "Seed", "opens the realm")
        db = store._db("default")
        assert db.writer.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
        record_writes.remember(store, "default", "lead:main", "Marked", f"the marker {marker}")
        path = realm_db_path(tmp_path / "am", "default")
        # the commit is in the WAL at once; the checkpoint thread copies it into the database file
        assert _wait(lambda: marker.encode() in path.read_bytes())
        assert _wait(lambda: db.commits_since_checkpoint == 0)


def test_the_writer_checkpoints_itself_when_the_background_falls_behind(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("meta_memory.agent_memory.store.upkeep.needs_inline_checkpoint", lambda n: n >= 1)  # every commit
    with SqliteAgentMemoryStore(tmp_path / "am") as store:
        store._upkeep.stop()  # no background rounds at all
        marker = uuid.uuid4().hex
        for i in range(3):
            record_writes.remember(store, "default", "lead:main", f"Note {i}", f"{marker} {i}")
        assert store._db("default").commits_since_checkpoint == 0
        assert f"{marker} 2".encode() in realm_db_path(tmp_path / "am", "default").read_bytes()


def test_one_checkpoint_covers_the_commits_of_a_moment_and_stop_ends_the_thread() -> None:
    calls: list[str] = []
    done = threading.Event()

    def run(realm: str) -> None:
        calls.append(realm)
        done.set()

    worker = BackgroundUpkeep(run, delay_s=0.3)
    for _ in range(50):
        worker.wrote("a")
    worker.wrote("b")
    assert done.wait(5)
    time.sleep(0.2)
    assert sorted(calls) == ["a", "b"]
    worker.stop()
    worker.wrote("a")
    time.sleep(0.5)
    assert sorted(calls) == ["a", "b"]
    assert worker._thread is not None and not worker._thread.is_alive()


def test_a_steady_stream_of_writes_does_not_grow_the_wal_commit_by_commit(tmp_path: Path) -> None:
    with SqliteAgentMemoryStore(tmp_path / "am") as store:
        store._upkeep.stop()
        record_writes.remember(store, "default", "lead:main", "Seed", "opens the realm")
        wal = Path(f"{realm_db_path(tmp_path / 'am', 'default')}-wal")
        before = wal.stat().st_size
        for i in range(5):  # no checkpoint at all: each commit appends its frames
            record_writes.remember(store, "default", "lead:main", f"Note {i}", f"a note of the stream, number {i}")
        per_commit = (wal.stat().st_size - before) / 5
        assert per_commit > 0
        store._upkeep = BackgroundUpkeep(store._upkeep_realm, delay_s=0.02)  # rounds while the stream goes on
        written = 0
        stop_at = time.monotonic() + 2.0
        while time.monotonic() < stop_at:
            record_writes.remember(store, "default", "lead:main", f"Stream {written}", f"a note of the stream, number {written}")
            written += 1
        # each round's checkpoint copies the WAL to its end although writes kept coming, so the next write
        # starts it over: it holds a few rounds' commits, not every commit of the stream
        assert written >= 100
        assert wal.stat().st_size < written * per_commit / 2
        assert len(store.active_records("default", Scope.identity("default", "lead:main"))) == written + 6


def test_the_inline_bound_is_far_above_a_moment_of_writes() -> None:
    assert ckpt.needs_inline_checkpoint(ckpt.INLINE_CHECKPOINT_COMMITS)
    assert not ckpt.needs_inline_checkpoint(ckpt.INLINE_CHECKPOINT_COMMITS - 1)


def _segments(path: Path) -> int:
    import sqlite3

    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT count(DISTINCT segid) FROM records_fts_idx").fetchone()[0])
    finally:
        conn.close()


def test_full_text_segments_are_merged_in_the_background_not_at_commit(tmp_path: Path) -> None:
    from meta_memory.agent_memory.model import Scope
    from meta_memory.recall.fts import match_expression

    with SqliteAgentMemoryStore(tmp_path / "am") as store:
        record_writes.remember(store, "default", "lead:main", "Seed", "opens the realm")
        db = store._db("default")
        assert not ckpt.merge_settings_due(db.writer)
        store._upkeep.stop()  # first: no background rounds, so every write leaves its own segment
        for i in range(24):  # past FTS5's default crisis merge (16 segments of a level, merged in a commit)
            record_writes.remember(store, "default", "lead:main", f"Note {i}", f"kiwi number {i}")
        path = realm_db_path(tmp_path / "am", "default")
        piled = _segments(path)
        assert piled >= 24
        store._upkeep = BackgroundUpkeep(store._upkeep_realm)  # then a round after the next write
        record_writes.remember(store, "default", "lead:main", "Last", "kiwi last")
        assert _wait(lambda: _segments(path) <= 4)
        hits = store.search("default", Scope.identity("default", "lead:main"), match_expression("kiwi") or "", 50)
        assert len(hits) == 25


def test_a_realm_written_before_the_crisis_merge_setting_gets_it_at_open(tmp_path: Path) -> None:
    import sqlite3

    with SqliteAgentMemoryStore(tmp_path / "am") as store:
        record_writes.remember(store, "default", "lead:main", "Seed", "opens the realm")
    path = realm_db_path(tmp_path / "am", "default")
    conn = sqlite3.connect(path)
    conn.execute("DELETE FROM records_fts_config WHERE k = 'crisismerge'")  # as the previous version left it
    conn.commit()
    assert ckpt.merge_settings_due(conn)
    conn.close()
    with SqliteAgentMemoryStore(tmp_path / "am") as store:
        record_writes.remember(store, "default", "lead:main", "Again", "reopens the realm")
        assert not ckpt.merge_settings_due(store._db("default").writer)
        crisis = store._db("default").writer.execute("SELECT v FROM records_fts_config WHERE k = 'crisismerge'")
        assert crisis.fetchone()[0] == ckpt.CRISIS_MERGE_SEGMENTS


_UPKEEP_LOG = "meta_memory.agent_memory.store.upkeep"


def _rounds(failure: Exception, count: int) -> BackgroundUpkeep:
    """A running upkeep thread whose every round raises ``failure``, after ``count`` rounds."""
    done = threading.Semaphore(0)

    def round_(realm: str) -> None:
        done.release()
        raise failure

    bg = BackgroundUpkeep(round_, delay_s=0.0)
    for _ in range(count):
        bg.wrote("default")
        assert done.acquire(timeout=10)
    bg.stop()
    return bg


def test_a_full_disk_during_upkeep_logs_one_line_naming_the_disk_other_failures_a_traceback(caplog) -> None:  # type: ignore[no-untyped-def]
    full = disk_full_error(Path("/"), "index merge or WAL checkpoint")
    with caplog.at_level(logging.WARNING, logger=_UPKEEP_LOG):
        _rounds(full, 5)
    records = [r for r in caplog.records if r.name == _UPKEEP_LOG]
    assert len(records) == 3  # the 1st, 2nd and 4th full-disk round; never a flood of lines
    for record in records:
        line = record.getMessage()
        assert record.exc_info is None and "\n" not in line
        assert "realm default" in line and "no space left on the disk mounted at /" in line
    caplog.clear()
    # an unexpected failure keeps its traceback, every time
    with caplog.at_level(logging.WARNING, logger=_UPKEEP_LOG):
        _rounds(AgentMemoryError("io", "write failed: disk I/O error"), 2)
        _rounds(RuntimeError("a bug"), 1)
    records = [r for r in caplog.records if r.name == _UPKEEP_LOG]
    assert len(records) == 3 and all(r.exc_info is not None for r in records)
    assert "index merge or WAL checkpoint of realm default failed" in records[0].getMessage()


def test_the_stores_upkeep_round_refuses_a_full_disk_as_disk_full_naming_the_disk(tmp_path: Path) -> None:
    with SqliteAgentMemoryStore(tmp_path / "am") as store:
        record_writes.remember(store, "default", "lead:main", "Seed", "opens the realm")
        db = store._db("default")

        def full(connect: object, **_: object) -> None:
            raise sqlite3.OperationalError("database or disk is full")

        db.checkpoint = full  # type: ignore[method-assign]
        try:
            store._upkeep_realm("default")
        except AgentMemoryError as exc:
            refused = exc
        else:  # pragma: no cover - the round must be refused
            raise AssertionError("the upkeep round was not refused")
        assert refused.reason == "disk_full"
        assert "index merge or WAL checkpoint refused: no space left on the disk mounted at" in refused.message
