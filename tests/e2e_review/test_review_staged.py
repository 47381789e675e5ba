"""Review refusals that need staged state, over RPC: gated promotions staged by the LLM steward's
dream (against a local fake endpoint), a secret-bearing quarantined record and a squatted
successor id prepared in-process on the same state dir before the gateway starts, racing
operator and steward, and a promotion orphaned by a restart (seed: "Reviewing quarantined records").
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from e2e_review_support import (
    REFUSED,
    Client,
    FakeStewardLlm,
    audit_rows,
    in_process,
    review_rows,
    uid,
    verdicts_for,
)
from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.batch import CreateOp, StagedBatch
from meta_memory.agent_memory.hashing import content_hash
from meta_memory.agent_memory.model import Author, NewMemoryRecord, Provenance, Scope
from meta_memory.clock import ManualClock, SystemClock
from meta_memory.errors import QuarantineReviewRefused
from meta_memory.review.model import PROMOTION_EXPIRY_MS
from meta_memory.review.promotions import promote_pending_gate
from support import poisoned_write, raw_write, start_gateway, write_config

SECRET_BODY = "deploy with api_key = zXy1aB2cD3eF4gH5iJ6k please"
WEEK_MS = 7 * 24 * 3600 * 1000


@dataclass
class Staged:
    client: Client
    llm: FakeStewardLlm
    state: Path
    identity: str
    secret_id: str
    squatted_id: str


@pytest.fixture(scope="module")
def staged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Staged]:
    """A gateway whose steward is an LLM at a local fake endpoint; before it starts, the same
    state dir gets (in-process) a quarantined record whose content now matches a secret class
    (a record stored before its class existed) and a quarantined record whose successor id is taken."""
    root = tmp_path_factory.mktemp("staged")
    llm = FakeStewardLlm()
    config = write_config(root / "config.toml", (
        "[agent_memory]\n[agent_memory.steward]\n"
        f'kind = "llm"\nbase_url = "{llm.base_url}"\nmodel = "fake-steward"\nllm_release = "direct"\n'))
    state = root / "state"
    ident = uid()
    with in_process(state, config) as gw:
        secret_id = poisoned_write(gw.call, ident, "Deploy notes", "deploy with the usual vault credential please")
        store = gw.runtime.agent_memory.store
        raw_write(store, "default", "UPDATE records SET body = ?, content_hash = ? WHERE memory_id = ?",
                  (SECRET_BODY, content_hash("Deploy notes", SECRET_BODY), secret_id))
        squatted_id = poisoned_write(gw.call, ident, "Squatted", "A quarantined claim whose successor id is taken.")
        record_writes.apply_batch(store, StagedBatch(realm="default", author=Author.application(), ops=(
            CreateOp(scope=Scope.identity("default", ident), id=f"{squatted_id}-released",
                     record=NewMemoryRecord(title="Squatter", body="Holds the successor id.",
                                                    provenance=Provenance(Author.application()))),)))
    gw_proc = start_gateway(state, config=config)
    client = Client(gw_proc)
    yield Staged(client, llm, state, ident, secret_id, squatted_id)
    client.close()
    gw_proc.stop()
    llm.close()


def _dream(s: Staged) -> dict[str, Any]:
    return s.client.result("meta/memory/steward/dream", {})


# ----------------------------------------------------------------------------- secret_detected


def test_release_of_secret_bearing_content_is_refused_and_tombstone_still_works(staged: Staged) -> None:
    c = staged.client
    chash = c.content_hash(staged.secret_id)
    assert chash == content_hash("Deploy notes", SECRET_BODY)
    audit_before = len(audit_rows(staged.state))
    body = c.decide(staged.identity, staged.secret_id, "release", chash)
    err = body["error"]
    assert err["code"] == REFUSED
    assert err["data"] == {"kind": "memory_quarantine_review_refused", "reason": "secret_detected",
                           "class": "credential-assignment"}
    assert "zXy1aB2c" not in err["message"] and "credential-assignment" in err["message"]
    assert len(audit_rows(staged.state)) == audit_before
    events = c.events()
    blocked = [e for e in events if e["event_type"] == "memory.quarantine.release_blocked"
               and e["data"]["record_id"] == staged.secret_id]
    assert [e["data"] for e in blocked] == [{"realm": "default", "record_id": staged.secret_id, "verdict": "release",
                                             "class": "credential-assignment"}]
    assert "zXy1aB2c" not in str(blocked)
    assert not [e for e in events if e["event_type"] == "memory.quarantine.verdict"
                and e["data"]["record_id"] == staged.secret_id]
    out = c.result("meta/memory/quarantine/decide", {"identity": staged.identity, "memory_id": staged.secret_id,
                                                     "verdict": "tombstone", "expected_content_hash": chash})
    assert out["outcome"] == "tombstoned"
    assert c.recall_ids(staged.identity, "deploy api_key") == []


def test_successor_conflict_when_another_row_holds_the_successor_id(staged: Staged) -> None:
    c = staged.client
    chash = c.content_hash(staged.squatted_id)
    data = c.refused(staged.identity, staged.squatted_id, "release", chash)
    assert data["reason"] == "successor_conflict"
    assert review_rows(staged.state, staged.squatted_id) == []
    # a row that merely holds the successor id is not a replay either
    assert c.result("meta/memory/panel/record", {"memory_id": staged.squatted_id})["record"]["status"]["status"] \
        == "quarantined"
    assert c.result("meta/memory/quarantine/decide", {
        "identity": staged.identity, "memory_id": staged.squatted_id, "verdict": "tombstone",
        "expected_content_hash": chash})["outcome"] == "tombstoned"


# ----------------------------------------------------------------------------- gated promotions


def _stage_via_dream(s: Staged, mid: str) -> dict[str, Any]:
    s.llm.decide = verdicts_for({mid}, "promote_pending_gate", target_mob="team")
    run = _dream(s)
    assert run["status"] == "completed", run
    promos = [p for p in s.client.result("meta/memory/panel/quarantine", {"limit": 200})["pending_promotions"]
              if p["record_id"] == mid]
    assert len(promos) == 1, promos
    assert promos[0]["scope_kind"] == "mob" and promos[0]["scope_key"] == "team"
    return promos[0]


def test_gate_pending_refuses_release_until_the_gate_decides_and_operator_tombstone_invalidates(
        staged: Staged) -> None:
    c, ident = staged.client, uid()
    mid = c.poisoned(ident, "Team lunch", "The team lunch moved to Thursday.")
    chash = c.content_hash(mid)
    promo = _stage_via_dream(staged, mid)
    pending = [e for e in c.events() if e["event_type"] == "memory.promotion.pending_gate"
               and e["data"]["record_id"] == mid]
    assert len(pending) == 1 and pending[0]["data"]["pending_id"] == promo["pending_id"]

    data = c.refused(ident, mid, "release", chash)
    assert data["reason"] == "gate_pending"
    assert data["expires_at_ms"] == promo["created_at_ms"] + WEEK_MS
    assert review_rows(staged.state, mid) == []

    out = c.result("meta/memory/quarantine/decide", {"identity": ident, "memory_id": mid, "verdict": "tombstone",
                                                     "expected_content_hash": chash})
    assert out["outcome"] == "tombstoned"
    assert out["decision"]["review"]["invalidated_promotions"] == [promo["pending_id"]]
    # a late approval publishes nothing
    late = c.result("meta/gating/decide", {"pending_id": promo["pending_id"], "decision": "approve"})
    assert late["status"] == "expired", late
    team = c.result("meta/memory/panel/records", {"scope": "mob", "scope_key": "team", "limit": 200})["records"]
    assert all(mid not in r["derived_from"] for r in team)
    assert not [e for e in c.events() if e["event_type"] == "memory.record.promoted"
                and e["data"].get("source_record_id") == mid]


def test_an_approved_promotion_stands_and_a_later_tombstone_is_not_quarantined(staged: Staged) -> None:
    c, ident = staged.client, uid()
    mid = c.poisoned(ident, "Release train", "The release train leaves every second Wednesday.")
    chash = c.content_hash(mid)
    promo = _stage_via_dream(staged, mid)
    approved = c.result("meta/gating/decide", {"pending_id": promo["pending_id"], "decision": "approve"})
    assert approved["status"] == "committed", approved
    assert c.refused(ident, mid, "tombstone", chash)["reason"] == "not_quarantined"
    promoted = [e["data"] for e in c.events() if e["event_type"] == "memory.record.promoted"
                and e["data"].get("source_record_id") == mid]
    assert len(promoted) == 1 and promoted[0]["scope_kind"] == "mob" and promoted[0]["scope_key"] == "team"


def test_steward_hold_changes_nothing_and_emits_no_verdict(staged: Staged) -> None:
    c, ident = staged.client, uid()
    mid = c.poisoned(ident, "Held claim", "A claim the steward holds for later.")
    before = c.events()
    audit_before = len(audit_rows(staged.state))
    staged.llm.decide = verdicts_for({mid}, "hold")
    run = _dream(staged)
    assert {"category": "quarantine", "target": mid, "verdict": "hold", "rationale": "steward says so"} \
        in run["detail"]["verdicts"]
    new = c.events(after=before[-1]["event_id"] if before else None)
    assert not [e for e in new if e["event_type"] == "memory.quarantine.verdict"]
    assert len(audit_rows(staged.state)) == audit_before
    assert c.result("meta/memory/panel/record", {"memory_id": mid})["record"]["status"]["status"] == "quarantined"


def test_steward_tombstone_records_the_steward_run_as_reviewer(staged: Staged) -> None:
    c, ident = staged.client, uid()
    mid = c.poisoned(ident, "Steward target", "A claim the steward discards.")
    staged.llm.decide = verdicts_for({mid}, "tombstone")
    run = _dream(staged)
    rows = review_rows(staged.state, mid)
    assert len(rows) == 1
    assert rows[0]["detail"]["review"]["reviewer"] == {"kind": "steward", "run_id": run["run_id"]}
    # the operator's later decision of the same verdict is the replay of the steward's
    again = c.result("meta/memory/quarantine/decide", {"identity": ident, "memory_id": mid, "verdict": "tombstone",
                                                       "expected_content_hash": c.content_hash(mid)})
    assert again["outcome"] == "already_tombstoned"
    assert again["decision"]["review"]["reviewer"] == {"kind": "steward", "run_id": run["run_id"]}


def test_operator_and_steward_racing_apply_exactly_one_decision_per_record(staged: Staged) -> None:
    c, ident = staged.client, uid()
    mids = [c.poisoned(ident, f"Race {i}", f"Race claim number {i}.") for i in range(6)]
    hashes = {m: c.content_hash(m) for m in mids}
    operator: dict[str, dict[str, Any]] = {}
    dream: dict[str, Any] = {}
    offered = threading.Event()
    steward_reply = verdicts_for(set(mids), "tombstone")

    def steward(payload: dict[str, Any]) -> dict[str, Any]:
        # the dream has read its inputs: the operator decides the first record before the steward's
        # verdicts apply (operator first), then races it on the middle ones from another thread
        operator[mids[0]] = c.decide(ident, mids[0], "release", hashes[mids[0]])
        offered.set()
        return steward_reply(payload)

    def run_operator() -> None:
        offered.wait(30)
        for m in reversed(mids[1:-1]):
            operator[m] = c.decide(ident, m, "release", hashes[m])

    staged.llm.decide = steward
    racer = threading.Thread(target=run_operator)
    racer.start()
    dream.update(_dream(staged))
    racer.join(timeout=60)
    # the last record: the steward first, then the operator
    operator[mids[-1]] = c.decide(ident, mids[-1], "release", hashes[mids[-1]])

    notes = {v["target"]: v for v in dream["detail"]["verdicts"] if v["category"] == "quarantine"}
    verdict_events = [e for e in c.events() if e["event_type"] == "memory.quarantine.verdict"]
    winners = []
    for m in mids:
        assert len({r["stage_token"] for r in review_rows(staged.state, m)}) == 1, m
        op, note = operator[m], notes[m]
        steward_applied = note.get("outcome") == "tombstoned"
        operator_applied = "result" in op and op["result"]["outcome"] == "released"
        assert steward_applied != operator_applied, (op, note)
        if steward_applied:
            assert op["error"]["data"]["reason"] == "not_quarantined", op
        else:
            assert note.get("refused") == "not_quarantined", note
        assert len([e for e in verdict_events if e["data"]["record_id"] == m]) == 1
        winners.append("steward" if steward_applied else "operator")
    assert winners[0] == "operator" and winners[-1] == "steward"


# ----------------------------------------------------------------------------- orphaned promotion


def test_a_promotion_left_pending_by_a_restart_blocks_now_and_expires_at_review(tmp_path: Path) -> None:
    state = tmp_path / "state"
    ident = uid()
    t0 = SystemClock().now_ms()
    clock = ManualClock(t0)
    with in_process(state, None, clock) as gw:
        mid = poisoned_write(gw.call, ident, "Orphan", "A promotion of this record was staged before a restart.")
        staged = promote_pending_gate(gw.runtime.agent_memory.store, "default", mid, run_id="dream-before-restart",
                                      clock=clock, target_scope=Scope.mob("default", "team"))
        chash = gw.runtime.agent_memory.store.get("default", mid).content_hash
    # the gateway, twice (a restart in between): the promotion still blocks release now
    for _ in range(2):
        proc = start_gateway(state)
        c = Client(proc)
        try:
            data = c.refused(ident, mid, "release", chash)
            assert data["reason"] == "gate_pending"
            assert data["expires_at_ms"] == t0 + PROMOTION_EXPIRY_MS
            assert [p["pending_id"] for p in c.result("meta/memory/panel/quarantine", {})["pending_promotions"]] \
                == [staged.pending_id]
        finally:
            c.close()
            proc.stop()
    # seven days later (the gateway's wall clock cannot move: the same files, in-process)
    clock.set(t0 + PROMOTION_EXPIRY_MS - 1)
    with in_process(state, None, clock) as gw:
        with pytest.raises(QuarantineReviewRefused) as info:
            gw.call("meta/memory/quarantine/decide", {"identity": ident, "memory_id": mid, "verdict": "release",
                                                      "expected_content_hash": chash})
        assert info.value.reason == "gate_pending"
        clock.set(t0 + PROMOTION_EXPIRY_MS)
        out = gw.call("meta/memory/quarantine/decide", {"identity": ident, "memory_id": mid, "verdict": "release",
                                                        "expected_content_hash": chash})
        assert out["outcome"] == "released"
        assert out["decision"]["review"]["expired_promotions"] == [staged.pending_id]
    # and over RPC again: the successor is memory, the promotion is gone, a late approval publishes nothing
    proc = start_gateway(state)
    c = Client(proc)
    try:
        assert c.recall_ids(ident, "promotion staged restart") == [f"{mid}-released"]
        assert c.result("meta/memory/panel/quarantine", {})["pending_promotions"] == []
        late = c.result("meta/gating/decide", {"pending_id": staged.pending_id, "decision": "approve"})
        assert late["status"] == "expired"
        assert c.result("meta/memory/panel/records", {"scope": "mob", "scope_key": "team"})["records"] == []
    finally:
        c.close()
        proc.stop()


# ----------------------------------------------------------------------------- steward conflicts


def test_steward_operational_contradiction_becomes_a_conflict_that_gating_honours(staged: Staged) -> None:
    c, ident = staged.client, uid()
    entity = f"identity:{ident}"
    # the steward may cite only records its dream offers (here: two quarantined claims) and flag their scope
    a = c.poisoned(ident, "Price", "Widget costs 10.")
    b = c.poisoned(ident, "Price", "Widget costs 12.")
    assert c.result("meta/gating/check", {"entity": entity, "topic": "price"})["allowed"] is True
    staged.llm.decide = lambda payload: {"contradictions": [
        {"record_ids": [a, b], "operational": True, "entity": entity.upper(), "topic": "Price",
         "reason": "two prices"}]}
    run = _dream(staged)
    assert run["detail"]["conflicts"][0]["signalled"] is True, run
    check = c.result("meta/gating/check", {"entity": entity, "topic": "price"})
    assert check["allowed"] is False and check["conflict"]["reason"] == "two prices"
    signals = [e["data"] for e in c.events() if e["event_type"] == "memory.conflict.signal"]
    assert {"realm": "default", "entity": entity, "topic": "price"} in signals  # the reason stays in the ledger


# ----------------------------------------------------------------------------- the dream on the timeline


def test_a_dream_on_the_timeline_names_records_and_counts_never_rationales(staged: Staged) -> None:
    c, ident = staged.client, uid()
    mid = c.poisoned(ident, "Dreamt", "A claim the steward discards in its dream.")
    mark = c.events()[-1]["event_id"]
    staged.llm.decide = verdicts_for({mid}, "tombstone")
    run = _dream(staged)
    events = c.events(after=mark)
    kinds = [e["event_type"] for e in events]
    assert kinds[0] == "memory.dream.started" and kinds[-1] == "memory.dream.completed", kinds
    assert events[0]["data"] == {"realm": "default", "run_id": run["run_id"]}
    verdict = [e for e in events if e["event_type"] == "memory.quarantine.verdict"]
    assert [e["data"] for e in verdict] == [{"realm": "default", "record_id": mid, "verdict": "tombstone",
                                             "successor_id": None}]
    completed = events[-1]["data"]
    assert completed["run_id"] == run["run_id"] and completed["ops_committed"] == run["ops_committed"] >= 1
    assert completed["detail"]["verdicts"].get("quarantine.tombstone", 0) >= 1
    assert "steward says so" not in str(events) and "steward" not in str(verdict)
    assert c.result("meta/memory/panel/dream_runs", {})["runs"][0]["run_id"] == run["run_id"]


@pytest.mark.parametrize("reply", ['{"quarantine_verdicts": [{"record_id": ', "not json at all", "[1, 2]"])
def test_a_malformed_steward_reply_applies_nothing(staged: Staged, reply: str) -> None:
    c, ident = staged.client, uid()
    mid = c.poisoned(ident, "Malformed", "A claim a broken steward reply must not touch.")
    staged.llm.decide = lambda payload: reply
    run = _dream(staged)
    assert run["status"] == "completed" and run["ops_committed"] == 0
    assert run["detail"]["refused"] and run["detail"]["verdicts"] == []
    assert c.result("meta/memory/panel/record", {"memory_id": mid})["record"]["status"]["status"] == "quarantined"
    assert review_rows(staged.state, mid) == []


def test_a_partly_bad_steward_reply_is_refused_verdict_by_verdict(staged: Staged) -> None:
    c, ident = staged.client, uid()
    good, bad = (c.poisoned(ident, f"Partial {i}", f"Partial reply claim {i}.") for i in range(2))
    staged.llm.decide = lambda payload: {"quarantine_verdicts": [
        {"record_id": good, "verdict": "tombstone"},
        {"record_id": bad, "verdict": "obliterate"},
        {"record_id": "mem-never-offered", "verdict": "release"},
        "not an object"]}
    run = _dream(staged)
    assert [(v["target"], v["verdict"]) for v in run["detail"]["verdicts"]] == [(good, "tombstone")]
    assert len(run["detail"]["refused"]) == 3
    assert c.result("meta/memory/panel/record", {"memory_id": good})["record"]["status"]["status"] == "tombstoned"
    assert c.result("meta/memory/panel/record", {"memory_id": bad})["record"]["status"]["status"] == "quarantined"
