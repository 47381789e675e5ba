"""Run a provider call under a deadline without letting a hung provider block or pile up threads.

Each call runs on its own daemon worker thread; the caller waits at most
``timeout_ms`` for it. At most ``max_in_flight`` calls may be running at once
(including ones whose caller already gave up): beyond that a call is refused
at once with :class:`ProviderSaturated`, so a provider that never returns
costs a bounded number of threads and never holds up interpreter exit.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")

DEFAULT_MAX_IN_FLIGHT = 16


class ProviderTimeout(Exception):
    """The provider did not answer within the deadline (``timeout_ms``)."""

    def __init__(self, timeout_ms: int) -> None:
        super().__init__(f"provider call exceeded {timeout_ms} ms")
        self.timeout_ms = timeout_ms


class ProviderSaturated(Exception):
    """Too many earlier provider calls are still running; the call was not started."""

    def __init__(self, max_in_flight: int) -> None:
        super().__init__(f"{max_in_flight} provider calls still running")
        self.max_in_flight = max_in_flight


class TimeBox:
    """Bounded, deadline-aware provider caller (thread-safe, shareable).

    Args:
        max_in_flight: most provider calls running at once (default 16).
    """

    def __init__(self, max_in_flight: int = DEFAULT_MAX_IN_FLIGHT) -> None:
        if max_in_flight < 1:
            raise ValueError("max_in_flight must be at least 1")
        self._max = max_in_flight
        self._slots = threading.BoundedSemaphore(max_in_flight)
        self._lock = threading.Lock()
        self._running = 0

    @property
    def running(self) -> int:
        """Provider calls currently running (including abandoned ones)."""
        with self._lock:
            return self._running

    def start(self, fn: Callable[[], T]) -> Pending[T]:
        """Start ``fn()`` on a worker thread now; collect it with :meth:`Pending.wait`.

        Raises :class:`ProviderSaturated` (without starting anything) when
        ``max_in_flight`` calls are already running.
        """
        if not self._slots.acquire(blocking=False):
            raise ProviderSaturated(self._max)
        pending: Pending[T] = Pending()

        def run() -> None:
            try:
                pending._value = fn()
            except BaseException as exc:  # noqa: BLE001 - handed to the waiter
                pending._error = exc
            finally:
                pending._done.set()
                with self._lock:
                    self._running -= 1
                self._slots.release()

        with self._lock:
            self._running += 1
        try:
            threading.Thread(target=run, name="meta-memory-provider", daemon=True).start()
        except BaseException:
            with self._lock:
                self._running -= 1
            self._slots.release()
            raise
        return pending

    def call(self, fn: Callable[[], T], timeout_ms: int) -> T:
        """Run ``fn()`` and return its value within ``timeout_ms`` milliseconds.

        Raises whatever ``fn`` raises, :class:`ProviderTimeout` when the
        deadline passes first (``fn`` keeps running in the background and its
        result is discarded), or :class:`ProviderSaturated` when
        ``max_in_flight`` calls are already running.
        """
        return self.start(fn).wait(timeout_ms / 1000, timeout_ms)


class Pending(Generic[T]):
    """A provider call started by :meth:`TimeBox.start`."""

    __slots__ = ("_done", "_value", "_error")

    def __init__(self) -> None:
        self._done = threading.Event()
        self._value: Any = None
        self._error: BaseException | None = None

    def wait(self, timeout_s: float, timeout_ms: int) -> T:
        """Wait up to ``timeout_s`` seconds; return the value or raise the provider's error.

        Raises :class:`ProviderTimeout` (naming ``timeout_ms``, the configured
        budget) when the call has not finished in time.
        """
        if not self._done.wait(max(0.0, timeout_s)):
            raise ProviderTimeout(timeout_ms)
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[no-any-return]
