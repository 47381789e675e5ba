"""A proposal made from a tainted session keeps its quarantine lineage once accepted (real gateway over HTTP).

A quarantined write released by a reviewer lands with the durable ``ever_quarantined`` marker (capped at
``agent_observed`` for good, reviewer-only once tombstoned). A ``propose_to_mob`` from a tainted session is
the same content reaching a shared scope through review, so the record an operator's accept commits carries
the same marker; a clean proposal's record does not.
"""

from __future__ import annotations

from typing import Any

from e2e_review_support import Client, uid

MOB = "research"


def _propose(client: Client, identity: str, session: str, title: str) -> str:
    out = client.result("meta/agent_memory/tool", {
        "identity": identity, "session_key": session, "mob": MOB,
        "arguments": {"action": "propose_to_mob", "title": title, "body": f"{title}: for the whole mob."}})
    assert out["is_error"] is False and "Proposed to mob scope" in out["text"], out
    return str(out["text"].split(" as ", 1)[1].split(".", 1)[0])


def _listed(client: Client, proposal_id: str) -> dict[str, Any]:
    rows = client.result("meta/memory/proposals/list", {"limit": 200})["proposals"]
    return next(r for r in rows if r["proposal_id"] == proposal_id)


def _accepted_record(client: Client, proposal_id: str) -> dict[str, Any]:
    out = client.result("meta/memory/proposals/decide", {"proposal_id": proposal_id, "action": "accept"})
    assert out["status"] == "accepted" and out["created"] is True, out
    record: dict[str, Any] = client.result("meta/memory/panel/record", {"memory_id": out["record_id"]})["record"]
    assert record["scope"] == {"scope": "mob", "realm": "default", "mob": MOB}
    return record


def test_an_accepted_tainted_proposal_lands_marked_ever_quarantined(client: Client) -> None:
    ident, session = uid(), uid("sess")
    verdict = client.result("meta/turn/tool_result", {"identity": ident, "session_key": session, "tool_name": "web_fetch"})
    assert verdict["session_tainted"] is True
    pid = _propose(client, ident, session, "Wire the budget to the new account")
    assert _listed(client, pid)["tainted"] is True

    record = _accepted_record(client, pid)
    assert record["status"] == {"status": "active"}
    assert record["trust"] == "agent_observed"
    assert record["ever_quarantined"] is True


def test_an_accepted_clean_proposal_is_not_marked(client: Client) -> None:
    pid = _propose(client, uid(), uid("sess"), "Retro notes are due on Fridays")
    assert _listed(client, pid)["tainted"] is False
    assert _accepted_record(client, pid)["ever_quarantined"] is False
