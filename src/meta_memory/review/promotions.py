"""Gated promotions and conflict-aware gating (seed: "Reviewing quarantined records", "Conflict detection"; reference §9).

A steward verdict ``promote_pending_gate`` does not write: it *stages* the
promotion (a ``stage`` row holding the batch plus a ``pending_promotions``
row) and emits ``memory.promotion.pending_gate``. The gating flow then
decides it (``meta/gating/decide``):

- ``approve`` commits the staged batch (``memory.record.promoted``), status ``committed``;
- ``deny`` discards it, status ``denied``;
- seven days after staging it expires (at the next decision, review or dream), status ``expired``.

A promotion that is no longer pending (invalidated by an operator's
tombstone, expired, decided) stays as it is on a late decision.

Sources: a quarantined record (the batch creates the promoted copy, derived
from the origin, and tombstones the origin; a quarantined update promoted into
its own scope supersedes its prior instead, so one version stays active), an active record (the batch
creates the copy only), or a proposal (the batch creates the proposed record
in its scope; the proposal is ``held`` while gated, then ``accepted`` /
``rejected``; an expired gate returns it to ``pending``).

An approval whose promoted content an active record of the target scope already
holds (same content hash) writes no second active copy: the promotion commits
as that record (``promoted_id`` names it), and the rest of the staged batch (a
quarantined source's tombstone) is applied alone, as ``remember`` and
``proposals/accept`` keep exact-content duplicates one record.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from meta_memory.agent_memory.batch import BatchKind, CreateOp, Op, StagedBatch, SupersedeOp, TombstoneOp
from meta_memory.agent_memory.fields import FieldError
from meta_memory.agent_memory.hashing import content_hash, mint_token
from meta_memory.agent_memory.model import (
    Author,
    NewMemoryRecord,
    Provenance,
    Scope,
    ScopeKind,
    StatusKind,
    TrustTier,
)
from meta_memory.agent_memory.store.base import AgentMemoryStore, WriteGate
from meta_memory.agent_memory.store.tables import PromotionRow
from meta_memory.agent_memory.store.tx import WriteTx
from meta_memory.agent_memory.validator import normalize_record
from meta_memory.clock import Clock
from meta_memory.errors import AgentMemoryError, echo
from meta_memory.events.bus import EventBus
from meta_memory.identity import parse_realm
from meta_memory.ledger.ledger import AssertionLedger
from meta_memory.review.model import PROMOTION_EXPIRY_MS, copy_of

__all__ = [
    "StagedPromotion",
    "GatingOutcome",
    "GatingCheck",
    "promote_pending_gate",
    "gating_decide",
    "gating_check",
    "expire_promotions",
    "list_pending_promotions",
    "promotion_scopes",
    "unknown_promotion",
]

class _StoreGate:
    """The default of a ``gate`` parameter: the store's own write gate."""


#: Pass as ``gate`` to use the store's own gate (the default).
USE_STORE_GATE = _StoreGate()


def write_gate(store: AgentMemoryStore, gate: WriteGate | None | _StoreGate) -> WriteGate | None:
    """The gate a review batch is applied with: ``gate``, or the store's own for :data:`USE_STORE_GATE`."""
    return store.gate if isinstance(gate, _StoreGate) else gate


def _refuse(detail: str) -> AgentMemoryError:
    return AgentMemoryError("invalid_record", detail)


def proposed_record(proposal_id: str, stored: dict[str, Any]) -> NewMemoryRecord:
    """The payload of proposal ``proposal_id`` (its stored JSON ``stored``) held to today's rules before it is
    written anywhere: a proposal an earlier release stored under a rule since tightened (a metadata key now
    refused) is refused as ``invalid_record`` naming the rule, never written, and never an internal error."""
    try:
        return normalize_record(NewMemoryRecord.from_json(stored, stored=True))
    except ValueError as exc:
        rule = exc.rule if isinstance(exc, FieldError) else str(exc)
        raise _refuse(f"proposal '{echo(proposal_id)}' cannot be accepted: {rule}; reject it, and propose the "
                      "content again") from None


def unknown_promotion(pending_id: str) -> AgentMemoryError:
    """The one refusal of a ``pending_id`` that names no promotion (``-32040``, reason ``invalid_record``):
    also the answer where the realm has no database, or the caller may review nothing in the realm."""
    return _refuse(f"unknown pending promotion '{echo(str(pending_id))}'")


@dataclass(frozen=True, slots=True)
class StagedPromotion:
    """A promotion waiting for a gating decision."""

    realm: str
    pending_id: str
    record_id: str
    scope: Scope
    created_at_ms: int
    rationale: str | None

    @property
    def expires_at_ms(self) -> int:
        return self.created_at_ms + PROMOTION_EXPIRY_MS

    def to_dict(self) -> dict[str, Any]:
        """``{realm, pending_id, record_id, scope_kind, scope_key, rationale, created_at_ms, expires_at_ms}``."""
        kind, key = self.scope.storage()
        return {
            "realm": self.realm,
            "pending_id": self.pending_id,
            "record_id": self.record_id,
            "scope_kind": kind,
            "scope_key": key,
            "rationale": self.rationale,
            "created_at_ms": self.created_at_ms,
            "expires_at_ms": self.expires_at_ms,
        }


def promote_pending_gate(
    store: AgentMemoryStore,
    realm: str | None,
    source_id: str,
    *,
    run_id: str,
    clock: Clock,
    target_scope: Scope | None = None,
    rationale: str | None = None,
    events: EventBus | None = None,
) -> StagedPromotion:
    """Stage a steward's promotion of ``source_id`` (a record id or a ``prop-...`` proposal id).

    ``target_scope`` defaults to the proposal's scope, or the record's own scope
    (a mob target is usual for records: ``Scope.mob(realm, mob)``). The batch is
    authored ``steward{run_id}``, kind ``review_verdict``, every record at
    ``agent_observed``; it is validated now and again at approval.

    Raises:
        AgentMemoryError: unknown source, a source in the wrong state, a source
            with a promotion already pending, or the validator's refusal.

    Emits ``memory.promotion.pending_gate`` {realm, pending_ref, pending_id,
    record_id, scope_kind, scope_key} after commit.
    """
    name = parse_realm(realm)
    author = Author.steward(run_id)

    with store.transaction(name) as tx:
        staged = _stage_promotion(tx, source_id, author, clock.now_ms(), target_scope, rationale)
    if events is not None:
        kind, key = staged.scope.storage()
        events.emit(
            "memory.promotion.pending_gate",
            {
                "realm": name,
                "pending_ref": staged.pending_id,
                "pending_id": staged.pending_id,
                "record_id": source_id,
                "scope_kind": kind,
                "scope_key": key,
            },
        )
    return staged


def _stage_promotion(
    tx: WriteTx, source_id: str, author: Author, now: int, target_scope: Scope | None, rationale: str | None
) -> StagedPromotion:
    """Inside ``tx``: build the promotion batch of ``source_id``, stage it and record the pending promotion."""
    if tx.promotions.pending_for(source_id):
        raise _refuse(f"'{source_id}' already has a promotion awaiting a gating decision")
    prop = tx.proposals.get(source_id)
    if prop is not None:
        if prop.status not in ("pending", "held"):
            raise _refuse(f"proposal '{source_id}' is {prop.status}, not pending")
        scope = target_scope or Scope.from_storage(tx.realm, prop.scope_kind, prop.scope_key)
        record = proposed_record(source_id, prop.record)
        ops: tuple[Op, ...] = (
            CreateOp(
                scope=scope,
                record=record,
                trust=TrustTier.AGENT_OBSERVED,
                rationale=f"gated promotion of proposal {source_id}",
                tainted_source=prop.taint is not None,
            ),
        )
        tx.proposals.set_status(source_id, "held", ("pending", "held"))
    else:
        rec = tx.get(source_id)
        if rec is None:
            raise _refuse(f"record '{source_id}' does not exist")
        if rec.status.kind not in (StatusKind.QUARANTINED, StatusKind.ACTIVE):
            raise _refuse(f"record '{source_id}' is {rec.status.kind.value}; only quarantined or active records promote")
        scope = target_scope or rec.scope
        copy = copy_of(rec, Provenance(author=rec.provenance.author, verification=rec.provenance.verification))
        create: CreateOp | SupersedeOp
        if rec.status.kind is StatusKind.QUARANTINED and rec.supersedes is not None and scope == rec.scope:
            # A quarantined update promoted into its own scope supersedes its prior, as a release
            # would: one version stays active (the validator re-checks the prior at approval).
            create = SupersedeOp(
                prior=rec.supersedes,
                record=copy,
                trust=TrustTier.AGENT_OBSERVED,
                derived_from=(rec.id,),
                rationale=f"gated promotion of {rec.id}",
            )
        else:
            create = CreateOp(
                scope=scope,
                record=copy,
                trust=TrustTier.AGENT_OBSERVED,
                derived_from=(rec.id,),
                rationale=f"gated promotion of {rec.id}",
            )
        if rec.status.kind is StatusKind.QUARANTINED:
            ops = (create, TombstoneOp(id=rec.id, rationale="superseded by gated promotion"))
        else:
            ops = (create,)
    batch = StagedBatch(realm=tx.realm, author=author, ops=ops, kind=BatchKind.REVIEW_VERDICT)
    token = tx.stage(batch)
    kind, key = scope.storage()
    pending_id = mint_token("gate")
    tx.promotions.insert(PromotionRow(tx.realm, pending_id, token, source_id, kind, key, rationale, "pending", now, None))
    return StagedPromotion(tx.realm, pending_id, source_id, scope, now, rationale)


@dataclass(frozen=True, slots=True)
class GatingOutcome:
    """The answer of ``meta/gating/decide``.

    ``status``: the promotion's status after the call (``committed`` |
    ``denied`` | ``expired``, or its earlier status when ``changed`` is false).
    ``promoted_id``: the record the approval created.
    """

    realm: str
    pending_id: str
    record_id: str
    decision: str
    status: str
    changed: bool
    promoted_id: str | None = None
    scope_kind: str | None = None
    scope_key: str | None = None
    proposal_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """``{pending_id, record_id, decision, status, changed, promoted_id}``."""
        return {
            "pending_id": self.pending_id,
            "record_id": self.record_id,
            "decision": self.decision,
            "status": self.status,
            "changed": self.changed,
            "promoted_id": self.promoted_id,
        }


def gating_decide(
    store: AgentMemoryStore,
    realm: str | None,
    pending_id: str,
    decision: str,
    *,
    clock: Clock,
    events: EventBus | None = None,
    gate: WriteGate | None | _StoreGate = USE_STORE_GATE,
) -> GatingOutcome:
    """Approve or deny a staged promotion (``meta/gating/decide``), in one transaction.

    Args:
        decision: ``"approve"`` or ``"deny"``.

    Returns:
        :class:`GatingOutcome`. A promotion that is no longer pending is
        reported unchanged; one older than seven days is expired instead.

    Raises:
        AgentMemoryError: unknown ``pending_id`` (also in a realm without a database, which is not
            created); the validator refused the staged batch at approval (the promotion stays pending).

    Emits ``memory.record.promoted`` {realm, record_id, source_record_id,
    scope_kind, scope_key, proposal_id, gated: true} after an approval commits.
    """
    if decision not in ("approve", "deny"):
        raise ValueError("decision must be 'approve' or 'deny'")
    name = store.realm_name(parse_realm(realm))
    if not store.has_realm(name):  # a decision writes nothing new: it never creates a realm
        raise unknown_promotion(pending_id)
    with store.transaction(name) as tx:
        outcome = _decide_in_tx(tx, pending_id, decision, clock.now_ms(), write_gate(store, gate))
    if outcome.status == "committed" and outcome.changed and events is not None:
        events.emit(
            "memory.record.promoted",
            {
                "realm": name,
                "record_id": outcome.promoted_id,
                "source_record_id": None if outcome.proposal_id else outcome.record_id,
                "scope_kind": outcome.scope_kind,
                "scope_key": outcome.scope_key,
                "proposal_id": outcome.proposal_id,
                "gated": True,
            },
            identity=outcome.scope_key if outcome.scope_kind == ScopeKind.IDENTITY.value else None,
        )
    return outcome


def _decide_in_tx(tx: WriteTx, pending_id: str, decision: str, now: int, gate: WriteGate | None) -> GatingOutcome:
    row = tx.promotions.get(pending_id)
    if row is None:
        raise unknown_promotion(pending_id)
    is_proposal = tx.proposals.get(row.record_id) is not None
    proposal_id = row.record_id if is_proposal else None

    def outcome(status: str, changed: bool, promoted_id: str | None = None) -> GatingOutcome:
        return GatingOutcome(tx.realm, pending_id, row.record_id, decision, status, changed, promoted_id,
                             row.scope_kind, row.scope_key, proposal_id)

    if row.status != "pending":
        return outcome(row.status, False)
    batch = tx.staged(row.stage_token)
    if now >= row.created_at_ms + PROMOTION_EXPIRY_MS or batch is None:
        _close(tx, row, "expired", now, is_proposal, "pending")
        return outcome("expired", True)
    if decision == "deny":
        _close(tx, row, "denied", now, is_proposal, "rejected")
        return outcome("denied", True)
    duplicate = _promoted_duplicate(tx, batch)
    if duplicate is not None:
        if len(batch.ops) > 1:  # a quarantined source's tombstone still applies
            tx.apply(replace(batch, ops=batch.ops[1:]), gate=gate, token=row.stage_token)
        _close(tx, row, "committed", now, is_proposal, "accepted")
        return outcome("committed", True, duplicate)
    applied = tx.apply(batch, gate=gate, token=row.stage_token)
    _close(tx, row, "committed", now, is_proposal, "accepted")
    return outcome("committed", True, applied.results[0].memory_id)


def _promoted_duplicate(tx: WriteTx, batch: StagedBatch) -> str | None:
    """The id of the active record of the promotion's target scope already holding the content its first op
    writes, or ``None``."""
    first = batch.ops[0] if batch.ops else None
    if isinstance(first, CreateOp):
        scope = first.scope
    elif isinstance(first, SupersedeOp):
        prior = tx.get(first.prior)
        if prior is None:
            return None  # the validator refuses the batch
        scope = prior.scope
    else:
        return None
    record = normalize_record(first.record)
    found = tx.active_duplicate(scope, content_hash(record.title, record.body))
    return None if found is None else found.id


def promotion_scopes(store: AgentMemoryStore, realm: str | None, pending_id: str) -> list[tuple[str, str]] | None:
    """The scopes a gated promotion touches: its target scope, then its source's scope (the promoted
    record's, or the proposal's); ``None`` for an unknown ``pending_id``. A source that no longer
    resolves is left out (the target still counts). A read: never creates a realm."""
    with store.snapshot(parse_realm(realm)) as tx:
        row = tx.promotions.get(pending_id)
        if row is None:
            return None
        scopes = [(row.scope_kind, row.scope_key)]
        prop = tx.proposals.get(row.record_id)
        if prop is not None:
            scopes.append((prop.scope_kind, prop.scope_key))
        else:
            rec = tx.get(row.record_id)
            if rec is not None:
                scopes.append(rec.scope.storage())
        return scopes


def _close(tx: WriteTx, row: PromotionRow, status: str, now: int, is_proposal: bool, proposal_status: str) -> None:
    tx.promotions.resolve(row.pending_id, status, now)
    tx.unstage(row.stage_token)
    if is_proposal:
        tx.proposals.set_status(row.record_id, proposal_status, ("held", "pending"))


def expire_promotions(store: AgentMemoryStore, realm: str | None, *, clock: Clock) -> list[str]:
    """Expire every unresolved promotion older than seven days (discarding its staged batch); returns their ids.
    A realm without a database has none, and is not created."""
    name = store.realm_name(parse_realm(realm))
    if not store.has_realm(name):
        return []
    with store.transaction(name) as tx:
        now = clock.now_ms()
        out: list[str] = []
        for row in tx.promotions.expired(now - PROMOTION_EXPIRY_MS):
            _close(tx, row, "expired", now, tx.proposals.get(row.record_id) is not None, "pending")
            out.append(row.pending_id)
        return out


def list_pending_promotions(store: AgentMemoryStore, realm: str | None, limit: int = 50) -> list[dict[str, Any]]:
    """Unresolved promotions of ``realm``, newest first (:meth:`PromotionRow.to_json`). A snapshot read: no
    write lock, never creates a realm."""
    with store.snapshot(parse_realm(realm)) as tx:
        rows = tx.promotions.pending(limit)
    return [row.to_json() for row in rows]


@dataclass(frozen=True, slots=True)
class GatingCheck:
    """The answer of ``meta/gating/check``: ``allowed`` is false while a conflict signal is active."""

    entity: str
    topic: str
    store: str | None
    allowed: bool
    conflict: dict[str, Any] | None

    def to_dict(self) -> dict[str, Any]:
        """``{entity, topic, store, allowed, reason?, conflict}`` (``reason`` = ``"conflict_active"`` when refused)."""
        out: dict[str, Any] = {"entity": self.entity, "topic": self.topic, "store": self.store, "allowed": self.allowed}
        if not self.allowed:
            out["reason"] = "conflict_active"
        out["conflict"] = self.conflict
        return out


def gating_check(ledger: AssertionLedger, entity: str, topic: str, store: str | None = None) -> GatingCheck:
    """Conflict-aware gating (seed: "Conflict detection"): refuse while the ledger holds a conflict signal.

    Without ``store`` any store's signal for ``(entity, topic)`` counts
    (:meth:`AssertionLedger.conflict_for_reference`); with one, only that
    store's. Entity, topic and store are compared in the ledger's canonical form.
    """
    if store is None:
        signal = ledger.conflict_for_reference(entity, topic)
    else:
        from meta_memory.ledger.model import QueryRequest

        conflicts = ledger.query(QueryRequest(entity=entity, topic=topic, store=store)).conflicts
        signal = conflicts[0] if conflicts else None
    conflict = signal.model_dump() if signal is not None else None
    return GatingCheck(entity, topic, store, signal is None, conflict)
