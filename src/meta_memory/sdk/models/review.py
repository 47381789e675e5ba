"""Typed results of the review methods (seed: "Reviewing quarantined records", "Conflict detection";
docs/rpc.md, "Review"): each the method's result model (:mod:`meta_memory.rpc.results_review`) opened
(:class:`OpenModel`), nested members re-typed to their opened models."""

from __future__ import annotations

from collections.abc import Sequence

from ...rpc import results_review as wire
from ._base import OPEN, OpenModel
from .agent_memory import ScopeRef, StatusRef

__all__ = ["ReviewedRecord", "ReviewDecision", "HeldForget", "QuarantineDecision", "GatingCheck", "GatingDecision",
           "DreamRun", "Harvest", "Proposal", "ProposalList", "ProposalDecision"]


class ReviewedRecord(wire.Receipt, OpenModel):
    """A record as a decision saw it: ``{memory_id, scope, kind, status, trust, ever_quarantined,
    content_hash, supersedes?, derived_from, created_at_ms, updated_at_ms}``."""

    model_config = OPEN
    scope: ScopeRef
    status: StatusRef


class ReviewDecision(wire.Decision, OpenModel):
    """``{audit_token, decided_at_ms, review}``: ``review.reviewer`` is the authenticated principal."""

    model_config = OPEN


class HeldForget(wire.HeldForget, OpenModel):
    """A held forget a decision was about: ``{forget_id, memory_id, scope_kind, scope_key, content_hash,
    requested_by, reason, status, created_at_ms}``."""

    model_config = OPEN


class QuarantineDecision(wire.DecideResult, OpenModel):
    """``meta/memory/quarantine/decide``: ``outcome`` is ``released``, ``already_released``,
    ``tombstoned`` or ``already_tombstoned``; ``successor`` is the released copy (``None`` for a
    tombstone or a held forget); ``forget`` describes a held forget that was decided."""

    model_config = OPEN
    origin: ReviewedRecord
    successor: ReviewedRecord | None
    superseded_prior: ReviewedRecord | None = None
    forget: HeldForget | None = None
    decision: ReviewDecision


class GatingCheck(wire.GatingCheckResult, OpenModel):
    """``meta/gating/check``: ``allowed`` is ``False`` while a conflict signal is active (``conflict``;
    ``reason`` is then ``"conflict_active"``)."""

    model_config = OPEN


class GatingDecision(wire.GatingDecideResult, OpenModel):
    """``meta/gating/decide``: ``{pending_id, record_id, decision, status, changed, promoted_id}``.

    ``status`` is the promotion's status after the call (``committed``, ``denied``, ``expired``, or its
    earlier status when ``changed`` is false); ``promoted_id`` is the record an approval created."""

    model_config = OPEN


class DreamRun(wire.DreamResult, OpenModel):
    """``meta/memory/steward/dream``: ``{realm, run_id, status, reason?, started_at_ms, completed_at_ms,
    ops_committed, detail}``."""

    model_config = OPEN


class Harvest(wire.RetireResult, OpenModel):
    """``meta/session/retire``: the recorded exit-interview harvest the next dream decides."""

    model_config = OPEN


class Proposal(wire.ProposalListRow, OpenModel):
    """A body-free proposal row (with the propose-time ``tainted`` flag)."""

    model_config = OPEN


class ProposalList(wire.ProposalsListResult, OpenModel):
    """``meta/memory/proposals/list``: ``{proposals}``."""

    model_config = OPEN
    proposals: Sequence[Proposal]


class ProposalDecision(wire.ProposalDecideResult, OpenModel):
    """``meta/memory/proposals/decide``: ``{proposal_id, status}``; an accept adds the committed
    ``record_id``, ``created`` (``False``: the record was already there), ``scope_kind``, ``scope_key``."""

    model_config = OPEN
