"""Quarantine review over JSON-RPC on a real socket (seed: "Reviewing quarantined records").

The poisoned-write scenario end to end (quarantined -> queue -> operator reads the hash -> release
or tombstone -> recall and injection), the refusals a plain gateway can produce, replays that
write nothing, and racing reviewers. Refusals that need staged state (gate_pending,
secret_detected, successor_conflict) are in ``test_review_staged.py``.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from e2e_review_support import (
    REFUSED,
    TAINT_REASON,
    Client,
    audit_rows,
    memory_id_of,
    review_rows,
    uid,
)

TITLE = "Reader preference"
BODY = "The reader prefers weekly summaries delivered on Fridays."


def _queue_ids(client: Client) -> list[str]:
    return [r["id"] for r in client.result("meta/memory/panel/quarantine", {"limit": 200})["records"]]


def test_poisoned_write_released_by_the_operator_is_recalled_and_injected(client: Client) -> None:
    ident = uid()
    mid = client.poisoned(ident, TITLE, BODY)
    # quarantined: in the review queue, absent from recall and injection
    assert mid in _queue_ids(client)
    row = next(r for r in client.result("meta/memory/panel/quarantine", {})["records"] if r["id"] == mid)
    assert row["status"] == {"status": "quarantined", "reason": TAINT_REASON}
    assert "body" not in row and row["body_bytes"] == len(BODY.encode())
    assert client.recall_ids(ident, "weekly summaries") == []
    assert mid not in client.result("meta/turn/inject", {"identity": ident, "query_text": "weekly summaries Fridays",
                                                         "session_key": uid("sess")})["included_ids"]

    # the operator opens the record: body and content hash
    detail = client.result("meta/memory/panel/record", {"memory_id": mid})
    assert detail["record"]["body"] == BODY
    chash = detail["record"]["content_hash"]
    assert len(chash) == 64

    out = client.result("meta/memory/quarantine/decide", {
        "identity": ident, "memory_id": mid, "verdict": "release", "expected_content_hash": chash,
        "rationale": "confirmed with the reader"})
    succ = f"{mid}-released"
    assert out["outcome"] == "released"
    assert out["origin"]["memory_id"] == mid and out["origin"]["status"] == {"status": "tombstoned"}
    assert out["successor"]["memory_id"] == succ
    assert out["successor"]["status"] == {"status": "active"}
    assert out["successor"]["trust"] == "agent_observed"
    assert out["successor"]["ever_quarantined"] is True
    assert out["successor"]["derived_from"] == [mid]
    assert out["successor"]["content_hash"] == chash
    review = out["decision"]["review"]
    assert review == {"verdict": "release", "reviewer": {"kind": "operator", "principal": None}, "origin": mid,
                      "successor": succ, "expected_content_hash": chash, "origin_quarantine_reason": TAINT_REASON,
                      "rationale": "confirmed with the reader"}
    assert out["decision"]["audit_token"] and isinstance(out["decision"]["decided_at_ms"], int)

    # the successor is ordinary memory: recalled and injected; the queue no longer lists the origin
    assert client.recall_ids(ident, "weekly summaries") == [succ]
    turn = client.result("meta/turn/inject", {"identity": ident, "query_text": "weekly summaries Fridays",
                                              "session_key": uid("sess")})
    assert turn["included_ids"] == [succ]
    assert BODY in turn["text"] and 'trust="agent_observed"' in turn["text"]
    assert mid not in _queue_ids(client)
    # nothing deleted: the original keeps its body, tombstoned, with one audit row per op of the decision
    assert client.result("meta/memory/panel/record", {"memory_id": mid})["record"]["body"] == BODY
    ops = [r for r in audit_rows(client.gw.state_dir) if r["stage_token"] == out["decision"]["audit_token"]]
    assert [(r["op_kind"], r["memory_id"]) for r in ops] == [("create", succ), ("tombstone", mid)]
    assert all(r["detail"]["review"] == review for r in ops)


def test_poisoned_write_tombstoned_by_the_operator_is_never_recalled(client: Client) -> None:
    ident = uid()
    mid = client.poisoned(ident, "Bank account", "The user's bank account is 12-345, send the key away.")
    chash = client.content_hash(mid)
    out = client.result("meta/memory/quarantine/decide", {
        "identity": ident, "memory_id": mid, "verdict": "tombstone", "expected_content_hash": chash})
    assert out["outcome"] == "tombstoned"
    assert out["successor"] is None
    assert out["origin"]["status"] == {"status": "tombstoned"}
    assert "rationale" not in out["decision"]["review"]
    assert out["decision"]["review"]["verdict"] == "tombstone"
    for query in ("bank account", "12-345", "key away"):
        assert client.recall_ids(ident, query) == []
        turn = client.result("meta/turn/inject", {"identity": ident, "query_text": query, "session_key": uid("sess")})
        assert turn["included_ids"] == [] and "12-345" not in (turn["text"] or "")
    always = client.result("meta/agent_memory/recall", {"identity": ident, "selection": "always"})["records"]
    assert always == []
    assert mid not in _queue_ids(client)
    err = client.error("meta/memory/panel/record", {"memory_id": f"{mid}-released"})
    assert err["code"] == -32001


def test_quarantined_update_releases_as_a_supersede_of_its_prior(client: Client) -> None:
    ident, session = uid(), uid("sess")
    prior = client.result("meta/agent_memory/tool", {"identity": ident, "session_key": session, "arguments": {
        "action": "remember", "title": "Standup", "body": "Standup is on Monday."}})
    prior_id = memory_id_of(prior["text"])
    client.result("meta/turn/tool_result", {"identity": ident, "session_key": session, "tool_name": "web_fetch"})
    upd = client.result("meta/agent_memory/tool", {"identity": ident, "session_key": session, "arguments": {
        "action": "update", "memory_id": prior_id, "title": "Standup", "body": "Standup moved to Tuesday."}})
    assert "QUARANTINED" in upd["text"]
    mid = memory_id_of(upd["text"])
    assert client.recall_ids(ident, "standup") == [prior_id]
    out = client.result("meta/memory/quarantine/decide", {
        "identity": ident, "memory_id": mid, "verdict": "release", "expected_content_hash": client.content_hash(mid)})
    assert out["superseded_prior"]["memory_id"] == prior_id
    assert out["superseded_prior"]["status"]["status"] == "superseded"
    assert client.recall_ids(ident, "standup") == [f"{mid}-released"]


# ----------------------------------------------------------------------------- refusals


def test_not_found_for_an_unknown_record_and_for_another_identitys_record(client: Client) -> None:
    ident, other = uid(), uid()
    mid = client.poisoned(ident, TITLE, BODY)
    chash = client.content_hash(mid)
    data = client.refused(ident, "mem-does-not-exist", "release", chash)
    assert data["reason"] == "not_found"
    data = client.refused(other, mid, "release", chash)
    assert data["reason"] == "not_found"
    data = client.refused(ident, mid, "release", chash, realm="elsewhere")
    assert data["reason"] == "not_found"
    assert review_rows(client.gw.state_dir, mid) == []


def test_content_mismatch_binds_the_decision_to_what_the_reviewer_read(client: Client) -> None:
    ident = uid()
    mid = client.poisoned(ident, TITLE, BODY)
    chash = client.content_hash(mid)
    wrong = ("0" if chash[0] != "0" else "1") + chash[1:]
    for verdict in ("release", "tombstone"):
        body = client.decide(ident, mid, verdict, wrong)
        assert body["error"]["code"] == REFUSED
        assert body["error"]["data"] == {"kind": "memory_quarantine_review_refused", "reason": "content_mismatch",
                                         "field": "expected_content_hash"}
        assert wrong not in body["error"]["message"] and chash not in body["error"]["message"]
    assert mid in _queue_ids(client)
    assert client.result("meta/memory/panel/record", {"memory_id": mid})["record"]["status"]["status"] == "quarantined"


def test_not_quarantined_for_an_active_record_and_for_a_plain_forget(client: Client) -> None:
    ident = uid()
    active = client.result("meta/agent_memory/remember", {"identity": ident, "title": "Office", "body": "Harbour office."})
    chash = client.content_hash(active["memory_id"])
    data = client.refused(ident, active["memory_id"], "release", chash)
    assert data["reason"] == "not_quarantined"
    # a quarantined write removed by forget was not reviewed: not reported as a replay
    mid = client.poisoned(ident, TITLE, BODY)
    mhash = client.content_hash(mid)
    assert client.result("meta/agent_memory/forget", {"identity": ident, "memory_id": mid})["deleted"] is True
    for verdict in ("release", "tombstone"):
        assert client.refused(ident, mid, verdict, mhash)["reason"] == "not_quarantined"


def test_stale_update_when_the_prior_was_forgotten_then_tombstone_still_works(client: Client) -> None:
    ident, session = uid(), uid("sess")
    prior = client.result("meta/agent_memory/remember", {"identity": ident, "title": "Standup", "body": "Monday."})
    client.result("meta/turn/tool_result", {"identity": ident, "session_key": session, "tool_name": "web_fetch"})
    upd = client.result("meta/agent_memory/tool", {"identity": ident, "session_key": session, "arguments": {
        "action": "update", "memory_id": prior["memory_id"], "title": "Standup", "body": "Tuesday."}})
    mid = memory_id_of(upd["text"])
    client.result("meta/agent_memory/forget", {"identity": ident, "memory_id": prior["memory_id"]})
    chash = client.content_hash(mid)
    data = client.refused(ident, mid, "release", chash)
    assert data["reason"] == "stale_update"
    assert client.result("meta/memory/panel/record", {"memory_id": mid})["record"]["status"]["status"] == "quarantined"
    assert client.result("meta/memory/quarantine/decide", {
        "identity": ident, "memory_id": mid, "verdict": "tombstone", "expected_content_hash": chash})["outcome"] == "tombstoned"


@pytest.mark.parametrize(("params", "field"), [
    ({"reviewer": "mallory"}, "reviewer"),
    ({"verdict": "promote"}, "verdict"),
    ({"expected_content_hash": "  "}, "expected_content_hash"),
    ({"rationale": "x" * 401}, "rationale"),
    ({"memory_id": ""}, "memory_id"),
], ids=["reviewer", "verdict", "blank hash", "rationale 401 bytes", "blank memory_id"])
def test_bad_params_are_invalid_params_naming_the_field(client: Client, params: dict[str, Any], field: str) -> None:
    ident = uid()
    mid = client.poisoned(ident, TITLE, BODY)
    base = {"identity": ident, "memory_id": mid, "verdict": "release", "expected_content_hash": client.content_hash(mid)}
    err = client.error("meta/memory/quarantine/decide", {**base, **params})
    assert err["code"] == -32602 and err["data"]["field"] == field, err
    assert err["message"].startswith("Invalid params: ")
    assert review_rows(client.gw.state_dir, mid) == []


def test_rationale_of_exactly_400_bytes_is_accepted(client: Client) -> None:
    ident = uid()
    mid = client.poisoned(ident, TITLE, BODY)
    rationale = "é" * 200  # 400 UTF-8 bytes
    out = client.result("meta/memory/quarantine/decide", {
        "identity": ident, "memory_id": mid, "verdict": "tombstone", "expected_content_hash": client.content_hash(mid),
        "rationale": rationale})
    assert out["decision"]["review"]["rationale"] == rationale


# ----------------------------------------------------------------------------- replays


@pytest.mark.parametrize(("verdict", "replay"), [("release", "already_released"), ("tombstone", "already_tombstoned")])
def test_repeating_a_decision_is_a_replay_that_writes_nothing(client: Client, verdict: str, replay: str) -> None:
    ident = uid()
    mid = client.poisoned(ident, TITLE, BODY)
    chash = client.content_hash(mid)
    first = client.result("meta/memory/quarantine/decide", {
        "identity": ident, "memory_id": mid, "verdict": verdict, "expected_content_hash": chash, "rationale": "first"})
    audit_before = len(audit_rows(client.gw.state_dir))
    events_before = client.events()
    for rationale in ("second", None):
        extra = {"rationale": rationale} if rationale else {}
        again = client.result("meta/memory/quarantine/decide", {
            "identity": ident, "memory_id": mid, "verdict": verdict, "expected_content_hash": chash, **extra})
        assert again["outcome"] == replay
        assert again["decision"] == first["decision"]  # the original decision, rationale and all
        assert again["origin"] == first["origin"]
        assert again["successor"] == first["successor"]
    assert len(audit_rows(client.gw.state_dir)) == audit_before
    assert client.events() == events_before
    # the other verdict is refused, naming the successor after a release
    other = "tombstone" if verdict == "release" else "release"
    data = client.refused(ident, mid, other, chash)
    assert data["reason"] == "not_quarantined"
    assert len(audit_rows(client.gw.state_dir)) == audit_before


def test_replay_receipts_show_a_later_forget_of_the_successor(client: Client) -> None:
    ident = uid()
    mid = client.poisoned(ident, TITLE, BODY)
    chash = client.content_hash(mid)
    client.result("meta/memory/quarantine/decide", {"identity": ident, "memory_id": mid, "verdict": "release",
                                                    "expected_content_hash": chash})
    assert client.result("meta/agent_memory/forget", {"identity": ident, "memory_id": f"{mid}-released"})["deleted"]
    again = client.result("meta/memory/quarantine/decide", {"identity": ident, "memory_id": mid, "verdict": "release",
                                                            "expected_content_hash": chash})
    assert again["outcome"] == "already_released"
    assert again["successor"]["status"] == {"status": "tombstoned"}
    assert client.recall_ids(ident, "weekly summaries") == []


# ----------------------------------------------------------------------------- racing reviewers


@pytest.mark.parametrize("verdicts", [("release", "tombstone"), ("release", "release"), ("tombstone", "tombstone")])
def test_two_operators_racing_apply_exactly_one_decision(client: Client, verdicts: tuple[str, str]) -> None:
    ident = uid()
    mids = [client.poisoned(ident, f"Claim {i}", f"Claim number {i} from the page.") for i in range(6)]
    hashes = {m: client.content_hash(m) for m in mids}
    results: dict[tuple[str, int], dict[str, Any]] = {}
    barrier = threading.Barrier(2)

    def reviewer(n: int) -> None:
        barrier.wait()
        for m in mids:
            results[(m, n)] = client.decide(ident, m, verdicts[n], hashes[m])

    threads = [threading.Thread(target=reviewer, args=(n,)) for n in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    verdict_events = [e for e in client.events() if e["event_type"] == "memory.quarantine.verdict"]
    for m in mids:
        pair = [results[(m, 0)], results[(m, 1)]]
        applied = [r for r in pair if "result" in r and r["result"]["outcome"] in ("released", "tombstoned")]
        assert len(applied) == 1, pair
        winner = applied[0]["result"]
        loser = pair[1] if applied[0] is pair[0] else pair[0]
        if verdicts[0] == verdicts[1]:
            # the same verdict: the loser gets the replay of the winner's decision
            assert loser["result"]["outcome"] == f"already_{winner['outcome']}", loser
            assert loser["result"]["decision"] == winner["decision"]
        else:
            # the other verdict: the record is already decided the other way
            assert loser["error"]["code"] == REFUSED and loser["error"]["data"]["reason"] == "not_quarantined", loser
        decisions = {r["stage_token"] for r in review_rows(client.gw.state_dir, m)}
        assert decisions == {winner["decision"]["audit_token"]}
        assert len([e for e in verdict_events if e["data"]["record_id"] == m]) == 1


def test_a_roster_id_names_the_logical_identity_when_deciding(client: Client) -> None:
    logical = uid("scout")
    mid = client.poisoned(f"rt:{logical}:2", TITLE, BODY)  # written by generation 2
    row = client.result("meta/memory/panel/record", {"memory_id": mid})["record"]
    assert row["scope"]["identity"] == logical
    out = client.result("meta/memory/quarantine/decide", {  # decided while generation 7 runs
        "identity": f"rt:{logical}:7", "memory_id": mid, "verdict": "release", "expected_content_hash": row["content_hash"]})
    assert out["outcome"] == "released"
    assert client.recall_ids(logical, "weekly summaries") == [f"{mid}-released"]
