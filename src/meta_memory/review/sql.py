"""Every SQL statement of the review area, in one place (reference §2B tables).

The decision logic of :mod:`meta_memory.review` is plain Python over records,
audit rows and the small row types below; only this module knows the side
tables (``proposals``, ``pending_promotions``, ``stage``, ``audit``,
``pending_harvests``, ``dream_runs``, ``dream_audit_verdicts``) and speaks
SQL. Each function takes the raw connection of an open write transaction
(:attr:`meta_memory.agent_memory.store.sqlite.SqliteTx.conn`). A second
backend re-implements this module and nothing else of the review logic.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from meta_memory.agent_memory.batch import StagedBatch
from meta_memory.agent_memory.model import MemoryRecord, Scope

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
]


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# --------------------------------------------------------------------------- record reads


class TxRecordReader:
    """The validator's :class:`~meta_memory.agent_memory.validator.RecordReader` over an open transaction.

    ``get`` is the transaction's record reader (``SqliteTx.get``).
    """

    def __init__(self, conn: sqlite3.Connection, get: Any) -> None:
        self._conn = conn
        self._get = get

    def get_record(self, memory_id: str) -> MemoryRecord | None:
        return self._get(memory_id)

    def tombstoned_since(self, scope: Scope, content_hash: str, since_ms: int) -> bool:
        kind, key = scope.storage()
        row = self._conn.execute(
            "SELECT 1 FROM records WHERE scope_kind = ? AND scope_key = ? AND content_hash = ? "
            "AND status_kind = 'tombstoned' AND tombstoned_at_ms >= ? LIMIT 1",
            (kind, key, content_hash, since_ms),
        ).fetchone()
        return row is not None


def _ids(conn: sqlite3.Connection, sql: str, params: Sequence[Any]) -> list[str]:
    return [row[0] for row in conn.execute(sql, params).fetchall()]


def active_duplicate(conn: sqlite3.Connection, scope: Scope, content_hash: str, exclude: str) -> str | None:
    """The oldest active record of ``scope`` with ``content_hash`` other than ``exclude``, or ``None``."""
    kind, key = scope.storage()
    row = conn.execute(
        "SELECT memory_id FROM records WHERE scope_kind = ? AND scope_key = ? AND content_hash = ? "
        "AND status_kind = 'active' AND memory_id != ? ORDER BY created_at_ms, rid LIMIT 1",
        (kind, key, content_hash, exclude),
    ).fetchone()
    return row[0] if row else None


def quarantined_records(conn: sqlite3.Connection, limit: int) -> list[str]:
    """Ids of quarantined records, oldest first, at most ``limit``."""
    return _ids(
        conn,
        "SELECT memory_id FROM records WHERE status_kind = 'quarantined' ORDER BY created_at_ms, rid LIMIT ?",
        (limit,),
    )


def open_loop_records(conn: sqlite3.Connection, updated_before_ms: int, limit: int) -> list[str]:
    """Ids of active or quarantined ``open_loop`` records last updated before ``updated_before_ms``."""
    return _ids(
        conn,
        "SELECT memory_id FROM records WHERE kind = 'open_loop' AND status_kind IN ('active', 'quarantined') "
        "AND updated_at_ms <= ? ORDER BY updated_at_ms, rid LIMIT ?",
        (updated_before_ms, limit),
    )


def audit_candidates(conn: sqlite3.Connection, limit: int) -> list[str]:
    """Ids of active records that have been injected at least once, most injected first."""
    return _ids(
        conn,
        "SELECT memory_id FROM records WHERE status_kind = 'active' "
        "AND COALESCE(json_extract(usage_stats, '$.injected_count'), 0) > 0 "
        "ORDER BY json_extract(usage_stats, '$.injected_count') DESC, rid LIMIT ?",
        (limit,),
    )


def records_citing_session(conn: sqlite3.Connection, scope: Scope, session_key: str) -> list[str]:
    """Ids of active records of ``scope`` whose provenance evidence cites session ``session_key``."""
    kind, key = scope.storage()
    return _ids(
        conn,
        "SELECT memory_id FROM records WHERE scope_kind = ? AND scope_key = ? AND status_kind = 'active' "
        "AND EXISTS (SELECT 1 FROM json_each(json_extract(provenance, '$.evidence')) "
        "WHERE json_extract(value, '$.session_id') = ?) ORDER BY created_at_ms, rid",
        (kind, key, session_key),
    )


# --------------------------------------------------------------------------- stage


def insert_stage(conn: sqlite3.Connection, token: str, batch: StagedBatch, now_ms: int) -> None:
    """Keep ``batch`` uncommitted under ``token``."""
    conn.execute(
        "INSERT INTO stage(token, batch, created_at_ms) VALUES (?, ?, ?)", (token, _dumps(batch.to_json()), now_ms)
    )


def load_stage(conn: sqlite3.Connection, token: str) -> StagedBatch | None:
    """The staged batch under ``token``, or ``None`` when it is gone."""
    row = conn.execute("SELECT batch FROM stage WHERE token = ?", (token,)).fetchone()
    return StagedBatch.from_json(json.loads(row[0])) if row else None


def delete_stage(conn: sqlite3.Connection, token: str) -> bool:
    """Drop a staged batch; ``False`` when it was already gone."""
    return conn.execute("DELETE FROM stage WHERE token = ?", (token,)).rowcount > 0


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


def pending_promotions_for(conn: sqlite3.Connection, record_id: str) -> list[PendingPromotion]:
    """Unresolved promotions of ``record_id``, oldest first."""
    rows = conn.execute(
        f"SELECT {_PROMO_COLS} FROM pending_promotions WHERE record_id = ? AND status = 'pending' "
        "ORDER BY created_at_ms, pending_id",
        (record_id,),
    ).fetchall()
    return [_promotion(r) for r in rows]


def pending_promotion(conn: sqlite3.Connection, pending_id: str) -> PendingPromotion | None:
    """The promotion row ``pending_id`` (any status), or ``None``."""
    row = conn.execute(f"SELECT {_PROMO_COLS} FROM pending_promotions WHERE pending_id = ?", (pending_id,)).fetchone()
    return _promotion(row) if row else None


def list_pending_promotions(conn: sqlite3.Connection, limit: int) -> list[PendingPromotion]:
    """Unresolved promotions, newest first."""
    rows = conn.execute(
        f"SELECT {_PROMO_COLS} FROM pending_promotions WHERE status = 'pending' "
        "ORDER BY created_at_ms DESC, pending_id DESC LIMIT ?",
        (limit,),
    ).fetchall()
    return [_promotion(r) for r in rows]


def expired_pending_promotions(conn: sqlite3.Connection, created_before_ms: int) -> list[PendingPromotion]:
    """Unresolved promotions created at or before ``created_before_ms``."""
    rows = conn.execute(
        f"SELECT {_PROMO_COLS} FROM pending_promotions WHERE status = 'pending' AND created_at_ms <= ? "
        "ORDER BY created_at_ms",
        (created_before_ms,),
    ).fetchall()
    return [_promotion(r) for r in rows]


def insert_pending_promotion(conn: sqlite3.Connection, row: PendingPromotion) -> None:
    conn.execute(
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


def resolve_promotion(conn: sqlite3.Connection, pending_id: str, status: str, now_ms: int) -> bool:
    """Move a still-pending promotion to ``status`` (committed|denied|expired); ``False`` if it was not pending."""
    return (
        conn.execute(
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


def review_tombstones(conn: sqlite3.Connection, memory_id: str) -> list[AuditRow]:
    """The tombstone audit rows of ``memory_id``, newest first (callers look for review evidence)."""
    rows = conn.execute(
        f"SELECT {_AUDIT_COLS} FROM audit WHERE memory_id = ? AND op_kind = 'tombstone' ORDER BY audit_id DESC",
        (memory_id,),
    ).fetchall()
    return [_audit(r) for r in rows]


def audit_row_at(conn: sqlite3.Connection, stage_token: str, op_index: int) -> AuditRow | None:
    """The audit row written by op ``op_index`` of the batch ``stage_token``."""
    row = conn.execute(
        f"SELECT {_AUDIT_COLS} FROM audit WHERE stage_token = ? AND op_index = ? ORDER BY audit_id LIMIT 1",
        (stage_token, op_index),
    ).fetchone()
    return _audit(row) if row else None


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


def proposal(conn: sqlite3.Connection, proposal_id: str) -> ProposalRow | None:
    row = conn.execute(f"SELECT {_PROP_COLS} FROM proposals WHERE proposal_id = ?", (proposal_id,)).fetchone()
    return _proposal(row) if row else None


def list_proposals(conn: sqlite3.Connection, statuses: Sequence[str], limit: int) -> list[ProposalRow]:
    """Proposals in ``statuses``, oldest first, at most ``limit``."""
    marks = ", ".join("?" for _ in statuses)
    rows = conn.execute(
        f"SELECT {_PROP_COLS} FROM proposals WHERE status IN ({marks}) ORDER BY created_at_ms, proposal_id LIMIT ?",
        (*statuses, limit),
    ).fetchall()
    return [_proposal(r) for r in rows]


def set_proposal_status(conn: sqlite3.Connection, proposal_id: str, status: str, from_statuses: Sequence[str]) -> bool:
    """Move a proposal to ``status`` if it is in one of ``from_statuses``."""
    marks = ", ".join("?" for _ in from_statuses)
    return (
        conn.execute(
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
        return {
            "identity": self.identity,
            "session_key": self.session_key,
            "cause": self.cause,
            "retired_at_ms": self.retired_at_ms,
            "status": self.status,
        }


def insert_harvest(conn: sqlite3.Connection, identity: str, session_key: str | None, cause: str, at_ms: int) -> bool:
    """``INSERT OR IGNORE`` a pending harvest; ``False`` when that (identity, time) was already recorded."""
    return (
        conn.execute(
            "INSERT OR IGNORE INTO pending_harvests(identity, session_key, cause, retired_at_ms, status) "
            "VALUES (?, ?, ?, ?, 'pending')",
            (identity, session_key, cause, at_ms),
        ).rowcount
        > 0
    )


def pending_harvests(conn: sqlite3.Connection, limit: int) -> list[HarvestRow]:
    """Pending harvests, oldest first."""
    rows = conn.execute(
        "SELECT identity, session_key, cause, retired_at_ms, status FROM pending_harvests WHERE status = 'pending' "
        "ORDER BY retired_at_ms, identity LIMIT ?",
        (limit,),
    ).fetchall()
    return [HarvestRow(*r) for r in rows]


def mark_harvested(conn: sqlite3.Connection, identity: str, retired_at_ms: int) -> bool:
    return (
        conn.execute(
            "UPDATE pending_harvests SET status = 'harvested' WHERE identity = ? AND retired_at_ms = ? "
            "AND status = 'pending'",
            (identity, retired_at_ms),
        ).rowcount
        > 0
    )


# --------------------------------------------------------------------------- dreams


def upsert_dream_run(
    conn: sqlite3.Connection,
    run_id: str,
    partition: str,
    started_at_ms: int,
    completed_at_ms: int,
    ops_committed: int,
    detail: dict[str, Any],
) -> None:
    """Insert-or-replace one ``dream_runs`` row."""
    conn.execute(
        "INSERT OR REPLACE INTO dream_runs(run_id, partition_label, started_at_ms, completed_at_ms, ops_committed, "
        "detail) VALUES (?, ?, ?, ?, ?, ?)",
        (run_id, partition, started_at_ms, completed_at_ms, ops_committed, _dumps(detail)),
    )


def recent_dream_details(conn: sqlite3.Connection, limit: int) -> list[dict[str, Any]]:
    """The ``detail`` of the newest ``limit`` dream runs."""
    rows = conn.execute(
        "SELECT detail FROM dream_runs ORDER BY completed_at_ms DESC LIMIT ?", (limit,)
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


def insert_audit_verdict(
    conn: sqlite3.Connection, run_id: str, record_id: str, verdict: str, rationale: str | None, now_ms: int
) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO dream_audit_verdicts(run_id, record_id, verdict, rationale, created_at_ms) "
        "VALUES (?, ?, ?, ?, ?)",
        (run_id, record_id, verdict, rationale, now_ms),
    )


def has_open_audit_verdict(conn: sqlite3.Connection, record_id: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM dream_audit_verdicts WHERE record_id = ? AND resolved_at_ms IS NULL LIMIT 1", (record_id,)
    ).fetchone()
    return row is not None


def open_audit_verdicts(conn: sqlite3.Connection, limit: int) -> list[dict[str, Any]]:
    """Unresolved usage-audit verdicts, newest first: ``{run_id, record_id, verdict, rationale, created_at_ms}``."""
    rows = conn.execute(
        "SELECT run_id, record_id, verdict, rationale, created_at_ms FROM dream_audit_verdicts "
        "WHERE resolved_at_ms IS NULL ORDER BY created_at_ms DESC, record_id LIMIT ?",
        (limit,),
    ).fetchall()
    keys = ("run_id", "record_id", "verdict", "rationale", "created_at_ms")
    return [dict(zip(keys, r, strict=True)) for r in rows]


def resolve_audit_verdict(
    conn: sqlite3.Connection, run_id: str, record_id: str, resolution: str, now_ms: int
) -> bool:
    return (
        conn.execute(
            "UPDATE dream_audit_verdicts SET resolved_at_ms = ?, resolution = ? WHERE run_id = ? AND record_id = ? "
            "AND resolved_at_ms IS NULL",
            (now_ms, resolution, run_id, record_id),
        ).rowcount
        > 0
    )
