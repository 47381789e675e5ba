"""Telemetry writes (usage marks, injection-ledger rows) are best effort: a read never fails for them.

A recall marks the records it returned and an injection appends its ledger rows; both are writes
caused by a read. When they cannot be written (a full disk, a database error) the read still answers:
the write is dropped, counted here, and logged as a warning on the 1st, 2nd, 4th, 8th, ... drop (never
a flood of lines). ``meta/status`` reports the count (``agent_memory.telemetry``) and ``/metrics``
``meta_memory_telemetry_rows_dropped_total``.

:class:`PendingTelemetry` keeps those writes off the read path: a recall queues
its marks and answers; one background thread writes each realm's queued marks in one transaction a
moment later (:data:`FLUSH_DELAY_S`), so a burst of recalls costs one commit, not one per recall.
Nothing queued is dropped silently: past :data:`MAX_PENDING` queued writes the caller writes the
queue itself before it answers (back-pressure), closing the store writes what is queued, and a
write that fails is counted as above. Both stores queue them (SQLite per realm
database, PostgreSQL per realm). A store's reads that show usage write the realm's queue first
(:meth:`PendingTelemetry.take`) when the realm's writer is free, so such a read sees every mark queued
before it; a read never waits behind another write, so while the writer is busy it may go on without
the queued marks, which land once the writer is free. ``telemetry_stats()`` (and ``meta/status``)
always writes the queue first: read through it when usage must be current.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Generic, TypeVar

from meta_memory import deadline

__all__ = ["TelemetryDrops", "PendingTelemetry", "MAX_PENDING", "FLUSH_DELAY_S", "SETTLE_WAIT_S", "LAND_WAIT_S",
           "recall_reads", "in_recall_reads"]

#: Queued telemetry writes (one per ``mark_usage`` / ``log_injections`` call) past which the caller
#: writes the queue itself before answering (back-pressure; nothing is dropped for want of room).
MAX_PENDING = 4096
#: Seconds the background writer waits after the first queued write, gathering a batch.
FLUSH_DELAY_S = 0.05
#: Seconds a read waits for a batch of queued telemetry being written (by the background writer) to land.
SETTLE_WAIT_S = 1.0

#: Seconds :meth:`PendingTelemetry.flush_all` waits for a realm's batch the background writer is writing.
LAND_WAIT_S = 10.0

#: Set while a recall reads (:func:`recall_reads`): its reads do not first write the realm's queued usage
#: marks, which is what keeps the marks off the read path (both stores read it).
_RECALL_READS: ContextVar[bool] = ContextVar("agent_memory_recall_reads", default=False)


@contextlib.contextmanager
def recall_reads() -> Iterator[None]:
    """A block whose reads are a recall's: they leave the queued telemetry queued (see the module doc)."""
    token = _RECALL_READS.set(True)
    try:
        yield
    finally:
        _RECALL_READS.reset(token)


def in_recall_reads() -> bool:
    """Whether the calling context is inside :func:`recall_reads`."""
    return _RECALL_READS.get()

_Op = TypeVar("_Op")

log = logging.getLogger("meta_memory.agent_memory.telemetry")


class TelemetryDrops:
    """A thread-safe count of dropped telemetry writes, with rate-limited warnings."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.dropped = 0

    def drop(self, realm: str, why: str) -> None:
        """Count one dropped telemetry write of ``realm`` and warn on a power-of-two count."""
        with self._lock:
            self.dropped += 1
            count = self.dropped
        if count & (count - 1) == 0:
            log.warning("agent memory: a usage mark or injection-ledger row of realm %s was not written (%s); "
                        "%d dropped so far. Reads are unaffected", realm, why, count)

    def stats(self) -> dict[str, int]:
        """``{dropped}``: telemetry writes dropped since the store opened."""
        with self._lock:
            return {"dropped": self.dropped}


class PendingTelemetry(Generic[_Op]):
    """Telemetry writes queued per realm, written by one background thread (or by whoever reads first).

    The store owns what an ``_Op`` is and how a batch is written: ``flush(realm)`` takes the realm's
    writer, calls :meth:`take` under it and writes what it returns in one transaction, then calls
    :meth:`done`. Because :meth:`take` happens under the realm's writer, a reader that finds the queue
    empty and no batch :meth:`in_flight` sees every mark queued before it.

    Thread-safe. ``max_pending`` bounds the queue (soft: :meth:`add` says when it is over, and the
    caller flushes); ``delay_s`` is how long the writer gathers a batch after it is woken.
    """

    def __init__(self, flush: Callable[[str], None], *, max_pending: int = MAX_PENDING,
                 delay_s: float = FLUSH_DELAY_S, name: str = "agent-memory-telemetry") -> None:
        self._flush = flush
        self.max_pending = max_pending
        self.delay_s = delay_s
        self._name = name
        self._cond = threading.Condition()
        self._queued: dict[str, list[_Op]] = {}
        self._count = 0
        self._flying: dict[str, int] = {}
        self._taken: dict[str, int] = {}  # batches ever handed out per realm
        self._landed: dict[str, int] = {}  # batches ever done per realm
        self._wake = threading.Event()
        self._stopped = threading.Event()  # set by stop(): ends the gathering wait at once
        self._stopping = False
        self._thread: threading.Thread | None = None

    def add(self, realm: str, op: _Op) -> bool:
        """Queue ``op`` for ``realm`` and wake the writer. Returns ``True`` when the queue is now over
        ``max_pending`` or the writer is stopped: the caller must then :meth:`flush_all` itself
        (back-pressure)."""
        with self._cond:
            self._queued.setdefault(realm, []).append(op)
            self._count += 1
            over = self._count > self.max_pending or self._stopping  # stopped: nobody else will write it
            if self._thread is None and not self._stopping:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
        self._wake.set()
        return over

    def unsettled(self, realm: str) -> bool:
        """Whether ``realm`` has writes queued or being written (a cheap check, no lock)."""
        return realm in self._queued or realm in self._flying

    def in_flight(self, realm: str) -> bool:
        """Whether a batch of ``realm`` is being written now."""
        return realm in self._flying

    def take(self, realm: str) -> list[_Op]:
        """The writes queued for ``realm``, oldest first, now in flight until :meth:`done` (call it
        holding the realm's writer, and call :meth:`done` in a ``finally``)."""
        with self._cond:
            ops = self._queued.pop(realm, [])
            self._count -= len(ops)
            self._flying[realm] = self._flying.get(realm, 0) + 1
            self._taken[realm] = self._taken.get(realm, 0) + 1
            return ops

    def done(self, realm: str) -> None:
        """The batch :meth:`take` handed out is written (or counted as dropped)."""
        with self._cond:
            self._landed[realm] = self._landed.get(realm, 0) + 1
            left = self._flying.get(realm, 1) - 1
            if left:
                self._flying[realm] = left
            else:
                self._flying.pop(realm, None)
            self._cond.notify_all()

    def wait_landed(self, realm: str, timeout_s: float) -> None:
        """Wait (at most ``timeout_s``) until no batch of ``realm`` is being written."""
        with self._cond:
            self._cond.wait_for(lambda: realm not in self._flying, timeout=timeout_s)

    def realms(self) -> list[str]:
        """The realms with writes queued."""
        with self._cond:
            return list(self._queued)

    def flush_all(self, *, landed: bool = True) -> None:
        """Write every realm's queue on the calling thread (waits for each realm's writer). With ``landed``,
        then wait for as many batches of each realm to be done as had been handed out when called (at most
        :data:`LAND_WAIT_S` in all, less when the call's deadline is sooner): on return every write queued
        before the call has landed or been counted as dropped, even one a writer had taken but not yet
        committed; batches taken later are not waited for. Back-pressure passes ``landed=False``: it only
        needs room in the queue."""
        with self._cond:
            marks = {realm: self._taken.get(realm, 0) for realm in self._flying}
        for realm in self.realms():
            self._flush(realm)
        if not landed or not marks:
            return
        wait_s = LAND_WAIT_S
        left_ms = deadline.remaining_ms()
        if left_ms is not None:
            wait_s = min(wait_s, max(0.0, left_ms / 1000))
        with self._cond:
            self._cond.wait_for(lambda: all(self._landed.get(r, 0) >= n for r, n in marks.items()), timeout=wait_s)

    @property
    def died(self) -> bool:
        """Whether the background writer ended although nobody stopped it."""
        thread = self._thread
        return thread is not None and not thread.is_alive() and not self._stopping

    def stop(self) -> None:
        """Stop the background writer and write what is still queued (on the calling thread)."""
        with self._cond:
            self._stopping = True
            thread = self._thread
        self._stopped.set()
        self._wake.set()
        if thread is not None:
            thread.join(timeout=10)
        self.flush_all()

    def _run(self) -> None:
        while True:
            self._wake.wait()
            if self._stopping:
                return
            if self._stopped.wait(self.delay_s):  # gather a batch: one commit for a burst of recalls
                return
            self._wake.clear()
            for realm in self.realms():
                if self._stopping:
                    return
                try:
                    self._flush(realm)
                except Exception:  # the store counts a batch it could not write; never end the writer
                    log.exception("agent memory: writing the queued telemetry of realm %s failed", realm)
