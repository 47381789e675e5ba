"""A review decision's ``rationale`` is durable text (the decision's audit row, every replay's answer), so it
is held to the one secret scanner every other stored text meets (real gateway over HTTP): a credential pasted
into it refuses the decision (-32602 naming ``rationale`` and the secret class, never the text) and nothing is
decided."""

from __future__ import annotations

from e2e_review_support import Client, uid

TOKEN = "ghp_" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7d"  # a GitHub token's shape
GITHUB_CLASS = "github-token"


def _refused_for_the_secret(answer: dict) -> None:
    error = answer.get("error")
    assert error is not None and error["code"] == -32602, answer
    assert error["data"]["field"] == "rationale"
    assert GITHUB_CLASS in error["message"] and TOKEN not in str(answer)


def test_a_quarantine_decision_refuses_a_credential_in_its_rationale(client: Client) -> None:
    ident = uid()
    mid = client.poisoned(ident, "Deploy notes", "Deploy notes: the release train leaves on Tuesdays.")
    chash = client.content_hash(mid)
    for verdict in ("release", "tombstone"):
        _refused_for_the_secret(client.decide(ident, mid, verdict, chash, rationale=f"checked with {TOKEN}"))
    queued = [r["id"] for r in client.result("meta/memory/panel/quarantine", {"limit": 200})["records"]]
    assert mid in queued
    out = client.result("meta/memory/quarantine/decide", {"identity": ident, "memory_id": mid, "verdict": "tombstone",
                                                          "expected_content_hash": chash, "rationale": "spam"})
    assert out["outcome"] == "tombstoned" and out["decision"]["review"]["rationale"] == "spam"


def test_a_proposal_decision_refuses_a_credential_in_its_rationale(client: Client) -> None:
    out = client.result("meta/agent_memory/tool", {
        "identity": uid(), "session_key": uid("sess"), "mob": "research",
        "arguments": {"action": "propose_to_mob", "title": "Retro cadence", "body": "Retros run every other Friday."}})
    pid = out["text"].split(" as ", 1)[1].split(".", 1)[0]
    for action in ("accept", "hold", "reject"):
        _refused_for_the_secret(client.rpc("meta/memory/proposals/decide",
                                           {"proposal_id": pid, "action": action, "rationale": TOKEN}))
    rows = client.result("meta/memory/proposals/list", {"limit": 200})["proposals"]
    assert next(r for r in rows if r["proposal_id"] == pid)["status"] == "pending"
