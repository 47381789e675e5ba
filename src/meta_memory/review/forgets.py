"""Held forgets: a forget the write gate holds for review (seed: "Reviewing quarantined records",
"Content trust and session taint"; docs/rpc.md "Held forgets").

A ``forget`` from the ``memory`` tool whose author the gate would quarantine
(:meth:`~meta_memory.firewall.gate.LlmWriteGate.forget_hold_reason`: a tainted
session, or any LLM author under ``llm_writes = "quarantined"``) does not
tombstone the record. :func:`request_forget` records a *held forget* instead
(a ``pending_forgets`` row bound to the record's content hash); the record
stays active, recalled and injected, until a reviewer decides it through the
same decision as quarantined records (``meta/memory/quarantine/decide``, or a
steward's dream; :mod:`meta_memory.review.quarantine`):

- ``tombstone`` approves the forget: one ``review_verdict`` batch tombstones
  the record, its audit row carries ``detail.review`` (``subject: "forget"``);
- ``release`` releases the record from the hold: nothing about the record
  changes; one audit row (``op_kind = "forget_released"``) carries the review.

A forget of a record that is itself quarantined is applied at once (it only
removes content that was never active). A second forget of a record whose
forget is already held answers the same held forget (no second row).
"""

from __future__ import annotations

from dataclasses import dataclass

from meta_memory.agent_memory import writes
from meta_memory.agent_memory.batch import StagedBatch, TombstoneOp
from meta_memory.agent_memory.hashing import mint_token
from meta_memory.agent_memory.model import Author, Scope, ScopeKind, StatusKind
from meta_memory.agent_memory.store.base import AgentMemoryStore
from meta_memory.agent_memory.store.tables import HeldForgetRow
from meta_memory.agent_memory.store.tx import WriteTx
from meta_memory.clock import Clock
from meta_memory.events.bus import EventBus

__all__ = ["FORGET_SUBJECT", "ForgetRequest", "request_forget", "list_held_forgets"]

#: ``review.subject`` of a decision about a held forget.
FORGET_SUBJECT = "forget"


@dataclass(frozen=True, slots=True)
class ForgetRequest:
    """The answer to a gated forget.

    ``outcome``: ``forgotten`` (tombstoned now), ``held`` (waiting for review;
    ``forget_id`` and ``reason`` set; ``created`` false when an earlier held
    forget of the record answers) or ``not_found`` (no such record in the
    scope, or already tombstoned).
    """

    outcome: str
    memory_id: str
    forget_id: str | None = None
    reason: str | None = None
    created: bool = False

    @property
    def forgotten(self) -> bool:
        return self.outcome == "forgotten"

    @property
    def held(self) -> bool:
        return self.outcome == "held"


def request_forget(
    store: AgentMemoryStore,
    scope: Scope,
    memory_id: str,
    author: Author,
    reason: str | None,
    *,
    session_key: str | None,
    clock: Clock,
    events: EventBus | None = None,
) -> ForgetRequest:
    """Forget ``memory_id`` of ``scope`` for ``author``, holding it for review when ``reason`` is set.

    Args:
        store: the agent-memory store.
        scope: the caller's scope (the tool pins it to the calling identity).
        memory_id: the record to forget (trimmed; blank => ``not_found``).
        author: the requesting author (an agent for the tool).
        reason: the gate's hold reason, or ``None`` to tombstone now.
        session_key: the calling session (recorded with the held forget).
        clock: epoch-ms time source.
        events: event bus; a new held forget emits ``memory.forget.held``
            {realm, record_id, forget_id, reason} after commit.

    Returns:
        :class:`ForgetRequest`. One transaction: the check and the write (a
        tombstone, or the held-forget row) commit together.
    """
    memory_id = memory_id.strip()
    if not memory_id or not store.has_realm(store.realm_name(scope.realm)):  # a realm nobody wrote to: not created
        return ForgetRequest("not_found", memory_id)

    with store.transaction(scope.realm) as tx:
        out = _forget_in_tx(tx, scope, memory_id, author, reason, session_key, clock.now_ms())
    if out.held and out.created and events is not None:
        events.emit(
            "memory.forget.held",
            {"realm": scope.realm, "record_id": memory_id, "forget_id": out.forget_id, "reason": out.reason},
            identity=scope.key if scope.kind is ScopeKind.IDENTITY else None,
        )
    return out


def list_held_forgets(store: AgentMemoryStore, realm: str, limit: int = 50) -> list[HeldForgetRow]:
    """Unresolved held forgets of ``realm`` whose record still stands, newest first. A snapshot read:
    no write lock, never creates a realm."""
    with store.snapshot(realm) as tx:
        return tx.forgets.standing(limit)


def _forget_in_tx(
    tx: WriteTx, scope: Scope, memory_id: str, author: Author, reason: str | None, session_key: str | None,
    now_ms: int,
) -> ForgetRequest:
    rec = writes.forget_target(tx, scope, memory_id)
    if rec is None:
        return ForgetRequest("not_found", memory_id)
    if reason is None or rec.status.kind is StatusKind.QUARANTINED:
        batch = StagedBatch(realm=scope.realm, author=author, ops=(TombstoneOp(id=memory_id),))
        tx.apply(batch, gate=None, token=mint_token("direct"))
        return ForgetRequest("forgotten", memory_id)
    existing = tx.forgets.pending_for(memory_id)
    if existing is not None:
        return ForgetRequest("held", memory_id, existing.forget_id, existing.reason, False)
    kind, key = scope.storage()
    row = HeldForgetRow(
        realm=scope.realm,
        forget_id=mint_token("forget"),
        memory_id=memory_id,
        scope_kind=kind,
        scope_key=key,
        content_hash=rec.content_hash,
        author=author.to_json(),
        reason=reason,
        session_key=session_key,
        status="pending",
        created_at_ms=now_ms,
        resolved_at_ms=None,
        decision=None,
    )
    tx.forgets.insert(row)
    return ForgetRequest("held", memory_id, row.forget_id, reason, True)
