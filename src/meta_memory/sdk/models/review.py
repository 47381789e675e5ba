"""Typed results of the review methods (seed: "Reviewing quarantined records", "Conflict detection";
docs/rpc.md, "Review")."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ._base import OpenModel

__all__ = ["ReviewedRecord", "ReviewDecision", "QuarantineDecision", "GatingCheck", "GatingDecision",
           "DreamRun", "Harvest", "Proposal", "ProposalList", "ProposalDecision"]


class ReviewedRecord(OpenModel):
    """A record as a decision saw it: ``{memory_id, scope, kind, status, trust, content_hash, ...}``."""

    memory_id: str
    scope: dict[str, Any] = Field(default_factory=dict)
    kind: str | None = None
    status: dict[str, Any] = Field(default_factory=dict)
    trust: str | None = None
    content_hash: str | None = None
    derived_from: list[str] = Field(default_factory=list)
    created_at_ms: int | None = None
    updated_at_ms: int | None = None


class ReviewDecision(OpenModel):
    """``{audit_token, decided_at_ms, review}``: ``review.reviewer`` is the authenticated principal."""

    audit_token: str | None = None
    decided_at_ms: int | None = None
    review: dict[str, Any] = Field(default_factory=dict)


class QuarantineDecision(OpenModel):
    """``meta/memory/quarantine/decide``: ``outcome`` is ``released``, ``already_released``,
    ``tombstoned`` or ``already_tombstoned``; ``successor`` is the released copy (``None`` for a
    tombstone or a held forget); ``forget`` describes a held forget that was decided."""

    outcome: str
    origin: ReviewedRecord | None = None
    successor: ReviewedRecord | None = None
    superseded_prior: ReviewedRecord | None = None
    forget: dict[str, Any] | None = None
    decision: ReviewDecision | None = None


class GatingCheck(OpenModel):
    """``meta/gating/check``: ``allowed`` is ``False`` while a conflict signal is active (``conflict``;
    ``reason`` is then ``"conflict_active"``)."""

    entity: str
    topic: str
    store: str | None = None
    allowed: bool
    reason: str | None = None
    conflict: dict[str, Any] | None = None


class GatingDecision(OpenModel):
    """``meta/gating/decide``: ``{pending_id, record_id, decision, status, changed, promoted_id}``.

    ``status`` is the promotion's status after the call (``committed``, ``denied``, ``expired``, or its
    earlier status when ``changed`` is false); ``promoted_id`` is the record an approval created."""

    pending_id: str
    record_id: str | None = None
    decision: str
    status: str
    changed: bool
    promoted_id: str | None = None


class DreamRun(OpenModel):
    """``meta/memory/steward/dream``: ``{realm, run_id, status, reason?, started_at_ms, completed_at_ms,
    ops_committed, detail}``."""

    realm: str
    run_id: str
    status: str
    reason: str | None = None
    started_at_ms: int | None = None
    completed_at_ms: int | None = None
    ops_committed: int = 0
    detail: dict[str, Any] = Field(default_factory=dict)


class Harvest(OpenModel):
    """``meta/session/retire``: the recorded exit-interview harvest the next dream decides."""

    realm: str
    identity: str
    session_key: str | None = None
    cause: str
    retired_at_ms: int | None = None
    recorded: bool | None = None


class Proposal(OpenModel):
    """A body-free proposal row (with the propose-time ``tainted`` flag)."""

    proposal_id: str
    status: str | None = None
    title: str | None = None
    tainted: bool | None = None
    created_at_ms: int | None = None


class ProposalList(OpenModel):
    """``meta/memory/proposals/list``: ``{proposals}``."""

    proposals: list[Proposal] = Field(default_factory=list)


class ProposalDecision(OpenModel):
    """``meta/memory/proposals/decide``: ``{proposal_id, status}``; an accept adds the committed
    ``record_id``, ``created`` (``False``: the record was already there), ``scope_kind``, ``scope_key``."""

    proposal_id: str
    status: str
    record_id: str | None = None
    created: bool | None = None
    scope_kind: str | None = None
    scope_key: str | None = None
