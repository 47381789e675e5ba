"""A tainted or narrowly granted caller cannot spread memory (issue: trust boundary II, §2), over
HTTP with ``[access]`` bearer tokens and an LLM steward at a local fake endpoint:

- ``propose_to_mob`` needs ``mob.memory.propose`` on the target mob;
- ``meta/memory/steward/dream``, ``meta/gating/decide`` and ``meta/memory/proposals/decide`` act
  only on scopes the caller may review and commit;
- ``meta/memory/proposals/list`` and build-time injection show mob sections only to readers;
- the LLM steward's ``release`` is a gated promotion an operator decides.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from e2e_review_support import Client, FakeStewardLlm, memory_id_of, uid
from support import GatewayProcess, start_gateway, write_config

ADMIN, HOST, REX, DAVE = "admin-token-0001", "host-token-0002", "rex-token-0003", "dave-token-0004"
X, Y = uid("agent-x"), uid("agent-y")
ALL = ("agent.view", "agent.memory.read", "agent.memory.write", "agent.memory.delete", "mob.memory.read",
       "operator.memory.read", "memory.quarantine.review", "mob.memory.propose", "mob.memory.commit")


def _grant(action: str, who: str, on: str | None = None) -> list[str]:
    lines = ["[[access.grants]]", f'action = "{action}"', f"who = {{ principal = \"{who}\" }}"]
    return lines + ([f"on = {{ {on} }}"] if on else [])


def _config(llm_url: str) -> str:
    lines = ["[agent_memory]", "[agent_memory.steward]", 'kind = "llm"', f'base_url = "{llm_url}"',
             'model = "fake-steward"', "", "[access]", "enabled = true"]
    for token, who in ((ADMIN, "admin"), (HOST, "host"), (REX, "rex"), (DAVE, "dave")):
        lines += ["[[access.tokens]]", f'sha256 = "{hashlib.sha256(token.encode()).hexdigest()}"',
                  f'principal = "{who}"']
    for action in ALL:
        lines += _grant(action, "admin")
    for action in ("agent.view", "agent.memory.read", "agent.memory.write", "agent.memory.delete",
                   "agent.session.manage"):
        lines += _grant(action, "host")
    lines += _grant("mob.memory.propose", "host", 'mob = "team"')
    for action in ("memory.quarantine.review", "agent.view", "agent.memory.read", "agent.memory.write",
                   "agent.memory.delete"):
        lines += _grant(action, "rex", f'identity = "{X}"')
    for action in ("agent.view", "agent.memory.read"):
        lines += _grant(action, "dave")
    return "\n".join(lines) + "\n"


@dataclass
class World:
    gw: GatewayProcess
    llm: FakeStewardLlm
    payloads: list[dict[str, Any]]
    admin: Client
    host: Client
    rex: Client
    dave: Client


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("scoped")
    llm = FakeStewardLlm()
    payloads: list[dict[str, Any]] = []

    def decide(payload: dict[str, Any]) -> dict[str, Any]:
        payloads.append(payload)
        return {
            "quarantine_verdicts": [{"record_id": q["record_id"], "verdict": "release", "rationale": "looks fine"}
                                    for q in payload.get("quarantine", []) if q.get("held") != "forget"],
            "proposal_verdicts": [{"proposal_id": p["proposal_id"], "verdict": "accept", "rationale": "ok"}
                                  for p in payload.get("proposals", [])],
        }

    llm.decide = decide
    gw = start_gateway(root / "state", config=write_config(root / "config.toml", _config(llm.base_url)))
    w = World(gw, llm, payloads, Client(gw, ADMIN), Client(gw, HOST), Client(gw, REX), Client(gw, DAVE))
    yield w
    for c in (w.admin, w.host, w.rex, w.dave):
        c.close()
    gw.stop()
    llm.close()


def _tool(c: Client, identity: str, session: str, mob: str | None = None, **arguments: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"identity": identity, "session_key": session, "arguments": arguments}
    if mob is not None:
        params["mob"] = mob
    return c.rpc("meta/agent_memory/tool", params)


def _propose(c: Client, identity: str, mob: str, title: str) -> dict[str, Any]:
    return _tool(c, identity, uid("sess"), mob=mob, action="propose_to_mob", title=title, body=f"{title} for the mob.")


def _poison(c: Client, identity: str, title: str) -> str:
    sess = uid("sess")
    c.result("meta/turn/tool_result", {"identity": identity, "session_key": sess, "tool_name": "web_fetch"})
    out = _tool(c, identity, sess, action="remember", title=title, body=f"{title}: from a web page.")["result"]
    assert "QUARANTINED" in out["text"], out
    return memory_id_of(out["text"])


def _proposal_ids(c: Client, method: str = "meta/memory/proposals/list") -> set[str]:
    rows = c.result(method, {}).get("proposals", [])
    return {r["proposal_id"] for r in rows}


def test_propose_to_mob_needs_mob_memory_propose_on_that_mob(world: World) -> None:
    ok = _propose(world.host, uid(), "team", "Retro notes")
    assert "Proposed to mob scope" in ok["result"]["text"], ok
    refused = _propose(world.host, uid(), "finance", "Wire the budget")
    assert refused["error"]["code"] == -32030
    assert refused["error"]["data"] == {"kind": "access_denied", "action": "mob.memory.propose", "resource": "mob:default/finance"}
    titles = {r["title"] for r in world.admin.result("meta/memory/proposals/list", {})["proposals"]}
    assert "Retro notes" in titles and "Wire the budget" not in titles


def test_proposals_list_applies_the_panel_row_visibility(world: World) -> None:
    _propose(world.host, uid(), "team", "Visible only to mob readers")
    admin_ids = _proposal_ids(world.admin)
    assert admin_ids and admin_ids == _proposal_ids(world.admin, "meta/memory/panel/proposals")
    # dave reads every identity, but no mob: neither listing shows a mob proposal to him
    assert _proposal_ids(world.dave) == set() == _proposal_ids(world.dave, "meta/memory/panel/proposals")


def test_a_dream_by_a_one_identity_reviewer_touches_only_that_identity(world: World) -> None:
    xid, yid = _poison(world.host, X, "X note"), _poison(world.host, Y, "Y note")
    _propose(world.host, uid(), "team", "Team norm from rex's dream")
    before = len(world.payloads)
    report = world.rex.result("meta/memory/steward/dream", {})
    assert report["status"] == "completed"
    shown = world.payloads[before:]
    assert len(shown) == 1
    # the steward was shown X's record only: no other identity, no proposal
    assert {q["record_id"] for q in shown[0]["quarantine"]} == {xid}
    assert shown[0]["proposals"] == []
    titles = {r["title"] for r in world.admin.result("meta/memory/panel/records", {"scope": "mob", "scope_key": "team",
                                                                                  "realm": "default"})["records"]}
    assert "Team norm from rex's dream" not in titles
    # the LLM's release became a gated promotion: X's record is still quarantined, nothing active yet
    rec = world.admin.result("meta/memory/panel/record", {"memory_id": xid})["record"]
    assert rec["status"]["status"] == "quarantined"
    promos = world.admin.result("meta/memory/panel/quarantine", {})["pending_promotions"]
    mine = [p for p in promos if p["record_id"] == xid]
    assert len(mine) == 1 and mine[0]["scope_kind"] == "identity" and mine[0]["scope_key"] == X
    assert all(p["record_id"] != yid for p in promos)
    # rex may decide the promotion of X's record (his scope)
    out = world.rex.result("meta/gating/decide", {"pending_id": mine[0]["pending_id"], "decision": "approve"})
    assert out["status"] == "committed"
    assert world.admin.result("meta/memory/panel/record", {"memory_id": out["promoted_id"]})["record"]["status"][
        "status"] == "active"


def test_gating_decide_refuses_a_promotion_outside_the_callers_scopes(world: World) -> None:
    yid = _poison(world.host, Y, "Y fact for the admin dream")
    world.admin.result("meta/memory/steward/dream", {})
    promos = world.admin.result("meta/memory/panel/quarantine", {})["pending_promotions"]
    pending = next(p["pending_id"] for p in promos if p["record_id"] == yid)
    for decision in ("approve", "deny"):
        err = world.rex.error("meta/gating/decide", {"pending_id": pending, "decision": decision})
        assert err["code"] == -32030 and err["data"]["resource"] == f"identity:default/{Y}"
    # nothing changed: the admin still finds it pending and decides it
    assert any(p["pending_id"] == pending for p in world.admin.result("meta/memory/panel/quarantine", {})[
        "pending_promotions"])
    out = world.admin.result("meta/gating/decide", {"pending_id": pending, "decision": "deny"})
    assert out["status"] == "denied"


def test_proposals_decide_needs_commit_on_the_target_mob(world: World) -> None:
    _propose(world.host, uid(), "team", "Decided by whom")
    pid = next(r["proposal_id"] for r in world.admin.result("meta/memory/proposals/list", {})["proposals"]
               if r["title"] == "Decided by whom")
    err = world.rex.error("meta/memory/proposals/decide", {"proposal_id": pid, "action": "accept"})
    assert err["code"] == -32030
    assert world.admin.result("meta/memory/proposals/decide", {"proposal_id": pid, "action": "accept"})[
        "status"] == "accepted"


def test_build_injection_shows_a_mob_section_only_to_its_readers(world: World) -> None:
    _propose(world.host, uid(), "team", "Mob build fact")
    world.admin.result("meta/memory/steward/dream", {})  # the admin's dream accepts the clean proposal
    team = world.admin.result("meta/memory/panel/records", {"scope": "mob", "scope_key": "team", "realm": "default"})
    mob_ids = {r["id"] for r in team["records"] if r["title"] == "Mob build fact"}
    assert len(mob_ids) == 1
    ident = uid()
    params = {"identity": ident, "query_text": "mob build fact", "surface": "build", "mobs": ["team"]}
    seen = world.admin.result("meta/turn/inject", params)
    assert "Mob build fact" in seen["text"] and "Mob records:" in seen["text"], seen
    hidden = world.host.result("meta/turn/inject", params)  # the host token reads identities, not the mob
    text = hidden["text"] or ""
    assert "Mob build fact" not in text and "Mob records:" not in text and "Retro notes" not in text, hidden


def _held(c: Client, identity: str, title: str) -> str:
    sess = uid("sess")
    mid = c.result("meta/agent_memory/remember", {"identity": identity, "title": title,
                                                  "body": f"{title}: the team's own note."})["memory_id"]
    c.result("meta/turn/tool_result", {"identity": identity, "session_key": sess, "tool_name": "web_fetch"})
    out = _tool(c, identity, sess, action="forget", memory_id=mid)["result"]
    assert "HELD pending review" in out["text"], out
    return mid


def test_held_forgets_are_shown_and_decided_only_by_reviewers_of_their_scope(world: World) -> None:
    xmid, ymid = _held(world.host, X, "X held note"), _held(world.host, Y, "Y held note")
    # the host reads the record but is no reviewer: no hold is shown, the queue is closed to it
    detail = world.host.result("meta/memory/panel/record", {"memory_id": xmid})
    assert detail["record"]["status"]["status"] == "active" and "pending_forget" not in detail
    assert world.host.error("meta/memory/panel/quarantine", {})["code"] == -32030
    # rex sees X's hold, not Y's
    queue = {f["memory_id"] for f in world.rex.result("meta/memory/panel/quarantine", {})["pending_forgets"]}
    assert xmid in queue and ymid not in queue
    assert world.rex.result("meta/memory/panel/record", {"memory_id": xmid})["pending_forget"]["memory_id"] == xmid
    ychash = world.admin.result("meta/memory/panel/record", {"memory_id": ymid})["record"]["content_hash"]
    err = world.rex.error("meta/memory/quarantine/decide", {"identity": Y, "memory_id": ymid, "verdict": "tombstone",
                                                           "expected_content_hash": ychash})
    assert err["code"] == -32030
    # an anonymous caller cannot decide either, and the record is still active
    anon = Client(world.gw)
    assert anon.error("meta/memory/quarantine/decide", {"identity": Y, "memory_id": ymid, "verdict": "tombstone",
                                                       "expected_content_hash": ychash})["code"] == -32030
    anon.close()
    assert world.admin.result("meta/memory/panel/record", {"memory_id": ymid})["record"]["status"]["status"] == "active"
    xchash = world.rex.result("meta/memory/panel/record", {"memory_id": xmid})["record"]["content_hash"]
    out = world.rex.result("meta/memory/quarantine/decide", {"identity": X, "memory_id": xmid, "verdict": "tombstone",
                                                            "expected_content_hash": xchash})
    assert out["outcome"] == "tombstoned" and out["decision"]["review"]["reviewer"] == {"kind": "operator",
                                                                                        "principal": "rex"}
