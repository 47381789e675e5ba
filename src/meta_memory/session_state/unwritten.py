"""Taint the session-state database could not take (a full disk, a failing database): held, enforced, retried.

Taint only ever makes writes stricter, so failing to record it must fail **closed**. When the write of
an untrusted tool result's taint fails, :class:`~.store.SessionStateStore` holds the taint here, in
this process, and:

* every taint query (the write gate's, ``session_tainted`` of the answer) sees it, so the session's
  LLM-authored writes are quarantined exactly as if it had been written;
* it is written at the next chance (the next tool result, session note, gated write or readiness
  check), in the order it arrived, and forgotten only once written;
* ``GET /v1/ready`` reports ``session_state`` not ready while any is held: a taint held only in memory
  does not survive a restart, so the operator is told to free the disk before restarting.

The hold is bounded (:data:`MAX_HELD`); past it the store stops holding more and instead treats
**every** identity as tainted (every LLM write quarantines) for the rest of the process's life: the
taints it could not hold are known to no one, so nothing short of that is closed. Readiness says so.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from .store import TaintState

__all__ = ["MAX_HELD", "OVERFLOW_SOURCE", "HeldTaints"]

#: Most taints held in memory at once.
MAX_HELD = 100_000
#: The taint every identity carries while more taints failed to be written than could be held.
OVERFLOW_SOURCE = "session taint that could not be recorded (the session-state database refused writes)"

#: ``(realm, identity, session_key | None)``.
Key = tuple[str, str, "str | None"]


class HeldTaints:
    """Thread-safe, insertion-ordered taints waiting to be written (see the module docstring)."""

    def __init__(self, limit: int = MAX_HELD) -> None:
        self._lock = threading.Lock()
        self._held: dict[Key, TaintState] = {}
        self._limit = limit
        self.overflowed: TaintState | None = None

    def __len__(self) -> int:
        with self._lock:
            return len(self._held) + (1 if self.overflowed is not None else 0)

    def hold(self, key: Key, state: TaintState) -> None:
        """Hold ``state`` for ``key`` (the first taint of a key wins, as in the database)."""
        with self._lock:
            if key in self._held:
                return
            if len(self._held) >= self._limit:
                if self.overflowed is None:
                    self.overflowed = state.__class__(state.tainted_at_ms, OVERFLOW_SOURCE)
                return
            self._held[key] = state

    def pending(self) -> list[tuple[Key, TaintState]]:
        """The held taints, oldest first."""
        with self._lock:
            return list(self._held.items())

    def written(self, key: Key) -> None:
        """``key``'s taint is in the database now (an overflow stays: see the module docstring)."""
        with self._lock:
            self._held.pop(key, None)

    def for_write(self, realm: str, identity: str, session: str | None,
                  counts: Callable[[str], bool] | None = None) -> TaintState | None:
        """A held taint a write by ``identity`` from ``session`` carries: the identity's own (any of its
        sessions, or pending), or the named session's held by another identity ``counts`` admits (every
        one when ``None``; under a fixed source), as the database query would."""
        from .store import OTHER_IDENTITY_TAINT_SOURCE, TaintState, taint_counts

        with self._lock:
            if self.overflowed is not None:
                return self.overflowed
            for (r, ident, sess), state in self._held.items():
                if r == realm and ident == identity:
                    return state
            others = [(ident, state) for (r, ident, sess), state in self._held.items()
                      if r == realm and session is not None and sess == session]
        for ident, state in others:
            if taint_counts(ident, identity, counts):
                return TaintState(state.tainted_at_ms, OTHER_IDENTITY_TAINT_SOURCE)
        return None

    def for_key(self, realm: str, session: str, writer: str | None,
                counts: Callable[[str], bool] | None = None) -> TaintState | None:
        """A held taint of ``session`` in ``realm``, for a write citing that session as evidence: the writer's
        own first, else another identity's ``counts`` admits (every one's when ``None``; under a fixed source
        when ``writer`` is named), or the overflow."""
        from .store import OTHER_IDENTITY_TAINT_SOURCE, TaintState, taint_counts

        with self._lock:
            if self.overflowed is not None:
                return self.overflowed
            found = [(ident, state) for (r, ident, sess), state in self._held.items() if r == realm and sess == session]
        for ident, state in sorted(found, key=lambda item: item[0] != writer):
            if writer is None or ident == writer:
                return state
            if taint_counts(ident, writer, counts):
                return TaintState(state.tainted_at_ms, OTHER_IDENTITY_TAINT_SOURCE)
        return None

    def for_identity(self, identity: str, readable: Callable[[str], bool] | None = None) -> TaintState | None:
        """A held taint of any session of ``identity`` in a realm ``readable`` admits (every realm when
        ``None``), or the overflow (which is no realm's), if any."""
        with self._lock:
            if self.overflowed is not None:
                return self.overflowed
            return next((state for (realm, ident, _), state in self._held.items()
                         if ident == identity and (readable is None or readable(realm))), None)

    def for_session(self, realm: str, identity: str, session: str) -> TaintState | None:
        """The held taint of ``identity``'s ``session``, if any."""
        with self._lock:
            return self._held.get((realm, identity, session)) or self.overflowed
