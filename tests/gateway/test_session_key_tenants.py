"""A session key another principal's identity tainted neither quarantines these writes nor says so
(real gateway, tokens each managing their own identities' sessions).

Before, any identity that tainted a session key (``meta/turn/tool_result`` with a web tool) in the
realm quarantined every other identity's ``memory`` tool writes from that key, whoever's agents
they were: one principal could hold another tenant's writes for review by tainting the keys it
uses (``conv-0`` … ``conv-4999`` in one batch), and learn from ``tainted`` or a write's reason
whether another tenant's session of a key had read web content. Under access control another
identity's taint of the key now counts only for a caller who manages that identity's sessions too
(a host running both agents), and then as before, under a reason that names nothing of the other.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from support import GatewayProcess, access_toml, write_config

pytestmark = pytest.mark.gateway

BOB, HOST, LEAD = "bob-token-0123456789", "host-token-0123456789", "lead-token-0123456789"
EVERY = ("agent.session.manage", "agent.memory.write", "agent.memory.delete", "agent.memory.read", "agent.view")
OTHER = "another identity's session of this key"


def _gateway(gateway_factory: Any, tmp_path: Path) -> GatewayProcess:
    grants: list[Any] = [("bob", a, {"identity": "bob"}) for a in EVERY]
    grants += [("host", a, {"identity": "victim"}) for a in EVERY]
    grants += [("lead", a, {"identity": who}) for who in ("victim", "bob") for a in EVERY]
    config = write_config(tmp_path / "c.toml", access_toml({BOB: "bob", HOST: "host", LEAD: "lead"}, grants))
    return gateway_factory(tmp_path / "state", config=config)


def _write(gw: GatewayProcess, token: str, identity: str, session: str, title: str) -> str:
    return gw.result("meta/agent_memory/tool", {"identity": identity, "session_key": session, "arguments": {
        "action": "remember", "title": title, "body": f"{title} body"}}, token=token)["text"]


def _taint(gw: GatewayProcess, token: str, identity: str, session: str) -> None:
    verdict = gw.result("meta/turn/tool_result", {"identity": identity, "session_key": session,
                                                  "tool_name": "web_fetch"}, token=token)
    assert verdict["session_tainted"] is True


def test_another_principals_taint_of_a_key_never_reaches_these_writes(gateway_factory: Any, tmp_path: Path) -> None:
    gw = _gateway(gateway_factory, tmp_path)
    _taint(gw, BOB, "bob", "conv-1")
    # the host of the victim does not run bob: the victim's session of that key is its own, and clean
    assert gw.result("meta/session/note", {"identity": "victim", "session_key": "conv-1"},
                     token=HOST)["tainted"] is False
    written = _write(gw, HOST, "victim", "conv-1", "Quarterly plan")
    assert "QUARANTINED" not in written and written.startswith("Stored memory"), written
    forgotten = gw.result("meta/agent_memory/tool", {"identity": "victim", "session_key": "conv-1", "arguments": {
        "action": "forget", "memory_id": written.split()[2].rstrip(".")}}, token=HOST)["text"]
    assert "held" not in forgotten.lower(), forgotten
    for method in ("meta/session/reset", "meta/session/compacted"):
        assert gw.result(method, {"identity": "victim", "session_key": "conv-1"}, token=HOST)["tainted"] is False

    # nor the other way round: what tainted the victim's key is not bob's to learn
    _taint(gw, HOST, "victim", "conv-2")
    assert gw.result("meta/session/note", {"identity": "bob", "session_key": "conv-2"}, token=BOB)["tainted"] is False
    assert "QUARANTINED" not in _write(gw, BOB, "bob", "conv-2", "Bob's note")

    # each identity's own taint still holds its own writes
    assert "QUARANTINED" in _write(gw, BOB, "bob", "conv-1", "Bob after browsing")
    assert "QUARANTINED" in _write(gw, HOST, "victim", "conv-2", "Victim after browsing")


def test_a_host_running_both_agents_still_quarantines_on_either_ones_taint(gateway_factory: Any,
                                                                           tmp_path: Path) -> None:
    gw = _gateway(gateway_factory, tmp_path)
    _taint(gw, BOB, "bob", "shared")
    # the lead manages both identities' sessions: bob's taint of the key counts for the victim's writes
    assert gw.result("meta/session/note", {"identity": "victim", "session_key": "shared"},
                     token=LEAD)["tainted"] is True
    held = _write(gw, LEAD, "victim", "shared", "Lead's summary")
    assert "QUARANTINED" in held and OTHER in held and "web_fetch" not in held, held
    # the same write through the victim's own host, which does not run bob, lands active
    assert "QUARANTINED" not in _write(gw, HOST, "victim", "shared", "Host's summary")
