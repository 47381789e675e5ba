"""Where session state is kept: a SQLite file for one gateway, or the PostgreSQL store's schema for several.

A backend runs a function inside one transaction and hands it a :class:`Sql`
cursor. The SQL of :mod:`.store` is written once with ``?`` placeholders and
``{t}`` before each table name; the backend fills in its placeholder style,
the table qualifier and a row-lock suffix (``{lock}``: ``FOR UPDATE`` in
PostgreSQL, nothing in SQLite, whose ``BEGIN IMMEDIATE`` already serialises
writers).

* :class:`SqliteSessionBackend`: ``<state-dir>/session-state.db``
  (or ``:memory:`` for a runtime without a state directory), WAL, one
  connection under a lock; commits that record taint or a reset are
  ``synchronous=FULL`` (fsynced before the call answers), the others (a
  session noted, an injection counted, a nonce minted) ``NORMAL`` (they
  survive a process crash; a power loss may drop the last few, never a taint), migrations of domain
  ``session-state`` from :mod:`meta_memory.agent_memory.store.schema`.
* :class:`PostgresSessionBackend`: the tables of domain ``session-state`` in the
  PostgreSQL store's schema (migrated with the store), on its connection pool,
  so every gateway on the database sees one state.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

from meta_memory.errors import AgentMemoryError
from meta_memory.storage.disk import refuse_if_disk_full
from meta_memory.storage.integrity import is_corrupt

__all__ = ["Sql", "SessionBackend", "SqliteSessionBackend", "PostgresSessionBackend"]

T = TypeVar("T")


class Sql(Protocol):
    """A cursor bound to one open transaction."""

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run ``sql`` (``?`` placeholders, ``{t}`` table qualifier, ``{lock}`` row lock) and return its rows."""
        ...

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run ``sql`` and return the number of rows it changed."""
        ...


class SessionBackend(Protocol):
    """One database holding the session-state tables."""

    def write(self, fn: Callable[[Sql], T], *, durable: bool = True) -> T:
        """Run ``fn`` in one write transaction (committed when it returns, rolled back when it raises).
        ``durable=False`` allows a commit that survives a process crash but maybe not a power loss."""
        ...

    def read(self, fn: Callable[[Sql], T]) -> T:
        """Run ``fn`` on one consistent snapshot."""
        ...

    def close(self) -> None:
        """Release connections (idempotent)."""
        ...


class _Cursor:
    def __init__(self, conn: Any, fmt: Callable[[str], str]) -> None:
        self._conn = conn
        self._fmt = fmt

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in self._conn.execute(self._fmt(sql), tuple(params)).fetchall()]

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        cur = self._conn.execute(self._fmt(sql), tuple(params))
        return int(cur.rowcount or 0)


class SqliteSessionBackend:
    """Session state in one SQLite file (one gateway owns its state directory).

    Args:
        path: the database file, or ``":memory:"`` (state then lives as long as the process).
        now_ms: the time recorded on applied migrations.

    Raises:
        AgentMemoryError(io): the file cannot be opened or migrated.
    """

    def __init__(self, path: Path | str, now_ms: int) -> None:
        from meta_memory.agent_memory.store.schema import migrate_session_state

        self.path = str(path)
        self._lock = threading.Lock()
        cache: dict[str, str] = {}

        def fmt(sql: str) -> str:
            out = cache.get(sql)
            if out is None:
                out = cache[sql] = sql.replace("{t}", "").replace("{lock}", "")
            return out

        self._fmt = fmt
        try:
            if self.path != ":memory:":
                from meta_memory.storage.perms import private_sqlite

                private_sqlite(Path(self.path))  # 0600 before SQLite creates it: its -wal/-shm copy the mode
            self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30.0)
            if self.path != ":memory:":
                self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=FULL")
            self._conn.execute("PRAGMA secure_delete=ON")  # a cleared nonce does not linger in free pages
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                migrate_session_state(self._conn, now_ms)
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            if is_corrupt(exc):
                raise AgentMemoryError(
                    "corrupt", f"the session-state database {Path(self.path).name} cannot be read ({exc}): it "
                    "holds session taint, so the gateway does not start without it. Run `meta-memory doctor "
                    "--state-dir <state dir>`, then restore the file from a backup, or move it away to start "
                    "with no session state (every session starts clean)") from None
            raise AgentMemoryError("io", f"cannot open the session-state database: {exc}") from None
        self._closed = False
        self._durable = True

    def _run(self, fn: Callable[[Sql], T], begin: str, durable: bool = True) -> T:
        with self._lock:
            if self._closed:
                raise AgentMemoryError("io", "the session-state database is closed")
            try:
                if begin != "BEGIN" and durable != self._durable:
                    self._conn.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
                    self._durable = durable
                self._conn.execute(begin)
                try:
                    out = fn(_Cursor(self._conn, self._fmt))
                    self._conn.execute("COMMIT")
                    return out
                except BaseException:
                    if self._conn.in_transaction:  # SQLite has already rolled back after a full disk
                        self._conn.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                if self.path != ":memory:":
                    refuse_if_disk_full(exc, Path(self.path), "recording session state")
                raise AgentMemoryError("io", f"session-state database error: {exc}") from None

    def write(self, fn: Callable[[Sql], T], *, durable: bool = True) -> T:
        return self._run(fn, "BEGIN IMMEDIATE", durable)

    def truncate_wal(self) -> None:
        """Checkpoint the WAL into the database file and truncate it (after an erase: ``secure_delete``
        zeroes freed pages in the file, and the WAL must not keep the old ones)."""
        with self._lock:
            if self._closed or self.path == ":memory:":
                return
            try:
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            except sqlite3.Error as exc:
                raise AgentMemoryError("io", f"session-state database error: {exc}") from None

    def read(self, fn: Callable[[Sql], T]) -> T:
        return self._run(fn, "BEGIN")

    def probe(self) -> str | None:
        """What keeps the database from serving (a read of its schema page fails), or ``None``."""
        try:
            self.read(lambda sql: sql.rows("SELECT count(*) FROM sqlite_master"))
        except AgentMemoryError as exc:
            return exc.message
        return None

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._conn.close()


class PostgresSessionBackend:
    """Session state in the PostgreSQL agent-memory store's schema, shared by every gateway on it.

    Args:
        store: a :class:`~meta_memory.agent_memory.store.postgres.PostgresAgentMemoryStore` (its
            migrations created the tables; its pool serves the connections).
    """

    def __init__(self, store: Any) -> None:
        from meta_memory.agent_memory.store.pg_schema import quote_ident

        self._store = store
        prefix = quote_ident(store.schema) + "."
        cache: dict[str, str] = {}

        def fmt(sql: str) -> str:
            out = cache.get(sql)
            if out is None:
                out = cache[sql] = sql.replace("{t}", prefix).replace("{lock}", " FOR UPDATE").replace("?", "%s")
            return out

        self._fmt = fmt

    def _run(self, fn: Callable[[Sql], T], read_only: bool) -> T:
        import psycopg

        try:
            with self._store.session_state_connection() as conn:
                with conn.transaction():
                    if read_only:
                        conn.execute("SET TRANSACTION READ ONLY")
                    return fn(_Cursor(conn, self._fmt))
        except psycopg.Error as exc:
            raise AgentMemoryError("io", f"session-state database error: {exc}") from None

    def write(self, fn: Callable[[Sql], T], *, durable: bool = True) -> T:
        return self._run(fn, False)  # every PostgreSQL commit is durable

    def read(self, fn: Callable[[Sql], T]) -> T:
        return self._run(fn, True)

    def close(self) -> None:
        """The pool belongs to the store, which closes it."""
