"""The agent-memory store's side tables: one row type per table and its repository (reference §2B tables).

Only the store speaks SQL. Review (:mod:`meta_memory.review`) and the console panel
(:mod:`meta_memory.panel`) reach these tables through the repositories an open
:class:`~meta_memory.agent_memory.store.tx.WriteTx` (reads and writes) or
:class:`~meta_memory.agent_memory.store.tx.ReadTx` (reads only) hands out:

===========================  =====================  ==================================
table                        row type               repository (read / write)
===========================  =====================  ==================================
``pending_promotions``       :class:`PromotionRow`  :class:`PromotionReads` / :class:`Promotions`
``proposals``                :class:`ProposalRow`   :class:`ProposalReads` / :class:`Proposals`
``pending_harvests``         :class:`HarvestRow`    :class:`HarvestReads` / :class:`Harvests`
``dream_runs``               :class:`DreamRunRow`   :class:`DreamRunReads` / :class:`DreamRuns`
``dream_audit_verdicts``     :class:`VerdictRow`    :class:`VerdictReads` / :class:`Verdicts`
``pending_forgets``          :class:`HeldForgetRow` :class:`HeldForgetReads` / :class:`HeldForgets`
``audit``                    :class:`AuditRow`      :class:`AuditReads` / :class:`AuditLog`
``records`` (review queues)  ids                    :class:`ReviewQueues`
===========================  =====================  ==================================

Every statement is written once, for SQLite, with ``?`` placeholders; :class:`Sql` runs it in
the transaction's dialect (:mod:`.dialect`: placeholders, JSON reads, ``INSERT OR IGNORE``,
code point order). On PostgreSQL plain table names inside a store transaction are the realm
views, so every statement sees (and writes) exactly one realm, as a SQLite realm file does.
An ``INSERT OR REPLACE`` is a delete then an insert on PostgreSQL (the same effect), race-free
because a write transaction holds the realm's write lock.

Listings sort with ties broken by a text key in code point order on both backends, so both
return the same rows in the same order. Lookups by a key holding NUL find nothing on PostgreSQL
(its text cannot hold NUL), as they find nothing on SQLite.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from meta_memory.agent_memory.model import Scope
from meta_memory.agent_memory.store.base import dumps
from meta_memory.agent_memory.store.dialect import SQLITE, Dialect
from meta_memory.agent_memory.store.shared_ddl import AUDIT_TOKEN_INDEXED
from meta_memory.errors import AgentMemoryError
from meta_memory.limits import (
    MAX_DECIDED_HARVESTS_PER_IDENTITY,
    MAX_DREAM_RUNS_PER_REALM,
    MAX_OPEN_HARVESTS_PER_IDENTITY,
)

__all__ = [
    "AUDIT_INSERT_COLUMNS",
    "Connection",
    "STANDING_FORGETS",
    "Row",
    "Sql",
    "loads",
    "PromotionRow",
    "ProposalRow",
    "HarvestRow",
    "DreamRunRow",
    "VerdictRow",
    "HeldForgetRow",
    "AuditRow",
    "PromotionReads",
    "Promotions",
    "ProposalReads",
    "Proposals",
    "HarvestReads",
    "Harvests",
    "DreamRunReads",
    "DreamRuns",
    "VerdictReads",
    "Verdicts",
    "HeldForgetReads",
    "HeldForgets",
    "AuditReads",
    "AuditLog",
    "ReviewQueues",
]


class Row(Protocol):
    """A result row: by position (``row[0]``) and, for the stores' rows, by column name."""

    def __getitem__(self, key: Any, /) -> Any: ...

    def __iter__(self) -> Iterator[Any]: ...

    def __len__(self) -> int: ...


class _Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Connection(Protocol):
    """What :class:`Sql` needs of a driver connection (``sqlite3`` or psycopg)."""

    def execute(self, sql: str, params: tuple[Any, ...], /) -> Any: ...


class Sql:
    """The statements of one open store transaction, in its backend's dialect.

    Held only by the store's transactions (:mod:`.tx`); never handed to callers.
    """

    __slots__ = ("_conn", "dialect")

    def __init__(self, conn: Connection, dialect: Dialect) -> None:
        self._conn = conn
        self.dialect = dialect

    @property
    def conn(self) -> Connection:
        """The driver connection (for the store's own primitives)."""
        return self._conn

    def run(self, sql: str, params: Sequence[Any] = ()) -> _Cursor:
        """Run ``sql`` (``?`` placeholders); returns the cursor."""
        cursor: _Cursor = self._conn.execute(self.dialect.sql(sql), tuple(params))
        return cursor

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        """Every row of ``sql``."""
        return self.run(sql, params).fetchall()

    def one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        """The first row of ``sql``, or ``None``."""
        row: Row | None = self.run(sql, params).fetchone()
        return row

    def changed(self, sql: str, params: Sequence[Any] = ()) -> bool:
        """Run a write; whether it changed at least one row."""
        return self.run(sql, params).rowcount > 0

    def unstorable(self, *keys: str) -> bool:
        """Whether a lookup key cannot name any row (text holding NUL on a backend that refuses it)."""
        return self.dialect.refuses_nul and any("\x00" in k for k in keys)

    @property
    def collate(self) -> str:
        """The suffix sorting a text column by code point."""
        return self.dialect.collate

    def replace(self, table: str, cols: Sequence[str], key_cols: Sequence[str], values: Sequence[Any]) -> None:
        """``INSERT OR REPLACE``: the row keyed by ``key_cols`` (a prefix of ``cols``) is replaced whole."""
        marks = ", ".join("?" for _ in cols)
        if self.dialect is SQLITE:
            self.run(f"INSERT OR REPLACE INTO {table}({', '.join(cols)}) VALUES ({marks})", values)
            return
        where = " AND ".join(f"{k} = ?" for k in key_cols)
        self.run(f"DELETE FROM {table} WHERE {where}", values[: len(key_cols)])
        self.run(f"INSERT INTO {table}({', '.join(cols)}) VALUES ({marks})", values)


def loads(text: Any, default: Any) -> Any:
    """The JSON value of a TEXT column, ``default`` when it is empty or not JSON."""
    if not isinstance(text, str) or not text:
        return default
    try:
        return json.loads(text)
    except ValueError:
        return default


def _chunks(values: Sequence[str], size: int = 500) -> Iterator[tuple[str, ...]]:
    """``values`` in tuples of at most ``size`` (one ``IN`` list each)."""
    for first in range(0, len(values), size):
        yield tuple(values[first:first + size])


def _obj(text: Any) -> dict[str, Any]:
    value = loads(text, {})
    return value if isinstance(value, dict) else {}


class _Repo:
    __slots__ = ("_sql", "realm")

    def __init__(self, sql: Sql, realm: str) -> None:
        self._sql = sql
        self.realm = realm


# --------------------------------------------------------------------------- pending_promotions


@dataclass(frozen=True, slots=True)
class PromotionRow:
    """A ``pending_promotions`` row of ``realm``. ``record_id`` is a record id or a ``prop-...`` proposal
    id; ``status``: ``pending`` | ``committed`` | ``denied`` | ``expired``. Times are epoch ms. The
    stage token names the staged batch and is never shown."""

    realm: str
    pending_id: str
    stage_token: str
    record_id: str
    scope_kind: str
    scope_key: str
    rationale: str | None
    status: str
    created_at_ms: int
    resolved_at_ms: int | None

    @property
    def from_proposal(self) -> bool:
        """Whether the promotion was made from a proposal."""
        return self.record_id.startswith("prop-")

    def to_json(self) -> dict[str, Any]:
        """``{realm, pending_id, record_id, scope_kind, scope_key, rationale, status, created_at_ms,
        resolved_at_ms}`` (the stage token is never surfaced)."""
        return {
            "realm": self.realm,
            "pending_id": self.pending_id,
            "record_id": self.record_id,
            "scope_kind": self.scope_kind,
            "scope_key": self.scope_key,
            "rationale": self.rationale,
            "status": self.status,
            "created_at_ms": self.created_at_ms,
            "resolved_at_ms": self.resolved_at_ms,
        }


_PROMO_COLS = (
    "pending_id, stage_token, record_id, scope_kind, scope_key, rationale, status, created_at_ms, resolved_at_ms"
)


class PromotionReads(_Repo):
    """Reads of ``pending_promotions``."""

    __slots__ = ()

    def _rows(self, where: str, params: Sequence[Any]) -> list[PromotionRow]:
        rows = self._sql.rows(f"SELECT {_PROMO_COLS} FROM pending_promotions WHERE {where}", params)
        return [PromotionRow(self.realm, *tuple(r)) for r in rows]

    def get(self, pending_id: str) -> PromotionRow | None:
        """The promotion ``pending_id`` (any status), or ``None``."""
        if self._sql.unstorable(pending_id):
            return None
        rows = self._rows("pending_id = ?", (pending_id,))
        return rows[0] if rows else None

    def pending_for(self, record_id: str) -> list[PromotionRow]:
        """Unresolved promotions of ``record_id``, oldest first."""
        if self._sql.unstorable(record_id):
            return []
        return self._rows(
            f"record_id = ? AND status = 'pending' ORDER BY created_at_ms, pending_id{self._sql.collate}", (record_id,)
        )

    def pending(self, limit: int) -> list[PromotionRow]:
        """Unresolved promotions, newest first, at most ``limit``."""
        c = self._sql.collate
        return self._rows(f"status = 'pending' ORDER BY created_at_ms DESC, pending_id{c} DESC LIMIT ?", (limit,))

    def expired(self, created_before_ms: int) -> list[PromotionRow]:
        """Unresolved promotions created at or before ``created_before_ms``, oldest first."""
        c = self._sql.collate
        return self._rows(
            f"status = 'pending' AND created_at_ms <= ? ORDER BY created_at_ms, pending_id{c}", (created_before_ms,)
        )


class Promotions(PromotionReads):
    """Reads and writes of ``pending_promotions``."""

    __slots__ = ()

    def insert(self, row: PromotionRow) -> None:
        """Insert one row (its staged batch must be staged in the same transaction)."""
        self._sql.run(
            f"INSERT INTO pending_promotions({_PROMO_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (row.pending_id, row.stage_token, row.record_id, row.scope_kind, row.scope_key, row.rationale,
             row.status, row.created_at_ms, row.resolved_at_ms),
        )

    def resolve(self, pending_id: str, status: str, now_ms: int) -> bool:
        """Move a still-pending promotion to ``status`` (committed|denied|expired); ``False`` if it was not pending."""
        return self._sql.changed(
            "UPDATE pending_promotions SET status = ?, resolved_at_ms = ? WHERE pending_id = ? AND status = 'pending'",
            (status, now_ms, pending_id),
        )

    def delete_for(self, record_ids: Sequence[str]) -> int:
        """Erase the promotions of ``record_ids`` (record or proposal ids; any status) and the staged
        batches they name; returns how many promotions went."""
        gone = 0
        for chunk in _chunks([i for i in record_ids if not self._sql.unstorable(i)]):
            marks = ", ".join("?" for _ in chunk)
            self._sql.run(f"DELETE FROM stage WHERE token IN (SELECT stage_token FROM pending_promotions "
                          f"WHERE record_id IN ({marks}))", chunk)
            gone += self._sql.run(f"DELETE FROM pending_promotions WHERE record_id IN ({marks})", chunk).rowcount
        return gone


# --------------------------------------------------------------------------- proposals


@dataclass(frozen=True, slots=True)
class ProposalRow:
    """A ``proposals`` row of ``realm``: ``record`` and ``author`` are the decoded JSON objects
    (``{}`` when unreadable); ``status``: ``pending`` | ``held`` | ``accepted`` | ``rejected``;
    ``taint`` the gate's reason at propose time (``None`` = clean)."""

    realm: str
    proposal_id: str
    scope_kind: str
    scope_key: str
    record: dict[str, Any]
    author: dict[str, Any]
    status: str
    created_at_ms: int
    taint: str | None


_PROP_COLS = "proposal_id, scope_kind, scope_key, record, author, status, created_at_ms, taint"


class ProposalReads(_Repo):
    """Reads of ``proposals``."""

    __slots__ = ()

    def _rows(self, where: str, params: Sequence[Any]) -> list[ProposalRow]:
        rows = self._sql.rows(f"SELECT {_PROP_COLS} FROM proposals WHERE {where}", params)
        return [ProposalRow(self.realm, r[0], r[1], r[2], _obj(r[3]), _obj(r[4]), r[5], r[6], r[7]) for r in rows]

    def get(self, proposal_id: str) -> ProposalRow | None:
        """The proposal ``proposal_id`` (any status), or ``None``."""
        if self._sql.unstorable(proposal_id):
            return None
        rows = self._rows("proposal_id = ?", (proposal_id,))
        return rows[0] if rows else None

    def listing(self, statuses: Sequence[str], limit: int, *, newest_first: bool = False) -> list[ProposalRow]:
        """Proposals in ``statuses``, oldest first (``newest_first``: newest first), at most ``limit``."""
        marks = ", ".join("?" for _ in statuses)
        order = " DESC" if newest_first else ""
        return self._rows(
            f"status IN ({marks}) ORDER BY created_at_ms{order}, proposal_id{self._sql.collate}{order} LIMIT ?",
            (*statuses, limit),
        )

    def scopes(self, proposal_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        """``{proposal_id: (scope_kind, scope_key)}`` of the ids that exist."""
        wanted = sorted({i for i in proposal_ids if not self._sql.unstorable(i)})
        if not wanted:
            return {}
        marks = ", ".join("?" for _ in wanted)
        rows = self._sql.rows(f"SELECT proposal_id, scope_kind, scope_key FROM proposals WHERE proposal_id IN ({marks})",
                              wanted)
        return {r[0]: (r[1], r[2]) for r in rows}


class Proposals(ProposalReads):
    """Reads and writes of ``proposals``."""

    __slots__ = ()

    def insert(self, proposal_id: str, scope: Scope, record_json: str, author_json: str, created_at_ms: int,
               taint: str | None) -> None:
        """Queue a ``pending`` proposal of ``record_json`` (a new record's JSON) by ``author_json`` for ``scope``."""
        kind, key = scope.storage()
        self._sql.run(
            "INSERT INTO proposals(proposal_id, scope_kind, scope_key, record, author, status, created_at_ms, taint) "
            "VALUES (?, ?, ?, ?, ?, 'pending', ?, ?)",
            (proposal_id, kind, key, record_json, author_json, created_at_ms, taint),
        )

    def set_status(self, proposal_id: str, status: str, from_statuses: Sequence[str]) -> bool:
        """Move a proposal to ``status`` if it is in one of ``from_statuses``; whether it moved."""
        marks = ", ".join("?" for _ in from_statuses)
        return self._sql.changed(
            f"UPDATE proposals SET status = ? WHERE proposal_id = ? AND status IN ({marks})",
            (status, proposal_id, *from_statuses),
        )

    def delete(self, proposal_ids: Sequence[str]) -> None:
        """Erase the proposals ``proposal_ids`` (their records go with them)."""
        for chunk in _chunks([i for i in proposal_ids if not self._sql.unstorable(i)]):
            self._sql.run(f"DELETE FROM proposals WHERE proposal_id IN ({', '.join('?' for _ in chunk)})", chunk)


# --------------------------------------------------------------------------- pending_harvests


@dataclass(frozen=True, slots=True)
class HarvestRow:
    """A ``pending_harvests`` row of ``realm`` (key: ``identity`` + ``retired_at_ms``, epoch ms);
    ``status``: ``pending`` | ``harvested``."""

    realm: str
    identity: str
    session_key: str | None
    cause: str
    retired_at_ms: int
    status: str

    def to_json(self) -> dict[str, Any]:
        """``{realm, identity, session_key, cause, retired_at_ms, status}``."""
        return asdict(self)


class HarvestReads(_Repo):
    """Reads of ``pending_harvests``."""

    __slots__ = ()

    def pending(self, limit: int, *, newest_first: bool = False) -> list[HarvestRow]:
        """Pending harvests, oldest retired first (``newest_first``: newest first), at most ``limit``."""
        order = " DESC" if newest_first else ""
        rows = self._sql.rows(
            "SELECT identity, session_key, cause, retired_at_ms, status FROM pending_harvests WHERE status = 'pending' "
            f"ORDER BY retired_at_ms{order}, identity{self._sql.collate}{order} LIMIT ?",
            (limit,),
        )
        return [HarvestRow(self.realm, *tuple(r)) for r in rows]

    def counts(self, identity: str) -> dict[str, int]:
        """How many harvests ``identity`` has in this realm, by status (``pending``, ``harvested``)."""
        if self._sql.unstorable(identity):
            return {}
        rows = self._sql.rows(
            "SELECT status, COUNT(*) FROM pending_harvests WHERE identity = ? GROUP BY status", (identity,))
        return {str(r[0]): int(r[1]) for r in rows}


class Harvests(HarvestReads):
    """Reads and writes of ``pending_harvests``."""

    __slots__ = ()

    def insert(self, identity: str, session_key: str | None, cause: str, at_ms: int) -> bool:
        """Record a pending harvest unless that (identity, time) is already recorded; ``False`` then.

        Raises ``AgentMemoryError("limit", ...)`` (naming ``max_open_harvests_per_identity``) when
        ``identity`` already has :data:`~meta_memory.limits.MAX_OPEN_HARVESTS_PER_IDENTITY` pending
        harvests in this realm; nothing is written then."""
        row = self._sql.one(
            "SELECT COUNT(*) FROM pending_harvests WHERE identity = ? AND status = 'pending'", (identity,))
        open_now = int(row[0]) if row is not None else 0
        if open_now >= MAX_OPEN_HARVESTS_PER_IDENTITY:
            raise AgentMemoryError(
                "limit",
                f"identity '{identity}' of realm '{self.realm}' has {open_now} pending harvests and "
                f"max_open_harvests_per_identity = {MAX_OPEN_HARVESTS_PER_IDENTITY}; a dream must decide "
                "some before the next meta/session/retire")
        prefix, suffix = self._sql.dialect.insert_ignore
        return self._sql.changed(
            f"{prefix} INTO pending_harvests(identity, session_key, cause, retired_at_ms, status) "
            f"VALUES (?, ?, ?, ?, 'pending'){suffix}",
            (identity, session_key, cause, at_ms),
        )

    def delete_identity(self, identity: str) -> int:
        """Erase every harvest of ``identity`` (pending or harvested: their causes go); how many went."""
        if self._sql.unstorable(identity):
            return 0
        return self._sql.run("DELETE FROM pending_harvests WHERE identity = ?", (identity,)).rowcount

    def mark_harvested(self, identity: str, retired_at_ms: int) -> bool:
        """Move a pending harvest to ``harvested``; ``False`` when it was not pending.

        The identity's decided harvests are then held to
        :data:`~meta_memory.limits.MAX_DECIDED_HARVESTS_PER_IDENTITY`, its oldest retired deleted first
        (pending harvests are never deleted here)."""
        changed = self._sql.changed(
            "UPDATE pending_harvests SET status = 'harvested' WHERE identity = ? AND retired_at_ms = ? "
            "AND status = 'pending'",
            (identity, retired_at_ms),
        )
        if changed:
            self.prune_decided(identity)
        return changed

    def prune_decided(self, identity: str) -> int:
        """Keep ``identity``'s newest :data:`~meta_memory.limits.MAX_DECIDED_HARVESTS_PER_IDENTITY` decided
        harvests (by ``retired_at_ms``), deleting the older ones; how many went."""
        if self._sql.unstorable(identity):
            return 0
        return self._sql.run(
            "DELETE FROM pending_harvests WHERE identity = ? AND status = 'harvested' AND retired_at_ms <= "
            "(SELECT retired_at_ms FROM pending_harvests WHERE identity = ? AND status = 'harvested' "
            "ORDER BY retired_at_ms DESC LIMIT 1 OFFSET ?)",
            (identity, identity, MAX_DECIDED_HARVESTS_PER_IDENTITY),
        ).rowcount


# --------------------------------------------------------------------------- dream_runs


@dataclass(frozen=True, slots=True)
class DreamRunRow:
    """A ``dream_runs`` row of ``realm``: partition label, epoch-ms times, committed-op count and the
    saved ``detail`` (its JSON value; the raw text when it is not JSON)."""

    realm: str
    run_id: str
    partition: str
    started_at_ms: int
    completed_at_ms: int
    ops_committed: int
    detail: Any


class DreamRunReads(_Repo):
    """Reads of ``dream_runs``."""

    __slots__ = ()

    def recent(self, limit: int) -> list[DreamRunRow]:
        """The newest ``limit`` runs (completed last first)."""
        rows = self._sql.rows(
            "SELECT run_id, partition_label, started_at_ms, completed_at_ms, ops_committed, detail FROM dream_runs "
            f"ORDER BY completed_at_ms DESC, run_id{self._sql.collate} DESC LIMIT ?",
            (limit,),
        )
        return [DreamRunRow(self.realm, r[0], r[1], r[2], r[3], r[4], loads(r[5], r[5])) for r in rows]


class DreamRuns(DreamRunReads):
    """Reads and writes of ``dream_runs``."""

    __slots__ = ()

    def set_detail(self, run_id: str, detail: Any) -> None:
        """Replace the saved ``detail`` of ``run_id`` (an erase removing what it noted about erased content)."""
        self._sql.run("UPDATE dream_runs SET detail = ? WHERE run_id = ?", (dumps(detail), run_id))

    def upsert(self, run_id: str, partition: str, started_at_ms: int, completed_at_ms: int, ops_committed: int,
               detail: dict[str, Any]) -> None:
        """Insert-or-replace the row of ``run_id`` (a completed run), then hold the realm to
        :data:`~meta_memory.limits.MAX_DREAM_RUNS_PER_REALM` runs (:meth:`prune`), in this transaction."""
        self._sql.replace(
            "dream_runs",
            ("run_id", "partition_label", "started_at_ms", "completed_at_ms", "ops_committed", "detail"),
            ("run_id",),
            (run_id, partition, started_at_ms, completed_at_ms, ops_committed, dumps(detail)),
        )
        self.prune()

    def prune(self) -> int:
        """Keep the realm's newest :data:`~meta_memory.limits.MAX_DREAM_RUNS_PER_REALM` runs, in the order
        :meth:`recent` lists them (completed last first, ties by run id), deleting the rest; how many went.

        When a run goes, the usage-audit verdicts (``dream_audit_verdicts``) of every run not kept go with it,
        in this transaction: those written at or before the completion of the oldest run kept. A run writes
        its verdicts before its own row, so the verdicts of a run still in progress (written after that
        completion) are never pruned, and those of a run that never recorded its row go with the runs of
        their time. The verdicts are bounded as the runs are: the verdicts of the runs kept."""
        gone = self._sql.run(
            "DELETE FROM dream_runs WHERE run_id NOT IN (SELECT run_id FROM dream_runs "
            f"ORDER BY completed_at_ms DESC, run_id{self._sql.collate} DESC LIMIT ?)",
            (MAX_DREAM_RUNS_PER_REALM,),
        ).rowcount
        if gone:
            self._sql.run(
                "DELETE FROM dream_audit_verdicts WHERE run_id NOT IN (SELECT run_id FROM dream_runs) "
                "AND created_at_ms <= (SELECT min(completed_at_ms) FROM dream_runs)"
            )
        return gone


# --------------------------------------------------------------------------- dream_audit_verdicts


@dataclass(frozen=True, slots=True)
class VerdictRow:
    """A ``dream_audit_verdicts`` row of ``realm``: run ``run_id``'s usage-audit ``verdict``
    (``load_bearing`` | ``dead_weight`` | ``unknown``) on ``record_id``, epoch-ms ``created_at_ms``."""

    realm: str
    run_id: str
    record_id: str
    verdict: str
    rationale: str | None
    created_at_ms: int

    def to_json(self) -> dict[str, Any]:
        """``{realm, run_id, record_id, verdict, rationale, created_at_ms}``."""
        return asdict(self)


class VerdictReads(_Repo):
    """Reads of ``dream_audit_verdicts``."""

    __slots__ = ()

    def open(self, limit: int) -> list[VerdictRow]:
        """Unresolved verdicts, newest first (ties: run id, then record id, descending), at most ``limit``."""
        c = self._sql.collate
        rows = self._sql.rows(
            "SELECT run_id, record_id, verdict, rationale, created_at_ms FROM dream_audit_verdicts "
            f"WHERE resolved_at_ms IS NULL ORDER BY created_at_ms DESC, run_id{c} DESC, record_id{c} DESC LIMIT ?",
            (limit,),
        )
        return [VerdictRow(self.realm, *tuple(r)) for r in rows]

    def has_open(self, record_id: str) -> bool:
        """Whether an unresolved verdict names ``record_id``."""
        return self._sql.one(
            "SELECT 1 FROM dream_audit_verdicts WHERE record_id = ? AND resolved_at_ms IS NULL LIMIT 1", (record_id,)
        ) is not None


class Verdicts(VerdictReads):
    """Reads and writes of ``dream_audit_verdicts``."""

    __slots__ = ()

    def upsert(self, run_id: str, record_id: str, verdict: str, rationale: str | None, now_ms: int) -> None:
        """Insert-or-replace the verdict of ``run_id`` on ``record_id`` (a replaced verdict is open again)."""
        self._sql.replace(
            "dream_audit_verdicts",
            ("run_id", "record_id", "verdict", "rationale", "created_at_ms"),
            ("run_id", "record_id"),
            (run_id, record_id, verdict, rationale, now_ms),
        )

    def resolve(self, run_id: str, record_id: str, resolution: str, now_ms: int) -> bool:
        """Resolve an open verdict with ``resolution``; ``False`` when it was not open."""
        return self._sql.changed(
            "UPDATE dream_audit_verdicts SET resolved_at_ms = ?, resolution = ? WHERE run_id = ? AND record_id = ? "
            "AND resolved_at_ms IS NULL",
            (now_ms, resolution, run_id, record_id),
        )


# --------------------------------------------------------------------------- pending_forgets


@dataclass(frozen=True, slots=True)
class HeldForgetRow:
    """A ``pending_forgets`` row of ``realm``: a forget held for review. ``author`` is the decoded
    requesting author; ``decision`` the decoded decision once resolved (``None`` while pending);
    ``status``: ``pending`` | ``tombstoned`` (approved) | ``released`` (the record stays) | ``obsolete``.
    ``title`` and ``record_status`` are the record's, set by the listings of standing records."""

    realm: str
    forget_id: str
    memory_id: str
    scope_kind: str
    scope_key: str
    content_hash: str
    author: dict[str, Any]
    reason: str
    session_key: str | None
    status: str
    created_at_ms: int
    resolved_at_ms: int | None
    decision: dict[str, Any] | None
    title: str | None = None
    record_status: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The review queue's shape (no decision body): ``{forget_id, memory_id, scope_kind, scope_key,
        content_hash, requested_by, reason, status, created_at_ms}``."""
        return {
            "forget_id": self.forget_id,
            "memory_id": self.memory_id,
            "scope_kind": self.scope_kind,
            "scope_key": self.scope_key,
            "content_hash": self.content_hash,
            "requested_by": self.author,
            "reason": self.reason,
            "status": self.status,
            "created_at_ms": self.created_at_ms,
        }


_FORGET_COLS = (
    "forget_id", "memory_id", "scope_kind", "scope_key", "content_hash", "author", "reason", "session_key", "status",
    "created_at_ms", "resolved_at_ms", "decision",
)
_FORGET_SELECT = f"SELECT {', '.join('f.' + c for c in _FORGET_COLS)}, r.title, r.status_kind FROM pending_forgets f "
_STANDING = "JOIN records r ON r.memory_id = f.memory_id WHERE f.status = 'pending' AND r.status_kind <> 'tombstoned' "
#: The standing held forgets' join and filter (``pending_forgets f``): unresolved, their record not tombstoned.
STANDING_FORGETS = _STANDING


class HeldForgetReads(_Repo):
    """Reads of ``pending_forgets``."""

    __slots__ = ()

    def _rows(self, tail: str, params: Sequence[Any]) -> list[HeldForgetRow]:
        out = []
        for r in self._sql.rows(_FORGET_SELECT + tail, params):
            decision = loads(r[11], None)
            out.append(HeldForgetRow(self.realm, r[0], r[1], r[2], r[3], r[4], _obj(r[5]), r[6], r[7], r[8], r[9],
                                     r[10], decision if isinstance(decision, dict) else None, r[12], r[13]))
        return out

    def standing(self, limit: int) -> list[HeldForgetRow]:
        """Unresolved held forgets whose record still stands (not tombstoned), newest first."""
        c = self._sql.collate
        return self._rows(_STANDING + f"ORDER BY f.created_at_ms DESC, f.forget_id{c} DESC LIMIT ?", (limit,))

    def standing_for(self, memory_id: str) -> HeldForgetRow | None:
        """The oldest unresolved held forget of ``memory_id`` while the record stands, or ``None``."""
        return self._first(memory_id, _STANDING + "AND f.memory_id = ? ORDER BY f.created_at_ms, f.forget_id LIMIT 1")

    def pending_for(self, memory_id: str) -> HeldForgetRow | None:
        """The oldest unresolved held forget of ``memory_id``, or ``None``."""
        return self._first(
            memory_id,
            "LEFT JOIN records r ON r.memory_id = f.memory_id WHERE f.memory_id = ? AND f.status = 'pending' "
            "ORDER BY f.created_at_ms, f.forget_id LIMIT 1",
        )

    def latest_resolved(self, memory_id: str) -> HeldForgetRow | None:
        """The newest decided (``tombstoned`` or ``released``) held forget of ``memory_id``, or ``None``."""
        return self._first(
            memory_id,
            "LEFT JOIN records r ON r.memory_id = f.memory_id WHERE f.memory_id = ? "
            "AND f.status IN ('tombstoned', 'released') ORDER BY f.resolved_at_ms DESC, f.forget_id DESC LIMIT 1",
        )

    def _first(self, memory_id: str, tail: str) -> HeldForgetRow | None:
        """The first row of the select ``tail`` with ``memory_id`` bound to its one ``?``, or ``None``
        (also for an id no stored row can hold)."""
        if self._sql.unstorable(memory_id):
            return None
        rows = self._rows(tail, (memory_id,))
        return rows[0] if rows else None


class HeldForgets(HeldForgetReads):
    """Reads and writes of ``pending_forgets``."""

    __slots__ = ()

    def insert(self, row: HeldForgetRow) -> None:
        """Insert one row (``title`` and ``record_status`` are not stored)."""
        self._sql.run(
            f"INSERT INTO pending_forgets({', '.join(_FORGET_COLS)}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (row.forget_id, row.memory_id, row.scope_kind, row.scope_key, row.content_hash, dumps(row.author),
             row.reason, row.session_key, row.status, row.created_at_ms, row.resolved_at_ms,
             None if row.decision is None else dumps(row.decision)),
        )

    def resolve(self, forget_id: str, status: str, now_ms: int, decision: dict[str, Any] | None) -> bool:
        """Move a ``pending`` held forget to ``status`` with its decision; whether it was pending."""
        return self._sql.changed(
            "UPDATE pending_forgets SET status = ?, resolved_at_ms = ?, decision = ? "
            "WHERE forget_id = ? AND status = 'pending'",
            (status, now_ms, None if decision is None else dumps(decision), forget_id),
        )


# --------------------------------------------------------------------------- audit


@dataclass(frozen=True, slots=True)
class AuditRow:
    """One ``audit`` row with its ``detail`` decoded (``{}`` when unreadable); epoch-ms ``applied_at_ms``."""

    audit_id: int
    stage_token: str
    op_index: int
    op_kind: str
    memory_id: str | None
    detail: dict[str, Any]
    applied_at_ms: int


#: The columns an audit row is written with, in order (every writer of ``audit`` uses this list).
AUDIT_INSERT_COLUMNS = "stage_token, op_index, op_kind, memory_id, detail, applied_at_ms"
_AUDIT_COLS = f"audit_id, {AUDIT_INSERT_COLUMNS}"


class AuditReads(_Repo):
    """Reads of ``audit``."""

    __slots__ = ()

    def _rows(self, tail: str, params: Sequence[Any]) -> list[AuditRow]:
        rows = self._sql.rows(f"SELECT {_AUDIT_COLS} FROM audit {tail}", params)
        return [AuditRow(r[0], r[1], r[2], r[3], r[4], _obj(r[5]), r[6]) for r in rows]

    def _token_is(self, stage_token: str) -> str:
        """The condition ``stage_token = ?``; on SQLite, for a token its partial token index holds (any but
        ``direct-...``: see :data:`~.shared_ddl.AUDIT_TOKEN_INDEXED`), with that index's predicate, which every
        row of that token meets (the same rows, found through the index). A plain write's token is looked up
        without it (the same rows, by a scan: nothing reads those rows by token). PostgreSQL keeps a token
        index of every row."""
        if stage_token.startswith("direct-") or self._sql.dialect is not SQLITE:
            return "stage_token = ?"
        return f"stage_token = ? AND {AUDIT_TOKEN_INDEXED}"

    def tombstones_of(self, memory_id: str) -> list[AuditRow]:
        """The tombstone rows of ``memory_id``, newest first."""
        if self._sql.unstorable(memory_id):
            return []
        return self._rows("WHERE memory_id = ? AND op_kind = 'tombstone' ORDER BY audit_id DESC", (memory_id,))

    def at(self, stage_token: str, op_index: int) -> AuditRow | None:
        """The row written by op ``op_index`` of the batch ``stage_token``, or ``None``."""
        if self._sql.unstorable(stage_token):
            return None
        rows = self._rows(f"WHERE {self._token_is(stage_token)} AND op_index = ? ORDER BY audit_id LIMIT 1",
                          (stage_token, op_index))
        return rows[0] if rows else None

    def of_records(self, ids: Sequence[str]) -> list[AuditRow]:
        """Every row naming one of ``ids``, oldest first (``audit_id`` order)."""
        wanted = sorted({i for i in ids if not self._sql.unstorable(i)})
        out: list[AuditRow] = []
        for chunk in _chunks(wanted):
            out += self._rows(f"WHERE memory_id IN ({', '.join('?' for _ in chunk)})", chunk)
        out.sort(key=lambda r: r.audit_id)
        return out

    def erasure_of(self, memory_id: str) -> list[AuditRow]:
        """The ``erase`` row of ``memory_id`` and the other ``erase`` rows of the same erase (its
        content closure), in ``op_index`` order; ``[]`` when ``memory_id`` was never erased."""
        if self._sql.unstorable(memory_id):
            return []
        mine = self._rows("WHERE memory_id = ? AND op_kind = 'erase' ORDER BY audit_id DESC LIMIT 1", (memory_id,))
        if not mine:
            return []
        token = mine[0].stage_token
        return self._rows(f"WHERE {self._token_is(token)} AND op_kind = 'erase' ORDER BY op_index", (token,))

    def steward_rows(self, limit: int) -> list[AuditRow]:
        """The newest ``limit`` rows a steward wrote, newest first."""
        return self._rows(f"WHERE {self._sql.dialect.steward_audit} ORDER BY audit_id DESC LIMIT ?", (limit,))


class AuditLog(AuditReads):
    """Reads and appends of ``audit``."""

    __slots__ = ()

    def append(self, stage_token: str, op_index: int, op_kind: str, memory_id: str | None, detail: dict[str, Any],
               now_ms: int) -> None:
        """Append one row for a review step that changes no record (a released forget hold)."""
        self._sql.run(
            f"INSERT INTO audit({AUDIT_INSERT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
            (stage_token, op_index, op_kind, memory_id, dumps(detail), now_ms),
        )


# --------------------------------------------------------------------------- records: the review queues


class ReviewQueues(_Repo):
    """The record ids review works through (reads of ``records``)."""

    __slots__ = ()

    def _ids(self, sql: str, params: Sequence[Any]) -> list[str]:
        return [r[0] for r in self._sql.rows(sql, params)]

    def quarantined(self, limit: int) -> list[str]:
        """Ids of quarantined records, oldest first, at most ``limit``."""
        return self._ids(
            "SELECT memory_id FROM records WHERE status_kind = 'quarantined' ORDER BY created_at_ms, rid LIMIT ?",
            (limit,),
        )

    def open_loops(self, updated_before_ms: int, limit: int) -> list[str]:
        """Ids of active or quarantined ``open_loop`` records last updated at or before ``updated_before_ms``."""
        return self._ids(
            "SELECT memory_id FROM records WHERE kind = 'open_loop' AND status_kind IN ('active', 'quarantined') "
            "AND updated_at_ms <= ? ORDER BY updated_at_ms, rid LIMIT ?",
            (updated_before_ms, limit),
        )

    def audit_candidates(self, limit: int) -> list[str]:
        """Ids of active records injected at least once, most injected first."""
        count = self._sql.dialect.injected_count
        return self._ids(
            f"SELECT memory_id FROM records WHERE status_kind = 'active' AND COALESCE({count}, 0) > 0 "
            f"ORDER BY COALESCE({count}, 0) DESC, rid LIMIT ?",
            (limit,),
        )

    def links(self, scope: Scope) -> list[tuple[str, list[str]]]:
        """``(memory_id, parents)`` of every record of ``scope`` that supersedes or derives from another:
        ``parents`` is its ``supersedes`` (an update, a tag merge, a released or promoted quarantined update)
        followed by its ``derived_from`` (a release from quarantine, a promoted copy, a dream's merge).
        One pass over the scope; oldest created first."""
        kind, key = scope.storage()
        rows = self._sql.rows(
            "SELECT memory_id, supersedes, derived_from FROM records WHERE scope_kind = ? AND scope_key = ? "
            "AND (supersedes IS NOT NULL OR derived_from <> '[]') "
            f"ORDER BY created_at_ms, memory_id{self._sql.collate}",
            (kind, key),
        )
        out: list[tuple[str, list[str]]] = []
        for r in rows:
            derived = loads(r[2], [])
            parents = [r[1]] if isinstance(r[1], str) else []
            parents += [x for x in derived if isinstance(x, str)] if isinstance(derived, list) else []
            out.append((r[0], parents))
        return out

    def citing_session(self, scope: Scope, session_key: str) -> list[str]:
        """Ids of active records of ``scope`` whose provenance evidence cites session ``session_key``."""
        kind, key = scope.storage()
        return self._ids(
            "SELECT memory_id FROM records WHERE scope_kind = ? AND scope_key = ? AND status_kind = 'active' "
            f"AND {self._sql.dialect.evidence_session} ORDER BY created_at_ms, rid",
            (kind, key, session_key),
        )
