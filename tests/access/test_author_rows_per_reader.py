"""A reader of a mob's rows learns neither the name of an author it may not view nor its session's taint.

A proposal's ``author`` and a mob record's ``provenance.author`` name the agent identity that wrote them, and a
proposal's ``tainted`` flag tells whether that identity's session had read outside content when it proposed.
A caller who may read the mob but not ``agent.view`` the author (here: under a deny scoped by the label the
roster gives it) sees the author's identity as ``null`` with ``withheld_by_access: true``, on every surface
(``meta/memory/proposals/list``, ``meta/memory/panel/proposals``, ``meta/memory/panel/records``,
``meta/memory/panel/record``); the taint flag is ``null`` unless it may also manage the author's sessions
(``agent.session.manage``). Driven over a real gateway.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from support import GatewayProcess, access_toml, start_gateway, write_config

pytestmark = pytest.mark.gateway

SECRET, MOB, SESSION = "secret:main", "research", "sec-web"
ADMIN, CAROL = "author-rows-admin-0001", "author-rows-carol-0001"
VIEWER, MANAGER = "author-rows-viewer-0001", "author-rows-manager-0001"
TOKENS = {ADMIN: "admin", CAROL: "carol", VIEWER: "viewer", MANAGER: "manager"}
READS = ("mob.memory.read", "agent.memory.read", "agent.view")
GRANTS = [("admin", a) for a in (*READS, "agent.memory.write", "agent.memory.delete", "agent.session.manage",
                                  "memory.quarantine.review", "mob.memory.propose", "mob.memory.commit")]
# carol and the viewer read every scope, the manager also drives the identities' sessions
GRANTS += [(who, a) for who in ("carol", "viewer", "manager") for a in READS]
GRANTS += [("manager", "agent.session.manage")]
# carol may not view a confidential identity (the roster labels secret:main so)
DENIES = [("carol", "agent.view", {"label": "confidential"})]
WITHHELD = {"author": "agent", "identity": None, "withheld_by_access": True}
SHOWN = {"author": "agent", "identity": SECRET}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GatewayProcess, str]]:
    root = tmp_path_factory.mktemp("author-rows")
    toml = access_toml(TOKENS, GRANTS, denies=DENIES)
    toml += f'\n[[access.roster]]\nidentity = "{SECRET}"\nlabels = ["confidential"]\n'
    gw = start_gateway(root / "state", config=write_config(root / "c.toml", toml))
    try:
        verdict = gw.result("meta/turn/tool_result", {"identity": SECRET, "session_key": SESSION,
                                                      "tool_name": "WebFetch"}, token=ADMIN)
        assert verdict["session_tainted"] is True
        for title in ("t1", "t2"):
            out = gw.result("meta/agent_memory/tool", {
                "identity": SECRET, "session_key": SESSION, "mob": MOB,
                "arguments": {"action": "propose_to_mob", "title": title, "body": f"{title}: a finding for the mob"},
            }, token=ADMIN)
            assert "Proposed to mob scope" in out["text"], out
        t2 = [p for p in gw.result("meta/memory/proposals/list", {}, token=ADMIN)["proposals"] if p["title"] == "t2"]
        accepted = gw.result("meta/memory/proposals/decide", {"proposal_id": t2[0]["proposal_id"], "action": "accept"},
                             token=ADMIN)
        yield gw, accepted["record_id"]
    finally:
        gw.stop()


def _surfaces(gw: GatewayProcess, record_id: str, token: str) -> dict[str, Any]:
    """Every row naming the author: the open proposal (t1) in both proposal listings, the accepted one
    (t2) in the proposals list, and the mob record made from it in the record listing and its detail."""
    def proposal(method: str, params: dict[str, Any]) -> dict[str, Any]:
        return next(p for p in gw.result(method, params, token=token)["proposals"] if p["title"] in ("t1", "t2"))

    records = gw.result("meta/memory/panel/records", {"scope": "mob", "scope_key": MOB}, token=token)["records"]
    detail = gw.result("meta/memory/panel/record", {"memory_id": record_id}, token=token)
    return {
        "proposals/list": proposal("meta/memory/proposals/list", {}),
        "proposals/list accepted": proposal("meta/memory/proposals/list", {"status": "accepted"}),
        "panel/proposals": proposal("meta/memory/panel/proposals", {}),
        "panel/records": next(r for r in records if r["id"] == record_id),
        "panel/record": detail["record"],
        "panel/record chain": next(c for c in detail["chain"] if c["chain_role"] == "self"),
    }


def _seen(surfaces: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """``{surface: (author, tainted)}``: a record row has no taint flag (``...``)."""
    return {name: (row["author"], row["tainted"]) if "proposal_id" in row else (row["provenance"]["author"], ...)
            for name, row in surfaces.items()}


def _expected(author: dict[str, Any], tainted: bool | None) -> dict[str, tuple[Any, Any]]:
    return {"proposals/list": (author, tainted), "proposals/list accepted": (author, tainted),
            "panel/proposals": (author, tainted), "panel/records": (author, ...), "panel/record": (author, ...),
            "panel/record chain": (author, ...)}


def test_a_reader_who_may_not_view_the_author_sees_it_withheld_and_no_taint(
        world: tuple[GatewayProcess, str]) -> None:
    gw, record_id = world
    surfaces = _surfaces(gw, record_id, CAROL)
    assert _seen(surfaces) == _expected(WITHHELD, None)
    assert SECRET not in json.dumps(surfaces)
    # the same reader is refused the identity's own memory
    refused = gw.rpc("meta/agent_memory/recall", {"identity": SECRET}, token=CAROL)
    assert refused["error"]["data"]["action"] == "agent.view"


def test_a_reader_who_may_view_the_author_sees_it_but_not_the_taint(world: tuple[GatewayProcess, str]) -> None:
    gw, record_id = world
    assert _seen(_surfaces(gw, record_id, VIEWER)) == _expected(SHOWN, None)


def test_a_manager_of_the_authors_sessions_sees_the_author_and_the_taint(world: tuple[GatewayProcess, str]) -> None:
    gw, record_id = world
    assert _seen(_surfaces(gw, record_id, MANAGER)) == _expected(SHOWN, True)


def test_the_admin_sees_everything(world: tuple[GatewayProcess, str]) -> None:
    gw, record_id = world
    assert _seen(_surfaces(gw, record_id, ADMIN)) == _expected(SHOWN, True)


def test_without_access_control_rows_are_unchanged(tmp_path_factory: pytest.TempPathFactory) -> None:
    with start_gateway(tmp_path_factory.mktemp("author-rows-open") / "state") as gw:
        gw.result("meta/turn/tool_result", {"identity": SECRET, "session_key": SESSION, "tool_name": "WebFetch"})
        gw.result("meta/agent_memory/tool", {"identity": SECRET, "session_key": SESSION, "mob": MOB,
                                             "arguments": {"action": "propose_to_mob", "title": "t1", "body": "t1"}})
        for method in ("meta/memory/proposals/list", "meta/memory/panel/proposals"):
            rows = gw.result(method, {})["proposals"]
            assert [(p["author"], p["tainted"]) for p in rows] == [(SHOWN, True)], method
