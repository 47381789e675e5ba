"""The bundled agent-memory store: one SQLite database per realm (reference §2B, §2C).

Layout: ``<root>/<encode_path_segment(realm)>.sqlite3``; legacy markdown for
import at ``<root>/<encode(realm)>/<encode(identity)>.md``. Upper-case letters are escaped
(``Default`` -> ``%44efault.sqlite3``), so no two realms share a file on a case-insensitive file
system; when the store opens it renames what an earlier version named with them kept
(:meth:`~meta_memory.storage.layout.AgentMemoryPaths.upgrade_file_names`) and refuses a realm
both of whose names exist.

Durability and concurrency:

- WAL journal, ``synchronous=FULL`` (an acknowledged write survives power
  loss), ``busy_timeout`` on every connection. Full-text segment merges and WAL
  checkpoints run off the write path, on a background thread (:mod:`.upkeep`).
- Every write is one ``BEGIN IMMEDIATE`` transaction: validate against live
  rows (:func:`~meta_memory.agent_memory.validator.plan_batch`), write the
  records, keep the full-text index in step (a record has an FTS row iff it is
  active), write one audit row per op, commit.
- Writes are serialised per realm by a lock around one writer connection;
  across processes SQLite's write lock (waited on via ``busy_timeout``) does
  the same. Reads use per-thread connections (WAL readers), so they never wait
  for writers.

At a realm's first open in this process: migrations (:mod:`.schema`), stage
garbage collection (24 h, keeping stages a pending promotion references), planner
statistics when missing or stale (:mod:`.planner`; checked again every 1,000 write
transactions, ``PRAGMA optimize`` at close), then the one-shot markdown import.
"""

from __future__ import annotations

import contextlib
import json
import logging
import operator
import os
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextvars import ContextVar
from functools import lru_cache
from itertools import zip_longest
from pathlib import Path
from typing import Any, TypeVar

from meta_memory import deadline
from meta_memory.agent_memory import writes
from meta_memory.agent_memory.erase import EraseReport
from meta_memory.agent_memory.filters import FilterNode
from meta_memory.agent_memory.markdown import (
    IMPORTED_SUFFIX,
    strip_markdown_records,
)
from meta_memory.agent_memory.model import (
    Candidates,
    MemoryRecord,
    RecordView,
    Scope,
    ScopeKind,
    UsageEvent,
)
from meta_memory.agent_memory.realm_list import realm_cap_refusal, refuse_realm_creation, served_realms
from meta_memory.agent_memory.store import multirow, planner, upkeep
from meta_memory.agent_memory.store.base import (
    DEFAULT_SCOPE_FLOOR_BYTES,
    DEFAULT_SCOPE_FLOOR_RECORDS,
    InjectionRow,
    WriteGate,
)
from meta_memory.agent_memory.store.common import (
    INJECTION_COLUMNS,
    INSERT_COLUMNS,
    RECORD_COLUMNS,
    STAGE_GC_MAX_AGE_MS,
    STATE_ASSIGNMENTS,
    VIEW_COLUMNS,
    RankingCounts,
    SqlAgentMemoryStore,
    injection_values,
    insert_values,
    row_to_record,
    row_to_view,
    state_values,
)
from meta_memory.agent_memory.store.dialect import SQLITE, unexpired
from meta_memory.agent_memory.store.schema import (
    delete_fts,
    delete_vector,
    insert_fts,
    insert_fts_many,
    is_current,
    migrate,
)
from meta_memory.agent_memory.store.tables import Sql
from meta_memory.agent_memory.store.telemetry import (
    SETTLE_WAIT_S,
    PendingTelemetry,
    TelemetryDrops,
    in_recall_reads,
    recall_reads,
)
from meta_memory.agent_memory.store.tx import WriteTx
from meta_memory.agent_memory.store.view_cache import DEFAULT_VIEW_CACHE_BYTES, MAX_RECORDS, ViewCache
from meta_memory.clock import Clock, SystemClock
from meta_memory.errors import AgentMemoryError
from meta_memory.identity import parse_identity, parse_realm
from meta_memory.limits import (
    DEFAULT_IDENTITY_RECORD_LIMIT,
    DEFAULT_MAX_OPEN_REALMS,
    DEFAULT_MAX_REALMS,
    DEFAULT_SQLITE_CACHE_MB,
    MAX_INJECTIONS_PER_IDENTITY,
)
from meta_memory.observability.tracing import span
from meta_memory.recall import bm25, fts
from meta_memory.recall.fts_top import TermCounts
from meta_memory.recall.lexical_index import DEFAULT_MAX_BYTES, LexicalIndexes
from meta_memory.recall.semantic import vectors as vector_index
from meta_memory.storage import sqlite_heap
from meta_memory.storage.disk import disk_full_error, is_disk_full, refuse_if_disk_full
from meta_memory.storage.integrity import FileSignature, is_corrupt, probe, signature
from meta_memory.storage.layout import AgentMemoryPaths, RealmPathError, realm_file_name_problem
from meta_memory.storage.perms import private_dir, private_file, private_sqlite

__all__ = [
    "SqliteAgentMemoryStore",
    "STAGE_GC_MAX_AGE_MS",
    "DEFAULT_SCOPE_FLOOR_RECORDS",
    "DEFAULT_SCOPE_FLOOR_BYTES",
    "realm_db_path",
    "DEFAULT_MAX_REALMS",
    "DEFAULT_MAX_OPEN_REALMS",
]

log = logging.getLogger(__name__)

_T = TypeVar("_T")

#: Idle reader connections kept per open realm.
MAX_IDLE_READERS = 2
#: A queued telemetry write: ``("usage", (ids, event, at_ms))`` or ``("injections", rows)``.
_TelemetryOp = tuple[str, Any]
#: SQLite VM steps between two checks of the recall's time budget.
PROGRESS_STEPS = 10_000
#: Tries of the WAL truncation after an erase (50 ms apart, all within one ``busy_timeout``, which each
#: spends waiting on readers): another process's checkpoint holding SQLite's checkpointer lock answers busy
#: at once.
ERASE_TRUNCATE_ATTEMPTS = 5


def realm_db_path(root: Path, realm: str) -> Path:
    """``<root>/<encode_path_segment(realm)>.sqlite3``, from the path authority
    (:class:`~meta_memory.storage.layout.AgentMemoryPaths`).

    Raises ``AgentMemoryError("invalid_record", "realm must be at most 239 bytes once encoded ...")``
    when the encoded name leaves no room for the database's own side files in 255 bytes
    (:func:`~meta_memory.storage.layout.realm_file_name_problem`).
    """
    return _realm_db_path(AgentMemoryPaths(root), realm)


def _realm_db_path(paths: AgentMemoryPaths, realm: str) -> Path:
    try:
        return paths.realm_db_path(realm)
    except RealmPathError as exc:
        raise AgentMemoryError("invalid_record", str(exc)) from None


@lru_cache(maxsize=64)
def _records_select(columns: str, where: str) -> str:
    return f"SELECT {columns} FROM records WHERE {where}"


#: The page cache of a realm's writer connection, KiB (SQLite's default is 2,000). A bulk write of 1,000
#: records touches pages all over the records table's indexes (the content-hash index is in hash order);
#: with the default cache most were read back from the file each call (25 us of CPU per record inserted
#: at 100,000 records, 18 with this cache). Pages are held only once used: a small realm stays small.
WRITER_CACHE_KIB = 32 * 1024
#: Prepared statements each realm connection keeps (Python's default is 128). A statement over the records
#: and full-text tables holds about 14 KiB of SQLite's heap, which no cache limit can take back, and the
#: queries with ``IN`` lists of many lengths filled all 128 places (about 1.8 MiB a connection).
CACHED_STATEMENTS = 32
#: Measured most SQLite heap one open realm keeps beyond its page caches: its connections' prepared statements,
#: the writer's multi-row inserts of a bulk write (:mod:`.multirow`) the largest (bytes). Outside the soft heap
#: limit (``sqlite_cache_bytes``): ``max_open_realms`` bounds it.
STATEMENT_BYTES_PER_REALM = 6 * 1024 * 1024
#: The smallest writer cache a small ``sqlite_cache_bytes`` leaves (SQLite's default, KiB).
MIN_WRITER_CACHE_KIB = 2000
#: Default SQLite soft heap limit of the process (``[agent_memory] sqlite_cache_mb``).
DEFAULT_SQLITE_CACHE_BYTES = DEFAULT_SQLITE_CACHE_MB * 1024 * 1024

#: The one statement inserting a record row (written once, not per row).
#: A filtered search widens its candidates this many times (4x each, from 4 x limit) before it reads
#: the scope's matching rows instead.
_WIDENINGS = 3

_INSERT_RECORD = f"INSERT INTO records({INSERT_COLUMNS}) VALUES ({', '.join('?' * (INSERT_COLUMNS.count(',') + 1))})"
#: The head of the multi-row insert of many records, their row ids given (:meth:`SqliteAgentMemoryStore._write_new_records`).
_INSERT_RECORD_HEAD = f"INSERT INTO records(rid, {INSERT_COLUMNS})"

class _RealmDb:
    """One open realm database: its writer connection and a few idle WAL reader connections.

    ``users`` counts the reads and writes in flight; only a realm with none is closed by the LRU.
    """

    def __init__(self, name: str, path: Path, writer: sqlite3.Connection) -> None:
        self.name = name
        self.path = path
        self.writer = writer
        self.write_lock = threading.Lock()
        self.writes = 0  # durable write transactions since open, for the planner-statistics check
        self.idle: list[sqlite3.Connection] = []
        self.users = 0
        # WAL checkpoints run on a connection of their own, off the write path (see .checkpoint)
        self.commits_since_checkpoint = 0
        self.checkpoint_lock = threading.Lock()
        self.checkpoint_conn: sqlite3.Connection | None = None

    def checkpoint(self, connect: Callable[[Path], sqlite3.Connection], *, settle: bool = False) -> None:
        """One ``PASSIVE`` WAL checkpoint on the checkpoint connection (opened by ``connect`` once).

        ``settle`` (the caller does not hold :attr:`write_lock`): when the checkpoint copied every frame
        it saw, a second one runs under the write lock, copying the frames committed while the first
        ran (a few commits' worth; none when no write came meanwhile). Only a WAL copied to its end is
        started over from its beginning by the next write: without this a steady stream of writes
        always outruns the checkpoint, so the WAL file grows on every commit until the writer's inline
        bound (:func:`.upkeep.needs_inline_checkpoint`), and a commit that grows the file costs its
        ``fsync`` the file system's own journal too. Durability does not change: every commit was on
        disk in the WAL before it was acknowledged."""
        busy, wal_frames, copied = self._checkpoint_once(connect)
        if settle and not busy and copied == wal_frames:
            with self.write_lock:  # lock order: the write lock, then the checkpoint lock (as the writer's inline one)
                busy, wal_frames, copied = self._checkpoint_once(connect)
        if not busy and copied == wal_frames:
            self.commits_since_checkpoint = 0

    def _checkpoint_once(self, connect: Callable[[Path], sqlite3.Connection]) -> tuple[int, int, int]:
        """``PRAGMA wal_checkpoint(PASSIVE)``'s ``(busy, WAL frames, frames copied)``."""
        with self.checkpoint_lock:
            if self.checkpoint_conn is None:
                self.checkpoint_conn = connect(self.path)
            busy, wal_frames, copied = self.checkpoint_conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        return int(busy), int(wal_frames), int(copied)

    def close(self) -> None:
        with self.write_lock:
            with contextlib.suppress(sqlite3.Error):
                # refresh the statistics the planner asked for, sampled so closing stays quick
                self.writer.execute(f"PRAGMA analysis_limit = {planner.ANALYSIS_LIMIT}")
                self.writer.execute("PRAGMA optimize")
                planner.note_empty_partial_indexes(self.writer)
            with self.checkpoint_lock:
                conns = [self.writer, *self.idle, *([self.checkpoint_conn] if self.checkpoint_conn else [])]
                for conn in conns:
                    with contextlib.suppress(sqlite3.Error):
                        conn.close()
                self.checkpoint_conn = None
            self.idle.clear()


def _stop_when_expired() -> int:
    """SQLite progress handler: non-zero aborts the running statement (``interrupted``)."""
    return 1 if deadline.expired() else 0


class _Pin:
    """One realm's read transaction in a :class:`_Pins`: its database (held open for the block, ``None`` for
    a realm without one), the pooled reader connection inside the transaction, the reads using it now and
    whether one of them failed."""

    __slots__ = ("db", "conn", "users", "failed", "token", "rids", "generations")

    def __init__(self, db: _RealmDb | None, conn: sqlite3.Connection) -> None:
        self.db, self.conn = db, conn
        self.users = 0
        self.failed = False
        #: names the transaction to the in-process index (caught up to it once, it is not asked again)
        self.token = object()
        #: ``memory_id -> rid`` of the candidates found live in the scope in this transaction
        self.rids: dict[str, int] = {}
        #: ``(scope kind, scope key) -> generation`` read in this transaction (one snapshot: they cannot move in it)
        self.generations: dict[tuple[str, str], int] = {}


class _Pins:
    """The read transactions a :meth:`SqliteAgentMemoryStore.recall_reads` block holds open, per realm. Only
    the block's own thread, and only ``store``, uses them."""

    __slots__ = ("store", "thread", "open")

    def __init__(self, store: SqliteAgentMemoryStore) -> None:
        self.store = store
        self.thread = threading.get_ident()
        self.open: dict[str, _Pin] = {}

    def end(self, realm: str) -> None:
        """End ``realm``'s transaction and hand its connection and database back."""
        store = self.store
        pin = self.open.pop(realm)
        db, conn = pin.db, pin.conn
        try:
            if conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("COMMIT")
            store._checkin(db, conn)
        finally:
            if db is not None:
                store._release(db)

    def of(self, conn: sqlite3.Connection) -> _Pin | None:
        """The transaction whose connection is ``conn``, if any."""
        for pin in self.open.values():
            if pin.conn is conn:
                return pin
        return None

    def close(self) -> None:
        """End every transaction of the block."""
        while self.open:
            self.end(next(iter(self.open)))


#: The read transactions of the :meth:`SqliteAgentMemoryStore.recall_reads` block being run, if any.
_PINS: ContextVar[_Pins | None] = ContextVar("sqlite_recall_pins", default=None)


#: a view's record id, read for many views at once
_VIEW_ID = operator.attrgetter("id")


class _Ranked:
    """A candidate query's answer: ``hits`` ``(rid, bm25, k)`` best first, where ``k`` is the hit's column
    in the index's term ``table`` or its place in ``fields`` (FTS5's term fields, one mapping per hit)."""

    __slots__ = ("hits", "table", "fields")

    def __init__(self, hits: list[tuple[int, float, int]], *, table: Any = None,
                 fields: list[Mapping[str, int]] | None = None) -> None:
        self.hits = hits
        self.table = table
        self.fields = fields

    def only(self, rids: Collection[int]) -> _Ranked:
        """The hits whose rid is in ``rids`` (their columns kept)."""
        return _Ranked([h for h in self.hits if h[0] in rids], table=self.table, fields=self.fields)


class SqliteAgentMemoryStore(SqlAgentMemoryStore[sqlite3.Connection]):
    """Per-realm SQLite store implementing :class:`~meta_memory.agent_memory.store.base.AgentMemoryStore`.

    Args:
        root: the agent-memory root directory (created if missing).
        clock: time source (epoch ms); defaults to the system clock.
        gate: default write gate for LLM-authored writes (per-call ``gate`` overrides).
        busy_timeout_ms: how long a connection waits for another process's write lock.
        import_markdown: run the one-shot legacy markdown import at each realm's first open.
        max_realms: most realm databases under ``root`` (``[agent_memory] max_realms``); a write
            that would create one more is refused with ``AgentMemoryError("limit", ...)``.
        max_open_realms: most realms kept open at once (``[agent_memory] max_open_realms``); past
            it the least recently used idle realm's connections are closed (reopened on demand).
        identity_record_limit: most rows one identity scope holds, any status (``[agent_memory]
            identity_record_limit``); a write that would pass it is refused whole with
            ``AgentMemoryError("limit", ...)``.
        recall_index_bytes: memory budget of the in-process recall index
            (:mod:`meta_memory.recall.lexical_index`; ``[agent_memory] recall_index_mb``); ``0`` = off.
        sqlite_cache_bytes: the process's SQLite soft heap limit (``[agent_memory] sqlite_cache_mb``;
            :mod:`meta_memory.storage.sqlite_heap`): every connection's page cache together, process-wide
            (set when the store opens; ``0`` leaves the process's limit as it is). A writer's own cache is
            at most half of it.
        view_cache_bytes: memory of the decoded record views recall keeps (``[agent_memory]
            view_cache_mb``; :mod:`.view_cache`).
        realms: the realm allow-list (``[agent_memory] realms``; ``None`` = any realm): creating an
            unlisted realm is refused with ``InvalidParams`` naming ``realm``
            (:mod:`meta_memory.agent_memory.realm_list`).

    Connections: a realm's database is opened (and created) only by a write; a read of a realm
    without a database answers from an empty, schema-only in-memory database and creates nothing.
    Each open realm has one writer and at most :data:`MAX_IDLE_READERS` idle readers; readers
    stop their statement when the calling recall's time budget is spent (:mod:`meta_memory.deadline`).

    Raises ``AgentMemoryError("invalid_config", "agent memory root path must not be empty")``.
    """

    #: every read statement stops once the calling recall's deadline passes (reader progress handler),
    #: so a time-boxed recall may run on the caller's thread (``TimeBox.call(inline=True)``)
    stops_at_deadline = True

    def __init__(
        self,
        root: AgentMemoryPaths | Path | str,
        clock: Clock | None = None,
        *,
        gate: WriteGate | None = None,
        busy_timeout_ms: int = 10_000,
        import_markdown: bool = True,
        max_realms: int = DEFAULT_MAX_REALMS,
        max_open_realms: int = DEFAULT_MAX_OPEN_REALMS,
        recall_index_bytes: int = DEFAULT_MAX_BYTES,
        realms: Collection[str] | None = None,
        sqlite_cache_bytes: int = DEFAULT_SQLITE_CACHE_BYTES,
        view_cache_bytes: int = DEFAULT_VIEW_CACHE_BYTES,
        identity_record_limit: int = DEFAULT_IDENTITY_RECORD_LIMIT,
    ) -> None:
        if not str(root.root if isinstance(root, AgentMemoryPaths) else root).strip():
            raise AgentMemoryError("invalid_config", "agent memory root path must not be empty")
        if max_realms < 1 or max_open_realms < 1 or identity_record_limit < 1:
            raise AgentMemoryError("invalid_config",
                                   "max_realms, max_open_realms and identity_record_limit must be at least 1")
        if sqlite_cache_bytes < 0 or view_cache_bytes < 0:
            raise AgentMemoryError("invalid_config", "sqlite_cache_bytes and view_cache_bytes must be >= 0")
        paths = root if isinstance(root, AgentMemoryPaths) else AgentMemoryPaths(Path(root))
        self.paths = AgentMemoryPaths(private_dir(paths.root))
        self.root = self.paths.root
        try:  # what an earlier version named with upper-case letters kept moves to its name now
            self._names = self.paths.upgrade_file_names()
        except OSError as exc:
            raise AgentMemoryError("io", f"cannot rename the realm files an earlier version named in {self.root}: "
                                         f"{exc}") from None
        for realm in self._names.moves:
            log.info("agent memory: realm %r renamed from %s to %s (upper-case letters escaped)",
                     realm, *self._names.database_move(realm))
        for realm in self._names.conflicts:
            log.error("agent memory: %s", self._names.conflict_message(realm))
        self.clock: Clock = clock or SystemClock()
        self.gate = gate
        self.busy_timeout_ms = busy_timeout_ms
        self.import_markdown = import_markdown
        self.max_realms = max_realms
        self.max_open_realms = max_open_realms
        self.identity_record_limit = identity_record_limit
        self.allowed_realms = frozenset(realms) if realms is not None else None
        self._realms: OrderedDict[str, _RealmDb] = OrderedDict()  # least recently used first
        self._open_lock = threading.Lock()
        self._empty_idle: list[sqlite3.Connection] = []
        self._opening: dict[str, threading.Lock] = {}  # per-realm locks of realms being opened
        self._creating: set[str] = set()  # realms being opened now (counted by the realm cap)
        self._closed = False
        self.lexical_index = LexicalIndexes(self._read, max_bytes=recall_index_bytes, on_built=self._keep_resident)
        #: common phrases' document counts of one-scope realms, for the FTS5 path (:mod:`meta_memory.recall.fts_top`)
        self.term_counts = TermCounts()
        #: candidate rankings the one-scope FTS5 path could not prove exact (``ranking_stats``)
        self.rankings = RankingCounts(bm25.DEGRADED_APPROXIMATE)
        self._upkeep = upkeep.BackgroundUpkeep(self._upkeep_realm)
        self.telemetry = TelemetryDrops()
        #: usage marks and injection-ledger rows queued per realm, written off the read path (:mod:`.telemetry`)
        self._pending: PendingTelemetry[_TelemetryOp] = PendingTelemetry(self._flush_telemetry)
        self._probed: dict[str, tuple[FileSignature, str | None]] = {}  # readiness: last result per realm file
        #: decoded record views recall read lately, re-validated in each read's snapshot (:mod:`.view_cache`)
        self._views = ViewCache(max_bytes=view_cache_bytes)
        self.sqlite_cache_bytes = sqlite_cache_bytes
        #: a writer's page cache (KiB): WRITER_CACHE_KIB, or half the SQLite budget when that is smaller
        self.writer_cache_kib = (min(WRITER_CACHE_KIB, max(MIN_WRITER_CACHE_KIB, sqlite_cache_bytes // 2048))
                                 if sqlite_cache_bytes else WRITER_CACHE_KIB)
        if sqlite_cache_bytes:
            sqlite_heap.set_soft_heap_limit(sqlite_cache_bytes)

    # ================================================================ connections

    def _connect(self, path: Path) -> sqlite3.Connection:
        try:
            private_sqlite(path)  # 0600 before SQLite creates it: its -wal/-shm files copy the mode
        except OSError as exc:
            refuse_if_disk_full(exc, path, f"creating {path.name}")
            raise sqlite3.OperationalError(f"cannot make {path.name} owner-only: {exc.strerror}") from None
        conn = sqlite3.connect(
            path, timeout=self.busy_timeout_ms / 1000, isolation_level=None, check_same_thread=False,
            cached_statements=CACHED_STATEMENTS,
        )
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
        self._retry_locked(lambda: conn.execute("PRAGMA journal_mode = WAL").fetchone())
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("PRAGMA secure_delete = ON")  # freed pages are zeroed: erased content leaves the file
        return conn

    def _retry_locked(self, fn: Callable[[], _T]) -> _T:
        deadline_at = time.monotonic() + self.busy_timeout_ms / 1000
        while True:
            try:
                return fn()
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise
                if time.monotonic() > deadline_at:
                    raise
                time.sleep(0.01)

    def _realm_name(self, realm: str) -> str:
        try:
            name = parse_realm(realm)
        except ValueError as exc:
            raise AgentMemoryError("invalid_record", str(exc)) from None
        if name in self._names.conflicts:
            raise AgentMemoryError("io", self._names.conflict_message(name) + ". Stop the gateway, run "
                                   "`meta-memory doctor --state-dir <state dir>` and keep one of the two files")
        return name

    @property
    def open_realms(self) -> int:
        """How many realms have open connections now (at most ``max_open_realms`` while none is busy)."""
        with self._open_lock:
            return len(self._realms)

    def _realm_exists(self, name: str) -> bool:
        """A database file exists, or a legacy markdown folder waits to be imported (spec: parsed at first access)."""
        path = _realm_db_path(self.paths, name)
        return path.exists() or (self.import_markdown and self.paths.legacy_markdown_dir(name).is_dir())

    def _has_realm(self, name: str) -> bool:
        """See :meth:`AgentMemoryStore._has_realm`: open, or a database (or markdown to import) on disk."""
        with self._open_lock:
            return name in self._realms or self._realm_exists(name)

    def _check_realm_cap(self, name: str) -> None:
        """Refuse creating ``name`` past ``max_realms`` (caller holds ``_open_lock``; realms being created
        by other threads count, so concurrent creations cannot overshoot the cap)."""
        on_disk = self.paths.db_file_names()
        pending = {_realm_db_path(self.paths, n).name for n in self._creating} - on_disk
        count = len(on_disk) + len(pending)
        if count >= self.max_realms:
            raise realm_cap_refusal(name, count, "realm databases", self.max_realms)

    def _acquire(self, realm: str, *, create: bool) -> _RealmDb | None:
        """The open realm ``realm`` with one more user, opening it if needed; ``None`` when it has no
        database and ``create`` is false (a read). Creating a realm past ``max_realms`` is refused.

        Opening (migrations, markdown import) runs outside the store-wide lock, under a per-realm
        lock, so creating or opening one realm never holds up reads and writes of the others.
        """
        if self._closed:
            raise AgentMemoryError("io", "agent memory store is closed")
        name = self._realm_name(realm)
        with self._open_lock:
            db = self._hold_locked(name)
            if db is not None:
                return db
            opening = self._opening.setdefault(name, threading.Lock())
        with opening:
            with self._open_lock:
                db = self._hold_locked(name)
                if db is not None:
                    return db
                if not self._realm_exists(name):
                    if not create:
                        return None
                    refuse_realm_creation(self.allowed_realms, name)  # the allow-list, then the caller's grants
                    self._check_realm_cap(name)
                self._creating.add(name)
            try:
                db = self._open_realm(name)
            finally:
                with self._open_lock:
                    self._creating.discard(name)
            with self._open_lock:
                self._opening.pop(name, None)
                if self._closed:
                    db.close()
                    raise AgentMemoryError("io", "agent memory store is closed")
                self._realms[name] = db
                db.users += 1
                self._evict_locked()
            return db

    def _hold_locked(self, name: str) -> _RealmDb | None:
        """The open realm ``name`` with one more user, or ``None`` (caller holds ``_open_lock``)."""
        db = self._realms.get(name)
        if db is None:
            return None
        self._realms.move_to_end(name)
        db.users += 1
        self._evict_locked()
        return db

    def _db(self, realm: str) -> _RealmDb:
        """The open realm (opened, or created under ``max_realms``, if needed), not held: for diagnostics."""
        db = self._acquire(realm, create=True)
        assert db is not None
        self._release(db)
        return db

    def _release(self, db: _RealmDb) -> None:
        with self._open_lock:
            db.users -= 1
            self._evict_locked()

    def _evict_locked(self) -> None:
        """Close least recently used idle realms until at most ``max_open_realms`` are open (caller holds ``_open_lock``)."""
        excess = len(self._realms) - self.max_open_realms
        if excess <= 0:
            return
        for name in [n for n, db in self._realms.items() if db.users == 0][:excess]:
            self._realms.pop(name).close()
            self._views.forget(name)

    @contextlib.contextmanager
    def _using(self, realm: str, *, create: bool) -> Iterator[_RealmDb | None]:
        db = self._acquire(realm, create=create)
        try:
            yield db
        finally:
            if db is not None:
                self._release(db)

    def _open_realm(self, realm: str) -> _RealmDb:
        path = _realm_db_path(self.paths, realm)
        try:
            writer = self._connect(path)
            writer.execute("PRAGMA wal_autocheckpoint = 0")  # checkpoints run off the write path (.checkpoint)
            writer.execute(f"PRAGMA cache_size = -{self.writer_cache_kib}")
            db = _RealmDb(realm, path, writer)
            now = self.clock.now_ms()

            gc_sql = (
                "FROM stage WHERE created_at_ms < ? AND token NOT IN "
                "(SELECT stage_token FROM pending_promotions WHERE status = 'pending')"
            )

            def setup(conn: sqlite3.Connection) -> None:
                migrate(conn, now)
                conn.execute("DELETE " + gc_sql, (now - STAGE_GC_MAX_AGE_MS,))
                if upkeep.merge_settings_due(conn):
                    upkeep.apply_merge_settings(conn)  # merged in bounded steps off the write path instead

            # Take the write lock only when there is something to do, so opening a
            # realm never waits behind another process's writers.
            if not is_current(writer) or writer.execute(
                "SELECT 1 " + gc_sql + " LIMIT 1", (now - STAGE_GC_MAX_AGE_MS,)
            ).fetchone() or upkeep.merge_settings_due(writer):
                self._tx(db, setup)
            if planner.stale(writer):
                self._tx(db, planner.refresh)
        except sqlite3.Error as exc:
            raise self._open_error(path, exc) from None
        if self.import_markdown:
            writes.import_markdown_folder(self.paths.legacy_markdown_dir(db.name),
                                          lambda: self._realm_transaction(db))
        return db

    @staticmethod
    def _open_error(path: Path, exc: sqlite3.Error) -> AgentMemoryError:
        """Why realm database ``path`` cannot be opened: ``corrupt`` (not a database, malformed: with the
        doctor and the backup as the way out), ``disk_full`` (its migration or first write found no room),
        else ``io``."""
        if is_corrupt(exc):
            return AgentMemoryError(
                "corrupt", f"realm database '{path.name}' cannot be read ({exc}): it is damaged or not a SQLite "
                "database. Calls naming this realm are refused; other realms are served. Stop the gateway, run "
                "`meta-memory doctor --state-dir <state dir>` and restore the file from a backup")
        if is_disk_full(exc):
            return disk_full_error(path, f"opening realm database '{path.name}'")
        return AgentMemoryError("io", f"cannot open realm database '{path.name}': {exc}")

    def _new_reader(self, db: _RealmDb | None) -> sqlite3.Connection:
        try:
            if db is None:  # a realm without a database: an empty schema, in memory
                conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
                conn.row_factory = sqlite3.Row
                conn.execute("BEGIN")
                migrate(conn, self.clock.now_ms())
                conn.execute("COMMIT")
            else:
                conn = self._connect(db.path)
            conn.execute("PRAGMA query_only = ON")
        except sqlite3.Error as exc:
            if db is not None:
                raise self._open_error(db.path, exc) from None
            raise AgentMemoryError("io", f"cannot open realm database '(empty realm)': {exc}") from None
        conn.set_progress_handler(_stop_when_expired, PROGRESS_STEPS)
        return conn

    def _checkout(self, db: _RealmDb | None) -> sqlite3.Connection:
        idle = self._empty_idle if db is None else db.idle
        with self._open_lock:
            if idle:
                return idle.pop()
        return self._new_reader(db)

    def _checkin(self, db: _RealmDb | None, conn: sqlite3.Connection) -> None:
        idle = self._empty_idle if db is None else db.idle
        with self._open_lock:
            if len(idle) < MAX_IDLE_READERS and not self._closed and (db is None or self._realms.get(db.name) is db):
                idle.append(conn)
                return
        with contextlib.suppress(sqlite3.Error):
            conn.close()

    def _snapshot_conn(self, realm: str) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        """A read-only snapshot of ``realm``'s database: a pooled WAL reader connection inside one
        deferred transaction (consistent for the ``with`` block; never blocks or is blocked by writers).
        A realm without a database reads as empty (nothing is created)."""
        return self._read(realm)

    @contextlib.contextmanager
    def recall_reads(self) -> Iterator[None]:
        """See :meth:`AgentMemoryStore.recall_reads`: reads in the block leave the queued usage marks queued,
        and the reads of one realm on the block's thread share one read transaction, opened by the first of
        them and ended with the block (a recall's candidates, neighbours and re-check: one snapshot, one
        ``BEGIN`` and ``COMMIT``, instead of one each). A read on another thread opens its own as always."""
        pins = _Pins(self)
        token = _PINS.set(pins)
        try:
            with recall_reads():
                yield
        finally:
            _PINS.reset(token)
            pins.close()

    @contextlib.contextmanager
    def _read(self, realm: str) -> Iterator[sqlite3.Connection]:
        deadline.check()
        pins = _PINS.get()
        if pins is not None and pins.store is self and pins.thread == threading.get_ident():
            with self._pinned(pins, realm) as conn:
                yield conn
            return
        with span("store.snapshot", **{"db.system.name": "sqlite", "db.namespace": realm}), \
                self._using(realm, create=False) as db:
            if db is not None and self._pending.unsettled(db.name) and not in_recall_reads():
                self._settle(db)
            conn = self._checkout(db)
            try:
                conn.execute("BEGIN")
                try:
                    yield conn
                finally:
                    if conn.in_transaction:
                        conn.execute("COMMIT")
            except sqlite3.Error as exc:
                if deadline.expired():
                    raise AgentMemoryError("timeout", "recall stopped: its time budget ran out") from None
                if db is not None and is_corrupt(exc):
                    raise self._open_error(db.path, exc) from None
                raise AgentMemoryError("io", f"read failed: {exc}") from None
            finally:
                self._checkin(db, conn)

    @contextlib.contextmanager
    def _pinned(self, pins: _Pins, realm: str) -> Iterator[sqlite3.Connection]:
        """:meth:`_read` inside :meth:`recall_reads`: the realm's read transaction of the block, opened by its
        first read. A read that fails ends it once no read of the block uses it (a statement stopped at the
        deadline may have ended the transaction): the next read opens a new one."""
        pin = pins.open.get(realm)
        if pin is None:
            with span("store.snapshot", **{"db.system.name": "sqlite", "db.namespace": realm}):
                db = self._acquire(realm, create=False)
                try:
                    conn = self._checkout(db)
                except BaseException:
                    if db is not None:
                        self._release(db)
                    raise
                pin = pins.open[realm] = _Pin(db, conn)
                try:
                    conn.execute("BEGIN")
                except sqlite3.Error as exc:
                    pins.end(realm)
                    raise self._read_error(db, exc) from None
        pin.users += 1
        try:
            yield pin.conn
        except sqlite3.Error as exc:
            pin.failed = True
            raise self._read_error(pin.db, exc) from None
        except BaseException:
            pin.failed = True
            raise
        finally:
            pin.users -= 1
            if pin.failed and not pin.users and pins.open.get(realm) is pin:
                pins.end(realm)

    def _pin_of(self, conn: sqlite3.Connection) -> _Pin | None:
        """The :meth:`recall_reads` block's transaction ``conn`` is in, if it is one (else ``None``)."""
        pins = _PINS.get()
        if pins is None or pins.store is not self or pins.thread != threading.get_ident():
            return None
        return pins.of(conn)

    def _read_error(self, db: _RealmDb | None, exc: sqlite3.Error) -> AgentMemoryError:
        """What a failed read raises (as :meth:`_read` does)."""
        if deadline.expired():
            return AgentMemoryError("timeout", "recall stopped: its time budget ran out")
        if db is not None and is_corrupt(exc):
            return self._open_error(db.path, exc)
        return AgentMemoryError("io", f"read failed: {exc}")

    def _tx(self, db: _RealmDb, fn: Callable[[sqlite3.Connection], _T], *, durable: bool = True) -> _T:
        """Run ``fn`` in one write transaction on ``db`` (see :meth:`_writing`)."""
        with self._writing(db, durable=durable) as conn:
            return fn(conn)

    @contextlib.contextmanager
    def _writing(self, db: _RealmDb, *, durable: bool = True) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction on the realm's writer, serialised per realm; commits
        when the block ends, rolls back on anything raised (SQLite errors become ``AgentMemoryError("io")``).

        ``durable=False`` is for telemetry (usage marks, injection-ledger rows): the commit is atomic
        and survives a process crash, but skips the WAL fsync (``synchronous=NORMAL``), so the hot
        path of a turn never waits for the disk; memory records are always written ``durable``. Nor does
        it pay for the realm's upkeep (planner statistics, a checkpoint the background fell behind on):
        the next durable write does.
        """
        with span("store.transaction", **{"db.system.name": "sqlite", "db.namespace": db.name}), db.write_lock:
            conn = db.writer
            if durable:  # telemetry adds no records: only durable writes count toward the statistics check
                db.writes += 1
                if db.writes % planner.CHECK_EVERY_WRITES == 0 and planner.stale(conn):
                    with self._begun(conn, db.path) as c:
                        planner.refresh(c)
                self._begin(conn, db.path)  # as _begun, without a second generator around every write
                try:
                    yield conn
                    conn.execute("COMMIT")
                except BaseException as exc:
                    failure = self._abort(conn, db.path, exc)
                    if failure is None:
                        raise
                    raise failure from None
            else:
                conn.execute("PRAGMA synchronous=NORMAL")
                try:
                    with self._begun(conn, db.path) as c:
                        yield c
                finally:
                    conn.execute("PRAGMA synchronous=FULL")
            db.commits_since_checkpoint += 1
            if durable and upkeep.needs_inline_checkpoint(db.commits_since_checkpoint):
                with contextlib.suppress(sqlite3.Error):  # the background checkpoints fell behind: bound the WAL
                    db.checkpoint(self._connect)
            self._upkeep.wrote(db.name)

    def _upkeep_realm(self, name: str) -> None:
        """One background round for realm ``name`` if it is open (held meanwhile, so the pool cannot
        close it): full-text merge steps for at most ``upkeep.MERGE_ROUND_S``, the write lock taken
        per step, then a WAL checkpoint (:mod:`.upkeep`)."""
        with self._open_lock:
            db = None if self._closed else self._hold_locked(name)
        if db is None:
            return
        try:
            self._upkeep_round(db, name)
        except AgentMemoryError as exc:  # the merge step's refusal names the store root: name the realm's disk
            if exc.reason == "disk_full":
                raise disk_full_error(db.path, "index merge or WAL checkpoint") from None
            raise
        except sqlite3.Error as exc:  # the checkpoint's own connection
            refuse_if_disk_full(exc, db.path, "index merge or WAL checkpoint")
            raise
        finally:
            self._release(db)

    def _upkeep_round(self, db: _RealmDb, name: str) -> None:
        """Merge steps, then a checkpoint, on the held realm database ``db``."""
        stop_at = time.monotonic() + upkeep.MERGE_ROUND_S
        while True:
            with db.write_lock:
                db.writer.execute("PRAGMA synchronous=NORMAL")  # a lost merge step is merged again
                try:
                    with self._begun(db.writer) as conn:
                        merged = upkeep.merge_step(conn)
                finally:
                    db.writer.execute("PRAGMA synchronous=FULL")
            if not merged:
                break
            if time.monotonic() >= stop_at:
                self._upkeep.wrote(name)  # more to merge: continue next round
                break
        db.checkpoint(self._connect, settle=True)

    @contextlib.contextmanager
    def _begun(self, conn: sqlite3.Connection, path: Path | None = None) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction on ``conn`` (the writer of database ``path``): committed when
        the block ends, rolled back on anything raised. A full disk is refused as ``disk_full`` naming the
        disk, a damaged database as ``corrupt``, any other SQLite error as ``io``."""
        self._begin(conn, path)
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException as exc:
            failure = self._abort(conn, path, exc)
            if failure is None:
                raise
            raise failure from None

    def _begin(self, conn: sqlite3.Connection, path: Path | None) -> None:
        """``BEGIN IMMEDIATE`` on ``conn``, retried while another connection holds the write lock (up to
        the busy timeout); a failure is raised as :meth:`_write_error` names it."""
        try:
            self._retry_locked(lambda: conn.execute("BEGIN IMMEDIATE"))
        except sqlite3.Error as exc:
            raise self._write_error(path, exc, "cannot begin write transaction") from None

    def _abort(self, conn: sqlite3.Connection, path: Path | None, exc: BaseException) -> AgentMemoryError | None:
        """Roll back the transaction ``exc`` ended (when SQLite has not already: it does after some errors,
        a full disk). Returns the error to raise for a SQLite error, ``None`` to raise ``exc`` itself."""
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        if isinstance(exc, sqlite3.Error):
            return self._write_error(path, exc, "write failed")
        return None

    def _write_error(self, path: Path | None, exc: sqlite3.Error, what: str) -> AgentMemoryError:
        if path is not None and is_corrupt(exc):
            return self._open_error(path, exc)
        if is_disk_full(exc):
            return disk_full_error(path or self.root, "write")
        return AgentMemoryError("io", f"{what}: {exc}")

    def _queue_telemetry(self, realm: str, op: _TelemetryOp) -> None:
        """Queue a telemetry write of ``realm`` for the background writer (:mod:`.telemetry`); past
        ``MAX_PENDING`` queued, write the whole queue now on this thread (back-pressure, never a drop)."""
        try:
            name = self._realm_name(realm)
        except AgentMemoryError as exc:
            self.telemetry.drop(realm, exc.reason)
            return
        if self._closed:
            return
        if self._pending.add(name, op):
            self._pending.flush_all(landed=False)  # back-pressure: room in the queue is all it needs

    def _flush_telemetry(self, realm: str) -> None:
        """Write ``realm``'s queued telemetry in one transaction, waiting for its writer (the background
        writer, back-pressure, closing). A realm without a database has nothing to mark: the queue is
        emptied. A batch that cannot be written is counted, one drop per queued write."""
        try:
            with self._using(realm, create=False) as db:
                if db is None:
                    self._pending.take(realm)
                    self._pending.done(realm)
                    return
                with db.write_lock:
                    self._write_queued(db)
        except AgentMemoryError as exc:  # the realm could not be opened (a damaged file, a full disk)
            for _ in self._pending.take(realm):
                self.telemetry.drop(realm, exc.reason)
            self._pending.done(realm)

    def _settle(self, db: _RealmDb) -> None:
        """Before a read of ``db`` outside a recall: write its queued telemetry when its writer is free, so
        the read sees every usage mark queued before it. A read never waits behind a write: when the
        writer is busy with one, the read goes on and the marks land once it is free (as the queue's
        batch being written, which the read waits for, at most :data:`SETTLE_WAIT_S`)."""
        for _ in range(3):
            if db.write_lock.acquire(blocking=False):
                try:
                    self._write_queued(db)
                finally:
                    db.write_lock.release()
                return
            if not self._pending.in_flight(db.name):
                return  # a write holds the writer: read without waiting for it
            self._pending.wait_landed(db.name, SETTLE_WAIT_S)

    def _write_queued(self, db: _RealmDb) -> None:
        """Write the queued telemetry of ``db`` in one non-durable transaction; the caller holds ``db.write_lock``."""
        ops = self._pending.take(db.name)
        try:
            if not ops:
                return
            try:
                self._telemetry_tx(db, lambda conn: self._write_telemetry_ops(conn, db.name, ops))
            except AgentMemoryError as exc:  # a full disk, a damaged realm: counted, never raised to a read
                for _ in ops:
                    self.telemetry.drop(db.name, exc.reason)
        finally:
            self._pending.done(db.name)

    def _telemetry_tx(self, db: _RealmDb, fn: Callable[[sqlite3.Connection], None]) -> None:
        """One non-durable transaction on ``db``'s writer, whose lock the caller holds (see :meth:`_writing`:
        atomic, survives a process crash, no WAL fsync)."""
        conn = db.writer
        conn.execute("PRAGMA synchronous=NORMAL")
        try:
            with self._begun(conn, db.path) as c:
                fn(c)
        finally:
            conn.execute("PRAGMA synchronous=FULL")
        db.commits_since_checkpoint += 1
        self._upkeep.wrote(db.name)

    def _write_telemetry_ops(self, conn: sqlite3.Connection, realm: str, ops: Sequence[_TelemetryOp]) -> None:
        """Every queued usage mark and injection-ledger row of ``ops``. A record's marks of one event are
        summed (its count raised by how many calls marked it, its ``last_*`` stamp the last call's time)
        and written by one ``UPDATE`` per record and event in SQLite's JSON functions, so the background
        writer holds the interpreter only to gather the batch; unknown ids change nothing."""
        marks: dict[UsageEvent, dict[str, list[int]]] = {}  # event -> memory_id -> [calls, last at_ms]
        injections: list[tuple[Any, ...]] = []
        for kind, payload in ops:
            if kind == "usage":
                ids, ev, now = payload
                per = marks.setdefault(ev, {})
                for memory_id in dict.fromkeys(ids):  # one mark per record per call
                    mark = per.setdefault(memory_id, [0, now])
                    mark[0] += 1
                    mark[1] = now
            else:
                injections.extend(payload)
        for ev, per in marks.items():
            count, last = ev.stat_fields  # the model's own field names, never caller text
            conn.executemany(
                "UPDATE records SET usage_stats = json_set(COALESCE(NULLIF(usage_stats, ''), '{}'), "
                f"'$.{count}', COALESCE(json_extract(NULLIF(usage_stats, ''), '$.{count}'), 0) + ?, "
                f"'$.{last}', ?) WHERE memory_id = ?",
                [(calls, at_ms, memory_id) for memory_id, (calls, at_ms) in per.items()])
        if injections:
            self._insert_rows(conn, realm, "injections", INJECTION_COLUMNS, injections)
            # Keep each identity's newest MAX_INJECTIONS_PER_IDENTITY ledger rows (a bounded telemetry table).
            conn.executemany(
                "DELETE FROM injections WHERE identity = ? AND injection_id <= (SELECT injection_id FROM injections "
                "WHERE identity = ? ORDER BY injection_id DESC LIMIT 1 OFFSET ?)",
                [(ident, ident, MAX_INJECTIONS_PER_IDENTITY) for ident in sorted({row[1] for row in injections})])

    @contextlib.contextmanager
    def _realm_transaction(self, db: _RealmDb) -> Iterator[WriteTx]:
        """A :class:`WriteTx` on the open realm database ``db`` (its first open's markdown import)."""
        with self._writing(db) as conn:
            yield WriteTx(self, Sql(conn, self.dialect), db.name)

    @contextlib.contextmanager
    def _write_conn(self, realm: str) -> Iterator[sqlite3.Connection]:
        """A validated write's transaction (see :meth:`SqlAgentMemoryStore._write_conn`): opens (creating,
        under ``max_realms``) the realm's database."""
        db = self._acquire(realm, create=True)  # as _using(realm, create=True): one generator fewer a write
        assert db is not None
        try:
            with self._writing(db) as conn:
                yield conn
        finally:
            self._release(db)

    # ================================================================ row primitives (see SqlAgentMemoryStore)

    def _realm_records(
        self, realm: str, columns: str, where: str, params: tuple[Any, ...]
    ) -> tuple[str, tuple[Any, ...]]:
        return _records_select(columns, where), params

    def _realm_rows(
        self, realm: str, table: str, columns: str, where: str, params: tuple[Any, ...]
    ) -> tuple[str, tuple[Any, ...]]:
        return f"SELECT {columns} FROM {table} WHERE {where}", params

    def _insert_record(self, conn: sqlite3.Connection, realm: str, rec: MemoryRecord) -> int:
        cur = conn.execute(_INSERT_RECORD, insert_values(rec))
        return int(cur.lastrowid)  # type: ignore[arg-type]

    def _write_new_records(self, conn: sqlite3.Connection, realm: str, recs: Sequence[MemoryRecord]) -> None:
        """Many new records in a few multi-row statements (:mod:`.multirow`): the rows, row ids and
        full-text entries one insert after another would write. Each row id is given: one more than the
        table's largest, in order, which is SQLite's own choice for an ``INTEGER PRIMARY KEY``."""
        if len(recs) == 1:
            super()._write_new_records(conn, realm, recs)
            return
        first = int(conn.execute("SELECT coalesce(max(rid), 0) + 1 FROM records").fetchone()[0])
        multirow.insert_many(conn, _INSERT_RECORD_HEAD, [(first + i, *insert_values(rec)) for i, rec in enumerate(recs)])
        insert_fts_many(conn, [(first + i, rec.scope.storage(), rec.title, rec.description, rec.body, rec.tags)
                               for i, rec in enumerate(recs) if rec.status.is_active])

    def _scope_rows(self, conn: sqlite3.Connection, realm: str, scope_kind: str, scope_key: str) -> int:
        row = conn.execute("SELECT n FROM scope_rows WHERE scope_kind = ? AND scope_key = ?",
                           (scope_kind, scope_key)).fetchone()
        return int(row[0]) if row else 0

    def _update_record(self, conn: sqlite3.Connection, realm: str, rec: MemoryRecord) -> int:
        row = conn.execute(
            f"UPDATE records SET {STATE_ASSIGNMENTS} WHERE memory_id = ? RETURNING rid", (*state_values(rec), rec.id)
        ).fetchone()
        return int(row[0])

    def _index_record(self, conn: sqlite3.Connection, realm: str, rid: int, rec: MemoryRecord) -> None:
        insert_fts(conn, rid, rec.scope.storage(), rec.title, rec.description, rec.body, rec.tags)

    def _unindex_record(self, conn: sqlite3.Connection, realm: str, rid: int) -> None:
        delete_fts(conn, rid)
        delete_vector(conn, rid)

    def _insert_rows(
        self, conn: sqlite3.Connection, realm: str, table: str, columns: str, rows: Sequence[tuple[Any, ...]]
    ) -> None:
        multirow.insert_many(conn, f"INSERT INTO {table}({columns})", rows)

    def _active_sql(self, realm: str, scope: Scope, tail: str, params: Sequence[Any]) -> tuple[str, tuple[Any, ...]]:
        kind, key = scope.storage()
        return (
            f"SELECT {RECORD_COLUMNS} FROM records WHERE scope_kind = ? AND scope_key = ? AND status_kind = 'active' "
            f"AND {unexpired()} " + tail,
            (kind, key, self.clock.now_ms(), *params),
        )

    dialect = SQLITE

    # ----------------------------------------------------------------- erase primitives

    def _scope_records(self, conn: sqlite3.Connection, realm: str, scope: Scope) -> list[MemoryRecord]:
        kind, key = scope.storage()
        rows = conn.execute(f"SELECT {RECORD_COLUMNS} FROM records WHERE scope_kind = ? AND scope_key = ? ORDER BY rid",
                            (kind, key)).fetchall()
        return [row_to_record(realm, r) for r in rows]

    def _linked_children(self, conn: sqlite3.Connection, realm: str, ids: Sequence[str]) -> list[MemoryRecord]:
        marks = ", ".join("?" * len(ids))
        rows = conn.execute(
            f"SELECT {RECORD_COLUMNS} FROM records WHERE supersedes IN ({marks}) "
            f"OR (derived_from != '[]' AND EXISTS (SELECT 1 FROM json_each(records.derived_from) WHERE value IN ({marks})))",
            (*ids, *ids),
        ).fetchall()
        return [row_to_record(realm, r) for r in rows]

    def _pending_promotion_records(self, conn: sqlite3.Connection, realm: str, ids: Sequence[str]) -> list[str]:
        out: list[str] = []
        for i in range(0, len(ids), 500):
            part = ids[i:i + 500]
            marks = ", ".join("?" * len(part))
            out += [r[0] for r in conn.execute(
                f"SELECT DISTINCT record_id FROM pending_promotions WHERE status = 'pending' AND record_id IN ({marks})",
                tuple(part)).fetchall()]
        return out

    def _delete_content(self, conn: sqlite3.Connection, realm: str, ids: Sequence[str]) -> None:
        marks = ", ".join("?" * len(ids))
        for (rid,) in conn.execute(f"SELECT rid FROM records WHERE memory_id IN ({marks})", tuple(ids)).fetchall():
            self._unindex_record(conn, realm, rid)
        for memory_id in ids:  # staged batches that carry the content (a JSON string match on the id)
            conn.execute("DELETE FROM stage WHERE instr(batch, ?) > 0", (json.dumps(memory_id),))
        conn.execute(f"DELETE FROM injections WHERE record_id IN ({marks})", tuple(ids))
        conn.execute(f"DELETE FROM dream_audit_verdicts WHERE record_id IN ({marks})", tuple(ids))
        conn.execute(f"DELETE FROM pending_forgets WHERE memory_id IN ({marks})", tuple(ids))
        conn.execute(f"UPDATE audit SET detail = '{{\"erased\": true}}' WHERE memory_id IN ({marks})", tuple(ids))
        conn.execute(f"DELETE FROM records WHERE memory_id IN ({marks})", tuple(ids))

    def _tombstoned_before(self, conn: sqlite3.Connection, realm: str, cutoff_ms: int, limit: int) -> list[MemoryRecord]:
        rows = conn.execute(
            f"SELECT {RECORD_COLUMNS} FROM records WHERE status_kind = 'tombstoned' AND tombstoned_at_ms < ? "
            "ORDER BY tombstoned_at_ms LIMIT ?", (cutoff_ms, limit)).fetchall()
        return [row_to_record(realm, r) for r in rows]

    def _after_erase(self, realm: str, report: EraseReport, identity: str | None) -> None:
        """Rewrite the full-text index without the erased rows' terms, then checkpoint and truncate the WAL
        (``secure_delete`` has zeroed the freed pages); cut the erased records out of the imported legacy
        markdown (an identity erase removes the identity's imported file)."""
        with self._using(realm, create=False) as db:  # held: the pool cannot close it meanwhile
            if db is None:
                return
            if report.records:
                self.lexical_index.drop(db.name)  # the erased rows' terms leave memory too
                self.term_counts.drop(db.name)
            # lock order: the write lock, then the checkpoint lock (a background checkpoint running meanwhile
            # holds SQLite's checkpointer lock, and a TRUNCATE that meets it answers busy without waiting)
            with db.write_lock, db.checkpoint_lock:
                try:
                    if report.records:
                        db.writer.execute(f"INSERT INTO {fts.FTS_TABLE}({fts.FTS_TABLE}) VALUES ('optimize')")
                    busy = 1
                    # readers are waited on by busy_timeout: the tries together wait no longer than one
                    # (the write lock is held meanwhile), so a reader that outlasts it ends the tries
                    until = time.monotonic() + self.busy_timeout_ms / 1000
                    for attempt in range(ERASE_TRUNCATE_ATTEMPTS):
                        if attempt:
                            if time.monotonic() + 0.05 >= until:
                                break
                            time.sleep(0.05)
                        busy = db.writer.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
                        if not busy:
                            break
                    if busy:
                        self._log.warning("after an erase in realm %s, readers kept the WAL from being truncated; "
                                          "the erased bytes leave it at the next checkpoint", realm)
                except sqlite3.Error as exc:
                    self._log.warning("after an erase in realm %s, the index rewrite or checkpoint failed: %s",
                                      realm, exc)
        self._erase_from_markdown(realm, report, identity)

    def _erase_from_markdown(self, realm: str, report: EraseReport, identity: str | None) -> None:
        """The erased records' sections out of ``<identity>.md.imported`` (kept after a legacy import);
        the whole file for an identity erase. Written whole to a new owner-only file that replaces it."""
        folder = self.paths.legacy_markdown_dir(realm)
        if not folder.is_dir() or folder.is_symlink():
            return
        by_identity: dict[str, set[str]] = {}
        for rec in report.records:
            if rec.scope.kind is ScopeKind.IDENTITY:
                by_identity.setdefault(rec.scope.key, set()).add(rec.memory_id)
        if identity is not None:
            by_identity.setdefault(identity, set())
        for path in folder.glob("*.md" + IMPORTED_SUFFIX):
            if path.is_symlink() or not path.is_file():
                continue
            try:
                owner = parse_identity(AgentMemoryPaths.markdown_identity(path.with_suffix("")))
            except ValueError:
                continue
            if owner not in by_identity:
                continue
            try:
                if owner == identity:
                    path.unlink()
                    continue
                text = path.read_text(encoding="utf-8")
                kept = strip_markdown_records(text, by_identity[owner])
                if kept is not None:
                    stage = path.with_name(path.name + ".erasing")
                    private_file(stage)
                    stage.write_text(kept, encoding="utf-8")
                    os.replace(stage, path)
            except (OSError, UnicodeDecodeError, ValueError) as exc:
                self._log.warning("after an erase in realm %s, %s could not be rewritten: %s", realm, path.name, exc)

    def _page_sql(self, realm: str, after_rid: int, limit: int, scope: Scope | None) -> tuple[str, tuple[Any, ...]]:
        if scope is None:
            return f"SELECT {RECORD_COLUMNS} FROM records WHERE rid > ? ORDER BY rid LIMIT ?", (after_rid, limit)
        kind, key = scope.storage()
        return (
            f"SELECT {RECORD_COLUMNS} FROM records WHERE scope_kind = ? AND scope_key = ? AND rid > ? ORDER BY rid LIMIT ?",
            (kind, key, after_rid, limit),
        )

    def _read_all(self, realm: str, statements: Sequence[tuple[str, tuple[Any, ...]]]) -> list[list[Any]]:
        with self._read(realm) as conn:
            return [conn.execute(sql, params).fetchall() for sql, params in statements]

    def _scope_footprint(self, conn: sqlite3.Connection, scope: Scope, limit: int) -> tuple[int, int]:
        kind, key = scope.storage()
        count, nbytes = conn.execute(
            "SELECT COUNT(*), COALESCE(SUM(n), 0) FROM (SELECT LENGTH(CAST(title AS BLOB)) "
            "+ LENGTH(CAST(description AS BLOB)) + LENGTH(CAST(body AS BLOB)) AS n FROM records "
            "WHERE scope_kind = ? AND scope_key = ? AND status_kind != 'tombstoned' LIMIT ?)",
            (kind, key, limit),
        ).fetchone()
        return count, nbytes

    # ================================================================ reads

    def _keep_resident(self, realm: str, rows: int) -> None:
        """Once ``realm``'s recall index is built (on its worker thread): keep its active rows' views and whole
        records decoded (:meth:`.view_cache.ViewCache.warm`, in one snapshot, as far as the cache's bounds allow),
        so a recall reads no row of a realm that fits on its first sight of it. ``rows``: the index's live rows
        (a realm far past the bounds is not read at all)."""
        if rows > max(self._views.capacity, MAX_RECORDS):
            return
        name = self._realm_name(realm)
        with self._read(name) as conn:
            self._views.warm(conn, name, self.clock.now_ms(), self._reader(conn, name).get_records)

    def get(self, realm: str, memory_id: str) -> MemoryRecord | None:
        """See :meth:`AgentMemoryStore.get`."""
        with self._read(realm) as conn:
            return self._reader(conn, self._realm_name(realm)).get_record(memory_id)

    def recall_records(self, realm: str, memory_ids: Sequence[str]) -> dict[str, MemoryRecord]:
        """The records of ``memory_ids`` that exist (any status), by id, read in one snapshot of ``realm`` (a
        recall's own, inside :meth:`recall_reads`): what ``snapshot(realm).get_many(memory_ids)`` gives, except
        that a record read whole at the realm's current generation is served from memory with the usage counters
        it was read with (:meth:`.view_cache.ViewCache.records`: every other column is the row's). The runtime's
        re-check of a recall's answer reads them so (its answers project no usage counters)."""
        name = self._realm_name(realm)
        with self._read(realm) as conn:
            pin = self._pin_of(conn)
            return self._views.records(conn, name, memory_ids, self._reader(conn, name).get_records,
                                       None if pin is None else pin.generations)

    def neighbours(
        self, realm: str, scope: Scope, anchors: Sequence[MemoryRecord], span: int, window_ms: int
    ) -> dict[str, list[RecordView]]:
        """See :meth:`AgentMemoryStore.neighbours`: per anchor and side, two index range scans of at most
        ``span`` rows — the records written in the anchor's own millisecond (a batch shares one) by
        ``rid``, and those of the earlier (later) milliseconds within the window — so the cost grows
        neither with the scope nor with the size of a batch. Every anchor is read with two statements
        (the anchors' rids, then all the ranges as one ``UNION ALL``).

        A realm with a warm in-process index (:mod:`meta_memory.recall.lexical_index`) takes the
        neighbours' rids from the index's write order instead (caught up to this snapshot first: a row
        is there iff its record is active) and reads their records by primary key, each kept only if
        it is still active in ``scope``."""
        if not anchors or span <= 0:
            return {}
        kind, key = scope.storage()
        name = self._realm_name(realm)  # validates the realm name
        now = self.clock.now_ms()
        ids = list(dict.fromkeys(a.memory_id for a in anchors))
        with self._read(realm) as conn:
            pin = self._pin_of(conn)
            # the rids of anchors found as candidates in this same transaction are known; the others are read
            rids = {mid: pin.rids[mid] for mid in ids if mid in pin.rids} if pin is not None else {}
            unknown = [mid for mid in ids if mid not in rids]
            if unknown:
                rids.update(conn.execute(
                    f"SELECT memory_id, rid FROM records WHERE memory_id IN ({', '.join('?' * len(unknown))})",
                    unknown).fetchall())
            found = [mid for mid in ids if mid in rids]
            near = self.lexical_index.neighbours(conn, name, (kind, key), [rids[mid] for mid in found], span,
                                                 window_ms, None if pin is None else pin.token)
            if near is not None:
                return self._neighbour_views(conn, name, kind, key, {mid: near[rids[mid]] for mid in found}, now)
            return self._neighbour_rows(conn, kind, key, found, rids, {a.memory_id: a.created_at_ms for a in anchors},
                                        span, window_ms, now)

    @staticmethod
    def _neighbour_rows(conn: sqlite3.Connection, kind: str, key: str, found: list[str], rids: dict[str, int],
                        at_of: dict[str, int], span: int, window_ms: int, now: int) -> dict[str, list[RecordView]]:
        """:meth:`neighbours` read from the database (no warm index): per anchor of ``found`` (ids, their ``rids``
        and ``created_at_ms`` in ``at_of``) and side, two index range scans of at most ``span`` rows, all the
        anchors' ranges in one ``UNION ALL`` per hundred anchors, in ``conn``'s snapshot at ``now`` (epoch ms)."""
        base = (f"SELECT {VIEW_COLUMNS} FROM records r WHERE scope_kind = ? AND scope_key = ? AND status_kind = 'active' "
                f"AND {unexpired()} ")
        ranges: tuple[tuple[int, str, Callable[[int, int], tuple[int, int]]], ...] = (
            # (side, sql, params from the anchor's created_at_ms and rid)
            (0, base + "AND created_at_ms = ? AND rid < ? ORDER BY rid DESC LIMIT ?", lambda at, rid: (at, rid)),
            (0, base + "AND created_at_ms < ? AND created_at_ms >= ? ORDER BY created_at_ms DESC, rid DESC LIMIT ?",
             lambda at, rid: (at, at - window_ms)),
            (1, base + "AND created_at_ms = ? AND rid > ? ORDER BY rid LIMIT ?", lambda at, rid: (at, rid)),
            (1, base + "AND created_at_ms > ? AND created_at_ms <= ? ORDER BY created_at_ms, rid LIMIT ?",
             lambda at, rid: (at, at + window_ms)),
        )
        out: dict[str, list[RecordView]] = {}
        for i in range(0, len(found), 100):  # SQLite allows 500 terms in one compound statement
            part = found[i:i + 100]
            terms: list[str] = []
            params: list[Any] = []
            for n, mid in enumerate(part):
                for side, sql, bounds in ranges:
                    terms.append(f"SELECT {n} AS anchor, {side} AS side, * FROM ({sql})")
                    params += (kind, key, now, *bounds(at_of[mid], rids[mid]), span)
            sides: dict[tuple[int, int], list[Any]] = {}
            for row in conn.execute(" UNION ALL ".join(terms), params).fetchall():
                sides.setdefault((row["anchor"], row["side"]), []).append(row)
            for n, mid in enumerate(part):  # nearest first on each side, then alternating
                order = lambda r: (r["created_at_ms"], r["rid"])  # noqa: E731
                earlier = sorted(sides.get((n, 0), ()), key=order, reverse=True)[:span]
                later = sorted(sides.get((n, 1), ()), key=order)[:span]
                out[mid] = [row_to_view(r) for pair in zip_longest(earlier, later) for r in pair if r is not None]
        return out

    def search(self, realm: str, scope: Scope, match_expression: str, limit: int,
               only: Collection[int] | None = None, where: FilterNode | None = None) -> Candidates:
        """See :meth:`AgentMemoryStore.search`: ordered by bm25 over the statistics of ``scope`` alone
        (:mod:`meta_memory.recall.bm25`), ties by insertion order (``rid``), like the PostgreSQL store;
        no other scope's rows change a score or the order.

        A realm with a warm in-process index (:mod:`meta_memory.recall.lexical_index`) is answered
        from it; otherwise FTS5 finds the scope's matching rows and they are scored here
        (:func:`meta_memory.recall.bm25.scoped_candidates`) — the same candidates and scores either way.
        Each candidate is re-read in the same snapshot and kept only if it is still active in ``scope``
        and not past its expiry. Records past their expiry keep their full-text rows until the expiry
        sweep tombstones them, so the candidates asked for are ``limit`` plus the scope's expired ones
        (an indexed count): the answer is the best ``limit`` among unexpired records, not fewer.
        """
        if limit <= 0 or not match_expression or (only is not None and not only):
            return Candidates()
        kind, key = scope.storage()
        name = self._realm_name(realm)  # validates the realm name
        now = self.clock.now_ms()
        only = frozenset(only) if only is not None else None
        with self._read(realm) as conn:
            # records past their expiry keep their full-text rows until the sweep: ask for that many more
            expired = self._expired_count(conn, kind, key, now)
            pin = self._pin_of(conn)

            def ranked(n: int, among: frozenset[int] | None) -> _Ranked:
                found = self.lexical_index.search(conn, name, (kind, key), match_expression, n, among,
                                                  None if pin is None else pin.token)
                if found is not None:
                    hits, table = found
                    return _Ranked([(rid, score, c) for c, (rid, score) in enumerate(hits)], table=table)
                try:
                    with self.lexical_index.answering():  # a build on the worker waits meanwhile
                        rows = bm25.scoped_candidates(conn, kind, key, match_expression, n, among, name,
                                                      self.term_counts)
                except (sqlite3.OperationalError, ValueError) as exc:
                    if deadline.expired():  # the statement was stopped at the recall's budget
                        raise AgentMemoryError("timeout", "recall stopped: its time budget ran out") from None
                    raise AgentMemoryError("io", f"full-text query failed: {exc}") from None
                if not getattr(rows, "exact", True):
                    # counted for the operator, never said to the caller: only a realm of one scope takes
                    # that path, so the label would tell an identity whether any other has records here
                    self.rankings.add(bm25.DEGRADED_APPROXIMATE)
                return _Ranked([(rid, score, c) for c, (rid, score, _) in enumerate(rows)],
                               fields=[fields for _, _, fields in rows])

            if where is None:
                return self._current_views(conn, name, kind, key, ranked(limit + expired, only), now, limit)
            # The best candidates in score order, kept when their metadata passes: exact once ``limit`` pass
            # or the candidates run out. A filter few candidates pass falls back to the scope's matching
            # rows (one scan) as ``only``.
            tail, params = self._filter_tail(where)
            wanted = max(4 * limit, 64) + expired
            for _ in range(_WIDENINGS):
                hits = ranked(wanted, only)
                passing = self._passing_rids(conn, [rid for rid, _, _ in hits.hits], tail, params)
                kept = self._current_views(conn, name, kind, key, hits.only(passing), now, limit)
                if len(kept) >= limit or len(hits.hits) < wanted:
                    return kept
                wanted *= 4
            sql, bound = self._active_sql(name, scope, tail, params)
            matching = frozenset(int(r[0]) for r in conn.execute(sql.replace(RECORD_COLUMNS, "rid", 1), bound))
            among = matching if only is None else matching & only
            return self._current_views(conn, name, kind, key, ranked(limit, among), now, limit) if among else Candidates()

    def passing(self, realm: str, scope: Scope, where: FilterNode, memory_ids: Collection[str]) -> set[str]:
        """See :meth:`AgentMemoryStore.passing`: by id (the unary ``+`` keeps the planner off the scope
        index, which would walk the whole scope)."""
        name = self._realm_name(realm)
        ids = sorted({i for i in memory_ids if isinstance(i, str)})
        if not ids or not self._has_realm(name):
            return set()
        kind, key = scope.storage()
        tail, params = self._filter_tail(where)
        out: set[str] = set()
        with self._read(realm) as conn:
            for i in range(0, len(ids), 500):
                part = ids[i:i + 500]
                out.update(str(r[0]) for r in conn.execute(
                    f"SELECT memory_id FROM records WHERE memory_id IN ({', '.join('?' * len(part))}) "
                    f"AND +scope_kind = ? AND +scope_key = ? AND +status_kind = 'active' {tail}",
                    (*part, kind, key, *params)))
        return out

    @staticmethod
    def _passing_rids(conn: sqlite3.Connection, rids: Sequence[int], tail: str, params: Sequence[Any]) -> set[int]:
        """The rids among ``rids`` whose metadata passes a filter (``tail``: ``AND <filter>``), by primary key."""
        out: set[int] = set()
        for i in range(0, len(rids), 500):
            part = rids[i:i + 500]
            out.update(int(r[0]) for r in conn.execute(
                f"SELECT rid FROM records WHERE rid IN ({', '.join('?' * len(part))}) {tail}", (*part, *params)))
        return out

    @staticmethod
    def _expired_count(conn: sqlite3.Connection, kind: str, key: str, now_ms: int) -> int:
        """Active records of the scope past their expiry at ``now_ms`` (``records_expiry_idx``: only due rows).

        The index is named: left to itself the planner walks the scope's index (every record of the
        scope, 2-4 s for a million in one identity, past any recall's budget) to test each expiry."""
        row = conn.execute(
            "SELECT COUNT(*) FROM records INDEXED BY records_expiry_idx WHERE status_kind = 'active' "
            "AND expires_at_ms <= ? AND scope_kind = ? AND scope_key = ?", (now_ms, kind, key)).fetchone()
        return int(row[0])

    def _neighbour_views(self, conn: sqlite3.Connection, name: str, kind: str, key: str,
                         near: dict[str, list[int]], now_ms: int) -> dict[str, list[RecordView]]:
        """``near`` (memory_id -> neighbour rids, in order) as views of the records still active in the
        scope in ``conn``'s snapshot (by primary key, decoded views reused: :mod:`.view_cache`; the others
        are left out)."""
        wanted = [rid for rids in near.values() for rid in rids]
        pin = self._pin_of(conn)
        views = self._views.live_views(conn, name, wanted, kind, key, now_ms, None if pin is None else pin.generations)
        return {mid: [views[rid] for rid in rids if rid in views] for mid, rids in near.items()}

    def _current_views(
        self, conn: sqlite3.Connection, name: str, kind: str, key: str, ranked: _Ranked, now_ms: int, limit: int,
    ) -> Candidates:
        """The first ``limit`` of ``ranked``'s hits whose records are active and unexpired in the scope at
        ``now_ms``, as the kept views (:mod:`.view_cache`) with each one's term columns beside them
        (:class:`~meta_memory.agent_memory.model.Candidates`: re-ranking need not tokenise them)."""
        hits = ranked.hits
        if not hits:
            return Candidates()
        pin = self._pin_of(conn)
        rids, scores, columns = (list(part) for part in zip(*hits))
        views = self._views.live_views(conn, name, rids, kind, key, now_ms, None if pin is None else pin.generations)
        if pin is not None:  # the neighbour walk of this recall finds its anchors' rids here
            pin.rids.update(zip(map(_VIEW_ID, views.values()), views.keys()))
        found = list(map(views.get, rids))
        if len(views) < len(rids):  # some are no longer live (a rid is asked once): the others, in order
            kept = [k for k, view in enumerate(found) if view is not None]
            found, scores, columns = [found[k] for k in kept], [scores[k] for k in kept], [columns[k] for k in kept]
        del found[limit:], scores[limit:], columns[limit:]
        items = list(zip(found, scores))
        if ranked.table is not None:
            return Candidates(items, table=ranked.table, columns=columns)
        fields = ranked.fields
        return Candidates(items, fields=None if fields is None else [fields[c] for c in columns])

    # ================================================================ vectors (semantic recall extra)

    def missing_vectors(self, realm: str, model: str, limit: int) -> list[vector_index.VectorJob]:
        """Up to ``limit`` active records of ``realm`` without a vector of ``model`` (oldest first), with
        the text to embed. See :mod:`meta_memory.recall.semantic.vectors`."""
        with self._read(realm) as conn:
            return vector_index.missing_vectors(conn, model, limit)

    def vector_backlog(self, realm: str, model: str) -> int:
        """How many active records of ``realm`` wait for a vector of ``model`` (0 for an unopened realm)."""
        with self._read(realm) as conn:
            return vector_index.count_missing_vectors(conn, model)

    def put_vectors(self, realm: str, model: str, items: Sequence[tuple[int, bytes]]) -> int:
        """Store ``(rid, float32 blob)`` vectors in one transaction, each only if its record is still
        active. Written without the WAL fsync: a vector lost to a power cut is embedded again."""
        if not items:
            return 0
        with self._using(realm, create=False) as db:
            if db is None:
                return 0
            return self._tx(db, lambda conn: vector_index.put_vectors(conn, model, items), durable=False)

    def vector_signature(self, realm: str, scope: Scope, model: str) -> tuple[int, int]:
        """``(count, max vid)`` of the scope's vectors of ``model``: changes on any insert or delete."""
        kind, key = scope.storage()
        with self._read(realm) as conn:
            return vector_index.scope_signature(conn, kind, key, model)

    def scope_vectors(self, realm: str, scope: Scope, model: str) -> list[tuple[str, bytes]]:
        """``(memory_id, blob)`` of the scope's active records that have a vector of ``model``."""
        kind, key = scope.storage()
        with self._read(realm) as conn:
            return vector_index.scope_vectors(conn, kind, key, model)

    @property
    def upkeep_pending(self) -> int:
        """Realms whose index merge and WAL checkpoint wait for the upkeep thread."""
        return self._upkeep.pending

    def held_realms(self) -> list[str]:
        """Realms with a database file under the root (decoded file stems), sorted."""
        return self.paths.list_realms()

    def telemetry_queued(self, realm: str) -> bool:
        """Whether ``realm`` has telemetry (usage marks, injection-ledger rows) queued or being written: not
        yet in its files, and landed by the next read of it (a cheap check, no lock)."""
        return self._pending.unsettled(realm)

    def realm_problem(self, realm: str) -> AgentMemoryError | None:
        """See :meth:`AgentMemoryStore.realm_problem`: the realm is opened (an open realm costs a lookup;
        its database is never created), and the refusal of a name or a file that cannot be opened is
        returned; any other failure (the store closed) is raised."""
        try:
            with self._using(realm, create=False):
                return None
        except AgentMemoryError as exc:
            if exc.reason in ("invalid_record", "corrupt", "io") and not self._closed:
                return exc
            raise

    # ================================================================ readiness

    def realm_files(self) -> dict[str, Path]:
        """``{realm: database file}`` of every realm served (:meth:`list_realms`: the allow-list's, all without
        one) with a database: what readiness and the integrity check read. A realm outside ``[agent_memory]
        realms`` is no part of this gateway's readiness (a damaged one must not take a serving gateway out)."""
        files = self.paths.realm_files()
        return {realm: files[realm] for realm in served_realms(self.allowed_realms, files)}

    def readiness_problems(self) -> dict[str, str]:
        """See :meth:`AgentMemoryStore.readiness_problems`: each realm database's header and schema page
        (:func:`meta_memory.storage.integrity.probe`, re-read only when the file or its ``-wal`` changed
        since it last passed: an idle realm costs a ``stat``), and the store's background threads."""
        problems: dict[str, str] = {}
        checked: dict[str, tuple[FileSignature, str | None]] = {}
        for realm, path in self.realm_files().items():
            if (bad_name := realm_file_name_problem(realm)) is not None:  # a file an older version left
                problems[f"realm:{realm}"] = f"{path.name} cannot be served: {bad_name}"
                continue
            if realm in self._names.conflicts:
                problems[f"realm:{realm}"] = self._names.conflict_message(realm)
                continue
            sig = signature(path)
            if sig is None:
                continue
            known = self._probed.get(realm)
            problem = known[1] if known is not None and known[0] == sig else probe(path)
            checked[realm] = (sig, problem)
            if problem is not None:
                problems[f"realm:{realm}"] = f"{path.name} {problem}"
        self._probed = checked
        for name, died in (("upkeep", self._upkeep.died), ("recall_index", self.lexical_index.died),
                           ("telemetry_writer", self._pending.died)):
            if died:
                problems[f"worker:{name}"] = "the background thread ended unexpectedly; restart the gateway"
        return problems

    def memory_stats(self) -> dict[str, dict[str, int | None]]:
        """The store's memory by component, each ``{bytes, limit_bytes, ...}`` (bytes):

        * ``recall_index``: the in-process recall index (:meth:`LexicalIndexes.stats`: its estimate, with
          ``realms`` served from memory and ``builds``, ``refusals`` and ``evictions`` since start);
        * ``view_cache``: the decoded record views (:meth:`ViewCache.stats`, with ``views``);
        * ``sqlite``: SQLite's heap in the process (:func:`meta_memory.storage.sqlite_heap.heap_used`; ``None``
          when it cannot be read), every connection's page cache included, and its soft limit;
          ``open_realms``: realms with open connections; ``statements_limit_bytes``: what the open realms'
          prepared statements may hold beyond the limit (``max_open_realms`` x :data:`STATEMENT_BYTES_PER_REALM`).
        """
        return {
            "recall_index": {**self.lexical_index.stats()},
            "view_cache": {**self._views.stats()},
            "sqlite": {"bytes": sqlite_heap.heap_used(), "limit_bytes": self.sqlite_cache_bytes,
                       "open_realms": self.open_realms,
                       "statements_limit_bytes": self.max_open_realms * STATEMENT_BYTES_PER_REALM},
        }

    def telemetry_stats(self) -> dict[str, int]:
        """See :meth:`AgentMemoryStore.telemetry_stats`."""
        self._pending.flush_all()
        return self.telemetry_snapshot()

    def telemetry_snapshot(self) -> dict[str, int]:
        """See :meth:`AgentMemoryStore.telemetry_snapshot`."""
        return self.telemetry.stats()

    # ================================================================ telemetry writes

    def mark_usage(self, realm: str, ids: Sequence[str], event: UsageEvent | str) -> None:
        """See :meth:`AgentMemoryStore.mark_usage`: queued, and written with the realm's other queued
        telemetry in one transaction by the background writer, or by the realm's next read outside a
        recall, whichever comes first (not audited)."""
        ev = UsageEvent(event)
        if not ids:
            return
        self._queue_telemetry(realm, ("usage", (tuple(ids), ev, self.clock.now_ms())))

    def log_injections(self, realm: str, rows: Sequence[InjectionRow]) -> None:
        """See :meth:`AgentMemoryStore.log_injections` (plain inserts, queued as :meth:`mark_usage`)."""
        if not rows:
            return
        self._queue_telemetry(realm, ("injections", injection_values(rows)))

    # ================================================================ audit (read)

    def audit_rows(self, realm: str, memory_id: str | None = None) -> list[dict[str, Any]]:
        """Audit rows, oldest first (all, or those naming ``memory_id``):
        ``{audit_id, stage_token, op_index, op_kind, memory_id, detail, applied_at_ms}``."""
        with self._read(realm) as conn:
            if memory_id is None:
                rows = conn.execute("SELECT * FROM audit ORDER BY audit_id").fetchall()
            else:
                rows = conn.execute("SELECT * FROM audit WHERE memory_id = ? ORDER BY audit_id", (memory_id,)).fetchall()
        return [{**dict(r), "detail": json.loads(r["detail"])} for r in rows]

    # ================================================================ lifecycle

    def close(self) -> None:
        """Close every connection (writers and idle readers; a reader in use is closed when it is returned)."""
        self._pending.stop()  # the queued telemetry is written first
        self._upkeep.stop()
        self.lexical_index.close()
        with self._open_lock:
            self._closed = True
            for db in self._realms.values():
                db.close()
            self._realms.clear()
            for conn in self._empty_idle:
                with contextlib.suppress(sqlite3.Error):
                    conn.close()
            self._empty_idle.clear()

    def __enter__(self) -> SqliteAgentMemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
