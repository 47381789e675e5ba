"""Injectable time and randomness, so expiries, windows, ages and nonces are testable.

All timestamps in the product are UTC epoch milliseconds (``int``).
"""

from __future__ import annotations

import secrets
import threading
import time
from typing import Protocol

__all__ = ["Clock", "SystemClock", "ManualClock", "now_ms", "new_nonce"]


class Clock(Protocol):
    """Source of wall-clock time in UTC epoch milliseconds."""

    def now_ms(self) -> int: ...


class SystemClock:
    """The real clock: ``time.time_ns() // 1_000_000`` (UTC, independent of ``TZ``)."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


class ManualClock:
    """A clock tests move by hand. Thread-safe."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._now = start_ms
        self._lock = threading.Lock()

    def now_ms(self) -> int:
        with self._lock:
            return self._now

    def advance(self, ms: int) -> int:
        """Move the clock forward by ``ms`` milliseconds; returns the new time."""
        with self._lock:
            self._now += ms
            return self._now

    def set(self, ms: int) -> None:
        with self._lock:
            self._now = ms


_SYSTEM = SystemClock()


def now_ms() -> int:
    """Current UTC epoch milliseconds from the system clock."""
    return _SYSTEM.now_ms()


def new_nonce() -> str:
    """A 128-bit OS-random nonce as 32 lowercase hex characters."""
    return secrets.token_hex(16)
