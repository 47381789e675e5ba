"""One identity cannot fill the session state for the others (real gateway, tokens each limited to one
identity): past its quota (``session_state_identity_limit``) the flooding identity fails closed for
itself, while another identity's sessions, tool results and clean writes proceed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from support import GatewayProcess, access_toml, write_config

pytestmark = pytest.mark.gateway

BOB, ALICE = "bob-token-0123456789", "alice-token-0123456789"
EVERY = ("agent.session.manage", "agent.memory.write", "agent.memory.read", "agent.view")


def _gateway(gateway_factory: Any, tmp_path: Path) -> GatewayProcess:
    grants: list[Any] = [(who, a, {"identity": f"{who}:main"}) for who in ("bob", "alice") for a in EVERY]
    config = write_config(tmp_path / "c.toml", "[agent_memory]\nsession_state_limit = 200\n\n"
                          + access_toml({BOB: "bob", ALICE: "alice"}, grants))
    return gateway_factory(tmp_path / "state", config=config)


def _batch(gw: GatewayProcess, token: str, calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    payload = [{"jsonrpc": "2.0", "id": i, "method": m, "params": p} for i, (m, p) in enumerate(calls)]
    out = httpx.post(gw.url + "/rpc", json=payload, headers={"Authorization": f"Bearer {token}"}, timeout=600).json()
    return sorted(out, key=lambda o: o["id"])


def _write(gw: GatewayProcess, token: str, identity: str, session: str, title: str) -> str:
    return gw.result("meta/agent_memory/tool", {"identity": identity, "session_key": session, "arguments": {
        "action": "remember", "title": title, "body": f"{title} body"}}, token=token)["text"]


def test_a_flooding_identity_exhausts_its_own_quota_not_the_gateway(gateway_factory: Any, tmp_path: Path) -> None:
    gw = _gateway(gateway_factory, tmp_path)
    flood = _batch(gw, BOB, [("meta/turn/tool_result", {"identity": "bob:main", "session_key": f"flood-{i}",
                                                        "tool_name": "web_fetch"}) for i in range(400)])
    # taint is never refused: every flooded session reads as tainted, past the quota too
    assert all(o["result"]["session_tainted"] is True for o in flood), [o for o in flood if "result" not in o][:2]

    # alice is untouched: a new session, a trusted tool result, a clean write that lands active
    assert gw.result("meta/session/note", {"identity": "alice:main", "session_key": "a1"}, token=ALICE)["tainted"] is False
    verdict = gw.result("meta/turn/tool_result", {"identity": "alice:main", "session_key": "a1",
                                                  "tool_name": "calculator"}, token=ALICE)
    assert verdict["session_tainted"] is False
    text = _write(gw, ALICE, "alice:main", "a1", "alice clean note")
    assert "QUARANTINED" not in text, text
    inject = gw.rpc("meta/turn/inject", {"identity": "alice:main", "session_key": "a2", "query_text": "note"},
                    token=ALICE)
    assert "error" not in inject, inject

    # bob fails closed for himself: a fresh, never-tainted session of his writes quarantined ...
    text = _write(gw, BOB, "bob:main", "never-tainted", "bob after the flood")
    assert "QUARANTINED" in text and "quota" in text, text
    # ... and a new injection budget for him is refused, naming his quota
    gw.result("meta/agent_memory/remember", {"identity": "bob:main", "title": "Bob fact", "body": "zebra crossing"},
              token=BOB)
    err = gw.error("meta/turn/inject", {"identity": "bob:main", "session_key": "b-new", "query_text": "zebra"},
                   token=BOB)
    assert err["code"] == -32040 and err["data"]["reason"] == "session_limit"
    assert "session_state_identity_limit" in err["message"]


def test_an_identity_in_every_realm_cannot_fill_the_gateway(gateway_factory: Any, tmp_path: Path) -> None:
    # bob speaks as bob:main in every realm: a quota per realm would let him add one quota a realm, and
    # past the cap every other identity's LLM writes quarantine; his rows in all realms together are capped
    grants: list[Any] = [(who, a, {"identity": f"{who}:main", "realm": "*"}) for who in ("bob", "alice") for a in EVERY]
    # the realms are listed, so the "*" grants may create them (a "*" grant creates no other realm)
    listed = ", ".join(f'"{r}"' for r in ("default", "fresh", *(f"r{i}" for i in range(60))))
    config = write_config(tmp_path / "c.toml", f"[agent_memory]\nsession_state_limit = 200\nrealms = [{listed}]\n\n"
                          + access_toml({BOB: "bob", ALICE: "alice"}, grants))
    gw = gateway_factory(tmp_path / "state", config=config)
    flood = _batch(gw, BOB, [("meta/turn/tool_result", {"identity": "bob:main", "realm": f"r{i % 60}",
                                                        "session_key": f"flood-{i}", "tool_name": "web_fetch"})
                             for i in range(600)])
    assert all(o["result"]["session_tainted"] is True for o in flood), [o for o in flood if "result" not in o][:2]

    # alice, in the default realm and in a realm bob flooded, is untouched
    for realm in ("default", "r1"):
        session = {"identity": "alice:main", "realm": realm, "session_key": f"a-{realm}"}
        assert gw.result("meta/session/note", session, token=ALICE)["tainted"] is False
        text = gw.result("meta/agent_memory/tool", {**session, "arguments": {
            "action": "remember", "title": f"alice note {realm}", "body": "alice clean body"}}, token=ALICE)["text"]
        assert "QUARANTINED" not in text, text

    # bob fails closed for himself, in a realm he flooded and in one he never named
    for realm in ("r2", "fresh"):
        text = gw.result("meta/agent_memory/tool", {"identity": "bob:main", "realm": realm, "session_key": "never-tainted",
                                                    "arguments": {"action": "remember", "title": f"bob {realm}",
                                                                  "body": "bob after the flood"}}, token=BOB)["text"]
        assert "QUARANTINED" in text and "quota" in text, text
