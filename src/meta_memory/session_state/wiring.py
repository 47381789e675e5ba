"""Choosing where a runtime keeps its session state."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from meta_memory.clock import Clock, SystemClock
from meta_memory.storage.layout import SESSION_STATE_FILE

from .backends import PostgresSessionBackend, SqliteSessionBackend
from .store import DEFAULT_EXPIRY_MS, DEFAULT_LIMIT, SessionStateStore

__all__ = ["SESSION_STATE_FILE", "open_session_state", "memory_session_state"]


def open_session_state(
    record_store: Any,
    sqlite_root: Path | None,
    clock: Clock,
    *,
    expiry_ms: int = DEFAULT_EXPIRY_MS,
    limit: int = DEFAULT_LIMIT,
    identity_limit: int | None = None,
) -> SessionStateStore:
    """The session state of a runtime: in the PostgreSQL store's schema when ``record_store`` is the
    PostgreSQL store (shared by every gateway on that database), else ``<sqlite_root>/session-state.db``,
    else (no state directory) an in-memory database. ``identity_limit`` is one identity's row quota
    (``None``: a twentieth of ``limit``). Raises ``AgentMemoryError("io")`` when it cannot open."""
    if hasattr(record_store, "session_state_connection"):
        backend: Any = PostgresSessionBackend(record_store)
    elif sqlite_root is not None:
        backend = SqliteSessionBackend(Path(sqlite_root) / SESSION_STATE_FILE, clock.now_ms())
    else:
        backend = SqliteSessionBackend(":memory:", clock.now_ms())
    return SessionStateStore(backend, clock, expiry_ms=expiry_ms, limit=limit, identity_limit=identity_limit)


def memory_session_state(clock: Clock | None = None, **kwargs: Any) -> SessionStateStore:
    """A process-local session state (in-memory SQLite) for embedders and tests without a state directory."""
    clock = clock or SystemClock()
    return SessionStateStore(SqliteSessionBackend(":memory:", clock.now_ms()), clock, **kwargs)
