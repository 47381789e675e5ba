"""A session key is taken as given over the wire: a padded or hidden one is refused, naming
``session_key`` and the rule, and never becomes another session (through a real gateway).

Before, ``" s1"`` was trimmed into ``"s1"``: a call naming the padded key acted on the session of the
clean one (its taint, its injection budget), while the tool's ``--session-key`` and tokens with
whitespace were already refused. Now every session method and ``derived_from_sessions`` apply one rule.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from support import GatewayProcess, module_gateway

pytestmark = pytest.mark.gateway

AGENT = "lead:main"

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("meta/session/note", {}),
    ("meta/session/reset", {}),
    ("meta/session/compacted", {}),
    ("meta/session/retire", {"cause": "done"}),
    ("meta/turn/tool_result", {"tool_name": "web_fetch"}),
    ("meta/turn/inject", {"query_text": "refunds"}),
    ("meta/agent_memory/tool", {"arguments": {"action": "remember", "title": "Refunds", "body": "to the card"}}),
]


@pytest.fixture(scope="module")
def refusing_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """One gateway for this module's tests whose calls are refused or touch only the clean session ``s1`` of one
    agent, which none of them taints or writes to: each still sees nothing written."""
    yield from module_gateway(tmp_path_factory, "session-keys")


@pytest.mark.parametrize("key,rule", [
    (" s1", "session_key must not begin or end with whitespace (a session key is taken as given, never trimmed)"),
    ("s1\n", "session_key must not begin or end with whitespace"),
    ("\u00a0s1", "session_key must not begin or end with whitespace"),
    ("s1\u200b", "session_key must not contain invisible or direction-changing characters"),
    ("\u202es1", "session_key must not contain invisible or direction-changing characters"),
    ("s\u20601", "session_key must not contain invisible or direction-changing characters"),
])
def test_every_session_method_refuses_a_padded_or_hidden_key(refusing_gateway: GatewayProcess,
                                                             key: str, rule: str) -> None:
    refusing_gateway.result("meta/session/note", {"identity": AGENT, "session_key": "s1"})
    for method, extra in CALLS:
        error = refusing_gateway.rpc(method, {"identity": AGENT, "session_key": key, **extra})["error"]
        assert error["code"] == -32602 and error["data"]["field"] == "session_key", (method, error)
        assert rule in error["message"], (method, error)
    # the clean session was not touched by any of them: still clean, nothing written or queued
    assert refusing_gateway.result("meta/session/note", {"identity": AGENT, "session_key": "s1"})["tainted"] is False
    assert refusing_gateway.result("meta/agent_memory/list", {"identity": AGENT})["records"] == []
    assert refusing_gateway.result("meta/memory/panel/quarantine", {})["records"] == []


def test_a_padded_key_does_not_reach_a_tainted_session(gateway: GatewayProcess) -> None:
    gateway.result("meta/session/note", {"identity": AGENT, "session_key": "web"})
    assert gateway.result("meta/turn/tool_result", {"identity": AGENT, "session_key": "web",
                                                    "tool_name": "web_fetch"})["session_tainted"] is True
    # a reset naming " web" would have cleared the taint of "web" once trimmed
    error = gateway.rpc("meta/session/reset", {"identity": AGENT, "session_key": " web"})["error"]
    assert error["code"] == -32602 and error["data"]["field"] == "session_key"
    assert gateway.result("meta/session/note", {"identity": AGENT, "session_key": "web"})["tainted"] is True


def test_derived_sessions_are_held_to_the_same_rule(refusing_gateway: GatewayProcess) -> None:
    error = refusing_gateway.rpc("meta/agent_memory/remember", {"identity": AGENT, "title": "t", "body": "b",
                                                       "derived_from_sessions": ["s1", "s1 "]})["error"]
    assert error["code"] == -32602 and error["data"]["field"] == "derived_from_sessions"
    assert "derived_from_sessions[1] must not begin or end with whitespace" in error["message"]
    assert refusing_gateway.result("meta/agent_memory/list", {"identity": AGENT})["records"] == []
