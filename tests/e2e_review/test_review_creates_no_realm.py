"""No review call creates a realm, and a caller with no grant in a realm learns nothing of it.

Over HTTP with ``[access]`` bearer tokens: ``rev`` may review only ``bob:main`` in realm ``beta`` (and
commit only into mob ``team`` there). Its gating decisions, proposal decisions and dreams naming other
realms must leave no realm database behind (``[agent_memory] max_realms`` would fill, refusing every
tenant's first write into a new realm), and must answer alike whether the realm exists or not. The
admin, who may do everything, creates no realm by deciding or dreaming in a realm nobody wrote to.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support import GatewayProcess, RpcClient, access_toml, realm_db, start_gateway, write_config

ADMIN, REV = "admin-token-realmgate-1", "rev-token-realmgate-2"
ALL = ("agent.view", "agent.memory.read", "agent.memory.write", "agent.memory.delete", "mob.memory.read",
       "operator.memory.read", "memory.quarantine.review", "mob.memory.propose", "mob.memory.commit",
       "agent.session.manage")
BOB = {"identity": "bob:main", "realm": "beta"}
REVIEW = ("agent.view", "agent.memory.read", "memory.quarantine.review", "agent.memory.write", "agent.memory.delete")


def _config() -> str:
    grants: list[Any] = [("admin", a) for a in ALL]
    grants += [("admin", a, {"realm": "*"}) for a in ALL]
    grants += [("rev", a, BOB) for a in REVIEW]
    grants += [("rev", a, {"mob": "team", "realm": "beta"}) for a in ("mob.memory.read", "mob.memory.commit")]
    return "[agent_memory]\nmax_realms = 4\n\n" + access_toml({ADMIN: "admin", REV: "rev"}, grants)


class World:
    def __init__(self, gw: GatewayProcess) -> None:
        self.gw = gw
        self.admin = RpcClient(gw, ADMIN)
        self.rev = RpcClient(gw, REV)

    def realms_on_disk(self) -> set[str]:
        return {p.name for p in (self.gw.state_dir / "agent-memory").glob("*.sqlite3")}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root: Path = tmp_path_factory.mktemp("realmgate")
    gw = start_gateway(root / "state", config=write_config(root / "meta.toml", _config()))
    w = World(gw)
    # realm "acme" exists (a tenant wrote to it); realm "beta" holds rev's identity
    w.admin.result("meta/agent_memory/remember", {"identity": "ann:main", "realm": "acme",
                                                  "title": "Acme note", "body": "Acme ships on Fridays."})
    w.admin.result("meta/agent_memory/remember", {"identity": "bob:main", "realm": "beta",
                                                  "title": "Beta note", "body": "Beta ships on Mondays."})
    yield w
    w.admin.close()
    w.rev.close()
    gw.stop()


def _stable(answer: dict[str, Any]) -> dict[str, Any]:
    """A JSON-RPC answer without its id, and its result without clock readings or realm name."""
    if "error" in answer:
        return {"error": answer["error"]}
    result = {k: v for k, v in answer["result"].items() if k not in ("started_at_ms", "completed_at_ms", "realm")}
    return {"result": result}


def test_a_reviewer_without_a_grant_in_a_realm_creates_none_and_cannot_fill_max_realms(world: World) -> None:
    before = world.realms_on_disk()
    for i in range(3):
        err = world.rev.error("meta/gating/decide", {"realm": f"flood{i}", "pending_id": "pend-x",
                                                     "decision": "approve"})
        assert "unknown pending promotion" in err["message"], err
        out = world.rev.result("meta/memory/steward/dream", {"realm": f"r{i}dream"})
        assert out["status"] == "skipped" and out["ops_committed"] == 0, out
        err = world.rev.error("meta/memory/proposals/decide", {"realm": f"prop{i}", "proposal_id": "prop-x",
                                                               "action": "reject"})
        assert "unknown proposal" in err["message"], err
    assert world.realms_on_disk() == before
    for name in ("flood0", "r0dream", "prop0"):
        assert not realm_db(world.gw.state_dir, name).exists()
    # the tenants' next realm is still theirs to create
    world.admin.result("meta/agent_memory/remember", {"identity": "cy:main", "realm": "gamma",
                                                      "title": "Gamma note", "body": "Gamma ships daily."})
    assert realm_db(world.gw.state_dir, "gamma").exists()


@pytest.mark.parametrize(("method", "params"), [
    ("meta/gating/decide", {"pending_id": "pend-x", "decision": "approve"}),
    ("meta/gating/decide", {"pending_id": "pend-x", "decision": "deny"}),
    ("meta/memory/steward/dream", {}),
    ("meta/memory/proposals/decide", {"proposal_id": "prop-x", "action": "accept"}),
    ("meta/memory/proposals/decide", {"proposal_id": "prop-x", "action": "hold"}),
])
def test_a_caller_without_a_grant_in_a_realm_gets_one_answer_whether_it_exists_or_not(
        world: World, method: str, params: dict[str, Any]) -> None:
    there = world.rev.rpc(method, {**params, "realm": "acme"})
    absent = world.rev.rpc(method, {**params, "realm": "nowhere"})
    assert _stable(there) == _stable(absent), (there, absent)
    if "result" in there:
        assert there["result"]["realm"] == "acme" and absent["result"]["realm"] == "nowhere"
    assert not realm_db(world.gw.state_dir, "nowhere").exists()


def test_no_decision_or_dream_of_the_admin_creates_a_realm(world: World) -> None:
    """Holding every grant, still no realm appears for a decision on nothing or an empty dream."""
    err = world.admin.error("meta/gating/decide", {"realm": "void1", "pending_id": "pend-x", "decision": "deny"})
    assert "unknown pending promotion" in err["message"], err
    out = world.admin.result("meta/memory/steward/dream", {"realm": "void2"})
    assert out["status"] == "skipped" and out["reason"] == "nothing to review", out
    err = world.admin.error("meta/memory/proposals/decide", {"realm": "void3", "proposal_id": "prop-x",
                                                             "action": "reject"})
    assert "unknown proposal" in err["message"], err
    err = world.admin.error("meta/memory/quarantine/decide", {
        "realm": "void4", "identity": "bob:main", "memory_id": "mem-x", "verdict": "tombstone",
        "expected_content_hash": "0" * 64})
    assert err["data"]["reason"] == "not_found", err
    for name in ("void1", "void2", "void3", "void4"):
        assert not realm_db(world.gw.state_dir, name).exists(), name
