"""The durable event bus: events published together keep their order and survive a reopen."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

from meta_memory.clock import ManualClock
from meta_memory.events import bus as bus_module
from meta_memory.events.bus import EventBus, outbox_path


def test_events_published_together_are_numbered_in_order_and_survive_a_reopen(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    bus = EventBus(ManualClock(1_000), path=path, retention=5)
    bus.emit("first", {"n": 0}, identity="a:1")
    envs = bus.emit_many([("batch", {"n": i}, "a:1") for i in range(1, 4)] + [("system", {}, None)])
    assert [e.seq for e in envs] == [2, 3, 4, 5]
    assert envs[-1].identity == "_system"
    bus.emit_many([("more", {"n": 9}, "b:1")])
    bus.close()
    again = EventBus(ManualClock(2_000), path=path, retention=5)
    kept = again.list()
    assert [(e.seq, e.event_type) for e in kept] == [(2, "batch"), (3, "batch"), (4, "batch"), (5, "system"), (6, "more")]
    assert again.emit("next", {}).seq == 7
    again.close()


# -- the outbox: a publish appends to a file, a drainer moves it into the database ---------------------

_CHILD = r"""
import sys, threading
from pathlib import Path
from meta_memory.clock import ManualClock
from meta_memory.events import bus as bus_module
bus_module.DRAIN_DELAY_S = 3600.0  # the drainer never runs before the kill
bus = bus_module.EventBus(ManualClock(5_000), path=Path(sys.argv[1]), retention=1_000)
bus.emit("before", {"n": -1}, identity="a:1")
bus._drain()  # one event already in the database, the rest only in the outbox

def write(realm):
    for i in range(100):
        bus.emit("memory.record.created", {"realm": realm, "n": i}, identity="a:1")

threads = [threading.Thread(target=write, args=(r,)) for r in ("one", "two")]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(len(bus.list(limit=1_000)), flush=True)
sys.stdin.read()
"""


def test_events_acknowledged_by_two_writers_survive_a_kill_in_sequence_order(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys

    path = tmp_path / "events.sqlite3"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True, env=env)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "201"  # every publish returned: acknowledged
        with sqlite3.connect(path) as conn:  # the database has only the drained one
            assert conn.execute("SELECT seq FROM events").fetchall() == [(1,)]
        assert outbox_path(path).stat().st_size > 0
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    again = EventBus(ManualClock(9_000), path=path, retention=1_000)
    try:
        kept = again.list(limit=1_000)
        assert [e.seq for e in kept] == list(range(1, 202))
        for realm in ("one", "two"):  # each writer's events in the order it published them
            assert [e.data["n"] for e in kept if e.data.get("realm") == realm] == list(range(100))
        assert outbox_path(path).stat().st_size == 0  # moved into the database at start-up
        with sqlite3.connect(path) as conn:
            assert conn.execute("SELECT COUNT(*), MAX(seq) FROM events").fetchone() == (201, 201)
        assert again.emit("next", {}).seq == 202
    finally:
        again.close()


def test_an_outbox_left_by_a_killed_process_is_moved_in_at_start_up(tmp_path: Path) -> None:
    """Lines in sequence order, one the drain had already committed (skipped, not doubled), and a
    last line cut short by the kill (never acknowledged: skipped)."""
    path = tmp_path / "events.sqlite3"
    bus = EventBus(ManualClock(1_000), path=path)
    bus.emit("drained", {"n": 1}, identity="a:1")
    bus.close()
    outbox_path(path).write_bytes(
        b'[1,"a:1","drained",1000,{"n":1}]\n'
        b'[2,"a:1","memory.record.created",1500,{"realm":"default","record_id":"r2"}]\n'
        b'[3,"_system","other",1600,{}]\n'
        b'[4,"a:1","memory.rec')
    again = EventBus(ManualClock(2_000), path=path)
    try:
        assert [(e.seq, e.event_type, e.data) for e in again.list()] == [
            (1, "drained", {"n": 1}), (2, "memory.record.created", {"realm": "default", "record_id": "r2"}),
            (3, "other", {})]
        assert again.emit("next", {}).seq == 4
    finally:
        again.close()


def test_an_event_is_listed_as_soon_as_it_is_published_and_reaches_the_database_with_the_drain(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bus_module, "DRAIN_DELAY_S", 0.01)
    path = tmp_path / "events.sqlite3"
    bus = EventBus(ManualClock(1_000), path=path)
    try:
        waiter: list[list[int]] = []
        listening = threading.Thread(target=lambda: waiter.append([e.seq for e in bus.wait(0, 5.0)]))
        listening.start()
        env = bus.emit("memory.record.created", {"realm": "default", "record_id": "r1"}, identity="a:1")
        assert [e.seq for e in bus.list()] == [env.seq]  # visible at once, drained or not
        listening.join(5.0)
        assert waiter == [[env.seq]]
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:
            with sqlite3.connect(path) as conn:
                if conn.execute("SELECT seq FROM events").fetchall() == [(env.seq,)]:
                    break
            time.sleep(0.01)
        else:
            raise AssertionError("the drainer never moved the event into the database")
        assert outbox_path(path).stat().st_size == 0
    finally:
        bus.close()


def test_a_failed_drain_keeps_the_events_in_the_outbox_and_says_so(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bus_module, "DRAIN_DELAY_S", 3600.0)
    path = tmp_path / "events.sqlite3"
    bus = EventBus(ManualClock(1_000), path=path)
    try:
        bus.emit("kept", {}, identity="a:1")
        assert bus._conn is not None
        bus._conn.execute("DROP TABLE events")  # every insert now fails
        bus._drain()
        problem = bus.readiness_problem()
        assert problem is not None and "1 timeline event(s) wait in the outbox" in problem
        assert b'"kept"' in outbox_path(path).read_bytes()
        bus._conn.execute("CREATE TABLE events (seq INTEGER PRIMARY KEY, identity TEXT NOT NULL, "
                          "event_type TEXT NOT NULL, timestamp_ms INTEGER NOT NULL, data TEXT NOT NULL)")
        bus._drain()
        assert bus.readiness_problem() is None
        assert outbox_path(path).stat().st_size == 0
    finally:
        bus.close()


@pytest.mark.parametrize("line", [b"[" * 100_000 + b"]" * 100_000, b'[9' + b"9" * 40 + b', "a:1", "x", 1, {}]'],
                         ids=["nested past the reader", "a number SQLite cannot hold"])
def test_an_outbox_line_the_bus_never_writes_stops_no_start(tmp_path: Path, line: bytes) -> None:
    """A line left in ``events.outbox`` that this bus never writes (an editor, a disk error) used to stop every
    start with a traceback (a RecursionError, an OverflowError); it is skipped."""
    from support import meta_memory_cli

    state = tmp_path / "state"
    assert meta_memory_cli("remember", "--identity", "lead:main", "--state-dir", str(state), "One", "first").returncode == 0
    with open(state / "events.outbox", "ab") as box:
        box.write(line + b"\n")
    again = meta_memory_cli("remember", "--identity", "lead:main", "--state-dir", str(state), "Two", "second")
    assert again.returncode == 0 and b"Traceback" not in again.stderr, again.stderr
    listed = meta_memory_cli("list", "--identity", "lead:main", "--state-dir", str(state))
    assert listed.returncode == 0 and b"One" in listed.stdout and b"Two" in listed.stdout
