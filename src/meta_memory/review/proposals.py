"""Proposals for shared scopes (seed: "The memory recorder tool", ``propose_to_mob``; reference §2B ``proposals``).

An agent's ``propose_to_mob`` queues a proposal (status ``pending``) with the
gate's taint verdict at propose time. A steward or an operator decides it:

- ``hold``: leave it for later (``held``); it stays in the queue;
- ``reject``: ``rejected``; nothing is written;
- ``accept``: commit the proposed record into its (mob/operator) scope as a
  ``review_verdict`` batch by the committer, at ``agent_observed``, then
  ``accepted``. Exact-content duplicates of an active record in that scope
  are accepted without writing a second copy;
- a steward's gated promotion (:func:`meta_memory.review.promotions.promote_pending_gate`)
  marks it ``held`` until the gating decision.

Bodies stay out of listings (:meth:`Proposal.summary`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from meta_memory.agent_memory.batch import BatchKind, CreateOp, StagedBatch
from meta_memory.agent_memory.hashing import content_hash, mint_token
from meta_memory.agent_memory.model import NewMemoryRecord, Scope, TrustTier
from meta_memory.agent_memory.store.base import AgentMemoryStore, WriteGate
from meta_memory.agent_memory.store.tables import ProposalRow
from meta_memory.agent_memory.store.tx import ReadTx, WriteTx
from meta_memory.errors import AgentMemoryError, echo
from meta_memory.events.bus import EventBus
from meta_memory.identity import parse_realm
from meta_memory.review.model import Reviewer
from meta_memory.review.promotions import USE_STORE_GATE, _StoreGate, proposed_record, write_gate

__all__ = [
    "PROPOSAL_STATUSES",
    "OPEN_STATUSES",
    "Proposal",
    "AcceptOutcome",
    "list_proposals",
    "get_proposal",
    "hold_proposal",
    "reject_proposal",
    "accept_proposal",
    "unknown_proposal",
]

PROPOSAL_STATUSES = ("pending", "held", "accepted", "rejected")
OPEN_STATUSES = ("pending", "held")

@dataclass(frozen=True, slots=True)
class Proposal:
    """A proposal with its record decoded. ``taint`` is the propose-time taint reason (``None`` = clean)."""

    realm: str
    proposal_id: str
    scope: Scope
    record: NewMemoryRecord
    author: dict[str, Any]
    status: str
    created_at_ms: int
    taint: str | None

    @property
    def tainted(self) -> bool:
        return self.taint is not None

    def summary(self) -> dict[str, Any]:
        """Body-free metadata: ``{realm, proposal_id, scope_kind, scope_key, kind, title, author, status,
        created_at_ms, tainted}``."""
        kind, key = self.scope.storage()
        return {
            "realm": self.realm,
            "proposal_id": self.proposal_id,
            "scope_kind": kind,
            "scope_key": key,
            "kind": self.record.kind.value,
            "title": self.record.title,
            "author": self.author,
            "status": self.status,
            "created_at_ms": self.created_at_ms,
            "tainted": self.tainted,
        }


def _proposal(row: ProposalRow) -> Proposal:
    return Proposal(
        realm=row.realm,
        proposal_id=row.proposal_id,
        scope=Scope.from_storage(row.realm, row.scope_kind, row.scope_key),
        record=NewMemoryRecord.from_json(row.record, stored=True),  # as stored: listed, never written from here
        author=row.author,
        status=row.status,
        created_at_ms=row.created_at_ms,
        taint=row.taint,
    )


def list_proposals(
    store: AgentMemoryStore, realm: str | None, *, status: str | None = None, limit: int = 50
) -> list[Proposal]:
    """Proposals of ``realm``, oldest first; ``status`` ``None`` = the open ones (pending and held).
    A snapshot read: no write lock, never creates a realm."""
    statuses = (status,) if status is not None else OPEN_STATUSES
    with store.snapshot(parse_realm(realm)) as tx:
        rows = tx.proposals.listing(statuses, limit)
    return [_proposal(r) for r in rows]


def get_proposal(store: AgentMemoryStore, realm: str | None, proposal_id: str) -> Proposal | None:
    """One proposal, or ``None`` (a snapshot read)."""
    with store.snapshot(parse_realm(realm)) as tx:
        row = tx.proposals.get(proposal_id)
    return _proposal(row) if row is not None else None


def unknown_proposal(proposal_id: str) -> AgentMemoryError:
    """The one refusal of a ``proposal_id`` that names no proposal (``-32040``, reason ``invalid_record``):
    also the answer where the realm has no database, or the caller may commit nothing in the realm."""
    return AgentMemoryError("invalid_record", f"unknown proposal '{echo(str(proposal_id))}'")


def _decided_realm(store: AgentMemoryStore, realm: str | None, proposal_id: str) -> str:
    """The validated name of the realm a decision on ``proposal_id`` acts in; a realm without a database
    holds no proposal and is not created (:func:`unknown_proposal`)."""
    name = store.realm_name(parse_realm(realm))
    if not store.has_realm(name):
        raise unknown_proposal(proposal_id)
    return name


def _require_open(tx: ReadTx, proposal_id: str) -> ProposalRow:
    row = tx.proposals.get(proposal_id)
    if row is None:
        raise unknown_proposal(proposal_id)
    if row.status not in OPEN_STATUSES:
        raise AgentMemoryError("invalid_record", f"proposal '{proposal_id}' is {row.status}, not pending")
    if tx.promotions.pending_for(proposal_id):
        raise AgentMemoryError("invalid_record", f"proposal '{proposal_id}' awaits a gating decision")
    return row


def _set(store: AgentMemoryStore, realm: str | None, proposal_id: str, status: str) -> str:
    with store.transaction(_decided_realm(store, realm, proposal_id)) as tx:
        _require_open(tx, proposal_id)
        tx.proposals.set_status(proposal_id, status, OPEN_STATUSES)
    return status


def hold_proposal(store: AgentMemoryStore, realm: str | None, proposal_id: str) -> str:
    """Mark an open proposal ``held``; returns the new status.

    Raises ``AgentMemoryError("invalid_record", ...)`` for an unknown, decided or gated proposal.
    """
    return _set(store, realm, proposal_id, "held")


def reject_proposal(store: AgentMemoryStore, realm: str | None, proposal_id: str) -> str:
    """Mark an open proposal ``rejected`` (nothing is written); same refusals as :func:`hold_proposal`."""
    return _set(store, realm, proposal_id, "rejected")


@dataclass(frozen=True, slots=True)
class AcceptOutcome:
    """``{proposal_id, record_id, created, scope_kind, scope_key}``: the committed (or already present) record."""

    realm: str
    proposal_id: str
    record_id: str
    created: bool
    scope: Scope

    def to_dict(self) -> dict[str, Any]:
        kind, key = self.scope.storage()
        return {
            "proposal_id": self.proposal_id,
            "record_id": self.record_id,
            "created": self.created,
            "scope_kind": kind,
            "scope_key": key,
        }


def _accept_in_tx(
    tx: WriteTx, proposal_id: str, committer: Reviewer, rationale: str | None, gate: WriteGate | None
) -> AcceptOutcome:
    row = _require_open(tx, proposal_id)
    prop, record = _proposal(row), proposed_record(proposal_id, row.record)
    duplicate = tx.active_duplicate(prop.scope, content_hash(record.title, record.body))
    if duplicate is not None:
        tx.proposals.set_status(proposal_id, "accepted", OPEN_STATUSES)
        return AcceptOutcome(tx.realm, proposal_id, duplicate.id, False, prop.scope)
    suffix = f": {rationale}" if rationale else ""
    batch = StagedBatch(
        realm=tx.realm,
        author=committer.author(),
        kind=BatchKind.REVIEW_VERDICT,
        ops=(
            CreateOp(
                scope=prop.scope,
                record=record,
                trust=TrustTier.AGENT_OBSERVED,
                rationale=f"accepted proposal {proposal_id}{suffix}",
                tainted_source=prop.tainted,
            ),
        ),
    )
    applied = tx.apply(batch, gate=gate, token=mint_token("prop-accept"))
    tx.proposals.set_status(proposal_id, "accepted", OPEN_STATUSES)
    return AcceptOutcome(tx.realm, proposal_id, applied.results[0].memory_id, True, prop.scope)


def accept_proposal(
    store: AgentMemoryStore,
    realm: str | None,
    proposal_id: str,
    committer: Reviewer,
    rationale: str | None = None,
    *,
    events: EventBus | None = None,
    gate: WriteGate | None | _StoreGate = USE_STORE_GATE,
) -> AcceptOutcome:
    """Commit an open proposal into its scope, authored by ``committer`` (operator or steward), in one transaction.

    Raises:
        AgentMemoryError: unknown, decided or gated proposal; the validator's refusal.

    Emits ``memory.record.promoted`` {realm, record_id, source_record_id: null,
    scope_kind, scope_key, proposal_id, gated: false} after commit.
    """
    name = _decided_realm(store, realm, proposal_id)
    with store.transaction(name) as tx:
        outcome = _accept_in_tx(tx, proposal_id, committer, rationale, write_gate(store, gate))
    if outcome.created and events is not None:
        kind, key = outcome.scope.storage()
        events.emit(
            "memory.record.promoted",
            {
                "realm": name,
                "record_id": outcome.record_id,
                "source_record_id": None,
                "scope_kind": kind,
                "scope_key": key,
                "proposal_id": proposal_id,
                "gated": False,
            },
        )
    return outcome
