"""Event bus for memory lifecycle events (seed: Console Memory panel, timeline).

An envelope is ``{event_id, identity, event_type, timestamp_ms, data}`` where
``event_id`` is ``console-evt-<seq>`` with ``seq`` strictly increasing (it
survives restarts when the bus is durable), ``identity`` is the identity the
event concerns or ``"_system"``. With a ``path`` the events are kept in a
small SQLite file (WAL) and the oldest beyond ``retention`` are dropped;
without one they live in memory only.

Consumers either page with :meth:`EventBus.list` (``after`` = a sequence
number or an ``event_id``) or block for new ones with :meth:`EventBus.wait`.

A file that is not a readable SQLite database refuses start-up (a
:class:`~meta_memory.errors.StartupError` naming it and the doctor): event ids
must keep increasing across restarts, which an empty stand-in would break. An
event that cannot be persisted while running (a full disk) is still delivered to
live subscribers and kept in memory; the failures are counted, logged on the 1st,
2nd, 4th, ... one, and reported by :meth:`EventBus.readiness_problem` until a
later persist succeeds.
"""

from __future__ import annotations

import builtins
import json
import sqlite3
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..clock import Clock

__all__ = ["EventBus", "EventEnvelope", "EventSink", "parse_event_seq", "SYSTEM_IDENTITY"]

SYSTEM_IDENTITY = "_system"
_PREFIX = "console-evt-"


@dataclass(frozen=True)
class EventEnvelope:
    seq: int
    identity: str
    event_type: str
    timestamp_ms: int
    data: dict[str, Any]

    @property
    def event_id(self) -> str:
        return f"{_PREFIX}{self.seq}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "event_id": self.event_id,
            "identity": self.identity,
            "event_type": self.event_type,
            "timestamp_ms": self.timestamp_ms,
            "data": self.data,
        }


def parse_event_seq(value: Any) -> int | None:
    """``console-evt-12`` / ``"12"`` / ``12`` -> 12; anything else -> ``None``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str):
        text = value.strip()
        if text.startswith(_PREFIX):
            text = text[len(_PREFIX):]
        if text.isascii() and text.isdigit():
            return int(text)
    return None


class EventSink(Protocol):
    """Where every part publishes timeline events: :class:`EventBus`'s two publishing methods, one
    signature everywhere (tests hand the parts a bus of their own)."""

    def emit(self, event_type: str, data: dict[str, Any], *, identity: str | None = None) -> object:
        """Publish one event (``identity``: the identity it is about, ``None`` for a system event)."""
        ...

    def emit_many(self, events: Sequence[tuple[str, dict[str, Any], str | None]]) -> object:
        """Publish ``(event_type, data, identity)`` events in order, at once."""
        ...


class EventBus:
    """Thread-safe publish/list/wait over lifecycle events.

    Args:
        clock: time source for ``timestamp_ms``.
        path: SQLite file for durable events, or ``None`` for memory only.
        retention: how many newest events are kept (older ones are dropped).
    """

    def __init__(self, clock: Clock, *, path: Path | None = None, retention: int = 10_000) -> None:
        self._clock = clock
        self._retention = max(1, retention)
        self._cond = threading.Condition()
        self._recent: deque[EventEnvelope] = deque(maxlen=self._retention)
        self._conn: sqlite3.Connection | None = None
        self._seq = 0
        self._closed = False
        self._unwritten: list[EventEnvelope] = []  # events a failed persist left behind (written with the next)
        self._failures = 0
        self._last_error: str | None = None
        self.path = path
        self._observers: tuple[Callable[[EventEnvelope], None], ...] = ()
        if path is not None:
            from ..storage.perms import private_dir, private_sqlite

            private_dir(path.parent)
            private_sqlite(path)  # 0600 before SQLite creates it: its -wal/-shm files copy the mode
            try:
                self._open(path)
            except sqlite3.Error as exc:
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None
                from ..errors import StartupError
                from ..storage.integrity import is_corrupt

                if not is_corrupt(exc):
                    raise StartupError(f"cannot open the timeline database {path.name}: {exc}") from None
                raise StartupError(
                    f"the timeline database {path.name} cannot be read ({exc}): run `meta-memory doctor "
                    f"--state-dir <state dir>`, then restore it from a backup or move it away (the timeline "
                    "then starts empty; memory is not affected)") from None

    def _open(self, path: Path) -> None:
        self._conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS events (seq INTEGER PRIMARY KEY, identity TEXT NOT NULL, "
            "event_type TEXT NOT NULL, timestamp_ms INTEGER NOT NULL, data TEXT NOT NULL)"
        )
        rows = self._conn.execute(
            "SELECT seq, identity, event_type, timestamp_ms, data FROM events ORDER BY seq DESC LIMIT ?",
            (self._retention,),
        ).fetchall()
        for seq, identity, event_type, ts, data in reversed(rows):
            self._recent.append(EventEnvelope(seq, identity, event_type, ts, json.loads(data)))
        row = self._conn.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()
        self._seq = int(row[0])

    def emit(self, event_type: str, data: dict[str, Any], *, identity: str | None = None) -> EventEnvelope:
        """Publish one event; returns its envelope. Never raises for a storage failure (logged)."""
        return self.emit_many([(event_type, data, identity)])[0]

    def emit_many(self, events: Sequence[tuple[str, dict[str, Any], str | None]]) -> list[EventEnvelope]:
        """Publish ``(event_type, data, identity)`` events in order, persisted in one transaction (a bulk
        write's events cost one commit, not one each); returns their envelopes. Never raises for a
        storage failure (logged)."""
        with self._cond:
            now = self._clock.now_ms()
            envs = []
            for event_type, data, identity in events:
                self._seq += 1
                envs.append(EventEnvelope(self._seq, identity or SYSTEM_IDENTITY, event_type, now, dict(data)))
            if envs and self._conn is not None and not self._closed:
                batch = [*self._unwritten, *envs][-self._retention:]  # events a failed persist left behind first
                try:
                    self._conn.execute("BEGIN")
                    self._conn.executemany(
                        "INSERT INTO events (seq, identity, event_type, timestamp_ms, data) VALUES (?, ?, ?, ?, ?)",
                        [(e.seq, e.identity, e.event_type, e.timestamp_ms, json.dumps(e.data)) for e in batch],
                    )
                    floor = envs[-1].seq - self._retention
                    if floor > 0:  # seq starts at 1: below that there is nothing to drop
                        self._conn.execute("DELETE FROM events WHERE seq <= ?", (floor,))
                    self._conn.execute("COMMIT")
                    self._unwritten, self._last_error = [], None
                except sqlite3.Error as exc:
                    import logging

                    if self._conn.in_transaction:
                        self._conn.execute("ROLLBACK")
                    self._unwritten = batch
                    self._failures += 1
                    self._last_error = str(exc)
                    if self._failures & (self._failures - 1) == 0:  # the 1st, 2nd, 4th, ...: no flood of lines
                        logging.getLogger("meta_memory.events").warning(
                            "could not persist %d timeline event(s): %s (they stay in memory and reach live "
                            "subscribers; %d persist failure(s) so far)", len(envs), exc, self._failures)
            self._recent.extend(envs)
            self._cond.notify_all()
        for observe in self._observers:
            for env in envs:
                try:
                    observe(env)
                except Exception:  # noqa: BLE001 - an observer never fails a publish
                    logging.getLogger("meta_memory.events").exception("an event observer failed")
        return envs

    def add_observer(self, observe: Callable[[EventEnvelope], None]) -> None:
        """Call ``observe(envelope)`` for every event published from now on, after it is stored (the
        metrics count outcomes this way); its failures are logged, never raised to the publisher."""
        self._observers = (*self._observers, observe)

    def readiness_problem(self) -> str | None:
        """What keeps the timeline database from serving, for ``GET /v1/ready``: the last persist failed
        (events since are in memory only), or a read of it fails; ``None`` when fine or memory-only."""
        with self._cond:
            if self._conn is None:
                return None
            if self._last_error is not None:
                return (f"{len(self._unwritten)} timeline event(s) were not persisted ({self._last_error}); "
                        "they are written with the next event once the database takes writes")
            try:
                self._conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            except sqlite3.Error as exc:
                return f"the timeline database cannot be read: {exc}"
        return None

    @property
    def retention(self) -> int:
        """How many newest events are kept (and listed at most)."""
        return self._retention

    @property
    def last_seq(self) -> int:
        with self._cond:
            return self._seq

    def list(self, after: int | None = None, limit: int = 100) -> list[EventEnvelope]:
        """Events with ``seq > after`` (all retained when ``None``), oldest first, at most ``limit``."""
        floor = after or 0
        with self._cond:
            return [e for e in self._recent if e.seq > floor][: max(0, limit)]

    def wait(self, after: int, timeout_s: float) -> builtins.list[EventEnvelope]:  # ``list`` is the method above
        """Block up to ``timeout_s`` seconds for events newer than ``after``; returns them (maybe empty)."""
        with self._cond:
            if self._seq <= after and not self._closed:
                self._cond.wait(timeout=timeout_s)
            return [e for e in self._recent if e.seq > after]

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            if self._conn is not None:
                self._conn.close()
                self._conn = None
