"""The PostgreSQL agent-memory store: one database for several gateways.

Same contract and semantics as :class:`~meta_memory.agent_memory.store.sqlite.SqliteAgentMemoryStore`
(spec README "Going beyond the reference": a second backend passing the same
contract tests; reference notes §2B tables and write paths, §2D validator):

- Realms are rows: every table has a ``realm`` column, every key and index
  starts with it, and every statement filters on it exactly (``realm = %s``,
  never ``LIKE``, never filtered afterwards in Python). Layout in :mod:`.pg_schema`.
- Every write is one transaction that first takes a transaction-level advisory
  lock on ``(schema, realm)``: writes to one realm are serialised across every
  process and host (as SQLite's ``BEGIN IMMEDIATE`` does per file); reads never
  wait. Inside it: validate against live rows with the one validator
  (:func:`~meta_memory.agent_memory.validator.plan_batch`), write the records,
  keep the full-text rows in step (a record has one iff it is active), write
  one audit row per op, commit. ``synchronous_commit`` is the server's (``on``
  by default): an acknowledged write is durable. A batch is written set-based, in
  a few statements whatever its size (:meth:`PostgresAgentMemoryStore._write_planned`,
  :mod:`.pg_fts`).
- Full-text search returns FTS5's ``bm25()`` computed over the same tokens
  (:func:`meta_memory.recall.fts.document`), the same column weights and the
  same per-realm statistics, so scores (lower is better) and orders equal
  SQLite's and :mod:`meta_memory.recall.lexical` works unchanged; it matches
  only the terms that can still change the answer (:mod:`.pg_ranking`).
- Connections come from a ``psycopg_pool.ConnectionPool``; schema migrations
  are versioned in ``schema_migrations`` and applied at start under an
  advisory lock, so gateways starting together do not race.

Not carried over from SQLite: the one-shot legacy markdown import (markdown
files live beside a SQLite state directory; import them with a SQLite store
first). Text containing NUL characters is refused (PostgreSQL text cannot hold
them).
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import logging
import re
import threading
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import psycopg
from psycopg import conninfo
from psycopg_pool import ConnectionPool, PoolTimeout

from meta_memory import deadline
from meta_memory.agent_memory.filters import FilterNode, compile_filter
from meta_memory.agent_memory.model import (
    Candidates,
    MemoryRecord,
    RecordView,
    Scope,
    UsageEvent,
    UsageStats,
)
from meta_memory.agent_memory.realm_list import realm_cap_refusal, refuse_realm_creation
from meta_memory.agent_memory.store import pg_fts, pg_ranking, pg_schema, planner
from meta_memory.agent_memory.store.base import InjectionRow, WriteGate, dumps
from meta_memory.agent_memory.store.common import (
    INJECTION_COLUMNS,
    INSERT_COLUMNS,
    RECORD_COLUMNS,
    STAGE_GC_MAX_AGE_MS,
    STATE_ASSIGNMENTS,
    VIEW_COLUMNS,
    RankingCounts,
    SqlAgentMemoryStore,
    has_nul,
    injection_values,
    insert_values,
    row_to_record,
    row_to_view,
    state_values,
)
from meta_memory.agent_memory.store.dialect import POSTGRES, unexpired
from meta_memory.agent_memory.store.migration_steps import apply_domain_steps
from meta_memory.agent_memory.store.sqlite import realm_db_path
from meta_memory.agent_memory.store.telemetry import (
    SETTLE_WAIT_S,
    PendingTelemetry,
    TelemetryDrops,
    in_recall_reads,
    recall_reads,
)
from meta_memory.clock import Clock, SystemClock
from meta_memory.errors import AgentMemoryError
from meta_memory.identity import parse_realm
from meta_memory.limits import DEFAULT_IDENTITY_RECORD_LIMIT, MAX_INJECTIONS_PER_IDENTITY
from meta_memory.observability.tracing import span
from meta_memory.recall import bm25, fts
from meta_memory.storage.disk import disk_full_error, is_disk_full

#: How long a readiness check waits for a connection (seconds).
READINESS_TIMEOUT_S = 2.0
#: A queued telemetry write: ``("usage", (ids, event, at_ms))`` or ``("injections", rows)``.
_TelemetryOp = tuple[str, Any]

__all__ = [
    "PostgresAgentMemoryStore",
    "PgRow",
    "DEFAULT_SCHEMA",
    "DEFAULT_POOL_SIZE",
    "STAGE_GC_MAX_AGE_MS",
    "schema_from_dsn",
    "parse_match_expression",
]

log = logging.getLogger(__name__)

DEFAULT_SCHEMA = "meta_memory"
DEFAULT_POOL_SIZE = 8
MAX_SCHEMA_NAME_BYTES = 50  # leaves room for the "_realm" view schema within PostgreSQL's 63-byte names

#: bm25's constants (:mod:`meta_memory.recall.bm25`: every path scores alike).
BM25_K1 = bm25.K1
BM25_B = bm25.B

_T = TypeVar("_T")

_SCHEMA_RE = re.compile(r"-c\s*search_path\s*=\s*([^\s,]+)")


def _write_error(exc: psycopg.Error) -> AgentMemoryError:
    """A failed write's psycopg error as the store's refusal: ``disk_full`` when the server's disk is full
    (SQLSTATE 53100), else ``io``."""
    if is_disk_full(exc):
        return disk_full_error(None, "write")
    return AgentMemoryError("io", f"write failed: {exc}")


# ============================================================================ rows


class PgRow(tuple[Any, ...]):  # noqa: SLOT001 - a tuple that also answers by column name
    """A result row readable like ``sqlite3.Row``: ``row[0]``, ``row["title"]``, ``tuple(row)``, ``dict(row)``."""

    _index: dict[str, int]

    def __new__(cls, index: dict[str, int], values: Sequence[Any]) -> PgRow:
        row = super().__new__(cls, values)
        row._index = index
        return row

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return tuple.__getitem__(self, self._index[key])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        """Column names, in order."""
        return list(self._index)


def _one(cursor: Any) -> Any:
    """The one row a statement returns (``COUNT``, ``RETURNING``): ``AgentMemoryError("io")`` when it returned none."""
    row = cursor.fetchone()
    if row is None:
        raise AgentMemoryError("io", "statement returned no row")
    return row


def _pg_row_factory(cursor: Any) -> Callable[[Sequence[Any]], Any]:
    desc = cursor.description
    if desc is None:
        return tuple
    index = {d.name: i for i, d in enumerate(desc)}
    return lambda values: PgRow(index, values)


# ============================================================================ helpers


def schema_from_dsn(dsn: str) -> str | None:
    """The first ``search_path`` entry named in the DSN's ``options`` (``-c search_path=name``), or ``None``.

    Lets a deployment (or a test) point gateways at a schema through the DSN alone:
    ``postgresql://host/db?options=-c%20search_path%3Dteam_a``.
    """
    try:
        opts = conninfo.conninfo_to_dict(dsn).get("options")
    except psycopg.ProgrammingError:
        return None
    if not isinstance(opts, str):
        return None
    match = _SCHEMA_RE.search(opts)
    if not match:
        return None
    first = match.group(1).split(",")[0].strip().strip('"')
    return first or None


def parse_match_expression(expression: str) -> list[str]:
    """The distinct terms of an FTS5 ``MATCH`` string (:func:`meta_memory.recall.fts.match_phrases`), in order.

    Raises ``AgentMemoryError("io", "full-text query failed: ...")`` for anything else (``(``, ``NEAR``,
    ``*``...), as an FTS5 syntax error does on SQLite.
    """
    try:
        return list(dict.fromkeys(fts.match_phrases(expression)))
    except ValueError as exc:
        raise AgentMemoryError("io", f"full-text query failed: {exc}") from None


def _lock_key(*parts: str) -> int:
    digest = hashlib.sha256("\x00".join(parts).encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


# ============================================================================ ranking SQL

#: The scope's statistics: each query lexeme (in query order) with ``df``, the scope's active rows
#: holding it (0 when none), and ``n``, the scope's active rows. No row when the scope holds none.
_TERM_STATS = (
    "SELECT t.term, COALESCE((SELECT ft.df FROM §fts_terms ft WHERE ft.realm = %(realm)s "
    "  AND ft.scope_kind = %(kind)s AND ft.scope_key = %(key)s AND ft.term = t.term), 0) AS df, st.n_rows AS n "
    "FROM unnest(%(terms)s::text[]) WITH ORDINALITY AS t(term, ord) "
    "CROSS JOIN §fts_stats st WHERE st.realm = %(realm)s AND st.scope_kind = %(kind)s AND st.scope_key = %(key)s "
    "AND st.n_rows > 0 ORDER BY t.ord"
)
#: One query lexeme's bm25 share of row ``f``: ``{i}`` is its position (``q.idf[{i} + 1]``, ``%(t{i})s``).
_TERM_SHARE = (
    "q.idf[{n}] * (COALESCE((f.tf ->> %(t{i})s)::float8, 0) * (%(k1)s::float8 + 1)) / "
    "(COALESCE((f.tf ->> %(t{i})s)::float8, 0) + %(k1)s::float8 * (1 - %(b)s::float8 + %(b)s::float8 * f.ntok "
    "/ NULLIF(st.avgdl, 0)))"
)


class _RoundCut(Exception):
    """A ranking round was stopped short of the budget (:data:`.pg_ranking.RESERVE_MS`, or for a first round
    :func:`.pg_ranking.first_reserve_ms`); ``rows``: what a first round's sample of its match scored instead."""

    def __init__(self, rows: Sequence[Any] = ()) -> None:
        super().__init__()
        self.rows = list(rows)


def _ranked_sql(n_terms: int) -> str:
    """bm25 of the scope's rows matching ``%(tsq)s`` over the ``n_terms`` query lexemes ``%(terms)s``
    (also bound one by one as ``%(t0)s``...): ``-(share_0 + share_1 + ...)``, summed left to right in query
    order, a lexeme the row lacks adding ``0.0`` (each idf is read from one array: ``q.idf``). Its ``hits``
    CTE is left open: the caller appends its candidate filters, closes it and selects the ranked records."""
    shares = " + ".join(_TERM_SHARE.format(i=i, n=i + 1) for i in range(n_terms))
    return (
        "WITH st AS (SELECT n_rows::float8 AS n, n_tokens::float8 / n_rows AS avgdl FROM §fts_stats "
        "  WHERE realm = %(realm)s AND scope_kind = %(kind)s AND scope_key = %(key)s AND n_rows > 0), "
        "q AS MATERIALIZED (SELECT array_agg(CASE WHEN x.idf <= 0 THEN 1e-6 ELSE x.idf END ORDER BY t.ord) AS idf "
        "  FROM unnest(%(terms)s::text[]) WITH ORDINALITY AS t(term, ord) CROSS JOIN st "
        "  CROSS JOIN LATERAL (SELECT COALESCE((SELECT ft.df FROM §fts_terms ft WHERE ft.realm = %(realm)s "
        "    AND ft.scope_kind = %(kind)s AND ft.scope_key = %(key)s AND ft.term = t.term), 0) AS df) d "
        "  CROSS JOIN LATERAL (SELECT ln((st.n - d.df + 0.5) / (d.df + 0.5)) AS idf) x), "
        f"hits AS (SELECT f.rid, -({shares}) AS score "
        "  FROM §records_fts f CROSS JOIN st CROSS JOIN q "
        "  WHERE f.realm = %(realm)s AND f.scope_kind = %(kind)s AND f.scope_key = %(key)s "
        "  AND f.doc @@ %(tsq)s::tsquery"
    )


# ============================================================================ the store


class PostgresAgentMemoryStore(SqlAgentMemoryStore[psycopg.Connection[Any]]):
    """PostgreSQL store implementing :class:`~meta_memory.agent_memory.store.base.AgentMemoryStore`.

    Args:
        dsn: a libpq connection string or URI (``postgresql://user@host:5432/db``).
        clock: time source (epoch ms); defaults to the system clock.
        gate: default write gate for LLM-authored writes (per-call ``gate`` overrides).
        schema: the PostgreSQL schema holding the tables (created if missing; a
            second schema ``<schema>_realm`` holds the realm views). ``None``:
            the first ``search_path`` entry of the DSN's ``options``, else
            ``meta_memory``.
        pool_size: most pooled connections this process opens.
        connect_timeout_s: how long start-up and each pool checkout may wait.
        max_realms: most realms (``[agent_memory] max_realms``); registering one more is refused
            with ``AgentMemoryError("limit", ...)``.
        identity_record_limit: most rows one identity scope of a realm holds, any status (``[agent_memory]
            identity_record_limit``); a write that would pass it is refused whole (``"limit"``).
        realms: the realm allow-list (``[agent_memory] realms``; ``None`` = any realm): registering an
            unlisted realm is refused with ``InvalidParams`` naming ``realm``
            (:mod:`meta_memory.agent_memory.realm_list`).

    Raises ``AgentMemoryError("invalid_config", ...)`` for an empty DSN or a bad
    schema name, ``AgentMemoryError("io", "cannot connect ...")`` when the
    server is unreachable or a migration fails.
    """

    refuses_nul = True

    def __init__(
        self,
        dsn: str,
        clock: Clock | None = None,
        *,
        gate: WriteGate | None = None,
        schema: str | None = None,
        pool_size: int = DEFAULT_POOL_SIZE,
        connect_timeout_s: float = 10.0,
        max_realms: int = 4096,
        realms: Collection[str] | None = None,
        identity_record_limit: int = DEFAULT_IDENTITY_RECORD_LIMIT,
    ) -> None:
        if not isinstance(dsn, str) or not dsn.strip():
            raise AgentMemoryError("invalid_config", "agent memory dsn must not be empty")
        schema = schema or schema_from_dsn(dsn) or DEFAULT_SCHEMA
        if (
            "\x00" in schema
            or not schema.strip()
            or len(schema.encode()) > MAX_SCHEMA_NAME_BYTES
            or schema.lower().startswith("pg_")
        ):
            raise AgentMemoryError(
                "invalid_config", f"agent memory schema name must be 1..{MAX_SCHEMA_NAME_BYTES} bytes, not pg_*"
            )
        if pool_size < 1:
            raise AgentMemoryError("invalid_config", "agent memory pool_size must be at least 1")
        self.dsn = dsn
        self.schema = schema
        self.clock: Clock = clock or SystemClock()
        self.gate = gate
        self.pool_size = pool_size
        self.max_realms = max_realms
        self.identity_record_limit = identity_record_limit
        self.allowed_realms = frozenset(realms) if realms is not None else None
        self.connect_timeout_s = connect_timeout_s
        self._qs = pg_schema.quote_ident(schema) + "."
        self._views = pg_schema.quote_ident(schema + "_realm")
        self._sql_cache: dict[str, str] = {}
        self._select_cache: dict[tuple[str, str], str] = {}
        self._known_realms: set[str] = set()
        self.telemetry = TelemetryDrops()
        #: searches answered from earlier rounds, a later one stopped short of the budget (``ranking_stats``)
        self.rankings = RankingCounts(bm25.DEGRADED_APPROXIMATE)
        self._pending: PendingTelemetry[_TelemetryOp] = PendingTelemetry(
            self._flush_telemetry, name="agent-memory-pg-telemetry")
        self._realm_lock = threading.Lock()
        self._closed = False
        self.applied_migrations = self._migrate()
        self._pool = ConnectionPool(
            dsn,
            min_size=1,
            max_size=pool_size,
            kwargs={"autocommit": True, "connect_timeout": max(1, int(connect_timeout_s))},
            configure=self._configure,
            timeout=connect_timeout_s,
            name=f"meta-memory-{schema}",
            open=False,
        )
        try:
            self._pool.open(wait=True, timeout=connect_timeout_s)
        except PoolTimeout as exc:
            self._pool.close()
            raise AgentMemoryError("io", f"cannot connect to the agent memory database: {exc}") from None
        self._writes = itertools.count(1)
        self._rows_written = 0
        self._refresh_statistics()

    #: Tables whose planner statistics are kept current: the records, and the full-text rows and term
    #: counts recall's ranking reads (without statistics the planner walks a whole scope's full-text
    #: rows to find the few holding a rare term instead of asking the GIN index: 170 ms instead of 1 at
    #: 100,000 records).
    ANALYSED_TABLES = ("records", "records_fts", "fts_terms")
    #: Records written in this process between two staleness checks (besides every
    #: :data:`~.planner.CHECK_EVERY_WRITES` write transactions): a bulk load checks as it grows.
    ROWS_PER_CHECK = 20_000

    def _refresh_statistics(self) -> None:
        """``ANALYZE`` each of :attr:`ANALYSED_TABLES` whose planner statistics are missing or stale (see
        :mod:`.planner`). A failure only logs: statistics are an optimisation, never a write's outcome."""
        self._rows_written = 0
        try:
            with self._conn() as conn:
                for name in self.ANALYSED_TABLES:
                    table = self._qs + name
                    if planner.pg_stale(conn, table):
                        planner.pg_refresh(conn, table)
        except psycopg.Error as exc:
            log.warning("agent memory schema %s: cannot refresh planner statistics: %s", self.schema, exc)

    # ================================================================ connections

    @staticmethod
    def _configure(conn: psycopg.Connection[Any]) -> None:
        conn.row_factory = _pg_row_factory
        conn.prepare_threshold = None

    def _sql(self, text: str) -> str:
        """``text`` with every ``§`` replaced by the quoted schema and a dot."""
        out = self._sql_cache.get(text)
        if out is None:
            out = self._sql_cache[text] = text.replace("§", self._qs)
        return out

    def _migrate(self) -> list[str]:
        """Create the schema and apply missing migrations under an advisory lock; returns the names applied."""
        try:
            with psycopg.connect(self.dsn, autocommit=True, connect_timeout=max(1, int(self.connect_timeout_s))) as conn:
                conn.execute("BEGIN")
                try:
                    applied = self._migrate_in_tx(conn)
                    conn.execute("COMMIT")
                except BaseException:
                    with contextlib.suppress(psycopg.Error):
                        conn.execute("ROLLBACK")
                    raise
        except psycopg.Error as exc:
            raise AgentMemoryError("io", f"cannot connect to or migrate the agent memory database: {exc}") from None
        if applied:
            log.info("agent memory schema %s: applied %s", self.schema, ", ".join(applied))
        return applied

    def _migrate_in_tx(self, conn: psycopg.Connection[Any]) -> list[str]:
        now = self.clock.now_ms()
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_lock_key("meta-memory-migrate", self.schema),))
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {pg_schema.quote_ident(self.schema)}")
        conn.execute(f"SET LOCAL search_path TO {pg_schema.quote_ident(self.schema)}")
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (domain TEXT NOT NULL, version INTEGER NOT NULL, "
            "name TEXT NOT NULL, applied_at_ms BIGINT NOT NULL, PRIMARY KEY (domain, version))"
        )
        applied = apply_domain_steps(conn.execute, POSTGRES, pg_schema.SCHEMA_DOMAIN, pg_schema.migrations(self.schema), now)
        applied += apply_domain_steps(
            conn.execute, POSTGRES, pg_schema.SESSION_STATE_DOMAIN, pg_schema.session_state_migrations(), now
        )
        fingerprint = f"fts-{pg_schema.fts_fingerprint()}"
        row = conn.execute(
            "SELECT version, name FROM schema_migrations WHERE domain = %s ORDER BY version DESC LIMIT 1",
            (pg_schema.FTS_DOMAIN,),
        ).fetchone()
        if row is None or row[1] != fingerprint:
            self._rebuild_fts(conn)
            conn.execute(
                "INSERT INTO schema_migrations(domain, version, name, applied_at_ms) VALUES (%s, %s, %s, %s)",
                (pg_schema.FTS_DOMAIN, (row[0] + 1) if row else 1, fingerprint, now),
            )
            applied.append(fingerprint)
        return applied

    keeps_installation_secrets = True

    def installation_secret(self, name: str, create: str | None = None) -> str | None:
        """See :meth:`AgentMemoryStore.installation_secret`: the ``installation_keys`` table of the schema."""
        try:
            with self._conn() as conn, conn.transaction():
                if create is not None:
                    conn.execute(self._sql("INSERT INTO §installation_keys(name, secret, created_at_ms) "
                                           "VALUES (%s, %s, %s) ON CONFLICT (name) DO NOTHING"),
                                 (name, create, self.clock.now_ms()))
                row = conn.execute(self._sql("SELECT secret FROM §installation_keys WHERE name = %s"), (name,)).fetchone()
        except psycopg.Error as exc:
            raise AgentMemoryError("io", f"cannot read the installation key '{name}': {exc}") from None
        return None if row is None else str(row[0])

    @contextlib.contextmanager
    def session_state_connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled autocommit connection for the session-state tables (``§session_*``, domain
        :data:`~.pg_schema.SESSION_STATE_DOMAIN`); used by :mod:`meta_memory.session_state.store`."""
        with self._conn() as conn:
            yield conn

    def _rebuild_fts(self, conn: psycopg.Connection[Any]) -> None:
        conn.execute(self._sql("DELETE FROM §records_fts"))
        conn.execute(self._sql("DELETE FROM §fts_stats"))
        conn.execute(self._sql("DELETE FROM §fts_terms"))
        rows = conn.execute(
            self._sql(
                "SELECT rid, realm, scope_kind, scope_key, title, description, body, tags FROM §records "
                "WHERE status_kind = 'active' ORDER BY realm, rid"
            )
        ).fetchall()
        for realm, group in itertools.groupby(rows, key=lambda r: r[1]):
            delta = pg_fts.Delta()
            fts_rows = [pg_fts.fts_row(rid, kind, key, title, description, body, json.loads(tags or "[]"))
                        for rid, _, kind, key, title, description, body, tags in group]
            pg_fts.insert_rows(conn, self._sql, realm, fts_rows, delta)
            delta.write(conn, self._sql, realm)

    @contextlib.contextmanager
    def _conn(self) -> Iterator[psycopg.Connection[Any]]:
        if self._closed:
            raise AgentMemoryError("io", "agent memory store is closed")
        try:
            with self._pool.connection() as conn:
                yield conn
        except PoolTimeout as exc:
            raise AgentMemoryError("io", f"no database connection available: {exc}") from None

    def _realm_name(self, realm: str) -> str:
        try:
            name = parse_realm(realm)
        except ValueError as exc:
            raise AgentMemoryError("invalid_record", str(exc)) from None
        if "\x00" in name:
            raise AgentMemoryError("invalid_record", "realm must not contain NUL characters")
        # The SQLite backend's cap (a realm is a file name there), kept so that a realm
        # valid on one backend is valid on the other.
        realm_db_path(Path("."), name)
        return name

    def _has_realm(self, name: str) -> bool:
        """See :meth:`AgentMemoryStore._has_realm`: registered by a write (here or on another gateway)."""
        return name in self._known_realms or bool(
            self._query(name, "SELECT 1 FROM §realms WHERE realm = %s", (name,))
        )

    def _ensure_realm(self, name: str) -> None:
        """First write to a realm in this process: register it (refused past ``max_realms``) and collect
        stale stages (24 h). Reads never call this: a realm nobody wrote to reads as empty and stays unregistered."""
        if name in self._known_realms:
            return
        with self._realm_lock:
            if name in self._known_realms:
                return
            now = self.clock.now_ms()

            def setup(conn: psycopg.Connection[Any]) -> None:
                known = conn.execute(self._sql("SELECT 1 FROM §realms WHERE realm = %s"), (name,)).fetchone()
                if known is None:
                    refuse_realm_creation(self.allowed_realms, name)  # the allow-list, then the caller's grants
                    (count,) = _one(conn.execute(self._sql("SELECT count(*) FROM §realms")))
                    if count >= self.max_realms:
                        raise realm_cap_refusal(name, count, "realms", self.max_realms)
                conn.execute(
                    self._sql("INSERT INTO §realms(realm, created_at_ms) VALUES (%s, %s) ON CONFLICT (realm) DO NOTHING"),
                    (name, now),
                )
                conn.execute(
                    self._sql(
                        "DELETE FROM §stage s WHERE s.realm = %s AND s.created_at_ms < %s AND NOT EXISTS "
                        "(SELECT 1 FROM §pending_promotions p WHERE p.realm = s.realm AND p.stage_token = s.token "
                        "AND p.status = 'pending')"
                    ),
                    (name, now - STAGE_GC_MAX_AGE_MS),
                )

            self._tx(name, setup)
            self._known_realms.add(name)

    def _tx(
        self, name: str, fn: Callable[[psycopg.Connection[Any]], _T], *, lock: bool = True, views: bool = False
    ) -> _T:
        """Run ``fn`` in one transaction on realm ``name`` (see :meth:`_writing`)."""
        with self._writing(name, lock=lock, views=views) as conn:
            return fn(conn)

    @contextlib.contextmanager
    def _writing(self, name: str, *, lock: bool = True, views: bool = False) -> Iterator[psycopg.Connection[Any]]:
        """One transaction on realm ``name``; commits when the block ends, rolls back on anything raised.

        ``lock``: take the realm's write lock first (every validated write).
        ``views``: put the realm views first on the search path (plain table names see only ``name``).
        psycopg errors become ``AgentMemoryError("io", ...)``.
        """
        def begin(conn: psycopg.Connection[Any]) -> None:
            conn.execute("BEGIN")
            if lock:
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_lock_key("meta-memory-realm", self.schema, name),))

        with span("store.transaction", **{"db.system.name": "postgresql", "db.namespace": name}), self._conn() as conn, \
                self._realm_tx(conn, name, begin, _write_error, views=views):
            yield conn

    @contextlib.contextmanager
    def _read_tx(self, name: str, *, views: bool = False) -> Iterator[psycopg.Connection[Any]]:
        deadline.check()
        self._settle(name)
        current = deadline.current()
        def begin(conn: psycopg.Connection[Any]) -> None:
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            self._bound_statements(conn)

        with span("store.snapshot", **{"db.system.name": "postgresql", "db.namespace": name}), self._conn() as conn, \
                (current.on_cancel(conn.cancel_safe) if current else contextlib.nullcontext()):
            with self._realm_tx(conn, name, begin, self._read_error, views=views):
                yield conn

    @contextlib.contextmanager
    def _realm_tx(
        self,
        conn: psycopg.Connection[Any],
        name: str,
        begin: Callable[[psycopg.Connection[Any]], None],
        error: Callable[[psycopg.Error], AgentMemoryError],
        *,
        views: bool,
    ) -> Iterator[None]:
        """One transaction on ``conn`` bound to realm ``name``: ``begin(conn)`` opens it, the realm
        setting (and with ``views`` the realm views' search path) is set, and the block's end commits.
        Anything raised rolls back; a psycopg error is raised as ``error(exc)``."""
        try:
            begin(conn)
            conn.execute("SELECT set_config(%s, %s, true)", (pg_schema.REALM_SETTING, name))
            if views:
                conn.execute(f"SET LOCAL search_path TO {self._views}, {self._qs[:-1]}")
            yield
            conn.execute("COMMIT")
        except BaseException as exc:
            with contextlib.suppress(psycopg.Error):
                conn.execute("ROLLBACK")
            if isinstance(exc, psycopg.Error):
                raise error(exc) from None
            raise

    @staticmethod
    def _bound_statements(conn: psycopg.Connection[Any]) -> None:
        """Inside a read transaction: cap every statement at what is left of the recall's time budget."""
        left = deadline.remaining_ms()
        if left is not None:
            conn.execute(f"SET LOCAL statement_timeout = {max(1, int(left))}")

    @staticmethod
    def _read_error(exc: psycopg.Error) -> AgentMemoryError:
        if isinstance(exc, psycopg.errors.QueryCanceled) or deadline.expired():
            return AgentMemoryError("timeout", "recall stopped: its time budget ran out")
        return AgentMemoryError("io", f"read failed: {exc}")

    def _query(self, realm: str, sql: str, params: Sequence[Any] | Mapping[str, Any]) -> list[Any]:
        """One read statement (its own snapshot) on ``realm``."""
        name = self._realm_name(realm)
        self._settle(name)
        if deadline.current() is not None:
            with self._read_tx(name) as conn:
                return conn.execute(self._sql(sql), params).fetchall()
        with self._conn() as conn:
            try:
                return conn.execute(self._sql(sql), params).fetchall()
            except psycopg.Error as exc:
                raise self._read_error(exc) from None

    def _snapshot_conn(self, realm: str) -> contextlib.AbstractContextManager[psycopg.Connection[Any]]:
        """A read-only snapshot of ``realm``: a pooled connection inside one ``REPEATABLE READ READ ONLY``
        transaction (no advisory lock) whose search path puts the realm views first."""
        return self._read_tx(realm, views=True)

    @contextlib.contextmanager
    def _write_conn(self, realm: str) -> Iterator[psycopg.Connection[Any]]:
        """A validated write's transaction holding the realm's advisory lock, the realm views first on
        the search path (see :meth:`SqlAgentMemoryStore._write_conn`)."""
        self._ensure_realm(realm)
        if next(self._writes) % planner.CHECK_EVERY_WRITES == 0 or self._rows_written >= self.ROWS_PER_CHECK:
            self._refresh_statistics()
        with self._writing(realm, views=True) as conn:
            yield conn

    # ================================================================ full-text rows

    def _index_records(self, conn: psycopg.Connection[Any], realm: str, indexed: Sequence[tuple[int, MemoryRecord]],
                       unindexed: Sequence[int]) -> None:
        """Add the full-text rows of ``indexed`` (row id, record that became active), remove those of the
        ``unindexed`` row ids, and move the scopes' statistics by the difference (:mod:`.pg_fts`: a fixed
        number of statements per batch)."""
        delta = pg_fts.Delta()
        pg_fts.delete_rows(conn, self._sql, unindexed, delta)
        rows = []
        for rid, rec in indexed:
            kind, key = rec.scope.storage()
            rows.append(pg_fts.fts_row(rid, kind, key, rec.title, rec.description, rec.body, rec.tags))
        pg_fts.insert_rows(conn, self._sql, realm, rows, delta)
        delta.write(conn, self._sql, realm)

    # ================================================================ row primitives (see SqlAgentMemoryStore)

    def _realm_records(
        self, realm: str, columns: str, where: str, params: tuple[Any, ...]
    ) -> tuple[str, tuple[Any, ...]]:
        key = (columns, where)
        sql = self._select_cache.get(key)
        if sql is None:
            sql = self._select_cache[key] = self._sql(POSTGRES.sql(f"SELECT {columns} FROM §records WHERE realm = ? AND {where}"))
        return sql, (realm, *params)

    def _realm_rows(
        self, realm: str, table: str, columns: str, where: str, params: tuple[Any, ...]
    ) -> tuple[str, tuple[Any, ...]]:
        return self._sql(POSTGRES.sql(f"SELECT {columns} FROM §{table} WHERE realm = ? AND {where}")), (realm, *params)

    def _insert_record(self, conn: psycopg.Connection[Any], realm: str, rec: MemoryRecord) -> int:
        row = conn.execute(
            self._sql(f"INSERT INTO §records(realm, {INSERT_COLUMNS}) VALUES ({', '.join(['%s'] * (INSERT_COLUMNS.count(',') + 2))}) RETURNING rid"),
            (realm, *insert_values(rec)),
        )
        return int(_one(row)[0])

    def _scope_rows(self, conn: psycopg.Connection[Any], realm: str, scope_kind: str, scope_key: str) -> int:
        row = conn.execute(self._sql("SELECT n FROM §scope_rows WHERE realm = %s AND scope_kind = %s AND scope_key = %s"),
                           (realm, scope_kind, scope_key)).fetchone()
        return int(row[0]) if row else 0

    def _update_record(self, conn: psycopg.Connection[Any], realm: str, rec: MemoryRecord) -> int:
        row = conn.execute(
            self._sql(POSTGRES.sql(f"UPDATE §records SET {STATE_ASSIGNMENTS} WHERE realm = ? AND memory_id = ? RETURNING rid")),
            (*state_values(rec), realm, rec.id),
        )
        return int(_one(row)[0])

    def _index_record(self, conn: psycopg.Connection[Any], realm: str, rid: int, rec: MemoryRecord) -> None:
        self._index_records(conn, realm, [(rid, rec)], ())

    def _unindex_record(self, conn: psycopg.Connection[Any], realm: str, rid: int) -> None:
        self._index_records(conn, realm, (), [rid])

    def _write_planned(self, conn: psycopg.Connection[Any], realm: str,
                       planned: Sequence[tuple[MemoryRecord, MemoryRecord | None]]) -> None:
        """See :meth:`SqlAgentMemoryStore._write_planned`, set-based: the new records in multi-row
        ``INSERT``s (row ids handed out in the batch's order), the changed ones in one pipelined
        ``executemany``, then every full-text change of the batch at once (:meth:`_index_records`)."""
        self._rows_written += len(planned)
        new = [rec for rec, before in planned if before is None]
        indexed: list[tuple[int, MemoryRecord]] = []
        unindexed: list[int] = []
        for rid, rec in zip(self._insert_records(conn, realm, new), new, strict=True):
            if rec.status.is_active:
                indexed.append((rid, rec))
        changed = [(rec, before) for rec, before in planned if before is not None]
        if changed:
            sql = self._sql(POSTGRES.sql(
                f"UPDATE §records SET {STATE_ASSIGNMENTS} WHERE realm = ? AND memory_id = ? RETURNING rid"))
            with conn.cursor() as cur:
                cur.executemany(sql, [(*state_values(rec), realm, rec.id) for rec, _ in changed], returning=True)
                rids = []
                while True:
                    rids.append(int(_one(cur)[0]))
                    if not cur.nextset():
                        break
            for rid, (rec, before) in zip(rids, changed, strict=True):
                if before.status.is_active and not rec.status.is_active:
                    unindexed.append(rid)
                elif rec.status.is_active and not before.status.is_active:
                    indexed.append((rid, rec))
        if indexed or unindexed:
            self._index_records(conn, realm, indexed, unindexed)

    def _insert_records(self, conn: psycopg.Connection[Any], realm: str, recs: Sequence[MemoryRecord]) -> list[int]:
        """Insert ``recs`` in one statement; returns their row ids in ``recs``' order (ascending: the rows
        are inserted in the batch's order, each taking the next identity value). The values travel as one
        JSON array read with ``jsonb_populate_recordset`` into the table's own column types (a few
        parameters instead of 25 per record, so neither side parses a statement the size of the batch)."""
        if not recs:
            return []
        columns = INSERT_COLUMNS.split(", ")
        doc = pg_fts.json_text([dict(zip(columns, insert_values(rec), strict=True)) for rec in recs])
        got = conn.execute(
            self._sql(f"INSERT INTO §records(realm, {INSERT_COLUMNS}) SELECT %s, {INSERT_COLUMNS} "
                      "FROM jsonb_populate_recordset(NULL::§records, %s::jsonb) WITH ORDINALITY AS x "
                      "ORDER BY x.ordinality RETURNING rid, memory_id"), (realm, doc)).fetchall()
        by_id = {memory_id: int(rid) for rid, memory_id in got}
        return [by_id[rec.id] for rec in recs]

    def _insert_rows(
        self, conn: psycopg.Connection[Any], realm: str, table: str, columns: str, rows: Sequence[tuple[Any, ...]]
    ) -> None:
        if len(rows) == 1:
            marks = ", ".join(["%s"] * (columns.count(",") + 2))
            conn.execute(self._sql(f"INSERT INTO §{table}(realm, {columns}) VALUES ({marks})"), (realm, *rows[0]))
            return
        # Several rows: one statement over a JSON array read into the table's column types, in order
        # (an identity column numbers them as given).
        names = columns.split(", ")
        doc = pg_fts.json_text([dict(zip(names, r, strict=True)) for r in rows])
        conn.execute(self._sql(f"INSERT INTO §{table}(realm, {columns}) SELECT %s, {columns} FROM "
                               f"jsonb_populate_recordset(NULL::§{table}, %s::jsonb) WITH ORDINALITY AS x "
                               "ORDER BY x.ordinality"), (realm, doc))

    def _active_sql(self, realm: str, scope: Scope, tail: str, params: Sequence[Any]) -> tuple[str, tuple[Any, ...]]:
        kind, key = scope.storage()
        sql = (
            f"SELECT {RECORD_COLUMNS} FROM §records WHERE realm = ? AND scope_kind = ? AND scope_key = ? "
            f"AND status_kind = 'active' AND {unexpired()} " + tail
        )
        return self._sql(POSTGRES.sql(sql)), (realm, kind, key, self.clock.now_ms(), *params)

    dialect = POSTGRES

    # ----------------------------------------------------------------- erase primitives

    def _scope_records(self, conn: psycopg.Connection[Any], realm: str, scope: Scope) -> list[MemoryRecord]:
        kind, key = scope.storage()
        rows = conn.execute(self._sql(f"SELECT {RECORD_COLUMNS} FROM §records WHERE realm = %s AND scope_kind = %s "
                                      "AND scope_key = %s ORDER BY rid"), (realm, kind, key)).fetchall()
        return [row_to_record(realm, r) for r in rows]

    def _linked_children(self, conn: psycopg.Connection[Any], realm: str, ids: Sequence[str]) -> list[MemoryRecord]:
        rows = conn.execute(self._sql(
            f"SELECT {RECORD_COLUMNS} FROM §records WHERE realm = %s AND (supersedes = ANY(%s) "
            "OR (derived_from <> '[]' AND jsonb_exists_any(derived_from::jsonb, %s)))"), (realm, list(ids), list(ids)),
        ).fetchall()
        return [row_to_record(realm, r) for r in rows]

    def _pending_promotion_records(self, conn: psycopg.Connection[Any], realm: str, ids: Sequence[str]) -> list[str]:
        rows = conn.execute(self._sql(
            "SELECT DISTINCT record_id FROM §pending_promotions WHERE realm = %s AND status = 'pending' "
            "AND record_id = ANY(%s)"), (realm, list(ids))).fetchall()
        return [r["record_id"] for r in rows]

    def _delete_content(self, conn: psycopg.Connection[Any], realm: str, ids: Sequence[str]) -> None:
        ids = list(ids)
        rids = conn.execute(self._sql("SELECT rid FROM §records WHERE realm = %s AND memory_id = ANY(%s)"),
                            (realm, ids)).fetchall()
        self._index_records(conn, realm, (), [int(row["rid"]) for row in rids])
        for memory_id in ids:  # staged batches that carry the content (a JSON string match on the id)
            conn.execute(self._sql("DELETE FROM §stage WHERE realm = %s AND strpos(batch, %s) > 0"),
                         (realm, json.dumps(memory_id)))
        conn.execute(self._sql("DELETE FROM §injections WHERE realm = %s AND record_id = ANY(%s)"), (realm, ids))
        conn.execute(self._sql("DELETE FROM §dream_audit_verdicts WHERE realm = %s AND record_id = ANY(%s)"), (realm, ids))
        conn.execute(self._sql("DELETE FROM §pending_forgets WHERE realm = %s AND memory_id = ANY(%s)"), (realm, ids))
        conn.execute(self._sql("UPDATE §audit SET detail = '{\"erased\": true}' WHERE realm = %s AND memory_id = ANY(%s)"),
                     (realm, ids))
        conn.execute(self._sql("DELETE FROM §records WHERE realm = %s AND memory_id = ANY(%s)"), (realm, ids))

    def _erase_leftovers(self, conn: psycopg.Connection[Any], realm: str) -> None:
        """Full-text terms no active record of the realm holds any more (``df`` 0): the erased records'
        words would otherwise stay in ``fts_terms``."""
        conn.execute(self._sql("DELETE FROM §fts_terms WHERE realm = %s AND df <= 0"), (realm,))

    def _tombstoned_before(self, conn: psycopg.Connection[Any], realm: str, cutoff_ms: int, limit: int) -> list[MemoryRecord]:
        rows = conn.execute(self._sql(
            f"SELECT {RECORD_COLUMNS} FROM §records WHERE realm = %s AND status_kind = 'tombstoned' "
            "AND tombstoned_at_ms < %s ORDER BY tombstoned_at_ms LIMIT %s"), (realm, cutoff_ms, limit)).fetchall()
        return [row_to_record(realm, r) for r in rows]

    def _page_sql(self, realm: str, after_rid: int, limit: int, scope: Scope | None) -> tuple[str, tuple[Any, ...]]:
        if scope is None:
            sql = f"SELECT {RECORD_COLUMNS} FROM §records WHERE realm = %s AND rid > %s ORDER BY rid LIMIT %s"
            return self._sql(sql), (realm, after_rid, limit)
        kind, key = scope.storage()
        sql = (f"SELECT {RECORD_COLUMNS} FROM §records WHERE realm = %s AND scope_kind = %s AND scope_key = %s "
               "AND rid > %s ORDER BY rid LIMIT %s")
        return self._sql(sql), (realm, kind, key, after_rid, limit)

    def _read_all(self, realm: str, statements: Sequence[tuple[str, tuple[Any, ...]]]) -> list[list[Any]]:
        if len(statements) == 1:  # one statement is its own snapshot
            return [self._query(realm, *statements[0])]
        with self._read_tx(realm) as conn:
            return [conn.execute(sql, params).fetchall() for sql, params in statements]

    def _scope_footprint(self, conn: psycopg.Connection[Any], scope: Scope, limit: int) -> tuple[int, int]:
        kind, key = scope.storage()
        count_row = conn.execute(
            self._sql(
                "SELECT COUNT(*), COALESCE(SUM(n), 0) FROM (SELECT octet_length(title) + octet_length(description) "
                "+ octet_length(body) AS n FROM §records WHERE realm = %s AND scope_kind = %s AND scope_key = %s "
                "AND status_kind <> 'tombstoned' LIMIT %s) AS footprint"
            ),
            (scope.realm, kind, key, limit),
        )
        count, nbytes = _one(count_row)
        return int(count), int(nbytes)

    # ================================================================ reads

    def get(self, realm: str, memory_id: str) -> MemoryRecord | None:
        """See :meth:`AgentMemoryStore.get`."""
        name = self._realm_name(realm)
        if "\x00" in memory_id:
            return None
        rows = self._query(name, f"SELECT {RECORD_COLUMNS} FROM §records WHERE realm = %s AND memory_id = %s", (name, memory_id))
        return row_to_record(name, rows[0]) if rows else None

    def neighbours(
        self, realm: str, scope: Scope, anchors: Sequence[MemoryRecord], span: int, window_ms: int
    ) -> dict[str, list[RecordView]]:
        """See :meth:`AgentMemoryStore.neighbours` (one statement: two lateral range scans per anchor)."""
        if not anchors or span <= 0:
            return {}
        kind, key = scope.storage()
        name = self._realm_name(realm)
        ids = list(dict.fromkeys(a.memory_id for a in anchors))
        side = (
            f"SELECT {VIEW_COLUMNS} FROM §records r WHERE realm = %s AND scope_kind = %s AND scope_key = %s "
            "AND status_kind = 'active' AND " + unexpired().replace("?", "%s") + " AND "
        )
        now = self.clock.now_ms()
        rows = self._query(
            name,
            f"SELECT a.memory_id AS anchor_id, n.* FROM §records a "
            "CROSS JOIN LATERAL ("
            f"  (SELECT 'b' AS side, row_number() OVER (ORDER BY x.created_at_ms DESC, x.rid DESC) AS pos, x.* FROM ({side}"
            "    created_at_ms >= a.created_at_ms - %s AND (created_at_ms, rid) < (a.created_at_ms, a.rid) "
            "    ORDER BY created_at_ms DESC, rid DESC LIMIT %s) x)"
            "  UNION ALL "
            f"  (SELECT 'a' AS side, row_number() OVER (ORDER BY y.created_at_ms, y.rid) AS pos, y.* FROM ({side}"
            "    created_at_ms <= a.created_at_ms + %s AND (created_at_ms, rid) > (a.created_at_ms, a.rid) "
            "    ORDER BY created_at_ms, rid LIMIT %s) y)"
            ") n WHERE a.realm = %s AND a.memory_id = ANY(%s)",
            (name, kind, key, now, window_ms, span, name, kind, key, now, window_ms, span, name, ids),
        )
        grouped: dict[str, list[tuple[int, int, RecordView]]] = {}
        for row in rows:
            grouped.setdefault(row["anchor_id"], []).append(
                (int(row["pos"]), 0 if row["side"] == "b" else 1, row_to_view(row))
            )
        return {aid: [rec for _, _, rec in sorted(items, key=lambda t: (t[0], t[1]))] for aid, items in grouped.items()}

    def search(self, realm: str, scope: Scope, match_expression: str, limit: int,
               only: Collection[int] | None = None, where: FilterNode | None = None) -> Candidates:
        """See :meth:`AgentMemoryStore.search`: weighted bm25 over the statistics of ``scope`` alone (lower
        is better), computed in SQL as :mod:`meta_memory.recall.bm25` defines it; ``only`` restricts the
        candidates to those row ids (bound as one array), ``where`` to the records whose metadata passes
        it (its SQL in the same statement, every value bound).

        Candidates: active records of ``scope`` whose ``tsvector`` holds any
        term (GIN index). Score per record: ``-sum_i idf_i * f_i * (k1 + 1) /
        (f_i + k1 * (1 - b + b * ntok / avgdl))`` with ``k1`` and ``b`` those of
        :mod:`meta_memory.recall.bm25`, ``f_i`` the column-weighted frequency of term ``i``, ``idf_i =
        ln((N - n_i + 0.5) / (n_i + 0.5))`` (``1e-6`` when not positive), ``N``
        the scope's active records, ``avgdl`` their tokens per record and ``n_i``
        those holding term ``i`` (``fts_stats`` / ``fts_terms`` of the scope): no
        other scope's records move a score. Order: score, then insertion order.

        Not every candidate is scored: the terms are matched rarest first, and the common terms whose
        score bounds cannot lift a row into the first ``limit`` are left unmatched (:mod:`.pg_ranking`,
        MaxScore), which returns exactly the rows, scores and order of matching every term. All reads
        of one call come from one snapshot; each statement stops at the time budget (``timeout``). A
        round after the first stops :data:`~.pg_ranking.RESERVE_MS` before it instead: the answer is then
        the best of the rows the earlier rounds scored, named ``approximate_ranking`` (the list's
        ``degraded_reason``; counted in :meth:`ranking_stats`), rather than no answer. The rounds before
        any row is scored (the first prefix) stop :func:`~.pg_ranking.first_reserve_ms` before it: the
        first :func:`~.pg_ranking.sample_rows` rows of the same match (the same scope, restrictions and
        filters; active, unexpired records only) are then scored with every term and the best of them
        answer, ``approximate_ranking`` too (none when that sample is stopped ``RESERVE_MS`` before the end
        as well). The seeding pairs (terms each held by many rows) score that sample first, with most of
        the budget left, and then run stopped ``RESERVE_MS`` before the end.
        """
        if limit <= 0 or not match_expression or (only is not None and not only):
            return Candidates()
        kind, key = scope.storage()
        name = self._realm_name(realm)
        terms = [t for t in parse_match_expression(match_expression) if t and "\x00" not in t]
        lexemes = list(dict.fromkeys(pg_schema.lexeme(t) for t in terms))
        if not lexemes:
            return Candidates()
        filtered, bound = "", {}
        if where is not None:
            sql, values = compile_filter(where, pg=True, column="r.metadata")
            parts = sql.split("?")
            filtered = "AND " + "".join(p + (f"%(f{i})s" if i < len(values) else "") for i, p in enumerate(parts)) + " "
            bound = {f"f{i}": v for i, v in enumerate(values)}
        params: dict[str, Any] = {
            "realm": name,
            "terms": lexemes,
            "kind": kind,
            "key": key,
            "k1": BM25_K1,
            "b": BM25_B,
            "limit": limit,
            "now": self.clock.now_ms(),
            "only": sorted(only) if only is not None else None,
            **bound,
        }
        params.update({f"t{i}": lex for i, lex in enumerate(lexemes)})
        ranked = self._sql(_ranked_sql(len(lexemes)) + (" AND f.rid = ANY(%(only)s::bigint[])" if only is not None else "")
                           + "%(bounded)s) ")
        unexpired_r = unexpired("r.").replace("?", "%(now)s")
        # Joined on the primary key only: a full-text row exists iff its record is active (same
        # transaction), and rid is unique across realms.
        joined = self._sql(f"SELECT {VIEW_COLUMNS}, hits.score AS score FROM hits JOIN §records r ON r.rid = hits.rid "
                           f"WHERE r.status_kind = 'active' AND {unexpired_r} {filtered}"
                           "ORDER BY hits.score, r.rid LIMIT %(limit)s")
        # Without a metadata filter the best rows are picked first and only they are joined; a picked row
        # whose record has expired (not yet swept) sends the statement back to the join above.
        first = None if where is not None else self._sql(
            f"SELECT {VIEW_COLUMNS}, h.score AS score, r.rid IS NULL AS gone FROM "
            "(SELECT rid, score FROM hits ORDER BY score, rid LIMIT %(limit)s) h "
            f"LEFT JOIN §records r ON r.rid = h.rid AND r.status_kind = 'active' AND {unexpired_r} "
            "ORDER BY h.score, h.rid")
        with self._read_tx(name) as conn:
            stats = conn.execute(self._sql(_TERM_STATS), params).fetchall()
            if not stats:
                return Candidates()  # the scope holds no active record

            short: list[float] = []  # inside a round stopped short of the budget: the reserve it keeps

            def run(head: str, values: dict[str, Any]) -> list[Any]:
                if first is not None:
                    picked: list[Any] = conn.execute(head + first, values).fetchall()
                    if not any(r["gone"] for r in picked):
                        return picked
                    if short:  # the second statement gets what is left of the round's room, not all of it
                        left = deadline.remaining_ms()
                        if left is not None:
                            conn.execute(f"SET LOCAL statement_timeout = {max(1, int(left - short[0]))}")
                rows: list[Any] = conn.execute(head + joined, values).fetchall()
                return rows

            def run_before(head: str, values: dict[str, Any], reserve: float) -> list[Any]:
                """``run`` stopped ``reserve`` ms before the budget's end (:class:`_RoundCut` when stopped there,
                or when less than :data:`~.pg_ranking.MIN_ROUND_MS` is left before it: the snapshot is kept,
                the round's work undone)."""
                left = deadline.remaining_ms()
                if left is None:
                    return run(head, values)
                room = int(left - reserve)
                if room < pg_ranking.MIN_ROUND_MS:
                    raise _RoundCut
                conn.execute("SAVEPOINT ranking_round")
                conn.execute(f"SET LOCAL statement_timeout = {room}")
                short.append(reserve)
                try:
                    rows = run(head, values)
                except psycopg.errors.QueryCanceled:
                    if deadline.expired():
                        raise
                    conn.execute("ROLLBACK TO SAVEPOINT ranking_round")  # undoes the SET LOCAL too
                    raise _RoundCut from None
                finally:
                    short.clear()
                conn.execute("RELEASE SAVEPOINT ranking_round")
                self._bound_statements(conn)  # the rest of the budget for the statements after it
                return rows

            def run_short(head: str, values: dict[str, Any]) -> list[Any]:
                """A round after the first: ``run`` stopped ``RESERVE_MS`` before the budget's end."""
                return run_before(head, values, deadline.reserve_ms(pg_ranking.RESERVE_MS))

            def run_sample(head: str, values: dict[str, Any]) -> list[Any]:
                """The first :func:`~.pg_ranking.sample_rows` rows of ``head``'s match, each scored with every term,
                stopped ``RESERVE_MS`` before the budget's end (none when stopped there)."""
                if not head.endswith(") "):  # the hits CTE is closed last (``ranked``)
                    raise AssertionError("unexpected ranking statement")
                try:
                    return run_before(head[:-2] + " LIMIT %(sample)s) ",
                                      {**values, "sample": pg_ranking.sample_rows(len(lexemes))},
                                      deadline.reserve_ms(pg_ranking.RESERVE_MS))
                except _RoundCut:
                    return []

            def run_first(head: str, values: dict[str, Any], costly: bool = False) -> list[Any]:
                """A round before any row is scored: ``run`` stopped :func:`~.pg_ranking.first_reserve_ms` before
                the budget's end; stopped there, the first :func:`~.pg_ranking.sample_rows` rows of the same
                match are scored instead and handed back in the :class:`_RoundCut` raised. A ``costly`` round
                (the seeding pairs of terms each held by many rows) scores that sample first, while most of
                the budget is left, and then runs stopped ``RESERVE_MS`` before the end, as later rounds do."""
                if costly:
                    sample = run_sample(head, values)
                    try:
                        return run_before(head, values, deadline.reserve_ms(pg_ranking.RESERVE_MS))
                    except _RoundCut:
                        raise _RoundCut(sample) from None
                current, left = deadline.current(), deadline.remaining_ms()
                try:
                    return run_before(head, values, pg_ranking.first_reserve_ms(
                        current.budget_ms() if current else None, left or 0))
                except _RoundCut:
                    pass
                raise _RoundCut(run_sample(head, values))

            best: list[Any] = []  # the best rows the rounds found so far
            try:
                rows, exact = self._pruned_rows(run, ranked, params, stats, limit, run_short, best, run_first), True
            except _RoundCut:
                rows, exact = best, False
        if not exact:
            self.rankings.add(bm25.DEGRADED_APPROXIMATE)
        return Candidates([(row_to_view(r), float(r["score"])) for r in rows],
                          degraded_reason=None if exact else bm25.DEGRADED_APPROXIMATE)

    @staticmethod
    def _pruned_rows(run: Callable[[str, dict[str, Any]], list[Any]], ranked: str, params: dict[str, Any],
                     stats: Sequence[Any], limit: int,
                     run_short: Callable[[str, dict[str, Any]], list[Any]] | None = None,
                     best: list[Any] | None = None,
                     run_first: Callable[[str, dict[str, Any], bool], list[Any]] | None = None) -> list[Any]:
        """The best ``limit`` rows of ``ranked`` (the ranking statement, ``%(tsq)s`` and ``%(bounded)s`` left
        to fill) for the query lexemes of ``stats`` (``term, df, n`` rows), matching as few of them as
        :mod:`.pg_ranking` allows: a few statements of the caller's snapshot, each bounded by its budget.
        Once a round has found rows, the next ones go through ``run_short``, and the rounds before through
        ``run_first`` (the seeding pairs as ``costly``); either may raise :class:`_RoundCut` (a round stopped short of
        the budget); ``best`` then holds the best ``limit`` rows the earlier rounds (and the sample a stopped
        first round scored instead) found."""
        if best is None:
            best = []

        def step(head: str, values: dict[str, Any], costly: bool = False) -> list[Any]:
            if best and run_short is not None:
                return run_short(head, values)
            if run_first is not None:
                try:
                    return run_first(head, values, costly)
                except _RoundCut as stopped:
                    fold(stopped.rows)
                    raise
            return run(head, values)

        def fold(rows: list[Any]) -> None:  # the best ``limit`` rows found so far, each scored with every term
            seen = {r["rid"] for r in rows}
            merged = sorted([*rows, *(r for r in best if r["rid"] not in seen)],
                            key=lambda r: (float(r["score"]), r["rid"]))
            best[:] = merged[:limit]

        n_rows = float(stats[0]["n"])
        terms = pg_ranking.rarest_first([pg_ranking.TermStat(r["term"], int(r["df"])) for r in stats])
        unbounded = ranked.replace("%(bounded)s", "")
        k, theta = pg_ranking.first_prefix(terms), None
        pairs = pg_ranking.seed_pairs(terms, k, n_rows)
        if pairs:  # pg_ranking, step 4: rows holding two of the rarest terms give a first theta
            seeded = step(unbounded, {**params, "tsq": " | ".join(
                f"{pg_schema.tsquery_literal([a])} & {pg_schema.tsquery_literal([b])}" for a, b in pairs)}, True)
            fold(seeded)
            if len(seeded) >= limit:
                theta = -float(seeded[-1]["score"])
                covered = PostgresAgentMemoryStore._covered_rows(step, unbounded, params, terms, n_rows, theta)
                if covered is not None:
                    return covered
                k = max(1, pg_ranking.settled(terms, 0, n_rows, theta))
            deadline.check()
        while True:
            if not k:
                return []  # no query term is held by any row of the scope
            round_params = {**params, "tsq": pg_schema.tsquery_literal([t.term for t in terms[:k]])}
            if theta is None:
                rows = step(unbounded, round_params)
            else:  # rows whose own bound is below theta are skipped before scoring (pg_ranking, step 5)
                held = " + ".join(f"CASE WHEN f.doc @@ %(u{i})s::tsquery THEN %(v{i})s::float8 ELSE 0 END"
                                  for i in range(len(terms)))
                for i, (t, b) in enumerate(zip(terms, pg_ranking.row_bounds(terms, n_rows), strict=True)):
                    round_params[f"u{i}"], round_params[f"v{i}"] = pg_schema.tsquery_literal([t.term]), b
                round_params["cut"] = pg_ranking.cut(theta)
                rows = step(ranked.replace("%(bounded)s", f" AND ({held}) >= %(cut)s"), round_params)
            if k >= len(terms):
                return rows
            fold(rows)
            if len(rows) >= limit:
                theta = -float(rows[-1]["score"])
                wider = pg_ranking.settled(terms, k, n_rows, theta)
                if wider <= k:
                    return rows
                covered = PostgresAgentMemoryStore._covered_rows(step, unbounded, params, terms, n_rows, theta)
                if covered is not None:
                    return covered
                k = wider
            else:
                k = pg_ranking.wider_prefix(terms, k, limit)
            deadline.check()

    @staticmethod
    def _covered_rows(run: Callable[[str, dict[str, Any]], list[Any]], unbounded: str, params: dict[str, Any],
                      terms: Sequence[pg_ranking.TermStat], n_rows: float, theta: float) -> list[Any] | None:
        """Once ``theta`` is known: the answer, from the rows holding every term of one of
        :func:`.pg_ranking.covering_sets` (exactly the rows whose bound reaches the cut: the GIN index
        finds them from its posting lists, and only they are read and scored); ``None`` when the sets
        are too many to match this way."""
        sets = pg_ranking.covering_sets(terms, pg_ranking.row_bounds(terms, n_rows), pg_ranking.cut(theta))
        if not sets:
            return None
        tsq = " | ".join("(" + " & ".join(pg_schema.tsquery_literal([t]) for t in group) + ")" for group in sets)
        deadline.check()
        return run(unbounded, {**params, "tsq": tsq})

    def held_realms(self) -> list[str]:
        """Every realm this database has held (registered at a realm's first use), sorted."""
        with self._conn() as conn:
            try:
                rows = conn.execute(self._sql("SELECT realm FROM §realms")).fetchall()
            except psycopg.Error as exc:
                raise AgentMemoryError("io", f"read failed: {exc}") from None
        return sorted(r[0] for r in rows)

    # ================================================================ telemetry writes

    def mark_usage(self, realm: str, ids: Sequence[str], event: UsageEvent | str) -> None:
        """See :meth:`AgentMemoryStore.mark_usage`: queued (:mod:`.telemetry`) and written with the realm's
        other queued telemetry in one transaction by the background writer, or by the realm's next read
        outside a recall, whichever comes first (not audited)."""
        ev = UsageEvent(event)
        unique = tuple(i for i in dict.fromkeys(ids) if isinstance(i, str) and "\x00" not in i)
        if not unique:
            return
        name = self._realm_name(realm)  # no registration: marks only touch existing records
        self._queue_telemetry(name, ("usage", (unique, ev, self.clock.now_ms())))

    def recall_reads(self) -> contextlib.AbstractContextManager[None]:
        """See :meth:`AgentMemoryStore.recall_reads`: reads in the block leave the queued usage marks queued."""
        return recall_reads()

    def _queue_telemetry(self, name: str, op: _TelemetryOp) -> None:
        """Queue a telemetry write of realm ``name`` for the background writer; past ``MAX_PENDING``
        queued, write the whole queue now on this thread (back-pressure, never a drop). A closed store
        writes nothing more: the write is counted as dropped."""
        if self._closed:
            self.telemetry.drop(name, "closed")
            return
        if self._pending.add(name, op):
            self._pending.flush_all(landed=False)  # back-pressure: room in the queue is all it needs

    def _settle(self, name: str) -> None:
        """Before a read of realm ``name`` outside a recall: write its queued telemetry (and wait, at most
        :data:`SETTLE_WAIT_S`, for a batch the background writer is writing), so the read sees every usage
        mark queued before it."""
        if not self._pending.unsettled(name) or in_recall_reads():
            return
        self._flush_telemetry(name)
        self._pending.wait_landed(name, SETTLE_WAIT_S)

    def _flush_telemetry(self, name: str) -> None:
        """Write realm ``name``'s queued telemetry in one transaction without the realm lock (usage marks
        take row locks in id order, so injections on several gateways do not queue behind each other's
        writes). A batch that cannot be written (a full disk, a lost connection) is counted, one drop per
        queued write, never raised."""
        ops = self._pending.take(name)
        try:
            if not ops:
                return
            try:
                self._telemetry_tx(name, lambda conn: self._write_telemetry_ops(conn, name, ops))
            except AgentMemoryError as exc:
                for _ in ops:
                    self.telemetry.drop(name, exc.reason)
        finally:
            self._pending.done(name)

    def _write_telemetry_ops(self, conn: psycopg.Connection[Any], name: str, ops: Sequence[_TelemetryOp]) -> None:
        """Every queued usage mark and injection-ledger row of ``ops``, in the order they were queued
        (each mark bumps its record's counter of that event and stamps its time); unknown ids change nothing."""
        marks: dict[str, list[tuple[UsageEvent, int]]] = {}  # memory_id -> [(event, at_ms)], oldest first
        injections: list[tuple[Any, ...]] = []
        for kind, payload in ops:
            if kind == "usage":
                ids, ev, now = payload
                for memory_id in ids:
                    marks.setdefault(memory_id, []).append((ev, now))
            else:
                injections.extend(payload)
        if marks:
            rows = conn.execute(
                self._sql(
                    "SELECT memory_id, usage_stats FROM §records WHERE realm = %s AND memory_id = ANY(%s::text[]) "
                    "ORDER BY memory_id FOR UPDATE"
                ),
                (name, sorted(marks)),
            ).fetchall()
            updates = []
            for memory_id, raw in rows:
                stats = UsageStats.from_json(json.loads(raw or "{}"))
                for ev, now in marks[memory_id]:
                    stats = stats.bump(ev, now)
                updates.append((dumps(stats.to_json()), name, memory_id))
            if updates:
                with conn.cursor() as cur:
                    cur.executemany(
                        self._sql("UPDATE §records SET usage_stats = %s WHERE realm = %s AND memory_id = %s"), updates
                    )
        if injections:
            self._insert_rows(conn, name, "injections", INJECTION_COLUMNS, injections)
            # Keep each identity's newest MAX_INJECTIONS_PER_IDENTITY ledger rows (a bounded telemetry table).
            with conn.cursor() as cur:
                cur.executemany(
                    self._sql(
                        "DELETE FROM §injections WHERE realm = %s AND identity = %s AND injection_id <= "
                        "(SELECT injection_id FROM §injections WHERE realm = %s AND identity = %s "
                        "ORDER BY injection_id DESC LIMIT 1 OFFSET %s)"
                    ),
                    [(name, ident, name, ident, MAX_INJECTIONS_PER_IDENTITY)
                     for ident in sorted({row[1] for row in injections})],
                )

    def _telemetry_tx(self, name: str, fn: Callable[[psycopg.Connection[Any]], None]) -> None:
        """One telemetry transaction on realm ``name``, without the realm lock."""
        self._tx(name, fn, lock=False)

    def telemetry_stats(self) -> dict[str, int]:
        """See :meth:`AgentMemoryStore.telemetry_stats`."""
        self._pending.flush_all()
        return self.telemetry_snapshot()

    def telemetry_snapshot(self) -> dict[str, int]:
        """See :meth:`AgentMemoryStore.telemetry_snapshot`."""
        return self.telemetry.stats()

    def readiness_problems(self) -> dict[str, str]:
        """See :meth:`AgentMemoryStore.readiness_problems`: ``postgres`` when the server does not answer
        ``SELECT 1`` within :data:`READINESS_TIMEOUT_S` (or the connect timeout, when shorter)."""
        try:
            with self._pool.connection(timeout=min(READINESS_TIMEOUT_S, self.connect_timeout_s)) as conn:
                conn.execute("SELECT 1").fetchone()
        except (psycopg.Error, PoolTimeout) as exc:
            return {"postgres": f"the server does not answer: {' '.join(str(exc).split())}"}
        if self._pending.died:
            return {"worker:telemetry_writer": "the background thread ended unexpectedly; restart the gateway"}
        return {}

    def log_injections(self, realm: str, rows: Sequence[InjectionRow]) -> None:
        """See :meth:`AgentMemoryStore.log_injections` (plain inserts, queued as :meth:`mark_usage`)."""
        if not rows:
            return
        name = self._realm_name(realm)
        if not self._has_realm(name):
            return  # nothing was injected from a realm nobody wrote to; telemetry never creates a realm
        values = injection_values(rows)
        if any(has_nul(*v) for v in values):
            raise AgentMemoryError("invalid_record", "injection rows must not contain NUL characters")
        self._queue_telemetry(name, ("injections", values))

    # ================================================================ audit (read)

    def audit_rows(self, realm: str, memory_id: str | None = None) -> list[dict[str, Any]]:
        """Audit rows, oldest first (all, or those naming ``memory_id``):
        ``{audit_id, stage_token, op_index, op_kind, memory_id, detail, applied_at_ms}``."""
        name = self._realm_name(realm)
        cols = "audit_id, stage_token, op_index, op_kind, memory_id, detail, applied_at_ms"
        if memory_id is None:
            rows = self._query(name, f"SELECT {cols} FROM §audit WHERE realm = %s ORDER BY audit_id", (name,))
        else:
            rows = self._query(
                name,
                f"SELECT {cols} FROM §audit WHERE realm = %s AND memory_id = %s ORDER BY audit_id",
                (name, memory_id),
            )
        return [{**dict(r), "detail": json.loads(r["detail"])} for r in rows]

    # ================================================================ lifecycle

    @classmethod
    def drop_schema(cls, dsn: str, schema: str) -> None:
        """Drop ``schema`` and its realm-view schema with everything in them (tests, decommissioning).

        Raises ``AgentMemoryError("io", ...)`` on a database error.
        """
        try:
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute(f"DROP SCHEMA IF EXISTS {pg_schema.quote_ident(schema + '_realm')} CASCADE")
                conn.execute(f"DROP SCHEMA IF EXISTS {pg_schema.quote_ident(schema)} CASCADE")
        except psycopg.Error as exc:
            raise AgentMemoryError("io", f"cannot drop schema '{schema}': {exc}") from None

    def close(self) -> None:
        """Close the pool. The store must not be used afterwards."""
        if self._closed:
            return
        self._pending.stop()  # the queued telemetry is written first
        self._closed = True
        self._pool.close()

    def __enter__(self) -> PostgresAgentMemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
