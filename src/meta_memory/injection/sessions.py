"""Per-session injection state and per-identity nonces (reference §3B).

One :class:`InjectionSessions` is shared by every coordinator of a runtime
(coordinator clones share it), so dedup and budgets hold across calls:

* per session key: the set of record ids already injected and the bytes
  injected so far (cap 61,440). At most 1,024 keys are tracked; when a new key
  would exceed that, all session state is cleared at once.
* per identity: the nonce of its current block and the session key it was
  minted for; a call for a different session key (build-time uses ``None``)
  mints a fresh 128-bit nonce.

The nonce is secret to the block text: it is never part of ``repr``, logs,
ledger rows or errors. All methods are thread-safe.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ..clock import new_nonce
from .constants import MAX_TRACKED_INJECTION_SESSIONS, MAX_TRACKED_NONCE_IDENTITIES


@dataclass(slots=True)
class _SessionState:
    injected: set[str] = field(default_factory=set)
    used_bytes: int = 0


@dataclass(slots=True)
class _NonceState:
    session_key: str | None
    nonce: str = field(repr=False)


class InjectionSessions:
    """Shared, bounded, thread-safe injection state.

    Args:
        max_sessions: tracked session keys before a wholesale clear (default 1,024).
        max_identities: tracked nonce identities before a wholesale clear (default 4,096).
        nonce_fn: nonce source (default :func:`meta_memory.clock.new_nonce`, 32 hex chars).
    """

    def __init__(
        self,
        *,
        max_sessions: int = MAX_TRACKED_INJECTION_SESSIONS,
        max_identities: int = MAX_TRACKED_NONCE_IDENTITIES,
        nonce_fn: Callable[[], str] = new_nonce,
    ) -> None:
        self._lock = threading.Lock()
        self._sessions: dict[str, _SessionState] = {}
        self._nonces: dict[str, _NonceState] = {}
        self._max_sessions = max_sessions
        self._max_identities = max_identities
        self._nonce_fn = nonce_fn

    def __repr__(self) -> str:
        with self._lock:
            return f"InjectionSessions(sessions={len(self._sessions)}, identities={len(self._nonces)})"

    # -- nonces -----------------------------------------------------------------
    def nonce_for(self, identity: str, session_key: str | None) -> str:
        """The identity's nonce for ``session_key``, minting a fresh one if it was minted for another key."""
        with self._lock:
            state = self._nonces.get(identity)
            if state is not None and state.session_key == session_key:
                return state.nonce
            if state is None and len(self._nonces) >= self._max_identities:
                self._nonces.clear()
            nonce = self._nonce_fn()
            self._nonces[identity] = _NonceState(session_key=session_key, nonce=nonce)
            return nonce

    # -- session budgets and dedup ------------------------------------------------
    def used_bytes(self, session_key: str) -> int:
        """Bytes injected so far in this session (0 for an untracked key)."""
        with self._lock:
            state = self._sessions.get(session_key)
            return state.used_bytes if state else 0

    def injected_ids(self, session_key: str) -> frozenset[str]:
        """Record ids already injected in this session."""
        with self._lock:
            state = self._sessions.get(session_key)
            return frozenset(state.injected) if state else frozenset()

    def commit(self, session_key: str, record_ids: Iterable[str], rendered_bytes: int) -> None:
        """Record an injection: add ``rendered_bytes`` to the counter and the ids to the dedup set.

        Tracking a new key when 1,024 are already tracked first clears every session.
        """
        with self._lock:
            state = self._sessions.get(session_key)
            if state is None:
                if len(self._sessions) >= self._max_sessions:
                    self._sessions.clear()
                state = self._sessions[session_key] = _SessionState()
            state.used_bytes += max(0, rendered_bytes)
            state.injected.update(record_ids)

    def compacted(self, session_key: str) -> None:
        """The session's context was compacted: forget its dedup set and byte counter (re-injection allowed)."""
        with self._lock:
            self._sessions.pop(session_key, None)

    def reset(self, identity: str, session_key: str | None = None) -> None:
        """A fresh-context boundary for ``identity``: drop its nonce, and the session's state if named.

        The next block for the identity carries a new nonce; the named session
        starts again with an empty dedup set and a zero byte counter.
        """
        with self._lock:
            self._nonces.pop(identity, None)
            if session_key is not None:
                self._sessions.pop(session_key, None)

    def stats(self) -> dict[str, int]:
        """``{sessions, max_sessions, nonce_identities, max_nonce_identities}`` (never the nonces)."""
        with self._lock:
            return {"sessions": len(self._sessions), "max_sessions": self._max_sessions,
                    "nonce_identities": len(self._nonces), "max_nonce_identities": self._max_identities}

    def tracked_sessions(self) -> int:
        """Number of session keys currently tracked (for tests and status)."""
        with self._lock:
            return len(self._sessions)
