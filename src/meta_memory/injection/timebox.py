"""Run a provider call under a deadline without letting a hung provider block or pile up threads.

Each call runs on its own daemon worker thread (or on the caller's, see
:meth:`TimeBox.call`); the caller waits at most ``timeout_ms`` for it. At most
``max_in_flight`` calls may be running at once (including ones whose caller
already gave up), and at most ``max_per_key`` of them for one key (the recall's
``(realm, identity)``), so a provider that never returns costs a bounded number
of threads, never holds up interpreter exit, and one caller's slow recalls
cannot take every slot from the others.

A call that finds the slots taken **waits for one within its own time budget**
(the budget covers the wait and the work together): it starts as soon as a
slot frees, with what is left of its budget, and is refused with
:class:`ProviderSaturated` only when the budget runs out first. Every running
call ends by its deadline, so a slot frees within one budget; the refusal says
so (``retry_after_ms``).

A worker runs its call under a :class:`meta_memory.deadline.Deadline`: when
the waiter gives up (:class:`ProviderTimeout`) the deadline is cancelled, and
the stores stop the statement that is still running (SQLite progress
handler, PostgreSQL ``statement_timeout``), so timed-out work frees its slot
and its CPU promptly.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

from meta_memory.deadline import Deadline, bound
from meta_memory.errors import CapacityExceeded
from meta_memory.limits import DEFAULT_MAX_IN_FLIGHT, DEFAULT_MAX_PER_KEY

T = TypeVar("T")


class ProviderTimeout(Exception):
    """The provider did not answer within the deadline (``timeout_ms``)."""

    def __init__(self, timeout_ms: int) -> None:
        super().__init__(f"provider call exceeded {timeout_ms} ms")
        self.timeout_ms = timeout_ms


class ProviderSaturated(Exception):
    """Too many earlier provider calls are still running (in all, or for this key) for the whole of the call's
    budget; the call was not started.

    Attributes:
        max_in_flight: the cap that was full (the per-key cap when ``per_key``).
        per_key: whether it was the per-key cap.
        waited_ms: how long the call waited for a slot (0: it was not allowed to wait).
        retry_after_ms: when a slot is sure to have freed: the running calls end by their own deadline.
    """

    def __init__(self, max_in_flight: int, *, per_key: bool = False, waited_ms: int = 0,
                 retry_after_ms: int = 0) -> None:
        scope = " for this identity" if per_key else ""
        waited = f" after waiting {waited_ms} ms for one to finish" if waited_ms else ""
        super().__init__(f"{max_in_flight} provider calls still running{scope}{waited}")
        self.max_in_flight = max_in_flight
        self.per_key = per_key
        self.waited_ms = waited_ms
        self.retry_after_ms = retry_after_ms

    def refusal(self, what: str) -> CapacityExceeded:
        """The refusal a caller gets (-32005 ``capacity_exceeded``, the one mapping of this exception):
        ``resource`` ``recall_slots_per_identity`` or ``recall_slots``, the cap as ``limit`` and
        ``retry_after_ms``. ``what`` names the call, e.g. ``"recall"``."""
        scope = "of this identity " if self.per_key else ""
        waited = f" for the whole {self.waited_ms} ms it could wait" if self.waited_ms else ""
        return CapacityExceeded(
            f"{what} refused: {self.max_in_flight} recalls {scope}were still running{waited}; "
            f"retry in {self.retry_after_ms} ms",
            resource="recall_slots_per_identity" if self.per_key else "recall_slots",
            limit=self.max_in_flight, retry_after_ms=self.retry_after_ms)


class TimeBox:
    """Bounded, deadline-aware provider caller (thread-safe, shareable).

    Args:
        max_in_flight: most provider calls running at once (default 16).
        max_per_key: most of them running at once for one key (default 4; capped at ``max_in_flight``).
    """

    def __init__(self, max_in_flight: int = DEFAULT_MAX_IN_FLIGHT, max_per_key: int = DEFAULT_MAX_PER_KEY) -> None:
        if max_in_flight < 1:
            raise ValueError("max_in_flight must be at least 1")
        if max_per_key < 1:
            raise ValueError("max_per_key must be at least 1")
        self._max = max_in_flight
        self._max_per_key = min(max_per_key, max_in_flight)
        self._lock = threading.Lock()
        self._freed = threading.Condition(self._lock)
        self._running = 0
        self._per_key: dict[Hashable, int] = {}
        self._waiting: dict[Hashable | None, deque[object]] = {}

    @property
    def running(self) -> int:
        """Provider calls currently running (including abandoned ones)."""
        with self._lock:
            return self._running

    def _full(self, key: Hashable | None) -> ProviderSaturated | None:
        """The cap that keeps a call for ``key`` from starting now, or ``None`` (caller holds the lock)."""
        if self._running >= self._max:
            return ProviderSaturated(self._max)
        if key is not None and self._per_key.get(key, 0) >= self._max_per_key:
            return ProviderSaturated(self._max_per_key, per_key=True)
        return None

    def _acquire(self, key: Hashable | None, until: float | None = None, budget_ms: int | None = None) -> None:
        """Take a slot for ``key``, waiting for one until the monotonic instant ``until`` (``None``: not at
        all). Raises :class:`ProviderSaturated` when none freed in time; its ``retry_after_ms`` is
        ``budget_ms`` (the calls holding the slots have budgets like this one's, and each ends by its deadline)."""
        with self._lock:
            if key not in self._waiting and self._full(key) is None:  # nobody of this key ahead, a slot free: take it
                self._take(key)
                return
        started = time.monotonic()
        ticket = object()
        with self._lock:
            waiting = self._waiting.setdefault(key, deque())
            waiting.append(ticket)  # one key's calls take freed slots in the order they came (no starving)
            try:
                while waiting[0] is not ticket or self._full(key) is not None:
                    left = None if until is None else until - time.monotonic()
                    if left is None or left <= 0:
                        cap = self._full(key) or ProviderSaturated(self._max_per_key, per_key=True)
                        raise ProviderSaturated(cap.max_in_flight, per_key=cap.per_key,
                                                waited_ms=int((time.monotonic() - started) * 1000),
                                                retry_after_ms=max(1, budget_ms or 1000))
                    self._freed.wait(left)
            finally:
                waiting.remove(ticket)
                if not waiting:
                    del self._waiting[key]
                self._freed.notify_all()  # the next in line may go now
            self._take(key)

    def _take(self, key: Hashable | None) -> None:
        """Count a started call for ``key`` (caller holds the lock)."""
        self._running += 1
        if key is not None:
            self._per_key[key] = self._per_key.get(key, 0) + 1

    def _release(self, key: Hashable | None) -> None:
        with self._lock:
            self._running -= 1
            if key is not None:
                left = self._per_key[key] - 1
                if left:
                    self._per_key[key] = left
                else:
                    del self._per_key[key]
            if self._waiting:  # every waiter is queued there before it waits (under this lock)
                self._freed.notify_all()  # waiters for this key and for the global cap re-check

    def start(self, fn: Callable[[], T], *, timeout_ms: int | None = None, key: Hashable | None = None,
              until: float | None = None) -> Pending[T]:
        """Start ``fn()`` on a worker thread; collect it with :meth:`Pending.wait`.

        ``timeout_ms`` bounds the work itself (the worker's :class:`~meta_memory.deadline.Deadline`);
        ``key`` groups calls for the per-key cap (``None``: only the global cap applies).
        ``until`` (a :func:`time.monotonic` instant): wait for a free slot until then, and end the work
        by then too (its deadline is the earlier of ``until`` and ``timeout_ms`` after it starts); ``None``
        refuses at once when the slots are taken.
        Raises :class:`ProviderSaturated` (without starting anything) when ``max_in_flight``
        calls, or ``max_per_key`` calls for ``key``, are still running at ``until``.
        """
        self._acquire(key, until, timeout_ms)
        limit = Deadline.after_ms(timeout_ms)
        if until is not None and (limit.at is None or until < limit.at):
            limit = Deadline(until)
        pending: Pending[T] = Pending(limit)

        def run() -> None:
            try:
                with bound(pending.deadline):
                    pending._value = fn()
            except BaseException as exc:  # noqa: BLE001 - handed to the waiter
                pending._error = exc
            finally:
                pending._done.set()
                self._release(key)

        context = contextvars.copy_context()  # the call's request id and span follow it onto the worker
        try:
            threading.Thread(target=context.run, args=(run,), name="meta-memory-provider", daemon=True).start()
        except BaseException:
            self._release(key)
            raise
        return pending

    def call(self, fn: Callable[[], T], timeout_ms: int, *, key: Hashable | None = None, inline: bool = False) -> T:
        """Run ``fn()`` and return its value within ``timeout_ms`` milliseconds: waiting for a slot when
        the caps are reached, then the work, within that one budget.

        ``inline``: run ``fn`` on the calling thread (no worker-thread handoff), for work that ends by
        itself once its deadline passes: every store statement it runs is stopped at the deadline and
        its own work between them is bounded (:func:`run_inline`). The caps apply all the same.

        Raises whatever ``fn`` raises, :class:`ProviderTimeout` when the deadline passes first
        (the call is cancelled: its store statements are interrupted and its result discarded),
        or :class:`ProviderSaturated` when no slot (global or per key) freed within the budget.
        """
        until = time.monotonic() + timeout_ms / 1000
        if not inline:
            pending = self.start(fn, timeout_ms=timeout_ms, key=key, until=until)
            return pending.wait(until - time.monotonic(), timeout_ms)
        self._acquire(key, until, timeout_ms)
        try:
            return run_inline(fn, timeout_ms, until=until)
        finally:
            self._release(key)


def run_inline(fn: Callable[[], T], timeout_ms: int, *, until: float | None = None) -> T:
    """Run ``fn()`` on this thread under a :class:`Deadline` of ``timeout_ms`` milliseconds (or at the
    monotonic instant ``until`` when given: the budget's end, some of it spent waiting for a slot).

    The deadline is bound to the thread for the call, so the stores stop a statement past it.
    A call that ends past its deadline, with a value or an error, raises :class:`ProviderTimeout`
    (naming ``timeout_ms``): its result is discarded, as :meth:`Pending.wait` discards a late worker's.
    """
    limit = Deadline(until) if until is not None else Deadline.after_ms(timeout_ms)
    try:
        with bound(limit):
            value = fn()
    except Exception:
        if limit.expired:
            raise ProviderTimeout(timeout_ms) from None
        raise
    if limit.expired:
        raise ProviderTimeout(timeout_ms)
    return value


class Pending(Generic[T]):
    """A provider call started by :meth:`TimeBox.start`."""

    __slots__ = ("_done", "_value", "_error", "deadline")

    def __init__(self, deadline: Deadline | None = None) -> None:
        self._done = threading.Event()
        self._value: Any = None
        self._error: BaseException | None = None
        self.deadline = deadline or Deadline()

    @property
    def done(self) -> bool:
        """True once the call returned or raised."""
        return self._done.is_set()

    def wait(self, timeout_s: float, timeout_ms: int) -> T:
        """Wait up to ``timeout_s`` seconds; return the value or raise the provider's error.

        Raises :class:`ProviderTimeout` (naming ``timeout_ms``, the configured
        budget) when the call has not finished in time, after cancelling it.
        """
        if not self._done.wait(max(0.0, timeout_s)):
            self.deadline.cancel()
            raise ProviderTimeout(timeout_ms)
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[no-any-return]
