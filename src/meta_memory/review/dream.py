"""The steward's dream: one pass over a realm's review work (reference §9; seed: "Reviewing quarantined records").

``run_dream`` does, in order:

1. expire gated promotions older than seven days (their staged batches are discarded);
2. gather, within per-dream caps: the quarantine queue (records a gated
   promotion waits on are left to the gate), open proposals, pending
   harvests, ``open_loop`` records older than the configured age (not
   escalated by a recent dream) and usage-audit candidates (injected records
   with no open verdict). Nothing to do: ``memory.dream.skipped`` and no run;
3. ``memory.dream.started``; ask the steward (:mod:`meta_memory.review.steward`);
4. apply what it decided, checking every verdict against what was offered:
   ``release`` / ``tombstone`` through the same review operation as an
   operator's (reviewer ``{"kind": "steward", "run_id"}``; a refusal or a
   replay is noted, never retried), ``hold`` changes nothing and emits
   nothing, ``promote_pending_gate`` stages a gated promotion; a steward
   ``accept`` of a tainted proposal is downgraded to a gated promotion;
   harvests are decided; open-loop escalations emit
   ``memory.quarantine.verdict`` {realm, record_id, verdict:
   "open_loop_escalated"}; operational contradictions become ledger conflict
   signals (``memory.conflict.signal``), at most
   :data:`~meta_memory.review.steward.MAX_CONTRADICTIONS` per dream, each
   citing only records the dream offered and signalled on the scope entity of
   one of them (:func:`~meta_memory.review.steward.contradiction_rule`), and
   only when the dream may write the ledger (``may_signal``); usage-audit
   verdicts are stored in ``dream_audit_verdicts``;
5. store the run in ``dream_runs`` (run id, partition, start/end, committed
   ops, detail with per-record verdicts and rationales) and emit
   ``memory.dream.completed``. A steward that cannot answer still completes
   the run, with ``detail.error`` and nothing applied.

Per-record rationales of applied ops are in the audit rows (the review's
rationale); held and refused verdicts are in the run's detail.

Held forgets (:mod:`meta_memory.review.forgets`) are offered with the
quarantine queue (``QuarantineItem.held_forget``): ``tombstone`` approves the
forget, ``release`` keeps the record, through the same review operation.

Three guards keep a steward from spreading or destroying what an injection controls:

- ``gate_releases`` (on for every steward but the policy steward unless
  ``[agent_memory.steward] llm_release = "direct"``): a ``release`` of
  quarantined content becomes a gated promotion into the record's own scope
  (``promote_pending_gate``), which an operator decides through
  ``meta/gating/decide``; the run's detail notes ``downgraded_from_release``.
  Under the same switch a ``tombstone`` of a held forget is not applied: the
  forget stays held for an operator (``meta/memory/quarantine/decide``), and
  the run's detail notes ``hold`` with ``downgraded_from_tombstone``; a
  ``tombstone`` of a harvest is applied as ``keep`` (the retired session's
  records stay active), noted ``keep`` with ``downgraded_from_tombstone``. The one rule is
  :func:`gated_verdict`;
- ``may_signal`` (a dream an RPC caller asked for: the caller's unscoped
  ``ledger.write``): without it no contradiction reaches the assertion
  ledger; each operational one is noted with ``refused: "ledger.write"``;
- ``may_act(scope) -> bool`` (a dream an RPC caller asked for): only records,
  proposals, harvests and promotion targets of scopes the caller may review
  and commit are offered or written; the rest of the realm is left alone.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from meta_memory.agent_memory.hashing import content_hash, mint_token
from meta_memory.agent_memory.model import DAY_MS, Kind, MemoryRecord, Scope
from meta_memory.agent_memory.scope_events import about_scope
from meta_memory.agent_memory.secrets import scan_record
from meta_memory.agent_memory.store.base import AgentMemoryStore, WriteGate
from meta_memory.agent_memory.store.tx import ReadTx
from meta_memory.agent_memory.validator import normalize_record
from meta_memory.clock import Clock
from meta_memory.errors import AgentMemoryError, MetaError, QuarantineReviewRefused
from meta_memory.events.bus import EventBus
from meta_memory.identity import parse_realm
from meta_memory.ledger.ledger import AssertionLedger
from meta_memory.review.config import StewardCaps
from meta_memory.review.harvest import decide_harvest, harvest_records
from meta_memory.review.model import Reviewer, clip_rationale
from meta_memory.review.promotions import (
    USE_STORE_GATE,
    _StoreGate,
    expire_promotions,
    promote_pending_gate,
    write_gate,
)
from meta_memory.review.proposals import _proposal, accept_proposal, hold_proposal, reject_proposal
from meta_memory.review.quarantine import review_quarantined
from meta_memory.review.steward import (
    MAX_CONFLICT_TOPIC_BYTES,
    MAX_CONTRADICTIONS,
    DreamInputs,
    HarvestItem,
    ProposalItem,
    QuarantineItem,
    Steward,
    StewardDecision,
    StewardUnavailable,
    contradiction_rule,
    offered_records,
    scope_entity,
)

__all__ = ["DreamReport", "run_dream", "empty_dream", "gated_verdict", "ESCALATION_MEMORY_RUNS", "NOTHING_TO_REVIEW"]

log = logging.getLogger(__name__)

ESCALATION_MEMORY_RUNS = 50
"""An open loop escalated by one of this many recent dreams is not escalated again."""

NOTHING_TO_REVIEW = "nothing to review"
"""The ``reason`` of a dream that found nothing it may review (skipped)."""

_running: dict[str, threading.Lock] = {}
_running_guard = threading.Lock()


@dataclass(slots=True)
class DreamReport:
    """What a dream did. ``status``: ``completed`` | ``skipped`` (then ``reason``)."""

    realm: str
    run_id: str | None
    status: str
    started_at_ms: int
    completed_at_ms: int
    ops_committed: int = 0
    reason: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """``{realm, run_id, status, reason?, started_at_ms, completed_at_ms, ops_committed, detail}``."""
        out: dict[str, Any] = {"realm": self.realm, "run_id": self.run_id, "status": self.status}
        if self.reason is not None:
            out["reason"] = self.reason
        out.update(
            started_at_ms=self.started_at_ms,
            completed_at_ms=self.completed_at_ms,
            ops_committed=self.ops_committed,
            detail=self.detail,
        )
        return out


def _realm_lock(store: AgentMemoryStore, realm: str) -> threading.Lock:
    key = f"{getattr(store, 'root', id(store))}::{realm}"
    with _running_guard:
        return _running.setdefault(key, threading.Lock())


def run_dream(
    store: AgentMemoryStore,
    realm: str | None,
    steward: Steward,
    *,
    clock: Clock,
    events: EventBus | None = None,
    ledger: AssertionLedger | None = None,
    caps: StewardCaps | None = None,
    open_loop_age_days: int = 14,
    partition: str = "realm",
    gate: WriteGate | None | _StoreGate = USE_STORE_GATE,
    gate_releases: bool | None = None,
    may_act: Callable[[Scope], bool] | None = None,
    may_signal: bool = True,
    manages: Callable[[str, str], bool] | None = None,
) -> DreamReport:
    """Run one dream over ``realm`` with ``steward`` (module doc).

    Args:
        store: the agent-memory store.
        steward: a :class:`~meta_memory.review.steward.Steward`.
        clock: time source (epoch ms).
        events: event bus (``emit``) or ``None``.
        ledger: the :class:`~meta_memory.ledger.AssertionLedger` for conflict signals, or ``None``.
        caps: per-dream caps (defaults: proposals 32, quarantine 16, harvests 4).
        open_loop_age_days: age after which an ``open_loop`` record is escalated.
        partition: the ``dream_runs.partition_label``.
        gate_releases: turn a steward ``release`` of quarantined content into a gated promotion, and
            keep a held forget held for an operator instead of applying a steward ``tombstone`` of it;
            ``None`` = on for every steward whose ``kind`` is not ``"policy"``.
        may_act: the scopes this dream may touch (``None`` = the whole realm: the schedule).
        may_signal: whether operational contradictions may become ledger conflict signals (the
            caller's unscoped ``ledger.write`` for a dream an RPC caller asked for; the schedule may).
        manages: ``manages(realm, identity)``, whether another identity's taint of a session key a
            harvested record cites counts (:func:`~meta_memory.review.harvest.decide_harvest`); ``None``:
            every identity's (the schedule, and every dream but under ``shared_key_taint = "managed"``).

    Returns:
        :class:`DreamReport`. A dream already running for this realm in this
        process makes this one ``skipped``; so does a realm without a database (``nothing to review``),
        which the dream does not create.
    """
    name = parse_realm(realm)
    caps = caps or StewardCaps()
    if gate_releases is None:
        gate_releases = getattr(steward, "kind", None) != "policy"
    allowed: Callable[[Scope], bool] = may_act or (lambda scope: True)
    g = write_gate(store, gate)
    started = clock.now_ms()
    if not store.has_realm(store.realm_name(name)):  # nothing to review, and a dream never creates a realm
        return _skip(name, started, clock, events, NOTHING_TO_REVIEW)
    lock = _realm_lock(store, name)
    if not lock.acquire(blocking=False):
        return _skip(name, started, clock, events, "a dream is already running for this realm")
    try:
        run_id = mint_token("dream")
        expired = expire_promotions(store, name, clock=clock)
        inputs = _gather(store, name, run_id, clock.now_ms(), caps, open_loop_age_days, allowed)
        if inputs.empty:
            report = _skip(name, started, clock, events, NOTHING_TO_REVIEW)
            report.detail = {"expired_promotions": expired} if expired else {}
            return report
        if events is not None:
            events.emit("memory.dream.started", {"realm": name, "run_id": run_id})
        detail: dict[str, Any] = {
            "steward": getattr(steward, "kind", type(steward).__name__),
            "offered": {
                "quarantine": len(inputs.quarantine),
                "proposals": len(inputs.proposals),
                "harvests": len(inputs.harvests),
                "open_loops": len(inputs.open_loops),
                "audit": len(inputs.audit),
            },
            "expired_promotions": expired,
            "verdicts": [],
            "escalated": [],
            "conflicts": [],
            "refused": [],
        }
        ops = 0
        try:
            decision = steward.consolidate(inputs)
        except StewardUnavailable as exc:
            detail["error"] = str(exc)
            decision = None
        except Exception as exc:  # a custom steward failing must not kill the scheduler
            log.exception("steward %s failed", detail["steward"])
            detail["error"] = f"steward failed: {type(exc).__name__}"
            decision = None
        if decision is not None:
            detail["refused"].extend(decision.refused)
            ops = _apply(store, name, run_id, inputs, decision, caps, detail, clock, events,
                         ledger if may_signal else None, g, gate_releases, allowed, may_signal, manages)
        completed = clock.now_ms()
        with store.transaction(name) as tx:
            tx.dream_runs.upsert(run_id, partition, started, completed, ops, detail)
        if events is not None:
            events.emit(
                "memory.dream.completed",
                {"realm": name, "run_id": run_id, "ops_committed": ops, "detail": _event_summary(detail)},
            )
        return DreamReport(name, run_id, "completed", started, completed, ops, None, detail)
    finally:
        lock.release()


def empty_dream(realm: str, clock: Clock) -> DreamReport:
    """The answer of a dream over ``realm`` that may review nothing there, given without reading the realm
    (no event, no lock, no write): what a dream of an empty realm answers (``skipped``, ``nothing to review``)."""
    now = clock.now_ms()
    return DreamReport(realm, None, "skipped", now, now, 0, NOTHING_TO_REVIEW)


def _skip(realm: str, started: int, clock: Clock, events: EventBus | None, reason: str) -> DreamReport:
    if events is not None:
        events.emit("memory.dream.skipped", {"realm": realm, "reason": reason})
    return DreamReport(realm, None, "skipped", started, clock.now_ms(), 0, reason)


def _emit_conflict_signal(events: EventBus, realm: str, entity: str, topic: str, record_ids: Sequence[str],
                          cited: Mapping[str, Scope]) -> None:
    """Publish ``memory.conflict.signal`` ``{realm, entity, topic}`` about the scope of the cited records that
    ``entity`` names (:func:`scope_entity`), so the timeline shows it only to a reader of that scope, as the
    records are: an identity scope's as an event of that identity, another's naming ``scope_kind`` and
    ``scope_key``. Never the steward's reason, which can quote the records (quarantined ones too) and would
    outlive their erase on the timeline: it stays in the ledger and the dream's detail. Nothing is published
    when no cited record's scope is ``entity``'s (the contradiction rule has already refused that)."""
    scope = next((cited[r] for r in record_ids if r in cited and scope_entity(cited[r]) == entity), None)
    _emit_about(events, {"realm": realm, "entity": entity, "topic": topic}, scope, "memory.conflict.signal")


def _emit_about(events: EventBus, data: dict[str, Any], scope: Scope | None, event_type: str) -> None:
    """Publish ``event_type`` with ``data`` about the records of ``scope``, so the timeline shows it to the
    readers of those records alone (:func:`~meta_memory.agent_memory.scope_events.about_scope`). Nothing
    is published for an unknown scope (``None``): fail closed."""
    if scope is None:
        return
    events.emit_many([about_scope(event_type, data, scope)])


def _event_summary(detail: dict[str, Any]) -> dict[str, Any]:
    """Counts only: the timeline never carries rationales or record content."""
    counts: dict[str, int] = {}
    for v in detail["verdicts"]:
        key = f"{v['category']}.{v['verdict']}"
        counts[key] = counts.get(key, 0) + 1
    out: dict[str, Any] = {
        "steward": detail["steward"],
        "verdicts": counts,
        "escalated": len(detail["escalated"]),
        "conflicts": len(detail["conflicts"]),
        "refused": len(detail["refused"]),
        "expired_promotions": len(detail["expired_promotions"]),
    }
    if "error" in detail:
        out["error"] = detail["error"]
    return out


# --------------------------------------------------------------------------- gather


def _offerable(
    tx: ReadTx, ids: Iterable[str], cap: int, *, skip: Callable[[str], object], keep: Callable[[MemoryRecord], bool]
) -> list[MemoryRecord]:
    """Up to ``cap`` records of ``ids`` in order: ids for which ``skip`` is truthy are passed over
    unread, and a record is kept when it exists and ``keep`` accepts it."""
    out: list[MemoryRecord] = []
    for rid in ids:
        if len(out) >= cap:
            break
        if skip(rid):
            continue
        rec = tx.get(rid)
        if rec is not None and keep(rec):
            out.append(rec)
    return out


def _gather(
    store: AgentMemoryStore, realm: str, run_id: str, now: int, caps: StewardCaps, loop_age_days: int,
    allowed: Callable[[Scope], bool],
) -> DreamInputs:
    """What the dream offers its steward, read from one snapshot (no write lock: every decision is
    re-checked in its own write transaction)."""
    with store.snapshot(realm) as tx:
        quarantine: list[QuarantineItem] = []
        # Held forgets take at most half of the quarantine cap, so a flood of them never starves the queue.
        for held in tx.forgets.standing(caps.quarantine * 4 + 16):
            if len(quarantine) >= (caps.quarantine + 1) // 2:
                break
            rec = tx.get(held.memory_id)
            if rec is None or not allowed(rec.scope) or tx.promotions.pending_for(rec.id):
                continue
            quarantine.append(QuarantineItem(rec, held_forget=held.to_json()))
        queue = _offerable(
            tx, tx.queues.quarantined(caps.quarantine * 4 + 16), caps.quarantine - len(quarantine),
            skip=tx.promotions.pending_for, keep=lambda rec: allowed(rec.scope),
        )
        for rec in queue:
            duplicate = tx.active_duplicate(rec.scope, rec.content_hash)
            quarantine.append(
                QuarantineItem(
                    rec,
                    duplicate_of=duplicate.id if duplicate is not None and duplicate.id != rec.id else None,
                    secret_class=scan_record(rec),
                )
            )
        proposals: list[ProposalItem] = []
        for row in tx.proposals.listing(("pending", "held"), caps.proposals * 4 + 16):
            if len(proposals) >= caps.proposals:
                break
            if tx.promotions.pending_for(row.proposal_id):
                continue
            try:
                prop = _proposal(row)
                norm = normalize_record(prop.record)
            except (ValueError, KeyError):
                continue
            if not allowed(prop.scope):
                continue
            dup = tx.active_duplicate(prop.scope, content_hash(norm.title, norm.body))
            proposals.append(ProposalItem(prop, dup.id if dup is not None else None))
        harvests = [
            HarvestItem(h, tuple(harvest_records(tx, h)))
            for h in tx.harvests.pending(caps.harvests * 4 + 16)
            if allowed(Scope.identity(realm, h.identity))
        ][: caps.harvests]
        recently: set[str] = set()
        for run in tx.dream_runs.recent(ESCALATION_MEMORY_RUNS):
            escalated = run.detail.get("escalated", []) if isinstance(run.detail, dict) else []
            recently.update(x for x in escalated if isinstance(x, str))
        queued = {q.record.id for q in quarantine}
        open_loops = _offerable(
            tx, tx.queues.open_loops(now - loop_age_days * DAY_MS, caps.open_loops + len(recently) + 16),
            caps.open_loops, skip=lambda rid: rid in recently or rid in queued,
            keep=lambda rec: rec.kind is Kind.OPEN_LOOP and allowed(rec.scope),
        )
        audit = _offerable(
            tx, tx.queues.audit_candidates(caps.audit * 4 + 16), caps.audit,
            skip=tx.verdicts.has_open, keep=lambda rec: allowed(rec.scope),
        )
        return DreamInputs(
            realm=realm,
            run_id=run_id,
            now_ms=now,
            open_loop_age_days=loop_age_days,
            quarantine=tuple(quarantine),
            proposals=tuple(proposals),
            harvests=tuple(harvests),
            open_loops=tuple(open_loops),
            audit=tuple(audit),
            recently_escalated=frozenset(recently),
        )


# --------------------------------------------------------------------------- apply


class _Targeted(Protocol):
    @property
    def target(self) -> str: ...


_V = TypeVar("_V", bound=_Targeted)
_T = TypeVar("_T")


#: Under the release gate, the steward verdicts that are not applied as given: ``(category, verdict,
#: whether the item is a held forget)`` -> the verdict applied instead. Each keeps what an injection
#: controls from spreading (a release of quarantined content becomes a gated promotion into the record's
#: own scope) or from being destroyed (a held forget stays held; a harvest's records stay active).
_GATED: dict[tuple[str, str, bool], str] = {
    ("quarantine", "release", False): "promote_pending_gate",
    ("quarantine", "tombstone", True): "hold",
    ("harvest", "tombstone", False): "keep",
}


def gated_verdict(category: str, verdict: str, *, held_forget: bool, gate_releases: bool) -> tuple[str, str | None]:
    """The verdict a dream applies for a steward's ``verdict`` on an item of ``category``
    (``"quarantine"`` or ``"harvest"``; ``held_forget``: the quarantine item is a held forget), and the
    run detail's note of a downgrade (``"downgraded_from_<verdict>"``) or ``None``.

    With ``gate_releases`` off (the policy steward, or ``llm_release = "direct"``) every verdict stands.
    With it on: ``release`` of quarantined content -> ``promote_pending_gate``; ``tombstone`` of a held
    forget -> ``hold``; ``tombstone`` of a harvest -> ``keep``; anything else stands."""
    if not gate_releases:
        return verdict, None
    applied = _GATED.get((category, verdict, held_forget))
    return (verdict, None) if applied is None else (applied, f"downgraded_from_{verdict}")


def _note(detail: dict[str, Any], category: str, target: str, verdict: str, rationale: str | None, **extra: Any) -> None:
    entry: dict[str, Any] = {"category": category, "target": target, "verdict": verdict, "rationale": rationale}
    entry.update({k: v for k, v in extra.items() if v is not None})
    detail["verdicts"].append(entry)


def _apply(
    store: AgentMemoryStore,
    realm: str,
    run_id: str,
    inputs: DreamInputs,
    decision: StewardDecision,
    caps: StewardCaps,
    detail: dict[str, Any],
    clock: Clock,
    events: EventBus | None,
    ledger: AssertionLedger | None,
    gate: WriteGate | None,
    gate_releases: bool,
    allowed: Callable[[Scope], bool],
    may_signal: bool = True,
    manages: Callable[[str, str], bool] | None = None,
) -> int:
    ops = 0
    reviewer = Reviewer.steward(run_id)
    offered_q = {q.record.id: q for q in inputs.quarantine}
    offered_p = {p.proposal.proposal_id: p for p in inputs.proposals}
    offered_h = {h.key: h for h in inputs.harvests}
    offered_a = {r.id for r in inputs.audit}
    loops = {r.id for r in inputs.open_loops} | {i for i, q in offered_q.items() if q.record.kind is Kind.OPEN_LOOP}

    def once(seen: set[str], category: str, target: str) -> bool:
        if target in seen:
            detail["refused"].append(f"{category} {target}: more than one verdict; the first one counts")
            return False
        seen.add(target)
        return True

    def offered(verdicts: Sequence[_V], by_target: Mapping[str, _T], category: str) -> Iterator[tuple[_V, _T]]:
        """Each verdict with its offered item; unoffered and repeated targets are refused in ``detail``."""
        seen: set[str] = set()
        for v in verdicts:
            item = by_target.get(v.target)
            if item is None:
                detail["refused"].append(f"{category} {v.target}: not offered to this dream")
            elif once(seen, category, v.target):
                yield v, item

    # Quarantine.
    for v, item in offered(decision.quarantine[: caps.quarantine], offered_q, "quarantine"):
        rec = item.record
        verdict, downgrade = gated_verdict("quarantine", v.verdict, held_forget=item.held_forget is not None,
                                           gate_releases=gate_releases)
        marks = {downgrade: True} if downgrade else {}
        try:
            if verdict in ("release", "tombstone"):
                out = review_quarantined(
                    store, rec.scope, rec.id, verdict, rec.content_hash, v.rationale, reviewer,
                    clock=clock, events=events, gate=gate,
                )
                ops += 0 if not out.applied else (2 if verdict == "release" else 1)
                _note(detail, "quarantine", rec.id, verdict, v.rationale, outcome=out.outcome,
                      successor_id=out.successor_id)
            elif verdict == "promote_pending_gate":
                if downgrade:  # a gated release: into the record's own scope
                    target: Scope | None = rec.scope
                else:
                    if item.held_forget is not None:
                        detail["refused"].append(
                            f"quarantine {rec.id}: a held forget is approved or released, not promoted")
                        continue
                    target = Scope.mob(realm, v.target_mob) if v.target_mob else None
                    if not allowed(target or rec.scope):
                        detail["refused"].append(
                            f"quarantine {rec.id}: the promotion target is not a scope this dream may commit")
                        continue
                staged = promote_pending_gate(
                    store, realm, rec.id, run_id=run_id, clock=clock, target_scope=target, rationale=v.rationale,
                    events=events,
                )
                _note(detail, "quarantine", rec.id, verdict, v.rationale, pending_id=staged.pending_id, **marks)
            elif verdict == "hold":
                # A downgraded tombstone of a held forget: a steward steered by the held record's own
                # session must not destroy it; the forget stays held, for an operator to approve or release.
                forget_id = item.held_forget.get("forget_id") if downgrade and item.held_forget else None
                _note(detail, "quarantine", rec.id, "hold", v.rationale, forget_id=forget_id, **marks)
            else:
                detail["refused"].append(f"quarantine {rec.id}: unknown verdict '{v.verdict}'")
        except QuarantineReviewRefused as exc:
            _note(detail, "quarantine", rec.id, v.verdict, v.rationale, refused=exc.reason)
        except (AgentMemoryError, ValueError) as exc:
            _note(detail, "quarantine", rec.id, v.verdict, v.rationale, error=str(exc))

    # Proposals.
    for v, proposal_item in offered(decision.proposals[: caps.proposals], offered_p, "proposal"):
        verdict = v.verdict
        downgraded = None
        if verdict == "accept" and proposal_item.proposal.tainted:
            verdict, downgraded = "promote_pending_gate", True
        try:
            if verdict == "accept":
                acc = accept_proposal(store, realm, v.target, reviewer, v.rationale, events=events, gate=gate)
                ops += 1 if acc.created else 0
                _note(detail, "proposal", v.target, verdict, v.rationale, record_id=acc.record_id)
            elif verdict == "reject":
                reject_proposal(store, realm, v.target)
                _note(detail, "proposal", v.target, verdict, v.rationale)
            elif verdict == "hold":
                hold_proposal(store, realm, v.target)
                _note(detail, "proposal", v.target, verdict, v.rationale)
            elif verdict == "promote_pending_gate":
                staged = promote_pending_gate(
                    store, realm, v.target, run_id=run_id, clock=clock, rationale=v.rationale, events=events
                )
                _note(detail, "proposal", v.target, verdict, v.rationale, pending_id=staged.pending_id,
                      downgraded_from_accept=downgraded)
            else:
                detail["refused"].append(f"proposal {v.target}: unknown verdict '{verdict}'")
        except (AgentMemoryError, ValueError) as exc:
            _note(detail, "proposal", v.target, verdict, v.rationale, error=str(exc))

    # Harvests.
    for v, harvest_item in offered(decision.harvests[: caps.harvests], offered_h, "harvest"):
        if v.verdict == "promote" and not allowed(Scope.realm_scope(realm)):
            detail["refused"].append(f"harvest {v.target}: promoting into realm scope is not allowed to this dream")
            continue
        # Under the release gate a steward that reads injected text must not destroy a retired session's
        # records either (their held forgets, if any, stay held for an operator).
        verdict, downgrade = gated_verdict("harvest", v.verdict, held_forget=False, gate_releases=gate_releases)
        try:
            res = decide_harvest(
                store, realm, harvest_item.harvest, verdict, run_id=run_id, clock=clock, rationale=v.rationale,
                events=events, gate=gate, manages=manages,
            )
            ops += res["ops"]
            if downgrade:
                _note(detail, "harvest", v.target, verdict, v.rationale, promoted=0, tombstoned=0, **{downgrade: True})
            else:
                _note(detail, "harvest", v.target, verdict, v.rationale, promoted=res["promoted"],
                      tombstoned=res["tombstoned"])
        except (AgentMemoryError, ValueError) as exc:
            _note(detail, "harvest", v.target, v.verdict, v.rationale, error=str(exc))

    # Every offered record's scope: the open-loop nudges are published about it, contradictions cite by it.
    cited = offered_records(inputs)

    # Open-loop escalations: the event names only the record.
    seen: set[str] = set()
    for v in decision.escalations[: caps.open_loops]:
        if v.target not in loops:
            detail["refused"].append(f"open loop {v.target}: not offered to this dream")
            continue
        if v.target in inputs.recently_escalated:
            continue
        if not once(seen, "open loop", v.target):
            continue
        detail["escalated"].append(v.target)
        _note(detail, "open_loop", v.target, "open_loop_escalated", v.rationale)
        if events is not None:
            _emit_about(events, {"realm": realm, "record_id": v.target, "verdict": "open_loop_escalated"},
                        cited.get(v.target), "memory.quarantine.verdict")

    # Contradictions: operational ones become conflict signals in the assertion ledger, bounded in
    # number and confined to the scopes of the records they cite (any steward, not only a parsed reply).
    if len(decision.contradictions) > MAX_CONTRADICTIONS:
        detail["refused"].append(f"contradictions: {len(decision.contradictions) - MAX_CONTRADICTIONS} beyond "
                                 f"the cap of {MAX_CONTRADICTIONS} per dream were dropped")
    for i, c in enumerate(decision.contradictions[:MAX_CONTRADICTIONS]):
        rule = contradiction_rule(c, cited)
        if rule is not None:
            detail["refused"].append(f"contradiction {i}: {rule}")
            continue
        # a custom steward's texts are bounded here as a parsed reply's are
        reason = clip_rationale(c.reason)
        entry: dict[str, Any] = {"record_ids": list(c.record_ids), "operational": c.operational,
                                 "entity": clip_rationale(c.entity, MAX_CONFLICT_TOPIC_BYTES),
                                 "topic": clip_rationale(c.topic, MAX_CONFLICT_TOPIC_BYTES), "reason": reason,
                                 "signalled": False}
        if c.dropped_ids:
            entry["dropped_record_ids"] = c.dropped_ids
        if c.operational and not may_signal:
            entry["refused"] = "ledger.write"
        elif c.operational and ledger is not None and c.entity and c.topic:
            from meta_memory.ledger.errors import LedgerValidationError
            from meta_memory.ledger.model import IndexRequest

            try:
                result = ledger.index(
                    IndexRequest(entity=c.entity, topic=c.topic, conflict=True, conflict_reason=reason)
                )
                entry["signalled"] = True
                if events is not None:
                    _emit_conflict_signal(events, realm, result.entity, result.topic, c.record_ids, cited)
            except LedgerValidationError as exc:
                entry["error"] = f"Invalid params: {exc.rule}"
            except MetaError as exc:
                entry["error"] = exc.message
        detail["conflicts"].append(entry)

    # Usage-audit verdicts, stored for operator action.
    audit_seen: set[str] = set()
    rows = []
    for v in decision.audit[: caps.audit]:
        if v.target not in offered_a:
            detail["refused"].append(f"usage audit {v.target}: not offered to this dream")
            continue
        if not once(audit_seen, "usage audit", v.target):
            continue
        rows.append(v)
        _note(detail, "usage_audit", v.target, v.verdict, v.rationale)
    if rows:
        now = clock.now_ms()

        with store.transaction(realm) as tx:
            for v in rows:
                tx.verdicts.upsert(run_id, v.target, v.verdict, v.rationale, now)
    return ops
