"""A small background thread that runs dreams on the steward's cadence (``[agent_memory.steward] cadence``).

The thread wakes every ``tick_s`` seconds, reads the injected clock and runs
``run_once()`` when the interval has elapsed since the last run (the first run
is one interval after :meth:`DreamScheduler.start`). A failing run is logged
and the schedule continues. :meth:`DreamScheduler.stop` ends the thread
promptly (it does not interrupt a run in progress; it waits for it).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from meta_memory.clock import Clock

__all__ = ["DreamScheduler"]

log = logging.getLogger(__name__)


class DreamScheduler:
    """Run ``run_once`` every ``interval_ms`` (epoch ms by ``clock``) on a daemon thread.

    Args:
        run_once: the work (typically: a dream for every realm of the store).
        interval_ms: the cadence (:attr:`meta_memory.review.config.StewardConfig.interval_ms`).
        clock: time source; a ``ManualClock`` makes the schedule testable.
        tick_s: how often the thread checks the clock (seconds).
        name: what runs (the thread name and the failure log line say it).
    """

    def __init__(self, run_once: Callable[[], Any], interval_ms: int, clock: Clock, *, tick_s: float = 1.0,
                 name: str = "steward dream") -> None:
        if interval_ms <= 0:
            raise ValueError("interval_ms must be positive")
        self._run_once = run_once
        self.interval_ms = interval_ms
        self._clock = clock
        self._tick_s = tick_s
        self.name = name
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.runs = 0
        self.failures = 0
        self.next_due_ms: int | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def died(self) -> bool:
        """True when the thread ended although :meth:`stop` was not called (``/v1/ready`` reports it)."""
        thread = self._thread
        return thread is not None and not thread.is_alive() and not self._stop.is_set()

    def start(self) -> None:
        """Start the thread (idempotent)."""
        with self._lock:
            if self.running:
                return
            self._stop.clear()
            self.next_due_ms = self._clock.now_ms() + self.interval_ms
            self._thread = threading.Thread(target=self._loop, name=f"meta-memory-{self.name.replace(' ', '-')}",
                                            daemon=True)
            self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the thread and wait up to ``timeout_s`` for it to end."""
        with self._lock:
            thread = self._thread
            self._stop.set()
        if thread is not None:
            thread.join(timeout=timeout_s)
        with self._lock:
            self._thread = None

    def _loop(self) -> None:
        while not self._stop.wait(self._tick_s):
            now = self._clock.now_ms()
            if self.next_due_ms is None or now < self.next_due_ms:
                continue
            try:
                self._run_once()
                failed = False
            except Exception:  # keep the schedule alive; the failure is logged
                failed = True
                log.exception("scheduled %s failed", self.name)
            # the next run is due before the run is counted: whoever sees a count sees its next due time
            self.next_due_ms = self._clock.now_ms() + self.interval_ms
            if failed:
                self.failures += 1
            else:
                self.runs += 1
