"""Durable session state keyed by realm, identity and session key (taint, reset marks, injection budgets, nonces).

:class:`~.store.SessionStateStore` is the one authority; :mod:`.backends` keeps it in SQLite (one gateway) or in
the PostgreSQL store's schema (several gateways). :func:`open_session_state` picks the backend for a runtime.
"""

from __future__ import annotations

from .backends import PostgresSessionBackend, SqliteSessionBackend
from .store import DEFAULT_EXPIRY_MS, DEFAULT_LIMIT, ResetBoundary, SessionStateStore, TaintState
from .wiring import memory_session_state, open_session_state

__all__ = [
    "DEFAULT_EXPIRY_MS",
    "DEFAULT_LIMIT",
    "PostgresSessionBackend",
    "ResetBoundary",
    "SessionStateStore",
    "SqliteSessionBackend",
    "TaintState",
    "memory_session_state",
    "open_session_state",
]
