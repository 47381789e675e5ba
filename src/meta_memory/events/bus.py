"""Event bus for memory lifecycle events (seed: Console Memory panel, timeline).

An envelope is ``{event_id, identity, event_type, timestamp_ms, data}`` where
``event_id`` is ``console-evt-<seq>`` with ``seq`` strictly increasing (it
survives restarts when the bus is durable), ``identity`` is the identity the
event concerns or ``"_system"``. With a ``path`` the events are kept in a
small SQLite file (WAL) and the oldest beyond ``retention`` are dropped;
without one they live in memory only.

Consumers either page with :meth:`EventBus.list` (``after`` = a sequence
number or an ``event_id``) or block for new ones with :meth:`EventBus.wait`.

Publishing does not commit the timeline database. Each event is appended, before :meth:`EventBus.emit`
returns, as one line to the timeline's outbox file (``<name>.outbox`` beside the database: one ``write``
system call, in sequence order, under the bus's lock), which makes it exactly as durable as a commit with
``synchronous=NORMAL`` was: it survives the process being killed, not a power cut. A background drainer
moves the outbox into the database in one transaction at most :data:`DRAIN_DELAY_S` later and empties the
file; opening the bus (a restart, after a crash too) and :meth:`EventBus.close` drain whatever is left,
in sequence order, before anything is read. Readers never wait for the drainer: :meth:`EventBus.list`
and :meth:`EventBus.wait` answer from memory, where an event is as soon as it is published.

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
import contextlib
import json
import logging
import os
import sqlite3
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from .. import strict_json
from ..clock import Clock
from ..identity import SYSTEM_EVENT_IDENTITY

__all__ = ["DRAIN_DELAY_S", "MAX_EVENT_SEQ", "EventBus", "EventEnvelope", "EventSink", "outbox_path", "parse_event_seq",
           "SYSTEM_IDENTITY"]

SYSTEM_IDENTITY = SYSTEM_EVENT_IDENTITY  # no identity may be named so (identity.parse_identity)
_PREFIX = "console-evt-"
DRAIN_DELAY_S = 0.05
"""Seconds the drainer waits after an event is published before it moves the outbox into the database
(the events published meanwhile go in the same transaction)."""
_LOG = logging.getLogger("meta_memory.events")
_MAX_SQLITE_INT = 2**63 - 1
_INSERT = "INSERT OR IGNORE INTO events (seq, identity, event_type, timestamp_ms, data) VALUES (?, ?, ?, ?, ?)"


def outbox_path(path: Path) -> Path:
    """The outbox file of the timeline database ``path``: ``<stem>.outbox`` beside it."""
    return path.with_name(f"{path.stem}.outbox")


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


#: The largest sequence number an event id may name (64 bits, the width of a reader's opaque ids).
MAX_EVENT_SEQ = 2**64 - 1
_MAX_SEQ_DIGITS = len(str(MAX_EVENT_SEQ))


def parse_event_seq(value: Any) -> int | None:
    """``console-evt-12`` / ``"12"`` / ``12`` -> 12; anything else -> ``None``, a number past
    :data:`MAX_EVENT_SEQ` among them (text longer than its digits is refused before it is read as a number)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 <= value <= MAX_EVENT_SEQ else None
    if isinstance(value, str):
        text = value.strip()
        if text.startswith(_PREFIX):
            text = text[len(_PREFIX):]
        if text.isascii() and text.isdigit() and len(text) <= _MAX_SEQ_DIGITS and int(text) <= MAX_EVENT_SEQ:
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
        self._outbox_fd: int | None = None
        self._outboxed: list[EventEnvelope] = []  # in the outbox file, not yet in the database
        self._outbox_size = 0  # bytes in the outbox file
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._drainer: threading.Thread | None = None
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
            self._drainer = threading.Thread(target=self._drain_loop, name="timeline-drainer", daemon=True)
            self._drainer.start()

    def _open(self, path: Path) -> None:
        self._conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS events (seq INTEGER PRIMARY KEY, identity TEXT NOT NULL, "
            "event_type TEXT NOT NULL, timestamp_ms INTEGER NOT NULL, data TEXT NOT NULL)"
        )
        self._recover_outbox(outbox_path(path))
        rows = self._conn.execute(
            "SELECT seq, identity, event_type, timestamp_ms, data FROM events ORDER BY seq DESC LIMIT ?",
            (self._retention,),
        ).fetchall()
        for seq, identity, event_type, ts, data in reversed(rows):
            self._recent.append(EventEnvelope(seq, identity, event_type, ts, json.loads(data)))
        row = self._conn.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()
        self._seq = int(row[0])
        from ..storage.perms import PRIVATE_FILE_MODE

        self._outbox_fd = os.open(outbox_path(path), os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
                                  | getattr(os, "O_NOFOLLOW", 0), PRIVATE_FILE_MODE)
        if (os.fstat(self._outbox_fd).st_mode & 0o777) != PRIVATE_FILE_MODE:
            os.fchmod(self._outbox_fd, PRIVATE_FILE_MODE)

    def _recover_outbox(self, box: Path) -> None:
        """Move the events a previous process left in the outbox ``box`` into the database (in sequence
        order; those a drain had already committed are skipped), then empty it. A last line cut short
        (a write the process died inside, never acknowledged) is skipped, and so is any line this bus never
        writes (not JSON, nesting past the JSON reader, a number SQLite cannot hold): it stops no start."""
        assert self._conn is not None
        try:
            raw = box.read_bytes()
        except FileNotFoundError:
            return
        rows = []
        for line in raw.split(b"\n"):
            try:
                seq, identity, event_type, ts, data = strict_json.loads(line)
                row = (int(seq), str(identity), str(event_type), int(ts), json.dumps(data))
            except (ValueError, TypeError):  # not one of our lines: an empty one, or the cut-short last
                continue  # (nesting past the JSON reader is a ValueError of strict_json's too)
            if all(0 <= n <= _MAX_SQLITE_INT for n in (row[0], row[3])):  # a number SQLite cannot hold is not ours
                rows.append(row)
        if rows:
            self._commit(sorted(rows))
        with open(box, "r+b") as f:
            f.truncate(0)

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
                if self._outbox_fd is not None and not self._unwritten and self._append_outbox(envs):
                    if not self._outboxed or self._last_error is not None:  # a failed drain is retried
                        self._wake.set()
                    self._outboxed.extend(envs)
                else:
                    self._persist([*self._outboxed, *self._unwritten, *envs], len(envs))
            self._recent.extend(envs)
            self._cond.notify_all()
        for observe in self._observers:
            for env in envs:
                try:
                    observe(env)
                except Exception:  # noqa: BLE001 - an observer never fails a publish
                    _LOG.exception("an event observer failed")
        return envs

    def _append_outbox(self, envs: Sequence[EventEnvelope]) -> bool:
        """Append ``envs`` to the outbox file in one ``write`` (caller holds the lock); ``False`` when it
        failed (nothing of them is kept there then: the file is cut back to where it was)."""
        assert self._outbox_fd is not None
        line = b"".join(json.dumps([e.seq, e.identity, e.event_type, e.timestamp_ms, e.data],
                                   separators=(",", ":")).encode() + b"\n" for e in envs)
        try:
            written = os.write(self._outbox_fd, line)
        except OSError:
            written = -1
        if written == len(line):
            self._outbox_size += written
            return True
        with contextlib.suppress(OSError):
            os.ftruncate(self._outbox_fd, self._outbox_size)
        return False

    def _persist(self, batch: Sequence[EventEnvelope], new: int) -> bool:
        """Commit ``batch`` (events, the last ``new`` of them just published; 0 for a drain) to the
        database in one transaction and empty the outbox (caller holds the lock). On failure the events
        stay in memory (``_unwritten``), are counted and logged, and go with the next persist."""
        assert self._conn is not None
        batch = sorted(batch, key=lambda e: e.seq)[-self._retention:]
        try:
            self._commit([(e.seq, e.identity, e.event_type, e.timestamp_ms, json.dumps(e.data)) for e in batch])
        except sqlite3.Error as exc:
            boxed = {e.seq for e in self._outboxed}
            self._unwritten = [e for e in batch if e.seq not in boxed]
            self._failures += 1
            self._last_error = str(exc)
            if self._failures & (self._failures - 1) == 0:  # the 1st, 2nd, 4th, ...: no flood of lines
                _LOG.warning("could not persist %d timeline event(s): %s (they stay in memory and reach live "
                             "subscribers; %d persist failure(s) so far)", new or len(batch), exc, self._failures)
            return False
        self._unwritten, self._outboxed, self._last_error = [], [], None
        if self._outbox_fd is not None and self._outbox_size:
            try:
                os.ftruncate(self._outbox_fd, 0)
                self._outbox_size = 0
            except OSError:  # its events are committed: a restart skips them
                pass
        return True

    def _commit(self, rows: Sequence[tuple[int, str, str, int, str]]) -> None:
        """Insert ``rows`` (``(seq, identity, event_type, timestamp_ms, data JSON)``, in sequence order; one
        already stored is skipped) and drop what falls out of the retention, in one transaction; a failure
        rolls back and raises."""
        assert self._conn is not None
        try:
            self._conn.execute("BEGIN")
            self._conn.executemany(_INSERT, rows)
            floor = rows[-1][0] - self._retention
            if floor > 0:  # seq starts at 1: below that there is nothing to drop
                self._conn.execute("DELETE FROM events WHERE seq <= ?", (floor,))
            self._conn.execute("COMMIT")
        except BaseException:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise

    def flush(self) -> None:
        """Move the outbox into the database now, in one transaction (a backup calls this before it
        copies the database: every event published before is then in the copy). A failure is kept and
        reported as a drain's is (:meth:`readiness_problem`), never raised."""
        self._drain()

    def _drain(self) -> None:
        """Move the outbox into the database now (one transaction)."""
        with self._cond:
            if self._outboxed and self._conn is not None and not self._closed:
                self._persist([*self._outboxed, *self._unwritten], 0)

    def _drain_loop(self) -> None:
        # ``close`` sets the stop before the wake: a wake cleared here after ``close`` set it still ends
        # the loop at the check below, never leaving the drainer waiting for a wake that will not come
        while not self._stop.is_set():
            self._wake.wait()
            if self._stop.wait(DRAIN_DELAY_S):
                return
            self._wake.clear()
            self._drain()

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
            if self._last_error is not None and not self._unwritten:
                return (f"{len(self._outboxed)} timeline event(s) wait in the outbox file ({self._last_error}); "
                        "they are moved into the database once it takes writes")
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
        """Drain the outbox into the database, then stop (later publishes reach memory only)."""
        self._stop.set()
        self._wake.set()
        if self._drainer is not None and self._drainer is not threading.current_thread():
            self._drainer.join()
        with self._cond:
            if (self._outboxed or self._unwritten) and self._conn is not None and not self._closed:
                self._persist([*self._outboxed, *self._unwritten], 0)
            self._closed = True
            self._cond.notify_all()
            if self._outbox_fd is not None:
                os.close(self._outbox_fd)
                self._outbox_fd = None
            if self._conn is not None:
                self._conn.close()
                self._conn = None
