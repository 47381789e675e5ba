"""The running call's time budget, readable by the code the call reaches (stores, providers).

A :class:`~meta_memory.injection.timebox.TimeBox` worker runs each provider call
under a :class:`Deadline` bound to its thread. The stores consult it so that a
call past its budget stops consuming CPU instead of running on unobserved:

- SQLite installs a progress handler on its reader connections that aborts the
  running statement once :func:`expired` is true (the statement fails with
  ``interrupted``);
- PostgreSQL sets ``statement_timeout`` of each read transaction to
  :func:`remaining_ms` and sends a cancel request when the waiter gives up
  (:meth:`Deadline.on_cancel`);
- Python loops between statements call :func:`check`.

Outside a time-boxed call there is no deadline: :func:`expired` is ``False``,
:func:`remaining_ms` is ``None`` and :func:`check` never raises.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

from meta_memory.errors import AgentMemoryError

__all__ = ["Deadline", "RESERVE_SHARE", "bound", "current", "expired", "remaining_ms", "reserve_ms", "check", "sooner"]

#: The most of a call's whole budget :func:`reserve_ms` keeps back for the rest of the call.
RESERVE_SHARE = 0.3

_local = threading.local()


class Deadline:
    """A monotonic instant (``at``, seconds; ``None`` = no time limit) and a cancellation flag.

    :meth:`cancel` is called by the waiter that gave up on the call (its budget passed);
    from then on :attr:`expired` is true whatever ``at`` says.
    """

    __slots__ = ("at", "start", "_cancelled", "_lock", "_on_cancel")

    def __init__(self, at: float | None = None) -> None:
        self.at = at
        self.start = time.monotonic()  # when the budget began (seconds, monotonic): ``at - start`` is its length
        self._cancelled = False  # set once, under the lock; read without it (a plain attribute read)
        self._lock = threading.Lock()
        self._on_cancel: list[Callable[[], None]] = []

    @classmethod
    def after_ms(cls, timeout_ms: int | None) -> Deadline:
        """A deadline ``timeout_ms`` milliseconds from now (``None``: cancellation only)."""
        return cls(None if timeout_ms is None else time.monotonic() + timeout_ms / 1000)

    def cancel(self) -> None:
        """Mark the call abandoned and run the registered cancel hooks (e.g. a database cancel request)."""
        with self._lock:
            self._cancelled = True
            hooks = list(self._on_cancel)
        for hook in hooks:
            with contextlib.suppress(Exception):
                hook()

    @contextlib.contextmanager
    def on_cancel(self, hook: Callable[[], None]) -> Iterator[None]:
        """Run ``hook`` if the call is cancelled during the ``with`` block (at once if it already is)."""
        with self._lock:
            self._on_cancel.append(hook)
            already = self._cancelled
        if already:
            with contextlib.suppress(Exception):
                hook()
        try:
            yield
        finally:
            with self._lock:
                self._on_cancel.remove(hook)

    @property
    def cancelled(self) -> bool:
        """True once :meth:`cancel` was called."""
        return self._cancelled

    @property
    def expired(self) -> bool:
        """True when cancelled or past ``at``."""
        return self._cancelled or (self.at is not None and time.monotonic() >= self.at)

    def remaining_ms(self) -> int | None:
        """Milliseconds left (at least 1 while not expired, 0 once expired); ``None`` without a time limit."""
        if self._cancelled:
            return 0
        if self.at is None:
            return None
        return max(0, int((self.at - time.monotonic()) * 1000))

    def budget_ms(self) -> float | None:
        """The budget's whole length in milliseconds (``at`` less when it began); ``None`` without a time limit."""
        return None if self.at is None else max(0.0, (self.at - self.start) * 1000)


class _Sooner(Deadline):
    """A deadline at ``at`` that also expires (and is cancelled) with its ``parent``."""

    __slots__ = ("parent",)

    def __init__(self, at: float | None, parent: Deadline) -> None:
        super().__init__(at)
        self.parent = parent

    @property
    def cancelled(self) -> bool:
        return self._cancelled or self.parent.cancelled

    @property
    def expired(self) -> bool:
        return super().expired or self.parent.expired

    def budget_ms(self) -> float | None:
        own = super().budget_ms()
        return self.parent.budget_ms() if own is None else own

    def remaining_ms(self) -> int | None:
        own, outer = super().remaining_ms(), self.parent.remaining_ms()
        if own is None or outer is None:
            return outer if own is None else own
        return min(own, outer)

    @contextlib.contextmanager
    def on_cancel(self, hook: Callable[[], None]) -> Iterator[None]:
        with super().on_cancel(hook), self.parent.on_cancel(hook):
            yield


@contextlib.contextmanager
def sooner(at: float | None) -> Iterator[Deadline]:
    """Within the ``with`` block, the current thread's deadline ends at the monotonic instant ``at``
    (seconds; ``None``: no earlier end) or with the enclosing deadline, whichever comes first, so the
    stores stop a statement at the earlier of the two. A cancel of the enclosing deadline reaches it.
    Used to give one part of a call a share of its budget (e.g. the dense side of hybrid recall)."""
    outer = current()
    inner = Deadline(at) if outer is None else _Sooner(at, outer)
    with bound(inner):
        yield inner


@contextlib.contextmanager
def bound(deadline: Deadline) -> Iterator[Deadline]:
    """Make ``deadline`` the current thread's deadline for the ``with`` block (nesting restores the outer one)."""
    outer = getattr(_local, "deadline", None)
    _local.deadline = deadline
    try:
        yield deadline
    finally:
        _local.deadline = outer


def current() -> Deadline | None:
    """The current thread's deadline, or ``None`` outside a time-boxed call."""
    return getattr(_local, "deadline", None)


def expired() -> bool:
    """True when the current thread runs a time-boxed call that is past its budget or abandoned."""
    d = getattr(_local, "deadline", None)
    return d is not None and d.expired


def remaining_ms() -> int | None:
    """Milliseconds left of the current call's budget; ``None`` when it has none."""
    d = getattr(_local, "deadline", None)
    return None if d is None else d.remaining_ms()


def reserve_ms(cap_ms: float) -> float:
    """Milliseconds of the current call's budget a part of it leaves to the parts after it: ``cap_ms``, or
    :data:`RESERVE_SHARE` of the whole budget when that is less (a 100 ms budget keeps back 30 ms, not all
    of it); ``cap_ms`` outside a time-boxed call or without a time limit."""
    d = getattr(_local, "deadline", None)
    budget = None if d is None else d.budget_ms()
    return cap_ms if budget is None else min(cap_ms, RESERVE_SHARE * budget)


def check() -> None:
    """Raise ``AgentMemoryError("timeout", ...)`` when the current call is past its budget; else nothing."""
    if expired():
        raise AgentMemoryError("timeout", "recall stopped: its time budget ran out")
