"""Per-session injection state and per-identity nonces (reference §3B), kept in the durable session state.

One :class:`InjectionSessions` is shared by every coordinator of a runtime
(coordinator clones share it), and its rows live in the runtime's
:class:`~meta_memory.session_state.store.SessionStateStore` (SQLite for one
gateway, PostgreSQL shared by several), so dedup, budgets and nonces hold
across calls, restarts and gateways. Every key is **(realm, logical identity,
session key)**:

* per session: the record ids already injected and the bytes injected so far
  (cap 61,440 per session, :data:`~.constants.MAX_INJECTED_SESSION_BYTES`);
* per identity: the nonce of its current block and the session key it was
  minted for; a call for a different session key (build time uses ``None``)
  mints a fresh 128-bit nonce.

Nothing is evicted for room: rows expire by age, and at the store's row cap a
new session's budget or a new identity's nonce is refused
(``AgentMemoryError(reason="session_limit")``), so the turn gets no block
rather than a fresh budget. The nonce is secret to the block text: it is never
part of ``repr``, logs, ledger rows or errors. All methods are thread-safe.

On a full disk (``AgentMemoryError`` reason ``disk_full``) injection keeps working, as reads do: a
nonce that cannot be stored is minted for this process and kept in memory (bounded) until the state
can be written, and a session's budget and dedup set are not charged (logged): the same records may
be injected again in that session, never fewer safeguards (taint is the firewall's and fails closed).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable

from ..clock import new_nonce
from ..errors import AgentMemoryError
from ..session_state import SessionStateStore, memory_session_state

_log = logging.getLogger("meta_memory.injection")

#: Nonces minted while the session state could not store them (a full disk), kept in memory at most.
MAX_UNSTORED_NONCES = 4096

__all__ = ["InjectionSessions"]


class InjectionSessions:
    """Shared, durable, thread-safe injection state.

    Args:
        state: the session state (default: a process-local in-memory one).
        nonce_fn: nonce source for the default state (32 hex chars by default).
    """

    def __init__(self, state: SessionStateStore | None = None, *, nonce_fn: Callable[[], str] = new_nonce) -> None:
        self.state = state if state is not None else memory_session_state(nonce_fn=nonce_fn)
        self._nonce_fn = nonce_fn
        self._lock = threading.Lock()
        self._unstored: OrderedDict[tuple[str, str, str | None], str] = OrderedDict()

    def __repr__(self) -> str:
        return "InjectionSessions()"

    def nonce_for(self, realm: str, identity: str, session_key: str | None) -> str:
        """The identity's nonce for ``session_key``, minting a fresh one if it was minted for another key
        (kept in memory while the disk is full: see the module docstring)."""
        try:
            nonce = self.state.nonce_for(realm, identity, session_key)
        except AgentMemoryError as exc:
            if exc.reason != "disk_full":
                raise
            key = (realm, identity, session_key)
            with self._lock:
                nonce = self._unstored.get(key) or self._nonce_fn()
                self._unstored[key] = nonce
                self._unstored.move_to_end(key)
                while len(self._unstored) > MAX_UNSTORED_NONCES:
                    self._unstored.popitem(last=False)
            return nonce
        if self._unstored:
            with self._lock:
                self._unstored.clear()  # the state takes writes again: its nonces rule
        return nonce

    def used_bytes(self, realm: str, identity: str, session_key: str) -> int:
        """Bytes injected so far in the identity's session (0 for an unknown session)."""
        return self.state.injection_state(realm, identity, session_key)[0]

    def injected_ids(self, realm: str, identity: str, session_key: str) -> frozenset[str]:
        """Record ids already injected in the identity's session."""
        return self.state.injection_state(realm, identity, session_key)[1]

    def commit(self, realm: str, identity: str, session_key: str, record_ids: Iterable[str],
               rendered_bytes: int) -> None:
        """Record an injection: add ``rendered_bytes`` to the counter and the ids to the dedup set (skipped,
        with a warning, when the disk is full: the block was already rendered and is delivered)."""
        try:
            self.state.commit_injection(realm, identity, session_key, record_ids, rendered_bytes)
        except AgentMemoryError as exc:
            if exc.reason != "disk_full":
                raise
            _log.warning("injection budget of a session of %s/%s not charged: %s", realm, identity, exc.reason)

    def compacted(self, realm: str, identity: str, session_key: str) -> None:
        """The session's context was compacted: forget its dedup set and byte counter (re-injection allowed)."""
        self.state.compacted(realm, identity, session_key)

    def reset(self, realm: str, identity: str, session_key: str | None = None) -> None:
        """A fresh-context boundary for ``identity``: drop its nonce, and the named session's state.

        The next block for the identity carries a new nonce; the named session
        starts again with an empty dedup set and a zero byte counter.
        """
        self.state.reset_injection(realm, identity, session_key)

    def stats(self) -> dict[str, int]:
        """``{sessions, nonce_identities, limit, expiry_ms}`` (never the nonces)."""
        s = self.state.stats()
        return {"sessions": s["injection_sessions"], "nonce_identities": s["nonce_identities"],
                "limit": s["limit"], "expiry_ms": s["expiry_ms"]}
