"""Result models of the review, gating and console panel methods (see :mod:`.results`).

Record rows of the panel are the record's JSON (``scope`` carries the realm, ``status`` its
kind and detail) without the body (``body_bytes`` stands in); nested payloads whose shape
belongs to another module (provenance, usage, dream detail) are plain objects here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from ..ledger.model import MemoryConflictSignal
from .results import Result, ScopeRef, StatusRef

__all__ = [
    "DecideResult", "GatingDecideResult", "GatingCheckResult", "DreamResult", "RetireResult",
    "ProposalsListResult", "ProposalDecideResult",
    "PanelRecordsResult", "PanelRecordResult", "PanelQuarantineResult", "PanelDreamsResult",
    "PanelDreamRunsResult", "PanelAuditVerdictsResult", "PanelOverviewResult", "PanelProposalsResult",
    "PanelInjectionsResult", "PanelHarvestsResult", "SkippedRealm",
]


# --------------------------------------------------------------------------- review


class Receipt(Result):
    memory_id: str
    scope: ScopeRef
    kind: str
    status: StatusRef
    trust: str
    ever_quarantined: bool
    content_hash: str
    supersedes: str | None = None
    derived_from: list[str]
    created_at_ms: int
    updated_at_ms: int


class Decision(Result):
    audit_token: str
    decided_at_ms: int
    review: dict[str, Any]


class HeldForget(Result):
    forget_id: str
    memory_id: str
    scope_kind: str
    scope_key: str
    content_hash: str
    requested_by: Any
    reason: str | None
    status: str
    created_at_ms: int


class DecideResult(Result):
    """``forget`` is present when the decision was about a held forget; ``duplicate_of`` (the id of the
    active record of the scope that already held the content, also ``successor``) when a release was merged
    into it instead of writing a second active copy."""

    outcome: Literal["released", "already_released", "tombstoned", "already_tombstoned"]
    origin: Receipt
    successor: Receipt | None
    superseded_prior: Receipt | None = None
    duplicate_of: str | None = None
    forget: HeldForget | None = None
    decision: Decision


class GatingDecideResult(Result):
    pending_id: str
    record_id: str
    decision: Literal["approve", "deny"]
    status: str
    changed: bool
    promoted_id: str | None


class GatingCheckResult(Result):
    """``allowed`` false (with ``reason: "conflict_active"``) while a conflict signal is active."""

    entity: str
    topic: str
    store: str | None
    allowed: bool
    reason: Literal["conflict_active"] | None = None
    conflict: MemoryConflictSignal | None


class DreamResult(Result):
    realm: str
    run_id: str | None
    status: str
    reason: str | None = None
    started_at_ms: int
    completed_at_ms: int | None
    ops_committed: int
    detail: dict[str, Any]


class RetireResult(Result):
    realm: str
    identity: str
    session_key: str | None
    cause: str
    retired_at_ms: int
    recorded: bool


class ProposalListRow(Result):
    realm: str
    proposal_id: str
    scope_kind: str
    scope_key: str
    kind: str | None
    title: str
    #: ``{author, identity?, run_id?}``; an agent's ``identity`` is ``null`` with ``withheld_by_access: true``
    #: to a caller who may not ``agent.view`` it
    author: dict[str, Any]
    status: str
    created_at_ms: int
    #: the propose-time taint of the author's session; ``null`` to a caller who may not view the author and
    #: manage its sessions
    tainted: bool | None


class ProposalsListResult(Result):
    proposals: Sequence[ProposalListRow]


class ProposalDecideResult(Result):
    """``{proposal_id, status}``; an accept also names ``record_id``, ``created``, ``scope_kind``, ``scope_key``."""

    proposal_id: str
    status: Literal["accepted", "held", "rejected"]
    record_id: str | None = None
    created: bool | None = None
    scope_kind: str | None = None
    scope_key: str | None = None


# --------------------------------------------------------------------------- panel


class RecordRow(Result):
    id: str
    scope: ScopeRef
    kind: str
    title: str
    description: str
    tags: list[str]
    #: the record's metadata object (``{}`` when it has none)
    metadata: dict[str, Any] = {}
    provenance: dict[str, Any]
    trust: str
    status: StatusRef
    supersedes: str | None = None
    derived_from: list[str]
    working_set_rank: int | None = None
    rank_set_at_ms: int | None = None
    created_at_ms: int
    updated_at_ms: int
    tombstoned_at_ms: int | None = None
    usage: dict[str, Any]
    ever_quarantined: bool
    #: When the record stops being active (epoch ms; ``null``: never).
    expires_at_ms: int | None = None
    body_bytes: int


class RecordDetail(RecordRow):
    body: str
    content_hash: str


class ChainRow(RecordRow):
    chain_role: str


class InjectionRow(Result):
    """One injection-ledger row. It carries no row number: the ledger's numbering is shared by every
    identity of a realm (on PostgreSQL by every realm), so two numbers of one reader's rows would count
    the injections of identities it may not see."""

    realm: str
    record_id: str
    identity: str
    session_key: str | None
    surface: Literal["build", "turn"]
    at_ms: int


class SkippedRealm(Result):
    """A realm a listing of every realm left out because it cannot be read now: ``reason`` is ``corrupt``
    (damaged or not a database), ``io`` (cannot be opened) or ``invalid_name`` (a name that breaks the
    realm-name rule, left by an older version); ``message`` says why and what to do."""

    realm: str
    reason: str
    message: str


class PanelRecordsResult(Result):
    """``skipped_realms``: present only when a listing of every realm left a realm out."""

    records: Sequence[RecordRow]
    next_cursor: str | None
    realms: list[str]
    skipped_realms: list[SkippedRealm] | None = None


class PromotionRow(Result):
    realm: str
    pending_id: str
    record_id: str
    scope_kind: str
    scope_key: str
    rationale: str | None
    status: str
    created_at_ms: int


class PendingForgetRow(Result):
    realm: str
    forget_id: str
    memory_id: str
    scope_kind: str
    scope_key: str
    title: str
    record_status: str
    content_hash: str
    requested_by: Any
    reason: str | None
    created_at_ms: int


class PanelRecordResult(Result):
    """``pending_forget``: present only when a held forget stands on the record and the caller may
    review quarantined content of its scope."""

    realm: str
    record: RecordDetail
    chain: Sequence[ChainRow]
    injections: Sequence[InjectionRow]
    pending_forget: PendingForgetRow | None = None


class QuarantineRow(RecordRow):
    """A quarantine-queue row: a record row plus the ``content_hash`` that
    ``meta/memory/quarantine/decide``'s ``expected_content_hash`` binds to (``null`` from an embedder's
    store that does not read it; ``meta/memory/panel/record`` then gives it)."""

    content_hash: str | None = None


class PanelQuarantineResult(Result):
    records: Sequence[QuarantineRow]
    next_cursor: str | None
    pending_promotions: Sequence[PromotionRow]
    pending_forgets: Sequence[PendingForgetRow]
    realms: list[str]
    skipped_realms: list[SkippedRealm] | None = None


class DreamSummaryRow(Result):
    realm: str
    run_id: str
    first_op_at_ms: int
    last_op_at_ms: int
    ops: int
    op_kinds: dict[str, int]
    quarantined_ops: int
    memory_ids: list[str]
    rationales: list[str]


class PanelDreamsResult(Result):
    runs: Sequence[DreamSummaryRow]
    withheld_by_access: bool
    realms: list[str]
    skipped_realms: list[SkippedRealm] | None = None


class DreamRunRow(Result):
    realm: str
    run_id: str
    partition: str | None
    started_at_ms: int
    completed_at_ms: int | None
    ops_committed: int
    detail: Any


class PanelDreamRunsResult(Result):
    runs: Sequence[DreamRunRow]
    withheld_by_access: bool
    realms: list[str]
    skipped_realms: list[SkippedRealm] | None = None


class AuditVerdictRow(Result):
    realm: str
    run_id: str
    record_id: str
    verdict: str
    rationale: str | None
    created_at_ms: int


class PanelAuditVerdictsResult(Result):
    verdicts: Sequence[AuditVerdictRow]
    realms: list[str]
    skipped_realms: list[SkippedRealm] | None = None


class Pressure(Result):
    records: float
    bytes: float
    over_floor: bool


class ScopeOverview(Result):
    realm: str
    scope_kind: str
    scope_key: str
    counts: dict[str, int]
    trust: dict[str, int] | None = None
    records: int
    body_bytes: int
    floor_records: int
    floor_bytes: int
    pressure: Pressure
    quarantined_content_withheld: bool
    record_limit: int | None = None


class Totals(Result):
    records: int
    body_bytes: int
    counts: dict[str, int]
    trust: dict[str, int] | None = None


class Floors(Result):
    records: int
    bytes: int


class PanelOverviewResult(Result):
    scopes: Sequence[ScopeOverview]
    totals: Totals
    floors: Floors
    realms: list[str]
    skipped_realms: list[SkippedRealm] | None = None


class PanelProposalRow(Result):
    realm: str
    proposal_id: str
    scope_kind: str
    scope_key: str
    status: str
    created_at_ms: int
    #: as :class:`ProposalListRow`'s
    author: dict[str, Any]
    kind: str | None
    title: str
    body_bytes: int
    #: as :class:`ProposalListRow`'s
    tainted: bool | None


class PanelProposalsResult(Result):
    proposals: Sequence[PanelProposalRow]
    realms: list[str]
    skipped_realms: list[SkippedRealm] | None = None


class PanelInjectionsResult(Result):
    injections: Sequence[InjectionRow]
    realms: list[str]
    skipped_realms: list[SkippedRealm] | None = None


class HarvestRow(Result):
    realm: str
    identity: str
    session_key: str | None
    cause: str
    retired_at_ms: int
    status: str


class PanelHarvestsResult(Result):
    harvests: Sequence[HarvestRow]
    realms: list[str]
    skipped_realms: list[SkippedRealm] | None = None
