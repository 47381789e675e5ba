"""The ``tool_results = "unreported"`` posture is a property of the session, not taint that a reset or
the expiry of idle state can clear: its tool results are still never reported afterwards."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from meta_memory.clock import ManualClock
from meta_memory.config import parse_config
from meta_memory.mcp_server import McpMemoryBridge
from meta_memory.rpc.registry import CallContext
from meta_memory.runtime import Runtime
from meta_memory.server.gateway import Gateway

DAY = 86_400_000


def _write(call: Any, identity: str, session: str, title: str) -> str:
    return str(call("meta/agent_memory/tool", {"identity": identity, "session_key": session, "arguments": {
        "action": "remember", "title": title, "body": f"{title} body"}})["text"])


@pytest.mark.gateway
def test_a_reset_does_not_clear_an_unreported_session(gateway: Any) -> None:
    """Over a real socket: the session noted unreported, then reset (by its host or anyone who may
    speak as the identity), still has its writes quarantined; a reported session's reset clears."""
    def call(method: str, params: dict[str, Any]) -> Any:
        return gateway.result(method, params)

    ident = "ide:main"
    assert call("meta/session/note", {"identity": ident, "session_key": "ide-1",
                                      "tool_results": "unreported"})["tainted"] is True
    assert "QUARANTINED" in _write(call, ident, "ide-1", "before reset")
    call("meta/session/reset", {"identity": ident, "session_key": "ide-1"})
    assert call("meta/session/note", {"identity": ident, "session_key": "ide-1"})["tainted"] is True
    text = _write(call, ident, "ide-1", "after reset")
    assert "QUARANTINED" in text and "unreported tool results" in text, text
    call("meta/session/reset", {"identity": ident})
    assert "QUARANTINED" in _write(call, ident, "ide-1", "after a reset of the current session")
    # an ordinary tainted session is still cleared by its reset
    call("meta/turn/tool_result", {"identity": ident, "session_key": "web-1", "tool_name": "web_fetch"})
    call("meta/session/reset", {"identity": ident, "session_key": "web-1"})
    assert "QUARANTINED" not in _write(call, ident, "web-1", "reported session after reset")


def test_the_bridge_keeps_its_unreported_posture_past_the_expiry_of_idle_state(tmp_path: Path) -> None:
    clock = ManualClock()
    runtime = Runtime(parse_config({"agent_memory": {"session_state_expiry_days": 30}}), tmp_path / "state",
                      clock=clock, start_background=False)
    try:
        gateway = Gateway.for_runtime(runtime)
        ctx = CallContext(transport="mcp")

        def call(method: str, params: Any) -> Any:
            return gateway.call(method, params, ctx)

        bridge = McpMemoryBridge(call, "ide:main", "ide-1")
        bridge.note_session()
        first = bridge.call_tool("memory", {"action": "remember", "title": "First", "body": "first note"})
        assert "QUARANTINED" in first.content[0].text  # type: ignore[union-attr]
        clock.advance(31 * DAY)  # the IDE sat idle: the session's state expires
        state = runtime.agent_memory.firewall.tracker.state  # type: ignore[union-attr]
        state.sweep()
        assert state.stats()["tainted_sessions"] == 0
        late = bridge.call_tool("memory", {"action": "remember", "title": "Late", "body": "after a month idle"})
        assert "QUARANTINED" in late.content[0].text and "unreported" in late.content[0].text  # type: ignore[union-attr]
        # another caller resetting the bridge's session does not launder the next write either
        call("meta/session/reset", {"identity": "ide:main", "session_key": "ide-1"})
        out = bridge.call_tool("memory", {"action": "remember", "title": "After reset", "body": "still unreported"})
        assert "QUARANTINED" in out.content[0].text  # type: ignore[union-attr]
    finally:
        runtime.close()
