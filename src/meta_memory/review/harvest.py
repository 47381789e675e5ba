"""Exit-interview harvests (reference §2B ``pending_harvests``, §9; spec README "The host surface").

When a host retires a session (``meta/session/retire`` {identity, session_key,
cause}) it records a *pending harvest*; the next dream decides it:

- ``promote``: copy the session's active records of the identity (those whose
  provenance evidence cites the session) into the realm scope, derived from
  them, at ``agent_observed`` (skipping content the realm scope already holds);
- ``tombstone``: tombstone those records;
- ``keep``: leave them (the default).

Either way the harvest becomes ``harvested`` and ``memory.harvest.completed``
{realm, identity, promoted, tombstoned} is emitted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from meta_memory.agent_memory.batch import BatchKind, CreateOp, Op, StagedBatch, TombstoneOp
from meta_memory.agent_memory.hashing import mint_token
from meta_memory.agent_memory.model import Author, MemoryRecord, Provenance, Scope, TrustTier
from meta_memory.agent_memory.store.base import AgentMemoryStore, WriteGate
from meta_memory.agent_memory.store.tables import HarvestRow
from meta_memory.agent_memory.store.tx import ReadTx
from meta_memory.clock import Clock
from meta_memory.events.bus import EventBus
from meta_memory.firewall.gate import EvidenceWriterGate, LlmWriteGate
from meta_memory.identity import parse_identity, parse_realm
from meta_memory.review.model import copy_of

__all__ = ["record_harvest", "list_harvests", "harvest_records", "decide_harvest"]


def record_harvest(
    store: AgentMemoryStore, realm: str | None, identity: str, session_key: str | None, cause: str, *, clock: Clock
) -> dict[str, Any]:
    """Record a pending harvest for a retired session (``INSERT OR IGNORE``).

    Returns ``{realm, identity, session_key, cause, retired_at_ms, recorded}``;
    ``recorded`` is false when the same identity was already retired at that
    millisecond. ``identity`` is stored as its logical identity.
    """
    name = parse_realm(realm)
    ident = parse_identity(identity)
    now = clock.now_ms()
    with store.transaction(name) as tx:
        recorded = tx.harvests.insert(ident, session_key, cause, now)
    return {
        "realm": name,
        "identity": ident,
        "session_key": session_key,
        "cause": cause,
        "retired_at_ms": now,
        "recorded": recorded,
    }


def list_harvests(store: AgentMemoryStore, realm: str | None, limit: int = 50) -> list[dict[str, Any]]:
    """Pending harvests of ``realm``, oldest first (:meth:`HarvestRow.to_json`). A snapshot read: no write
    lock, never creates a realm."""
    with store.snapshot(parse_realm(realm)) as tx:
        rows = tx.harvests.pending(limit)
    return [r.to_json() for r in rows]


def harvest_records(tx: ReadTx, harvest: HarvestRow) -> list[MemoryRecord]:
    """The retired session's active records (none when the harvest names no session)."""
    if not harvest.session_key:
        return []
    ids = tx.queues.citing_session(Scope.identity(tx.realm, harvest.identity), harvest.session_key)
    return [rec for rec in (tx.get(i) for i in ids) if rec is not None]


def decide_harvest(
    store: AgentMemoryStore,
    realm: str,
    harvest: HarvestRow,
    verdict: str,
    *,
    run_id: str,
    clock: Clock,
    rationale: str | None = None,
    events: EventBus | None = None,
    gate: WriteGate | None = None,
    manages: Callable[[str, str], bool] | None = None,
) -> dict[str, Any]:
    """Apply a harvest verdict (``promote`` | ``tombstone`` | ``keep``) in one transaction.

    A promotion's copies keep their records' ``provenance.evidence`` (the retired session, as the
    identity's ``derived_from_sessions`` named it), and ``gate`` judges those refs as the harvested
    identity's citation of its own session's key (:class:`~meta_memory.firewall.gate.EvidenceWriterGate`):
    its taint of the key counts, and another identity's when ``manages(realm, identity)`` admits it (the
    caller's managed identities under ``[agent_memory] shared_key_taint = "managed"``, when the caller
    manages the harvested identity too; every identity's when ``None`` or when it does not), so the taint of a key another principal's agent uses neither holds this identity's harvest nor
    tells its reviewers what that agent read.

    Returns ``{identity, retired_at_ms, verdict, promoted, tombstoned, ops}``
    (``ops`` = audit rows written). A harvest that is no longer pending is left
    alone (``ops`` 0, ``skipped`` true).
    """
    if isinstance(gate, LlmWriteGate):
        # bound only for a caller that manages the harvested identity too: a reviewer's dream over an identity
        # it does not drive judges its harvest as a scheduled dream does, every identity's taint counting
        shares = (None if manages is None or not manages(realm, harvest.identity)
                  else (lambda other: manages(realm, other)))
        gate = EvidenceWriterGate(gate, harvest.identity, shares)
    if verdict not in ("promote", "tombstone", "keep"):
        raise ValueError("harvest verdict must be 'promote', 'tombstone' or 'keep'")
    suffix = f": {rationale}" if rationale else ""
    why = f"harvest {verdict} ({harvest.cause}){suffix}"

    with store.transaction(realm) as tx:
        out: dict[str, Any] = {
            "identity": harvest.identity,
            "retired_at_ms": harvest.retired_at_ms,
            "verdict": verdict,
            "promoted": 0,
            "tombstoned": 0,
            "ops": 0,
        }
        if not tx.harvests.mark_harvested(harvest.identity, harvest.retired_at_ms):
            out["skipped"] = True
        else:
            records = [r for r in harvest_records(tx, harvest) if r.status.is_active]
            ops: list[Op] = []
            if verdict == "promote":
                target = Scope.realm_scope(realm)
                seen: set[str] = set()
                for rec in records:
                    if rec.content_hash in seen or tx.active_duplicate(target, rec.content_hash) is not None:
                        continue
                    seen.add(rec.content_hash)
                    copy = copy_of(rec, Provenance(rec.provenance.author, evidence=rec.provenance.evidence))
                    ops.append(CreateOp(scope=target, record=copy, trust=TrustTier.AGENT_OBSERVED,
                                        derived_from=(rec.id,), rationale=why))
            elif verdict == "tombstone":
                ops = [TombstoneOp(id=rec.id, rationale=why) for rec in records]
            if ops:
                batch = StagedBatch(
                    realm=realm, author=Author.steward(run_id), ops=tuple(ops), kind=BatchKind.REVIEW_VERDICT
                )
                tx.apply(batch, gate=gate, token=mint_token("harvest"))
            if verdict != "keep":
                out["promoted" if verdict == "promote" else "tombstoned"] = len(ops)
            out["ops"] = len(ops)
    if not out.get("skipped") and events is not None:
        events.emit(
            "memory.harvest.completed",
            {"realm": realm, "identity": harvest.identity, "promoted": out["promoted"], "tombstoned": out["tombstoned"]},
            identity=harvest.identity,
        )
    return out
