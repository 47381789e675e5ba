"""Quarantine review: outcomes, refusals, replays, promotions, the taint ceiling (seed: "Reviewing quarantined records")."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.batch import CreateOp, RetierOp, StagedBatch, SupersedeOp
from meta_memory.agent_memory.hashing import content_hash
from meta_memory.agent_memory.model import Author, NewMemoryRecord, Provenance, Scope, TrustTier
from meta_memory.errors import AgentMemoryError, QuarantineReviewRefused
from meta_memory.recall import fts
from meta_memory.review.model import PROMOTION_EXPIRY_MS, Reviewer
from meta_memory.review.promotions import gating_decide, promote_pending_gate
from meta_memory.review.quarantine import decide
from support import raw_rows, raw_write

from .conftest import IDENTITY, REALM, Env

OPERATOR = Reviewer.operator("ana")


def run(env: Env, rec: Any, verdict: str, *, reviewer: Reviewer = OPERATOR, rationale: str | None = None,
        expected: str | None = None, identity: str = IDENTITY) -> Any:
    return decide(
        env.store, REALM, identity, rec.id, verdict, expected or rec.content_hash, rationale, reviewer,
        clock=env.clock, events=env.events,
    )


def refused(env: Env, rec: Any, verdict: str, **kw: Any) -> QuarantineReviewRefused:
    with pytest.raises(QuarantineReviewRefused) as info:
        run(env, rec, verdict, **kw)
    err = info.value
    assert err.to_jsonrpc()["code"] == -32043
    assert err.to_jsonrpc()["data"]["kind"] == "memory_quarantine_review_refused"
    assert err.to_jsonrpc()["data"]["reason"] == err.reason
    return err


def recall(env: Env, text: str, identity: str = IDENTITY) -> list[str]:
    expr = fts.match_expression(text)
    assert expr
    return [r.id for r, _ in env.store.search(REALM, env.scope(identity), expr, 10)]


def quarantined_update(env: Env) -> tuple[Any, Any]:
    """A clean prior and an agent's update of it, which the tainted session lands quarantined."""
    prior = env.clean("Meeting day", "Standup is on Monday.")
    update = record_writes.supersede(env.store,
        REALM, env.scope(), prior.id,
        NewMemoryRecord(title="Meeting day", body="Standup moved to Tuesday.", provenance=Provenance(Author.agent(IDENTITY))),
        Author.agent(IDENTITY),
    )
    return prior, update


# ----------------------------------------------------------------------------- release


def test_release_creates_successor_and_tombstones_origin(env: Env) -> None:
    origin = env.poisoned()
    assert recall(env, "weekly summaries") == []
    env.clock.advance(5_000)
    out = run(env, origin, "release", rationale="confirmed with the reader")
    d = out.to_dict()
    assert d["outcome"] == "released"
    succ_id = f"{origin.id}-released"
    assert d["successor"]["memory_id"] == succ_id
    assert d["successor"]["status"] == {"status": "active"}
    assert d["successor"]["trust"] == "agent_observed"
    assert d["successor"]["ever_quarantined"] is True
    assert d["successor"]["derived_from"] == [origin.id]
    assert d["successor"]["content_hash"] == origin.content_hash
    assert d["origin"]["status"] == {"status": "tombstoned"}
    assert "superseded_prior" not in d
    review = d["decision"]["review"]
    assert review == {
        "verdict": "release",
        "reviewer": {"kind": "operator", "principal": "ana"},
        "origin": origin.id,
        "successor": succ_id,
        "expected_content_hash": origin.content_hash,
        "origin_quarantine_reason": "session tainted by web tool 'web_search'",
        "rationale": "confirmed with the reader",
    }
    assert d["decision"]["decided_at_ms"] == env.clock.now_ms()
    assert d["decision"]["audit_token"].startswith("review-")
    # Nothing deleted: the original keeps body, provenance, timestamps.
    kept = env.store.get(REALM, origin.id)
    assert kept.body == origin.body and kept.created_at_ms == origin.created_at_ms
    assert kept.provenance == origin.provenance
    # The successor is ordinary memory: recalled and active.
    assert recall(env, "weekly summaries") == [succ_id]
    assert [r.id for r in env.store.active_records(REALM, env.scope())] == [succ_id]
    # One audit row per op, both carrying the review; successor first.
    rows = [r for r in env.audit() if r["stage_token"] == d["decision"]["audit_token"]]
    assert [(r["op_index"], r["op_kind"], r["memory_id"]) for r in rows] == [
        (0, "create", succ_id),
        (1, "tombstone", origin.id),
    ]
    assert all(r["detail"]["review"] == review for r in rows)
    assert rows[0]["detail"]["rationale"] == "operator quarantine release: confirmed with the reader"
    assert rows[1]["detail"]["rationale"] == "superseded by operator quarantine release"
    assert rows[0]["detail"]["author"] == {"author": "operator", "principal": "ana"}


def test_release_of_quarantined_update_supersedes_the_prior(env: Env) -> None:
    prior, update = quarantined_update(env)
    assert update.status.kind.value == "quarantined" and update.supersedes == prior.id
    assert env.store.get(REALM, prior.id).status.is_active
    out = run(env, update, "release").to_dict()
    succ_id = f"{update.id}-released"
    assert out["successor"]["supersedes"] == prior.id
    assert out["superseded_prior"]["memory_id"] == prior.id
    assert out["superseded_prior"]["status"] == {"status": "superseded", "by": succ_id}
    rows = [r for r in env.audit() if r["stage_token"] == out["decision"]["audit_token"]]
    assert [r["op_kind"] for r in rows] == ["supersede", "tombstone"]
    # Only one version stays active.
    assert [r.id for r in env.store.active_records(REALM, env.scope())] == [succ_id]


def test_tombstone_discards_and_is_never_recalled(env: Env) -> None:
    origin = env.poisoned()
    out = run(env, origin, "tombstone", rationale="  injected text  ")
    d = out.to_dict()
    assert d["outcome"] == "tombstoned" and d["successor"] is None
    assert d["origin"]["status"] == {"status": "tombstoned"}
    assert d["decision"]["review"]["verdict"] == "tombstone"
    assert "successor" not in d["decision"]["review"]
    assert env.store.active_records(REALM, env.scope()) == []
    assert recall(env, "weekly summaries") == []
    rows = env.audit(origin.id)
    assert rows[-1]["detail"]["rationale"] == "operator quarantine tombstone:   injected text  "


def test_steward_reviewer_is_recorded_and_rationales_have_no_operator_prefix(env: Env) -> None:
    origin = env.poisoned()
    out = run(env, origin, "release", reviewer=Reviewer.steward("dream-1"))
    assert out.decision["review"]["reviewer"] == {"kind": "steward", "run_id": "dream-1"}
    rows = [r for r in env.audit() if r["stage_token"] == out.decision["audit_token"]]
    assert rows[0]["detail"]["rationale"] == "quarantine release"
    assert rows[1]["detail"]["rationale"] == "superseded by quarantine release"
    assert rows[0]["detail"]["author"] == {"author": "steward", "run_id": "dream-1"}


def test_no_principal_known_is_recorded_as_null(env: Env) -> None:
    origin = env.poisoned()
    out = run(env, origin, "tombstone", reviewer=Reviewer.operator(None))
    assert out.decision["review"]["reviewer"] == {"kind": "operator", "principal": None}


def test_verdict_event_after_commit_names_no_reviewer_or_rationale(env: Env) -> None:
    origin = env.poisoned()
    run(env, origin, "release", rationale="secret reviewer note")
    events = env.events_of("memory.quarantine.verdict")
    assert len(events) == 1
    assert events[0]["data"] == {
        "realm": REALM,
        "record_id": origin.id,
        "verdict": "release",
        "successor_id": f"{origin.id}-released",
    }
    assert "ana" not in str(events[0]) and "secret reviewer note" not in str(events[0])
    other = env.poisoned(body="Another claim from the web page.")
    run(env, other, "tombstone")
    assert env.events_of("memory.quarantine.verdict")[-1]["data"]["successor_id"] is None


# ----------------------------------------------------------------------------- refusals


def test_not_found_for_missing_record_and_for_another_scope(env: Env) -> None:
    origin = env.poisoned()
    with pytest.raises(QuarantineReviewRefused) as info:
        decide(env.store, REALM, IDENTITY, "mem-nope", "release", "x", None, OPERATOR, clock=env.clock)
    assert info.value.reason == "not_found"
    err = refused(env, origin, "release", identity="other:agent")
    assert err.reason == "not_found"
    assert env.store.get(REALM, origin.id).status.kind.value == "quarantined"


def test_content_mismatch_never_echoes_hashes(env: Env) -> None:
    origin = env.poisoned()
    wrong = content_hash("Reader preference", "something else")
    err = refused(env, origin, "release", expected=wrong)
    assert err.reason == "content_mismatch"
    assert wrong not in err.message and origin.content_hash not in err.message
    assert env.events_of("memory.quarantine.verdict") == []


def test_not_quarantined_for_an_active_record(env: Env) -> None:
    rec = env.clean()
    err = refused(env, rec, "tombstone")
    assert err.reason == "not_quarantined"
    assert err.message == "quarantine review refused: record is active, not quarantined"


def test_secret_release_refused_with_class_and_event_then_tombstone_works(env: Env) -> None:
    origin = env.poisoned()
    # A record stored before its secret class existed: put the secret in place directly.
    body = "deploy with api_key = zXy1aB2cD3eF4gH5iJ6k please"
    raw_write(env.store, REALM, "UPDATE records SET body = ?, content_hash = ? WHERE memory_id = ?",
              (body, content_hash(origin.title, body), origin.id))
    rec = env.store.get(REALM, origin.id)
    audit_before = len(env.audit())
    err = refused(env, rec, "release")
    assert err.reason == "secret_detected"
    assert err.to_jsonrpc()["data"]["class"] == "credential-assignment"
    assert "zXy1aB2c" not in err.message
    assert len(env.audit()) == audit_before
    blocked = env.events_of("memory.quarantine.release_blocked")
    assert [e["data"] for e in blocked] == [
        {"realm": REALM, "record_id": origin.id, "verdict": "release", "class": "credential-assignment"}
    ]
    assert env.events_of("memory.quarantine.verdict") == []
    out = run(env, rec, "tombstone")
    assert out.outcome == "tombstoned"


def test_stale_update_when_the_prior_is_gone(env: Env) -> None:
    prior, update = quarantined_update(env)
    assert record_writes.forget(env.store, REALM, env.scope(), prior.id, Author.application())
    err = refused(env, update, "release")
    assert err.reason == "stale_update"
    assert f"prior '{prior.id}' is tombstoned, not active" in err.message
    assert run(env, update, "tombstone").outcome == "tombstoned"


def test_stale_update_when_the_prior_was_replaced(env: Env) -> None:
    prior, update = quarantined_update(env)
    record_writes.update(env.store, REALM, IDENTITY, prior.id, "Meeting day", "Standup is on Wednesday.")
    assert refused(env, update, "release").reason == "stale_update"


def test_successor_conflict_when_another_row_holds_the_successor_id(env: Env) -> None:
    origin = env.poisoned()
    record_writes.apply_batch(env.store,
        StagedBatch(
            realm=REALM,
            author=Author.application(),
            ops=(CreateOp(scope=env.scope(), id=f"{origin.id}-released",
                              record=NewMemoryRecord(title="Squatter", body="Holds the id.", provenance=Provenance(Author.application()))),),
        )
    )
    err = refused(env, origin, "release")
    assert err.reason == "successor_conflict"
    assert env.store.get(REALM, origin.id).status.kind.value == "quarantined"


# ----------------------------------------------------------------------------- replays


def test_repeated_release_is_a_replay_that_writes_nothing(env: Env) -> None:
    origin = env.poisoned()
    first = run(env, origin, "release").to_dict()
    n_audit, n_events = len(env.audit()), len(env.events.list(limit=1000))
    env.clock.advance(60_000)
    again = run(env, origin, "release", reviewer=Reviewer.steward("dream-9"))
    d = again.to_dict()
    assert d["outcome"] == "already_released" and not again.applied
    assert d["decision"] == first["decision"]
    assert d["successor"]["memory_id"] == first["successor"]["memory_id"]
    assert len(env.audit()) == n_audit and len(env.events.list(limit=1000)) == n_events


def test_repeated_tombstone_is_already_tombstoned(env: Env) -> None:
    origin = env.poisoned()
    first = run(env, origin, "tombstone", rationale="spam")
    again = run(env, origin, "tombstone")
    assert again.outcome == "already_tombstoned"
    assert again.decision == first.decision


def test_other_verdict_after_release_is_not_quarantined_naming_the_successor(env: Env) -> None:
    origin = env.poisoned()
    run(env, origin, "release")
    err = refused(env, origin, "tombstone")
    assert err.reason == "not_quarantined"
    assert err.to_jsonrpc()["data"]["released_as"] == f"{origin.id}-released"
    assert err.detail.startswith(f"record was already released as '{origin.id}-released'")
    other = env.poisoned(body="Second claim.")
    run(env, other, "tombstone")
    late = refused(env, other, "release")
    assert late.reason == "not_quarantined" and late.detail.startswith("record was already discarded")


def test_plain_forget_is_not_a_review(env: Env) -> None:
    origin = env.poisoned()
    assert record_writes.forget(env.store, REALM, env.scope(), origin.id, Author.agent(IDENTITY))
    for verdict in ("tombstone", "release"):
        err = refused(env, origin, verdict)
        assert err.reason == "not_quarantined"
        assert "released_as" not in err.to_jsonrpc()["data"]


def test_replay_receipts_show_records_as_they_stand_now(env: Env) -> None:
    origin = env.poisoned()
    out = run(env, origin, "release")
    assert record_writes.forget(env.store, REALM, env.scope(), out.successor_id, Author.application())
    again = run(env, origin, "release")
    assert again.outcome == "already_released"
    assert again.successor["status"] == {"status": "tombstoned"}
    assert env.store.active_records(REALM, env.scope()) == []


def test_inconsistent_review_evidence_is_an_io_error(env: Env) -> None:
    origin = env.poisoned()
    out = run(env, origin, "release")
    raw_write(env.store, REALM, "DELETE FROM records WHERE memory_id = ?", (out.successor_id,))
    with pytest.raises(AgentMemoryError) as info:
        run(env, origin, "release")
    assert info.value.reason == "io" and "inconsistent" in info.value.message


# ----------------------------------------------------------------------------- promotions


def stage_promotion(env: Env, rec: Any) -> Any:
    return promote_pending_gate(
        env.store, REALM, rec.id, run_id="dream-p", clock=env.clock, target_scope=Scope.mob(REALM, "team"),
        events=env.events,
    )


def test_gate_pending_blocks_release_and_steward_tombstone(env: Env) -> None:
    origin = env.poisoned()
    staged = stage_promotion(env, origin)
    for verdict, reviewer in (("release", OPERATOR), ("tombstone", Reviewer.steward("dream-2"))):
        err = refused(env, origin, verdict, reviewer=reviewer)
        assert err.reason == "gate_pending"
        assert err.to_jsonrpc()["data"]["expires_at_ms"] == staged.created_at_ms + PROMOTION_EXPIRY_MS
        assert staged.pending_id in err.message


def test_operator_tombstone_invalidates_pending_promotions(env: Env) -> None:
    origin = env.poisoned()
    staged = stage_promotion(env, origin)
    out = run(env, origin, "tombstone")
    assert out.decision["review"]["invalidated_promotions"] == [staged.pending_id]
    assert "expired_promotions" not in out.decision["review"]
    # A late approval publishes nothing; a late denial leaves it as it is.
    late = gating_decide(env.store, REALM, staged.pending_id, "approve", clock=env.clock, events=env.events)
    assert late.status == "expired" and not late.changed and late.promoted_id is None
    assert gating_decide(env.store, REALM, staged.pending_id, "deny", clock=env.clock).status == "expired"
    assert env.store.active_records(REALM, Scope.mob(REALM, "team")) == []
    assert env.events_of("memory.record.promoted") == []


def test_approved_promotion_stands_and_tombstone_is_not_quarantined(env: Env) -> None:
    origin = env.poisoned()
    staged = stage_promotion(env, origin)
    approved = gating_decide(env.store, REALM, staged.pending_id, "approve", clock=env.clock, events=env.events)
    assert approved.status == "committed"
    err = refused(env, origin, "tombstone")
    assert err.reason == "not_quarantined"
    assert [r.id for r in env.store.active_records(REALM, Scope.mob(REALM, "team"))] == [approved.promoted_id]


def test_promotion_orphaned_by_a_restart_expires_at_review(env: Env) -> None:
    origin = env.poisoned()
    staged = stage_promotion(env, origin)
    env.reopen()
    assert refused(env, origin, "release").reason == "gate_pending"
    env.clock.advance(PROMOTION_EXPIRY_MS - 1)
    assert refused(env, origin, "release").reason == "gate_pending"
    env.clock.advance(1)
    out = run(env, origin, "release")
    assert out.outcome == "released"
    assert out.decision["review"]["expired_promotions"] == [staged.pending_id]
    with env.store.snapshot(REALM) as tx:
        promo = tx.promotions.get(staged.pending_id)
    ((stage_rows,),) = raw_rows(env.store, REALM, "SELECT COUNT(*) FROM stage")
    status = promo.status if promo is not None else None
    assert status == "expired" and stage_rows == 0


def test_refused_review_keeps_promotion_expiry_uncommitted(env: Env) -> None:
    origin = env.poisoned()
    stage_promotion(env, origin)
    env.clock.advance(PROMOTION_EXPIRY_MS)
    refused(env, origin, "release", expected="0" * 64)
    with env.store.snapshot(REALM) as tx:
        pending = len(tx.promotions.pending(50))
    assert pending == 1


# ----------------------------------------------------------------------------- taint ceiling


def test_successor_is_capped_at_agent_observed_forever(env: Env) -> None:
    origin = env.poisoned(verification="checked the reader's settings page")
    succ = run(env, origin, "release").successor_id
    for author in (Author.steward("dream-3"), Author.operator("ana")):
        with pytest.raises(AgentMemoryError) as info:
            record_writes.apply_batch(env.store,
                StagedBatch(realm=REALM, author=author, ops=(RetierOp(id=succ, trust=TrustTier.AGENT_VERIFIED),))
            )
        assert "provenance chain reaches untrusted/quarantined content" in info.value.message
    with pytest.raises(AgentMemoryError) as info:
        record_writes.apply_batch(env.store,
            StagedBatch(
                realm=REALM,
                author=Author.operator("ana"),
                ops=(SupersedeOp(prior=succ, trust=TrustTier.AGENT_VERIFIED,
                                     record=NewMemoryRecord(title="Reader preference", body="Weekly, on Fridays.",
                                                            provenance=Provenance(Author.operator("ana")))),),
            )
        )
    assert "capped at agent_observed" in info.value.message
    # A later ordinary update keeps the durable marker.
    new, _ = record_writes.update(env.store, REALM, IDENTITY, succ, "Reader preference", "Weekly, on Fridays.")
    assert env.store.get(REALM, new.memory_id).ever_quarantined is True


def test_taint_is_unchanged_later_writes_quarantine_again(env: Env) -> None:
    origin = env.poisoned()
    run(env, origin, "release")
    again = env.poisoned(body="A new claim from the same tainted session.")
    assert again.status.kind.value == "quarantined"


# ----------------------------------------------------------------------------- races


@pytest.mark.parametrize("steward_verdict", ["release", "tombstone"])
def test_operator_and_steward_race_exactly_one_decision_applies(env: Env, steward_verdict: str) -> None:
    for round_ in range(6):
        origin = env.poisoned(body=f"Claim number {round_} for {steward_verdict}.")
        barrier = threading.Barrier(2)
        results: dict[str, Any] = {}

        def reviewer_thread(name: str, verdict: str, reviewer: Reviewer) -> None:
            barrier.wait()
            try:
                results[name] = run(env, origin, verdict, reviewer=reviewer)
            except QuarantineReviewRefused as exc:
                results[name] = exc

        threads = [
            threading.Thread(target=reviewer_thread, args=("operator", "release", OPERATOR)),
            threading.Thread(target=reviewer_thread, args=("steward", steward_verdict, Reviewer.steward(f"d{round_}"))),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        applied = [r for r in results.values() if not isinstance(r, Exception) and r.applied]
        others = [r for r in results.values() if isinstance(r, Exception) or not r.applied]
        assert len(applied) == 1 and len(others) == 1
        other = others[0]
        if isinstance(other, Exception):
            assert other.reason == "not_quarantined"
        else:
            assert other.outcome in ("already_released", "already_tombstoned")
            assert other.decision == applied[0].decision
        review_tokens = {
            r["stage_token"] for r in env.audit(origin.id) if "review" in r["detail"]
        }
        assert len(review_tokens) == 1


def test_race_across_two_store_objects_on_the_same_files(env: Env) -> None:
    from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore

    other_store = SqliteAgentMemoryStore(env.root, env.clock, gate=env.gate)
    try:
        origin = env.poisoned()
        barrier = threading.Barrier(2)
        outcomes: list[Any] = []

        def go(store: Any, reviewer: Reviewer) -> None:
            barrier.wait()
            try:
                outcomes.append(
                    decide(store, REALM, IDENTITY, origin.id, "release", origin.content_hash, None, reviewer, clock=env.clock)
                )
            except QuarantineReviewRefused as exc:  # pragma: no cover - same verdict always replays
                outcomes.append(exc)

        ts = [threading.Thread(target=go, args=(env.store, OPERATOR)),
              threading.Thread(target=go, args=(other_store, Reviewer.steward("d")))]
        for t in ts:
            t.start()
        for t in ts:
            t.join(timeout=30)
        assert sorted(o.outcome for o in outcomes) == ["already_released", "released"]
    finally:
        other_store.close()
