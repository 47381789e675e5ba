"""Every SQL statement of the review area, in one place (reference §2B tables).

The decision logic of :mod:`meta_memory.review` is plain Python over records,
audit rows and the small row types below; only this module knows the side
tables (``proposals``, ``pending_promotions``, ``stage``, ``audit``,
``pending_harvests``, ``dream_runs``, ``dream_audit_verdicts``,
``pending_forgets``) and speaks
SQL. Each function takes the raw connection of an open write transaction:
``SqliteTx.conn`` (:mod:`meta_memory.agent_memory.store.sqlite`) or
``PgTx.conn`` (:mod:`meta_memory.agent_memory.store.postgres`).

Both backends run the same statements through the store's dialect layer
(:mod:`meta_memory.agent_memory.store.dialect`, chosen from the connection's
type: placeholders, JSON reads, ``INSERT OR IGNORE``, code point order). An
``INSERT OR REPLACE`` is a delete then an insert on PostgreSQL (the same
effect: the old row and every column not given are gone), which is race-free
because the review transaction holds the realm's write lock.

On PostgreSQL, plain table names inside the transaction are the realm views,
so every statement here sees (and writes) exactly one realm, as a SQLite
realm file does.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from meta_memory.agent_memory.batch import StagedBatch
from meta_memory.agent_memory.model import MemoryRecord, Scope
from meta_memory.agent_memory.store.dialect import SQLITE, dialect_of

__all__ = [
    "PendingPromotion",
    "AuditRow",
    "ProposalRow",
    "HarvestRow",
    "TxRecordReader",
    "pending_promotions_for",
    "pending_promotion",
    "list_pending_promotions",
    "insert_pending_promotion",
    "resolve_promotion",
    "expired_pending_promotions",
    "insert_stage",
    "load_stage",
    "delete_stage",
    "review_tombstones",
    "audit_row_at",
    "proposal",
    "list_proposals",
    "set_proposal_status",
    "active_duplicate",
    "quarantined_records",
    "open_loop_records",
    "audit_candidates",
    "records_citing_session",
    "insert_harvest",
    "pending_harvests",
    "mark_harvested",
    "upsert_dream_run",
    "recent_dream_details",
    "insert_audit_verdict",
    "open_audit_verdicts",
    "resolve_audit_verdict",
    "has_open_audit_verdict",
    "PendingForgetRow",
    "insert_pending_forget",
    "pending_forget_for",
    "latest_resolved_forget",
    "list_pending_forgets",
    "resolve_pending_forget",
    "insert_audit_row",
]


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _unstorable(conn: Any, *keys: str) -> bool:
    """Whether a lookup key cannot name any row: PostgreSQL text cannot hold NUL, so no stored
    key contains one (answering "not found" instead of a driver error, as SQLite does)."""
    return dialect_of(conn).refuses_nul and any("\x00" in k for k in keys)


def _q(conn: Any, sql: str, params: Sequence[Any] = ()) -> Any:
    """Run ``sql`` (``?`` placeholders) in ``conn``'s dialect; returns the cursor."""
    return dialect_of(conn).execute(conn, sql, params)


# --------------------------------------------------------------------------- record reads


class TxRecordReader:
    """The validator's :class:`~meta_memory.agent_memory.validator.RecordReader` over an open transaction.

    ``conn`` is the transaction's connection (either dialect); ``get`` is its
    record reader (``SqliteTx.get`` / ``PgTx.get``).
    """

    def __init__(self, conn: Any, get: Any) -> None:
        self._conn = conn
        self._get = get

    def get_record(self, memory_id: str) -> MemoryRecord | None:
        return self._get(memory_id)

    def tombstoned_since(self, scope: Scope, content_hash: str, since_ms: int) -> bool:
        kind, key = scope.storage()
        row = _q(
            self._conn,
            "SELECT 1 FROM records WHERE scope_kind = ? AND scope_key = ? AND content_hash = ? "
            "AND status_kind = 'tombstoned' AND tombstoned_at_ms >= ? LIMIT 1",
            (kind, key, content_hash, since_ms),
        ).fetchone()
        return row is not None


def _ids(conn: Any, sql: str, params: Sequence[Any]) -> list[str]:
    return [row[0] for row in _q(conn, sql, params).fetchall()]


def active_duplicate(conn: Any, scope: Scope, content_hash: str, exclude: str) -> str | None:
    """The oldest active record of ``scope`` with ``content_hash`` other than ``exclude``, or ``None``."""
    kind, key = scope.storage()
    row = _q(
        conn,
        "SELECT memory_id FROM records WHERE scope_kind = ? AND scope_key = ? AND content_hash = ? "
        "AND status_kind = 'active' AND memory_id != ? ORDER BY created_at_ms, rid LIMIT 1",
        (kind, key, content_hash, exclude),
    ).fetchone()
    return row[0] if row else None


def quarantined_records(conn: Any, limit: int) -> list[str]:
    """Ids of quarantined records, oldest first, at most ``limit``."""
    return _ids(
        conn,
        "SELECT memory_id FROM records WHERE status_kind = 'quarantined' ORDER BY created_at_ms, rid LIMIT ?",
        (limit,),
    )


def open_loop_records(conn: Any, updated_before_ms: int, limit: int) -> list[str]:
    """Ids of active or quarantined ``open_loop`` records last updated before ``updated_before_ms``."""
    return _ids(
        conn,
        "SELECT memory_id FROM records WHERE kind = 'open_loop' AND status_kind IN ('active', 'quarantined') "
        "AND updated_at_ms <= ? ORDER BY updated_at_ms, rid LIMIT ?",
        (updated_before_ms, limit),
    )


def audit_candidates(conn: Any, limit: int) -> list[str]:
    """Ids of active records that have been injected at least once, most injected first."""
    count = dialect_of(conn).injected_count
    return _ids(
        conn,
        f"SELECT memory_id FROM records WHERE status_kind = 'active' AND COALESCE({count}, 0) > 0 "
        f"ORDER BY COALESCE({count}, 0) DESC, rid LIMIT ?",
        (limit,),
    )


def records_citing_session(conn: Any, scope: Scope, session_key: str) -> list[str]:
    """Ids of active records of ``scope`` whose provenance evidence cites session ``session_key``."""
    kind, key = scope.storage()
    return _ids(
        conn,
        "SELECT memory_id FROM records WHERE scope_kind = ? AND scope_key = ? AND status_kind = 'active' "
        f"AND {dialect_of(conn).evidence_session} ORDER BY created_at_ms, rid",
        (kind, key, session_key),
    )


# --------------------------------------------------------------------------- stage


def insert_stage(conn: Any, token: str, batch: StagedBatch, now_ms: int) -> None:
    """Keep ``batch`` uncommitted under ``token``."""
    _q(conn, "INSERT INTO stage(token, batch, created_at_ms) VALUES (?, ?, ?)", (token, _dumps(batch.to_json()), now_ms))


def load_stage(conn: Any, token: str) -> StagedBatch | None:
    """The staged batch under ``token``, or ``None`` when it is gone."""
    row = _q(conn, "SELECT batch FROM stage WHERE token = ?", (token,)).fetchone()
    return StagedBatch.from_json(json.loads(row[0])) if row else None


def delete_stage(conn: Any, token: str) -> bool:
    """Drop a staged batch; ``False`` when it was already gone."""
    return _q(conn, "DELETE FROM stage WHERE token = ?", (token,)).rowcount > 0


# --------------------------------------------------------------------------- promotions


@dataclass(frozen=True, slots=True)
class PendingPromotion:
    """A ``pending_promotions`` row. ``record_id`` is a record id or a ``prop-...`` proposal id."""

    pending_id: str
    stage_token: str
    record_id: str
    scope_kind: str
    scope_key: str
    rationale: str | None
    status: str
    created_at_ms: int
    resolved_at_ms: int | None

    def to_json(self) -> dict[str, Any]:
        """Panel shape (the stage token is never surfaced)."""
        return {
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


def _promotion(row: Sequence[Any]) -> PendingPromotion:
    return PendingPromotion(*row)


def pending_promotions_for(conn: Any, record_id: str) -> list[PendingPromotion]:
    """Unresolved promotions of ``record_id``, oldest first."""
    if _unstorable(conn, record_id):
        return []
    c = dialect_of(conn).collate
    rows = _q(
        conn,
        f"SELECT {_PROMO_COLS} FROM pending_promotions WHERE record_id = ? AND status = 'pending' "
        f"ORDER BY created_at_ms, pending_id{c}",
        (record_id,),
    ).fetchall()
    return [_promotion(r) for r in rows]


def pending_promotion(conn: Any, pending_id: str) -> PendingPromotion | None:
    """The promotion row ``pending_id`` (any status), or ``None``."""
    if _unstorable(conn, pending_id):
        return None
    row = _q(conn, f"SELECT {_PROMO_COLS} FROM pending_promotions WHERE pending_id = ?", (pending_id,)).fetchone()
    return _promotion(row) if row else None


def list_pending_promotions(conn: Any, limit: int) -> list[PendingPromotion]:
    """Unresolved promotions, newest first."""
    c = dialect_of(conn).collate
    rows = _q(
        conn,
        f"SELECT {_PROMO_COLS} FROM pending_promotions WHERE status = 'pending' "
        f"ORDER BY created_at_ms DESC, pending_id{c} DESC LIMIT ?",
        (limit,),
    ).fetchall()
    return [_promotion(r) for r in rows]


def expired_pending_promotions(conn: Any, created_before_ms: int) -> list[PendingPromotion]:
    """Unresolved promotions created at or before ``created_before_ms``, oldest first."""
    c = dialect_of(conn).collate
    rows = _q(
        conn,
        f"SELECT {_PROMO_COLS} FROM pending_promotions WHERE status = 'pending' AND created_at_ms <= ? "
        f"ORDER BY created_at_ms, pending_id{c}",
        (created_before_ms,),
    ).fetchall()
    return [_promotion(r) for r in rows]


def insert_pending_promotion(conn: Any, row: PendingPromotion) -> None:
    """Insert one ``pending_promotions`` row (its stage row must be inserted in the same transaction)."""
    _q(
        conn,
        f"INSERT INTO pending_promotions({_PROMO_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            row.pending_id,
            row.stage_token,
            row.record_id,
            row.scope_kind,
            row.scope_key,
            row.rationale,
            row.status,
            row.created_at_ms,
            row.resolved_at_ms,
        ),
    )


def resolve_promotion(conn: Any, pending_id: str, status: str, now_ms: int) -> bool:
    """Move a still-pending promotion to ``status`` (committed|denied|expired); ``False`` if it was not pending."""
    return (
        _q(
            conn,
            "UPDATE pending_promotions SET status = ?, resolved_at_ms = ? WHERE pending_id = ? AND status = 'pending'",
            (status, now_ms, pending_id),
        ).rowcount
        > 0
    )


# --------------------------------------------------------------------------- audit


@dataclass(frozen=True, slots=True)
class AuditRow:
    """One ``audit`` row with its detail decoded."""

    audit_id: int
    stage_token: str
    op_index: int
    op_kind: str
    memory_id: str | None
    detail: dict[str, Any]
    applied_at_ms: int


def _audit(row: Sequence[Any]) -> AuditRow:
    return AuditRow(row[0], row[1], row[2], row[3], row[4], json.loads(row[5]), row[6])


_AUDIT_COLS = "audit_id, stage_token, op_index, op_kind, memory_id, detail, applied_at_ms"


def review_tombstones(conn: Any, memory_id: str) -> list[AuditRow]:
    """The tombstone audit rows of ``memory_id``, newest first (callers look for review evidence)."""
    rows = _q(
        conn,
        f"SELECT {_AUDIT_COLS} FROM audit WHERE memory_id = ? AND op_kind = 'tombstone' ORDER BY audit_id DESC",
        (memory_id,),
    ).fetchall()
    return [_audit(r) for r in rows]


def audit_row_at(conn: Any, stage_token: str, op_index: int) -> AuditRow | None:
    """The audit row written by op ``op_index`` of the batch ``stage_token``."""
    row = _q(
        conn,
        f"SELECT {_AUDIT_COLS} FROM audit WHERE stage_token = ? AND op_index = ? ORDER BY audit_id LIMIT 1",
        (stage_token, op_index),
    ).fetchone()
    return _audit(row) if row else None


def insert_audit_row(
    conn: Any, stage_token: str, op_index: int, op_kind: str, memory_id: str | None, detail: dict[str, Any],
    now_ms: int,
) -> None:
    """Append one ``audit`` row for a review step that changes no record (a released forget hold)."""
    _q(
        conn,
        "INSERT INTO audit(stage_token, op_index, op_kind, memory_id, detail, applied_at_ms) VALUES (?, ?, ?, ?, ?, ?)",
        (stage_token, op_index, op_kind, memory_id, _dumps(detail), now_ms),
    )


# --------------------------------------------------------------------------- held forgets


@dataclass(frozen=True, slots=True)
class PendingForgetRow:
    """A ``pending_forgets`` row: a forget held for review. ``author`` is the decoded requesting author;
    ``decision`` the decoded decision once resolved (``None`` while pending). ``status``:
    ``pending`` | ``tombstoned`` (approved) | ``released`` (the record stays) | ``obsolete``."""

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

    def to_json(self) -> dict[str, Any]:
        """The queue's shape (no decision body): ``{forget_id, memory_id, scope_kind, scope_key,
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
    "forget_id, memory_id, scope_kind, scope_key, content_hash, author, reason, session_key, status, "
    "created_at_ms, resolved_at_ms, decision"
)


def _forget(row: Sequence[Any]) -> PendingForgetRow:
    decision = json.loads(row[11]) if row[11] else None
    return PendingForgetRow(
        row[0], row[1], row[2], row[3], row[4], json.loads(row[5]), row[6], row[7], row[8], row[9], row[10], decision
    )


def insert_pending_forget(conn: Any, row: PendingForgetRow) -> None:
    """Insert one ``pending_forgets`` row (status ``pending``)."""
    _q(
        conn,
        f"INSERT INTO pending_forgets({_FORGET_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            row.forget_id, row.memory_id, row.scope_kind, row.scope_key, row.content_hash, _dumps(row.author),
            row.reason, row.session_key, row.status, row.created_at_ms, row.resolved_at_ms,
            None if row.decision is None else _dumps(row.decision),
        ),
    )


def pending_forget_for(conn: Any, memory_id: str) -> PendingForgetRow | None:
    """The oldest unresolved held forget of ``memory_id``, or ``None``."""
    if _unstorable(conn, memory_id):
        return None
    row = _q(
        conn,
        f"SELECT {_FORGET_COLS} FROM pending_forgets WHERE memory_id = ? AND status = 'pending' "
        "ORDER BY created_at_ms, forget_id LIMIT 1",
        (memory_id,),
    ).fetchone()
    return _forget(row) if row else None


def latest_resolved_forget(conn: Any, memory_id: str) -> PendingForgetRow | None:
    """The newest decided (``tombstoned`` or ``released``) held forget of ``memory_id``, or ``None``."""
    if _unstorable(conn, memory_id):
        return None
    row = _q(
        conn,
        f"SELECT {_FORGET_COLS} FROM pending_forgets WHERE memory_id = ? AND status IN ('tombstoned', 'released') "
        "ORDER BY resolved_at_ms DESC, forget_id DESC LIMIT 1",
        (memory_id,),
    ).fetchone()
    return _forget(row) if row else None


def list_pending_forgets(conn: Any, limit: int) -> list[PendingForgetRow]:
    """Unresolved held forgets whose record still stands (not tombstoned), newest first."""
    c = dialect_of(conn).collate
    rows = _q(
        conn,
        f"SELECT {', '.join('f.' + col.strip() for col in _FORGET_COLS.split(','))} FROM pending_forgets f "
        "JOIN records r ON r.memory_id = f.memory_id "
        f"WHERE f.status = 'pending' AND r.status_kind <> 'tombstoned' "
        f"ORDER BY f.created_at_ms DESC, f.forget_id{c} DESC LIMIT ?",
        (limit,),
    ).fetchall()
    return [_forget(r) for r in rows]


def resolve_pending_forget(
    conn: Any, forget_id: str, status: str, now_ms: int, decision: dict[str, Any] | None
) -> bool:
    """Move a ``pending`` held forget to ``status`` with its decision; whether it was pending."""
    return (
        _q(
            conn,
            "UPDATE pending_forgets SET status = ?, resolved_at_ms = ?, decision = ? "
            "WHERE forget_id = ? AND status = 'pending'",
            (status, now_ms, None if decision is None else _dumps(decision), forget_id),
        ).rowcount
        > 0
    )


# --------------------------------------------------------------------------- proposals


@dataclass(frozen=True, slots=True)
class ProposalRow:
    """A ``proposals`` row; ``record`` and ``author`` are the decoded JSON; ``taint`` the propose-time reason."""

    proposal_id: str
    scope_kind: str
    scope_key: str
    record: dict[str, Any]
    author: dict[str, Any]
    status: str
    created_at_ms: int
    taint: str | None


_PROP_COLS = "proposal_id, scope_kind, scope_key, record, author, status, created_at_ms, taint"


def _proposal(row: Sequence[Any]) -> ProposalRow:
    return ProposalRow(row[0], row[1], row[2], json.loads(row[3]), json.loads(row[4]), row[5], row[6], row[7])


def proposal(conn: Any, proposal_id: str) -> ProposalRow | None:
    """The proposal ``proposal_id`` (any status), or ``None``."""
    if _unstorable(conn, proposal_id):
        return None
    row = _q(conn, f"SELECT {_PROP_COLS} FROM proposals WHERE proposal_id = ?", (proposal_id,)).fetchone()
    return _proposal(row) if row else None


def list_proposals(conn: Any, statuses: Sequence[str], limit: int) -> list[ProposalRow]:
    """Proposals in ``statuses``, oldest first, at most ``limit``."""
    marks = ", ".join("?" for _ in statuses)
    c = dialect_of(conn).collate
    rows = _q(
        conn,
        f"SELECT {_PROP_COLS} FROM proposals WHERE status IN ({marks}) "
        f"ORDER BY created_at_ms, proposal_id{c} LIMIT ?",
        (*statuses, limit),
    ).fetchall()
    return [_proposal(r) for r in rows]


def set_proposal_status(conn: Any, proposal_id: str, status: str, from_statuses: Sequence[str]) -> bool:
    """Move a proposal to ``status`` if it is in one of ``from_statuses``."""
    marks = ", ".join("?" for _ in from_statuses)
    return (
        _q(
            conn,
            f"UPDATE proposals SET status = ? WHERE proposal_id = ? AND status IN ({marks})",
            (status, proposal_id, *from_statuses),
        ).rowcount
        > 0
    )


# --------------------------------------------------------------------------- harvests


@dataclass(frozen=True, slots=True)
class HarvestRow:
    """A ``pending_harvests`` row (key: ``identity`` + ``retired_at_ms``)."""

    identity: str
    session_key: str | None
    cause: str
    retired_at_ms: int
    status: str

    def to_json(self) -> dict[str, Any]:
        """The row's fields by name."""
        return asdict(self)


def insert_harvest(conn: Any, identity: str, session_key: str | None, cause: str, at_ms: int) -> bool:
    """Record a pending harvest unless that (identity, time) is already recorded; ``False`` then."""
    prefix, suffix = dialect_of(conn).insert_ignore
    return (
        _q(
            conn,
            f"{prefix} INTO pending_harvests(identity, session_key, cause, retired_at_ms, status) "
            f"VALUES (?, ?, ?, ?, 'pending'){suffix}",
            (identity, session_key, cause, at_ms),
        ).rowcount
        > 0
    )


def pending_harvests(conn: Any, limit: int) -> list[HarvestRow]:
    """Pending harvests, oldest first."""
    c = dialect_of(conn).collate
    rows = _q(
        conn,
        "SELECT identity, session_key, cause, retired_at_ms, status FROM pending_harvests WHERE status = 'pending' "
        f"ORDER BY retired_at_ms, identity{c} LIMIT ?",
        (limit,),
    ).fetchall()
    return [HarvestRow(*r) for r in rows]


def mark_harvested(conn: Any, identity: str, retired_at_ms: int) -> bool:
    """Move a pending harvest to ``harvested``; ``False`` when it was not pending (already harvested)."""
    return (
        _q(
            conn,
            "UPDATE pending_harvests SET status = 'harvested' WHERE identity = ? AND retired_at_ms = ? "
            "AND status = 'pending'",
            (identity, retired_at_ms),
        ).rowcount
        > 0
    )


# --------------------------------------------------------------------------- dreams


def _replace(conn: Any, table: str, cols: Sequence[str], key_cols: Sequence[str], values: Sequence[Any]) -> None:
    """``INSERT OR REPLACE``: the row keyed by ``key_cols`` (a prefix of ``cols``) is replaced whole."""
    marks = ", ".join("?" for _ in cols)
    if dialect_of(conn) is SQLITE:
        _q(conn, f"INSERT OR REPLACE INTO {table}({', '.join(cols)}) VALUES ({marks})", values)
        return
    where = " AND ".join(f"{k} = ?" for k in key_cols)
    _q(conn, f"DELETE FROM {table} WHERE {where}", values[: len(key_cols)])
    _q(conn, f"INSERT INTO {table}({', '.join(cols)}) VALUES ({marks})", values)


def upsert_dream_run(
    conn: Any,
    run_id: str,
    partition: str,
    started_at_ms: int,
    completed_at_ms: int,
    ops_committed: int,
    detail: dict[str, Any],
) -> None:
    """Insert-or-replace one ``dream_runs`` row."""
    _replace(
        conn,
        "dream_runs",
        ("run_id", "partition_label", "started_at_ms", "completed_at_ms", "ops_committed", "detail"),
        ("run_id",),
        (run_id, partition, started_at_ms, completed_at_ms, ops_committed, _dumps(detail)),
    )


def recent_dream_details(conn: Any, limit: int) -> list[dict[str, Any]]:
    """The ``detail`` of the newest ``limit`` dream runs."""
    c = dialect_of(conn).collate
    rows = _q(
        conn, f"SELECT detail FROM dream_runs ORDER BY completed_at_ms DESC, run_id{c} DESC LIMIT ?", (limit,)
    ).fetchall()
    out: list[dict[str, Any]] = []
    for (text,) in rows:
        try:
            value = json.loads(text)
        except ValueError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return out


def insert_audit_verdict(conn: Any, run_id: str, record_id: str, verdict: str, rationale: str | None, now_ms: int) -> None:
    """Insert-or-replace the verdict of ``run_id`` on ``record_id`` (a replaced verdict is open again)."""
    _replace(
        conn,
        "dream_audit_verdicts",
        ("run_id", "record_id", "verdict", "rationale", "created_at_ms"),
        ("run_id", "record_id"),
        (run_id, record_id, verdict, rationale, now_ms),
    )


def has_open_audit_verdict(conn: Any, record_id: str) -> bool:
    """Whether an unresolved usage-audit verdict names ``record_id``."""
    row = _q(
        conn, "SELECT 1 FROM dream_audit_verdicts WHERE record_id = ? AND resolved_at_ms IS NULL LIMIT 1", (record_id,)
    ).fetchone()
    return row is not None


def open_audit_verdicts(conn: Any, limit: int) -> list[dict[str, Any]]:
    """Unresolved usage-audit verdicts, newest first: ``{run_id, record_id, verdict, rationale, created_at_ms}``."""
    c = dialect_of(conn).collate
    rows = _q(
        conn,
        "SELECT run_id, record_id, verdict, rationale, created_at_ms FROM dream_audit_verdicts "
        f"WHERE resolved_at_ms IS NULL ORDER BY created_at_ms DESC, record_id{c} LIMIT ?",
        (limit,),
    ).fetchall()
    keys = ("run_id", "record_id", "verdict", "rationale", "created_at_ms")
    return [dict(zip(keys, r, strict=True)) for r in rows]


def resolve_audit_verdict(conn: Any, run_id: str, record_id: str, resolution: str, now_ms: int) -> bool:
    """Resolve an open verdict with ``resolution``; ``False`` when it was not open."""
    return (
        _q(
            conn,
            "UPDATE dream_audit_verdicts SET resolved_at_ms = ?, resolution = ? WHERE run_id = ? AND record_id = ? "
            "AND resolved_at_ms IS NULL",
            (now_ms, resolution, run_id, record_id),
        ).rowcount
        > 0
    )
