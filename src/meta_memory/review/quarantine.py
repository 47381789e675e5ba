"""Quarantine review: ``meta/memory/quarantine/decide`` (seed: "Reviewing quarantined records"; reference §6).

A decision is ONE store transaction: read the record, check it, expire or
invalidate gated promotions, and apply the verdict as a ``review_verdict``
staged batch through the same validator as every other write. Only an applied
decision changes anything; a refusal or a replay writes nothing.

Check order (the first failing check answers):

1. the record is missing, lives in another scope, or its realm has no database (which is not
   created) -> ``not_found``;
2. its content hash is not ``expected_content_hash`` -> ``content_mismatch`` (``field``:
   ``expected_content_hash``);
3. tombstoned -> the replay path (below); not quarantined -> ``not_quarantined``;
4. pending gated promotions of the record: older than seven days -> expired
   here (``expired_promotions``); an operator's tombstone -> invalidated here
   (``invalidated_promotions``); otherwise -> ``gate_pending`` (+ ``expires_at_ms``);
5. release only: a secret in the content -> ``secret_detected`` (+ ``class``);
   a quarantined update whose prior is no longer active -> ``stale_update``;
   another record holding ``<id>-released`` -> ``successor_conflict``.

A release whose content an active record of the same scope already holds (same
content hash: the content was written again, trusted, while this copy waited)
is a merge: no successor is written, the origin is tombstoned (one
``Tombstone`` op whose ``detail.review`` names ``duplicate_of``), and the
answer is ``released`` with ``successor`` the existing active record and
``duplicate_of`` its id. Exact-content duplicates stay one active record, as
``remember`` and ``proposals/accept`` keep them; a quarantined update merged so
leaves its prior as it stands. Steps ``stale_update`` and
``successor_conflict`` do not apply to a merge.

Release writes the successor first (``Create`` of ``<id>-released`` at
``agent_observed``, ``derived_from [origin]``, or ``Supersede`` of the prior
for a quarantined update), then tombstones the origin. Tombstone writes one
``Tombstone`` op. Every op's audit row carries ``detail.review``.

Replay: a tombstoned origin whose tombstone audit row carries this origin's
review answers ``already_released`` / ``already_tombstoned`` (same verdict) or
``not_quarantined`` (other verdict, or no review evidence: a plain forget is
not a review).

Held forgets (:mod:`meta_memory.review.forgets`): a record that is not
quarantined but has a held forget is decided here too, after the same checks 1
and 2 (scope, content hash). ``tombstone`` approves the forget (one
``Tombstone`` op, after step 4's promotion settlement); ``release`` keeps the
record and writes one ``forget_released`` audit row. Either way the held
forget is resolved with the decision, the review carries ``subject:
"forget"``, ``forget_id`` and ``requested_by`` (``origin_quarantine_reason`` is
the hold reason), and the result carries ``forget``. A repeated ``release``
answers ``already_released`` from the resolved held forget; a repeated
``tombstone`` replays from the tombstone's audit row like any other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from meta_memory.agent_memory.batch import BatchKind, CreateOp, Op, StagedBatch, SupersedeOp, TombstoneOp
from meta_memory.agent_memory.hashing import mint_token
from meta_memory.agent_memory.model import (
    MemoryRecord,
    Provenance,
    Scope,
    ScopeKind,
    StatusKind,
    TrustTier,
)
from meta_memory.agent_memory.secrets import scan_record
from meta_memory.agent_memory.store.base import AgentMemoryStore, WriteGate
from meta_memory.agent_memory.store.tables import HeldForgetRow
from meta_memory.agent_memory.store.tx import ReadTx, WriteTx
from meta_memory.clock import Clock
from meta_memory.errors import AgentMemoryError, QuarantineReviewRefused, echo
from meta_memory.events.bus import EventBus
from meta_memory.identity import parse_identity, parse_realm
from meta_memory.review.forgets import FORGET_SUBJECT
from meta_memory.review.model import PROMOTION_EXPIRY_MS, Reviewer, copy_of, receipt
from meta_memory.review.promotions import USE_STORE_GATE, _StoreGate, write_gate

__all__ = [
    "RELEASE",
    "TOMBSTONE",
    "VERDICTS",
    "ReviewOutcome",
    "decide",
    "review_quarantined",
    "successor_id",
]

RELEASE = "release"
TOMBSTONE = "tombstone"
VERDICTS = (RELEASE, TOMBSTONE)
#: The ``not_found`` refusal's detail: a record missing, of another scope, or of a realm nobody wrote to.
NOT_FOUND = "no such memory record in this scope"



def successor_id(origin_id: str) -> str:
    """The id a release gives the successor: ``<origin>-released``."""
    return f"{origin_id}-released"


@dataclass(frozen=True, slots=True)
class ReviewOutcome:
    """The answer of a decision (applied or replayed).

    ``outcome``: ``released`` | ``tombstoned`` | ``already_released`` |
    ``already_tombstoned``. ``origin``/``successor``/``superseded_prior`` are
    receipts (:func:`meta_memory.review.model.receipt`) of the records as they
    stand now. ``decision`` = ``{audit_token, decided_at_ms, review}``.
    ``applied`` is false for a replay (nothing was written).
    """

    outcome: str
    realm: str
    verdict: str
    origin: dict[str, Any]
    successor: dict[str, Any] | None
    decision: dict[str, Any]
    superseded_prior: dict[str, Any] | None = None
    applied: bool = True
    forget: dict[str, Any] | None = None
    duplicate_of: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Wire shape ``{outcome, origin, successor, superseded_prior?, duplicate_of?, forget?, decision}``;
        ``duplicate_of`` (the id of the active record already holding the content, also ``successor``)
        only for a release merged into it; ``forget`` (the held forget decided: ``{forget_id, memory_id,
        requested_by, reason, status, ...}``) only for a decision about a held forget."""
        out: dict[str, Any] = {"outcome": self.outcome, "origin": self.origin, "successor": self.successor}
        if self.superseded_prior is not None:
            out["superseded_prior"] = self.superseded_prior
        if self.duplicate_of is not None:
            out["duplicate_of"] = self.duplicate_of
        if self.forget is not None:
            out["forget"] = self.forget
        out["decision"] = self.decision
        return out

    @property
    def record_id(self) -> str:
        return str(self.origin["memory_id"])

    @property
    def successor_id(self) -> str | None:
        return None if self.successor is None else str(self.successor["memory_id"])


def _refuse(reason: str, detail: str, **extra: Any) -> QuarantineReviewRefused:
    return QuarantineReviewRefused(reason, detail, **extra)


def decide(
    store: AgentMemoryStore,
    realm: str | None,
    identity: str,
    memory_id: str,
    verdict: str,
    expected_content_hash: str,
    rationale: str | None,
    reviewer: Reviewer,
    *,
    clock: Clock,
    events: EventBus | None = None,
    gate: WriteGate | None | _StoreGate = USE_STORE_GATE,
) -> ReviewOutcome:
    """Decide a quarantined record of ``identity``'s scope (``meta/memory/quarantine/decide``).

    Args:
        store: the agent-memory store.
        realm: realm name (``None`` = ``"default"``).
        identity: the identity whose scope holds the record (logical identity).
        memory_id: the quarantined record.
        verdict: ``"release"`` or ``"tombstone"``.
        expected_content_hash: the content hash the reviewer read.
        rationale: optional free text (already trimmed and <= 400 bytes).
        reviewer: the authenticated operator (or ``Reviewer.operator(None)``) or a steward run.
        clock: time source for promotion expiry (epoch ms).
        events: an :class:`~meta_memory.events.bus.EventBus` (or ``None``).
        gate: write gate for the batch; default the store's own gate.

    Returns:
        :class:`ReviewOutcome`.

    Raises:
        QuarantineReviewRefused: -32043 with ``reason`` (module doc).
        AgentMemoryError: the validator refused the batch, or the store failed.

    Events (after commit only): ``memory.quarantine.verdict`` {realm, record_id,
    verdict, successor_id, duplicate_of?} (``duplicate_of`` for a release merged into
    an active record holding the same content); on a ``secret_detected`` refusal
    ``memory.quarantine.release_blocked`` {realm, record_id, verdict, class}.
    """
    name = parse_realm(realm)
    scope = Scope.identity(name, parse_identity(identity))
    return review_quarantined(
        store, scope, memory_id, verdict, expected_content_hash, rationale, reviewer, clock=clock, events=events, gate=gate
    )


def review_quarantined(
    store: AgentMemoryStore,
    scope: Scope,
    memory_id: str,
    verdict: str,
    expected_content_hash: str,
    rationale: str | None,
    reviewer: Reviewer,
    *,
    clock: Clock,
    events: EventBus | None = None,
    gate: WriteGate | None | _StoreGate = USE_STORE_GATE,
) -> ReviewOutcome:
    """The review operation for a record of any ``scope`` (the steward reviews mob/operator/realm records too).

    Same contract as :func:`decide`, which binds ``scope`` to an identity.
    """
    if verdict not in VERDICTS:
        raise ValueError(f"verdict must be 'release' or 'tombstone' (got '{echo(str(verdict))}')")
    g = write_gate(store, gate)
    if not store.has_realm(store.realm_name(scope.realm)):  # no record there, and a decision creates no realm
        raise _refuse("not_found", NOT_FOUND)
    try:
        with store.transaction(scope.realm) as tx:
            outcome = _review_in_tx(
                tx, scope, memory_id, verdict, expected_content_hash, rationale, reviewer, clock.now_ms(), g
            )
    except QuarantineReviewRefused as exc:
        if exc.reason == "secret_detected" and events is not None:
            events.emit(
                "memory.quarantine.release_blocked",
                {"realm": scope.realm, "record_id": memory_id, "verdict": verdict, "class": exc.data.get("class")},
                identity=_event_identity(scope),
            )
        raise
    if outcome.applied and events is not None:
        data = {
            "realm": scope.realm,
            "record_id": outcome.record_id,
            "verdict": verdict,
            "successor_id": outcome.successor_id,
        }
        if outcome.forget is not None:
            data["subject"] = FORGET_SUBJECT
        if outcome.duplicate_of is not None:
            data["duplicate_of"] = outcome.duplicate_of
        events.emit("memory.quarantine.verdict", data, identity=_event_identity(scope))
    return outcome


def _event_identity(scope: Scope) -> str | None:
    return scope.key if scope.kind is ScopeKind.IDENTITY else None


def _review_in_tx(
    tx: WriteTx,
    scope: Scope,
    memory_id: str,
    verdict: str,
    expected_hash: str,
    rationale: str | None,
    reviewer: Reviewer,
    now_ms: int,
    gate: WriteGate | None,
) -> ReviewOutcome:
    origin: MemoryRecord | None = tx.get(memory_id)
    if origin is None or origin.scope != scope:
        raise _refuse("not_found", NOT_FOUND)
    if origin.content_hash != expected_hash:
        raise _refuse("content_mismatch", "the record's content is not the content that was reviewed",
                      field="expected_content_hash")
    status = origin.status.kind
    if status is StatusKind.TOMBSTONED:
        return _replay(tx, origin, verdict)
    if status is not StatusKind.QUARANTINED:
        held = tx.forgets.pending_for(origin.id)
        if held is not None:
            return _decide_forget(tx, origin, held, verdict, expected_hash, rationale, reviewer, now_ms, gate)
        return _replay_forget_release(tx, origin, verdict)

    expired, invalidated = _settle_promotions(tx, origin.id, verdict, reviewer, now_ms)

    succ_id = successor_id(origin.id)
    duplicate: MemoryRecord | None = None
    if verdict == RELEASE:
        secret_class = scan_record(origin)
        if secret_class is not None:
            raise _refuse(
                "secret_detected",
                f"release refused: content matches the '{secret_class}' secret pattern class; "
                "tombstone is the only exit",
                **{"class": secret_class},
            )
        duplicate = tx.active_duplicate(origin.scope, origin.content_hash)
        if duplicate is not None:
            return _merge_release(tx, origin, duplicate, expected_hash, rationale, reviewer, expired, invalidated, gate)
        if origin.supersedes is not None:
            prior = tx.get(origin.supersedes)
            if prior is None or not prior.status.is_active:
                state = "missing" if prior is None else prior.status.kind.value
                raise _refuse(
                    "stale_update",
                    f"release refused: this quarantined update's prior '{origin.supersedes}' is {state}, not active",
                    prior=origin.supersedes,
                )
        if tx.get(succ_id) is not None:
            raise _refuse(
                "successor_conflict", f"another record already holds the release successor id '{succ_id}'"
            )

    review = _review_detail(verdict, reviewer, origin, expected_hash, expired, invalidated, rationale,
                            successor=succ_id if verdict == RELEASE else None)

    who = "operator " if reviewer.is_operator else ""
    suffix = f": {rationale}" if rationale else ""
    if verdict == RELEASE:
        copy = copy_of(origin, Provenance(
            author=origin.provenance.author,
            evidence=(),
            profile=origin.provenance.profile,
            verification=origin.provenance.verification,
        ))
        release_rationale = f"{who}quarantine release{suffix}"
        first: CreateOp | SupersedeOp
        if origin.supersedes is not None:
            first = SupersedeOp(
                prior=origin.supersedes,
                record=copy,
                trust=TrustTier.AGENT_OBSERVED,
                id=succ_id,
                derived_from=(origin.id,),
                rationale=release_rationale,
            )
        else:
            first = CreateOp(
                scope=origin.scope,
                record=copy,
                trust=TrustTier.AGENT_OBSERVED,
                id=succ_id,
                derived_from=(origin.id,),
                rationale=release_rationale,
            )
        ops: tuple[Op, ...] = (first, TombstoneOp(id=origin.id, rationale=f"superseded by {who}quarantine release"))
    else:
        ops = (TombstoneOp(id=origin.id, rationale=f"{who}quarantine tombstone{suffix}"),)

    batch = StagedBatch(
        realm=scope.realm, author=reviewer.author(), ops=ops, kind=BatchKind.REVIEW_VERDICT, review=review
    )
    applied = tx.apply(batch, gate=gate, token=mint_token("review"))
    records = applied.records
    prior_receipt = None
    if verdict == RELEASE and origin.supersedes is not None and origin.supersedes in records:
        prior_receipt = receipt(records[origin.supersedes])
    return ReviewOutcome(
        outcome="released" if verdict == RELEASE else "tombstoned",
        realm=scope.realm,
        verdict=verdict,
        origin=receipt(records[origin.id]),
        successor=receipt(records[succ_id]) if verdict == RELEASE else None,
        superseded_prior=prior_receipt,
        decision={"audit_token": applied.token, "decided_at_ms": applied.applied_at_ms, "review": review},
    )



def _review_detail(verdict: str, reviewer: Reviewer, origin: MemoryRecord, expected_hash: str, expired: list[str],
                   invalidated: list[str], rationale: str | None, *, successor: str | None = None,
                   duplicate_of: str | None = None) -> dict[str, Any]:
    """The ``review`` detail a decision's batch carries (its audit row and the tombstone's detail): the verdict,
    the reviewer, the origin, the successor (a release's) and the existing record it was merged into, the
    content hash the reviewer saw, the quarantine reason, the promotions it expired or invalidated, the
    rationale."""
    review: dict[str, Any] = {"verdict": verdict, "reviewer": reviewer.to_json(), "origin": origin.id}
    if successor is not None:
        review["successor"] = successor
    if duplicate_of is not None:
        review["duplicate_of"] = duplicate_of
    review["expected_content_hash"] = expected_hash
    review["origin_quarantine_reason"] = origin.status.detail
    return _with_outcomes(review, expired, invalidated, rationale)


def _with_outcomes(review: dict[str, Any], expired: list[str], invalidated: list[str],
                   rationale: str | None) -> dict[str, Any]:
    """``review`` with the promotions a decision expired or invalidated and its rationale, those it has."""
    if expired:
        review["expired_promotions"] = expired
    if invalidated:
        review["invalidated_promotions"] = invalidated
    if rationale:
        review["rationale"] = rationale
    return review

def _merge_release(
    tx: WriteTx,
    origin: MemoryRecord,
    duplicate: MemoryRecord,
    expected_hash: str,
    rationale: str | None,
    reviewer: Reviewer,
    expired: list[str],
    invalidated: list[str],
    gate: WriteGate | None,
) -> ReviewOutcome:
    """Release ``origin`` into ``duplicate``, the active record of its scope already holding its content:
    tombstone the origin (one op, ``detail.review.duplicate_of``) and answer the existing record."""
    review = _review_detail(RELEASE, reviewer, origin, expected_hash, expired, invalidated, rationale,
                            successor=duplicate.id, duplicate_of=duplicate.id)
    who = "operator " if reviewer.is_operator else ""
    suffix = f": {rationale}" if rationale else ""
    op = TombstoneOp(id=origin.id, rationale=f"{who}quarantine release merged into active '{duplicate.id}'{suffix}")
    batch = StagedBatch(
        realm=origin.scope.realm, author=reviewer.author(), ops=(op,), kind=BatchKind.REVIEW_VERDICT, review=review
    )
    applied = tx.apply(batch, gate=gate, token=mint_token("review"))
    standing = tx.get(duplicate.id) or duplicate
    return ReviewOutcome(
        outcome="released",
        realm=origin.scope.realm,
        verdict=RELEASE,
        origin=receipt(applied.records[origin.id]),
        successor=receipt(standing),
        decision={"audit_token": applied.token, "decided_at_ms": applied.applied_at_ms, "review": review},
        duplicate_of=duplicate.id,
    )


def _decide_forget(
    tx: WriteTx,
    origin: MemoryRecord,
    held: HeldForgetRow,
    verdict: str,
    expected_hash: str,
    rationale: str | None,
    reviewer: Reviewer,
    now_ms: int,
    gate: WriteGate | None,
) -> ReviewOutcome:
    """Approve (``tombstone``) or release (``release``) a held forget of a standing record."""
    review: dict[str, Any] = {
        "verdict": verdict,
        "reviewer": reviewer.to_json(),
        "origin": origin.id,
        "subject": FORGET_SUBJECT,
        "forget_id": held.forget_id,
        "requested_by": held.author,
        "expected_content_hash": expected_hash,
        "origin_quarantine_reason": held.reason,
    }
    who = "operator " if reviewer.is_operator else ""
    suffix = f": {rationale}" if rationale else ""
    if verdict == TOMBSTONE:
        expired, invalidated = _settle_promotions(tx, origin.id, verdict, reviewer, now_ms)
        _with_outcomes(review, expired, invalidated, rationale)
        batch = StagedBatch(
            realm=origin.scope.realm,
            author=reviewer.author(),
            ops=(TombstoneOp(id=origin.id, rationale=f"{who}approved held forget{suffix}"),),
            kind=BatchKind.REVIEW_VERDICT,
            review=review,
        )
        applied = tx.apply(batch, gate=gate, token=mint_token("review"))
        decision = {"audit_token": applied.token, "decided_at_ms": applied.applied_at_ms, "review": review}
        tx.forgets.resolve(held.forget_id, "tombstoned", applied.applied_at_ms, decision)
        record = applied.records[origin.id]
        outcome = "tombstoned"
    else:
        _with_outcomes(review, [], [], rationale)
        token = mint_token("review")
        detail = {
            "op": "forget_released",
            "author": reviewer.author().to_json(),
            "rationale": f"{who}released from held forget{suffix}",
            "quarantined": None,
            "review": review,
        }
        tx.audit.append(token, 0, "forget_released", origin.id, detail, now_ms)
        decision = {"audit_token": token, "decided_at_ms": now_ms, "review": review}
        tx.forgets.resolve(held.forget_id, "released", now_ms, decision)
        record = origin
        outcome = "released"
    forget = {**held.to_json(), "status": "tombstoned" if verdict == TOMBSTONE else "released"}
    return ReviewOutcome(
        outcome=outcome,
        realm=origin.scope.realm,
        verdict=verdict,
        origin=receipt(record),
        successor=None,
        decision=decision,
        forget=forget,
    )


def _replay_forget_release(tx: ReadTx, origin: MemoryRecord, verdict: str) -> ReviewOutcome:
    """A standing record without a held forget: replay a released hold, else ``not_quarantined``."""
    status = origin.status.kind.value
    resolved = tx.forgets.latest_resolved(origin.id)
    if resolved is None or resolved.status != "released" or resolved.decision is None:
        raise _refuse("not_quarantined", f"record is {status}, not quarantined", status=status)
    if verdict != RELEASE:
        raise _refuse(
            "not_quarantined",
            f"record is {status}, not quarantined: its held forget '{resolved.forget_id}' was released",
            status=status,
        )
    return ReviewOutcome(
        outcome="already_released",
        realm=origin.scope.realm,
        verdict=verdict,
        origin=receipt(origin),
        successor=None,
        decision=resolved.decision,
        applied=False,
        forget=resolved.to_json(),
    )


def _settle_promotions(
    tx: WriteTx, record_id: str, verdict: str, reviewer: Reviewer, now_ms: int
) -> tuple[list[str], list[str]]:
    """Expire old promotions, invalidate them for an operator tombstone, else refuse ``gate_pending``."""
    expired: list[str] = []
    invalidated: list[str] = []
    for promo in tx.promotions.pending_for(record_id):
        expires_at = promo.created_at_ms + PROMOTION_EXPIRY_MS
        if now_ms >= expires_at:
            target = expired
        elif verdict == TOMBSTONE and reviewer.is_operator:
            target = invalidated
        else:
            raise _refuse(
                "gate_pending",
                f"a gated promotion of this record awaits a gating decision ('{promo.pending_id}'); "
                f"it expires at {expires_at} ms",
                expires_at_ms=expires_at,
                pending_id=promo.pending_id,
            )
        tx.promotions.resolve(promo.pending_id, "expired", now_ms)
        tx.unstage(promo.stage_token)
        target.append(promo.pending_id)
    return expired, invalidated


def _replay(tx: ReadTx, origin: MemoryRecord, verdict: str) -> ReviewOutcome:
    """Answer a repeated decision from the review's own audit evidence; writes nothing."""
    evidence = None
    for row in tx.audit.tombstones_of(origin.id):
        review = row.detail.get("review")
        if isinstance(review, dict) and review.get("origin") == origin.id:
            evidence = row
            break
    if evidence is None:
        raise _refuse("not_quarantined", "record is tombstoned, not quarantined", status="tombstoned")
    review = evidence.detail["review"]
    recorded = review.get("verdict")
    succ_id = review.get("successor") if recorded == RELEASE else None
    if recorded != verdict:
        # say what the review decided first: "record is tombstoned" alone would read as a discard done already
        if recorded == RELEASE:
            raise _refuse(
                "not_quarantined",
                f"record was already released as '{succ_id}' (the quarantined original is kept tombstoned), so "
                f"it can no longer be discarded; forget '{succ_id}' to remove the released content",
                status="tombstoned",
                released_as=succ_id,
            )
        raise _refuse("not_quarantined", "record was already discarded (tombstoned by a quarantine review), so it "
                      "can no longer be released", status="tombstoned")
    decision = {"audit_token": evidence.stage_token, "decided_at_ms": evidence.applied_at_ms, "review": review}
    if recorded == TOMBSTONE:
        return ReviewOutcome(
            outcome="already_tombstoned",
            realm=origin.scope.realm,
            verdict=verdict,
            origin=receipt(origin),
            successor=None,
            decision=decision,
            applied=False,
        )
    first = tx.audit.at(evidence.stage_token, 0)
    successor = tx.get(succ_id) if isinstance(succ_id, str) else None
    merged = review.get("duplicate_of")
    problem = None
    if merged is not None:
        if merged != succ_id or first is None or first.memory_id != origin.id or first.op_kind != "tombstone":
            problem = "the merged release's evidence does not match its tombstone"
        elif successor is None:
            problem = f"merged-into record '{succ_id}' is missing"
        elif successor.scope != origin.scope:
            problem = f"merged-into record '{succ_id}' is in another scope"
        elif successor.content_hash != origin.content_hash:
            problem = f"merged-into record '{succ_id}' holds different content"
    elif first is None or first.memory_id != succ_id or first.op_kind not in ("create", "supersede"):
        problem = "the successor was not written by the review's first op"
    elif successor is None:
        problem = f"successor '{succ_id}' is missing"
    elif successor.scope != origin.scope:
        problem = f"successor '{succ_id}' is in another scope"
    elif successor.derived_from != (origin.id,):
        problem = f"successor '{succ_id}' does not derive from the origin alone"
    elif successor.content_hash != origin.content_hash:
        problem = f"successor '{succ_id}' holds different content"
    if problem is not None or successor is None:
        raise AgentMemoryError("io", f"quarantine review evidence for '{origin.id}' is inconsistent: {problem}")
    return ReviewOutcome(
        outcome="already_released",
        realm=origin.scope.realm,
        verdict=verdict,
        origin=receipt(origin),
        successor=receipt(successor),
        decision=decision,
        applied=False,
        duplicate_of=succ_id if merged is not None else None,
    )
