"""Run a provider call under a deadline without letting a hung provider block or pile up threads.

Each call runs on its own daemon worker thread; the caller waits at most
``timeout_ms`` for it. At most ``max_in_flight`` calls may be running at once
(including ones whose caller already gave up), and at most ``max_per_key``
of them for one key (the recall's ``(realm, identity)``): beyond either a call
is refused at once with :class:`ProviderSaturated`, so a provider that never
returns costs a bounded number of threads, never holds up interpreter exit,
and one caller's slow recalls cannot take every slot from the others.

A worker runs its call under a :class:`meta_memory.deadline.Deadline`: when
the waiter gives up (:class:`ProviderTimeout`) the deadline is cancelled, and
the stores stop the statement that is still running (SQLite progress
handler, PostgreSQL ``statement_timeout``), so timed-out work frees its slot
and its CPU promptly.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

from meta_memory.deadline import Deadline, bound

T = TypeVar("T")

DEFAULT_MAX_IN_FLIGHT = 16
DEFAULT_MAX_PER_KEY = 4


class ProviderTimeout(Exception):
    """The provider did not answer within the deadline (``timeout_ms``)."""

    def __init__(self, timeout_ms: int) -> None:
        super().__init__(f"provider call exceeded {timeout_ms} ms")
        self.timeout_ms = timeout_ms


class ProviderSaturated(Exception):
    """Too many earlier provider calls are still running (in all, or for this key); the call was not started."""

    def __init__(self, max_in_flight: int, *, per_key: bool = False) -> None:
        scope = " for this identity" if per_key else ""
        super().__init__(f"{max_in_flight} provider calls still running{scope}")
        self.max_in_flight = max_in_flight
        self.per_key = per_key


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
        self._running = 0
        self._per_key: dict[Hashable, int] = {}

    @property
    def running(self) -> int:
        """Provider calls currently running (including abandoned ones)."""
        with self._lock:
            return self._running

    def _acquire(self, key: Hashable | None) -> None:
        with self._lock:
            if self._running >= self._max:
                raise ProviderSaturated(self._max)
            if key is not None and self._per_key.get(key, 0) >= self._max_per_key:
                raise ProviderSaturated(self._max_per_key, per_key=True)
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

    def start(self, fn: Callable[[], T], *, timeout_ms: int | None = None, key: Hashable | None = None) -> Pending[T]:
        """Start ``fn()`` on a worker thread now; collect it with :meth:`Pending.wait`.

        ``timeout_ms`` bounds the work itself (the worker's :class:`~meta_memory.deadline.Deadline`);
        ``key`` groups calls for the per-key cap (``None``: only the global cap applies).
        Raises :class:`ProviderSaturated` (without starting anything) when ``max_in_flight``
        calls, or ``max_per_key`` calls for ``key``, are already running.
        """
        self._acquire(key)
        pending: Pending[T] = Pending(Deadline.after_ms(timeout_ms))

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
        """Run ``fn()`` and return its value within ``timeout_ms`` milliseconds.

        ``inline``: run ``fn`` on the calling thread (no worker-thread handoff), for work that ends by
        itself once its deadline passes: every store statement it runs is stopped at the deadline and
        its own work between them is bounded (:func:`run_inline`). The caps apply all the same.

        Raises whatever ``fn`` raises, :class:`ProviderTimeout` when the deadline passes first
        (the call is cancelled: its store statements are interrupted and its result discarded),
        or :class:`ProviderSaturated` when the global or the per-key cap is reached.
        """
        if not inline:
            return self.start(fn, timeout_ms=timeout_ms, key=key).wait(timeout_ms / 1000, timeout_ms)
        self._acquire(key)
        try:
            return run_inline(fn, timeout_ms)
        finally:
            self._release(key)


def run_inline(fn: Callable[[], T], timeout_ms: int) -> T:
    """Run ``fn()`` on this thread under a :class:`Deadline` of ``timeout_ms`` milliseconds.

    The deadline is bound to the thread for the call, so the stores stop a statement past it.
    A call that ends past its deadline, with a value or an error, raises :class:`ProviderTimeout`:
    its result is discarded, as :meth:`Pending.wait` discards a late worker's.
    """
    limit = Deadline.after_ms(timeout_ms)
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
