"""Proposals, gated promotions (approve / deny / expiry) and conflict-aware gating."""

from __future__ import annotations

import pytest

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.model import Author, NewMemoryRecord, Provenance, Scope
from meta_memory.errors import AgentMemoryError
from meta_memory.ledger import AssertionLedger, IndexRequest
from meta_memory.review.model import PROMOTION_EXPIRY_MS, Reviewer
from meta_memory.review.promotions import (
    expire_promotions,
    gating_check,
    gating_decide,
    list_pending_promotions,
    promote_pending_gate,
)
from meta_memory.review.proposals import (
    accept_proposal,
    get_proposal,
    hold_proposal,
    list_proposals,
    reject_proposal,
)
from support import raw_rows

from .conftest import IDENTITY, REALM, Env

TEAM = Scope.mob(REALM, "team")


def propose(env: Env, body: str = "Deploys happen on Thursdays.", taint: str | None = None) -> str:
    return record_writes.propose(env.store,
        REALM, TEAM,
        NewMemoryRecord(title="Deploy day", body=body, provenance=Provenance(Author.agent(IDENTITY))),
        Author.agent(IDENTITY), taint,
    )


def team_ids(env: Env) -> list[str]:
    return [r.id for r in env.store.active_records(REALM, TEAM)]


def test_listing_hold_reject_and_bodies_withheld(env: Env) -> None:
    a = propose(env)
    env.clock.advance(1)
    b = propose(env, "Freeze before holidays.", taint="session tainted by web tool 'fetch'")
    listed = list_proposals(env.store, REALM)
    assert [p.proposal_id for p in listed] == [a, b]
    summary = listed[1].summary()
    assert summary["tainted"] is True and "body" not in summary and summary["status"] == "pending"
    assert hold_proposal(env.store, REALM, a) == "held"
    assert [p.proposal_id for p in list_proposals(env.store, REALM)] == [a, b]
    assert reject_proposal(env.store, REALM, b) == "rejected"
    assert [p.proposal_id for p in list_proposals(env.store, REALM)] == [a]
    assert [p.proposal_id for p in list_proposals(env.store, REALM, status="rejected")] == [b]
    with pytest.raises(AgentMemoryError, match="is rejected, not pending"):
        hold_proposal(env.store, REALM, b)
    with pytest.raises(AgentMemoryError, match="unknown proposal"):
        reject_proposal(env.store, REALM, "prop-nope")
    assert team_ids(env) == []


def test_accept_commits_into_mob_scope(env: Env) -> None:
    pid = propose(env)
    out = accept_proposal(env.store, REALM, pid, Reviewer.operator("ana"), "looks right", events=env.events)
    assert out.created and team_ids(env) == [out.record_id]
    rec = env.store.get(REALM, out.record_id)
    assert rec.trust.value == "agent_observed" and rec.provenance.author == Author.agent(IDENTITY)
    audit = env.audit(out.record_id)[-1]["detail"]
    assert audit["author"] == {"author": "operator", "principal": "ana"}
    assert audit["rationale"] == f"accepted proposal {pid}: looks right"
    assert get_proposal(env.store, REALM, pid).status == "accepted"
    promoted = env.events_of("memory.record.promoted")
    assert promoted[-1]["data"] == {
        "realm": REALM, "record_id": out.record_id, "source_record_id": None, "scope_kind": "mob",
        "scope_key": "team", "proposal_id": pid, "gated": False,
    }
    with pytest.raises(AgentMemoryError, match="is accepted, not pending"):
        accept_proposal(env.store, REALM, pid, Reviewer.operator("ana"))
    # The same content proposed again is accepted without a second copy.
    again = accept_proposal(env.store, REALM, propose(env), Reviewer.steward("dream-1"))
    assert not again.created and again.record_id == out.record_id and len(team_ids(env)) == 1


def test_gated_proposal_approval_publishes_the_staged_batch(env: Env) -> None:
    pid = propose(env)
    staged = promote_pending_gate(env.store, REALM, pid, run_id="dream-1", clock=env.clock, events=env.events,
                                  rationale="tainted proposal needs a gate")
    assert get_proposal(env.store, REALM, pid).status == "held"
    assert team_ids(env) == []
    gate_events = env.events_of("memory.promotion.pending_gate")
    assert gate_events[-1]["data"] == {
        "realm": REALM, "pending_ref": staged.pending_id, "pending_id": staged.pending_id, "record_id": pid,
        "scope_kind": "mob", "scope_key": "team",
    }
    listed = list_pending_promotions(env.store, REALM)
    assert [p["pending_id"] for p in listed] == [staged.pending_id]
    assert "stage_token" not in listed[0]
    with pytest.raises(AgentMemoryError, match="awaits a gating decision"):
        accept_proposal(env.store, REALM, pid, Reviewer.operator(None))
    out = gating_decide(env.store, REALM, staged.pending_id, "approve", clock=env.clock, events=env.events)
    assert out.status == "committed" and out.changed and team_ids(env) == [out.promoted_id]
    assert get_proposal(env.store, REALM, pid).status == "accepted"
    assert env.events_of("memory.record.promoted")[-1]["data"]["gated"] is True
    # A second decision changes nothing.
    again = gating_decide(env.store, REALM, staged.pending_id, "deny", clock=env.clock)
    assert again.status == "committed" and not again.changed
    assert list_pending_promotions(env.store, REALM) == []


def test_gated_denial_discards_the_staged_batch(env: Env) -> None:
    origin = env.poisoned()
    staged = promote_pending_gate(env.store, REALM, origin.id, run_id="d", clock=env.clock, target_scope=TEAM)
    out = gating_decide(env.store, REALM, staged.pending_id, "deny", clock=env.clock, events=env.events)
    assert out.status == "denied" and out.promoted_id is None
    assert team_ids(env) == []
    assert env.store.get(REALM, origin.id).status.kind.value == "quarantined"
    assert env.events_of("memory.record.promoted") == []
    ((stage_rows,),) = raw_rows(env.store, REALM, "SELECT COUNT(*) FROM stage")
    assert stage_rows == 0


def test_gated_promotion_of_quarantined_record_tombstones_origin_on_approval(env: Env) -> None:
    origin = env.poisoned()
    staged = promote_pending_gate(env.store, REALM, origin.id, run_id="d", clock=env.clock, target_scope=TEAM)
    out = gating_decide(env.store, REALM, staged.pending_id, "approve", clock=env.clock, events=env.events)
    promoted = env.store.get(REALM, out.promoted_id)
    assert promoted.scope == TEAM and promoted.ever_quarantined and promoted.derived_from == (origin.id,)
    assert env.store.get(REALM, origin.id).status.kind.value == "tombstoned"
    data = env.events_of("memory.record.promoted")[-1]["data"]
    assert data["source_record_id"] == origin.id and data["proposal_id"] is None


def test_expiry_after_seven_days_discards_and_reopens_the_proposal(env: Env) -> None:
    pid = propose(env)
    staged = promote_pending_gate(env.store, REALM, pid, run_id="d", clock=env.clock)
    env.clock.advance(PROMOTION_EXPIRY_MS)
    out = gating_decide(env.store, REALM, staged.pending_id, "approve", clock=env.clock)
    assert out.status == "expired" and out.promoted_id is None and team_ids(env) == []
    assert get_proposal(env.store, REALM, pid).status == "pending"


def test_expire_promotions_sweeps_old_ones_only(env: Env) -> None:
    old = promote_pending_gate(env.store, REALM, propose(env, "Old claim."), run_id="d", clock=env.clock)
    env.clock.advance(PROMOTION_EXPIRY_MS - 10)
    fresh = promote_pending_gate(env.store, REALM, propose(env, "Fresh claim."), run_id="d", clock=env.clock)
    env.clock.advance(10)
    assert expire_promotions(env.store, REALM, clock=env.clock) == [old.pending_id]
    assert [p["pending_id"] for p in list_pending_promotions(env.store, REALM)] == [fresh.pending_id]


def test_promotion_refusals(env: Env) -> None:
    with pytest.raises(AgentMemoryError, match="does not exist"):
        promote_pending_gate(env.store, REALM, "mem-nope", run_id="d", clock=env.clock)
    origin = env.poisoned()
    promote_pending_gate(env.store, REALM, origin.id, run_id="d", clock=env.clock, target_scope=TEAM)
    with pytest.raises(AgentMemoryError, match="already has a promotion"):
        promote_pending_gate(env.store, REALM, origin.id, run_id="d", clock=env.clock, target_scope=TEAM)
    with pytest.raises(AgentMemoryError, match="unknown pending promotion"):
        gating_decide(env.store, REALM, "gate-nope", "approve", clock=env.clock)


def test_gating_check_refuses_while_a_conflict_is_active(env: Env) -> None:
    ledger = AssertionLedger(None, None, env.clock)
    ledger.load()
    assert gating_check(ledger, "Acme", "pricing").allowed
    ledger.index(IndexRequest(entity="acme", topic="pricing", conflict=True, conflict_reason="two prices"))
    check = gating_check(ledger, " ACME ", "Pricing")
    assert not check.allowed
    d = check.to_dict()
    assert d["reason"] == "conflict_active" and d["conflict"]["reason"] == "two prices"
    assert d["conflict"]["store"] == "knowledge_graph"
    assert gating_check(ledger, "acme", "pricing", "knowledge_graph").allowed is False
    assert gating_check(ledger, "acme", "pricing", "todo").allowed is True
    assert gating_check(ledger, "acme", "shipping").allowed is True
