"""Text log lines stay one line each, whatever text a caller put into what they say: a tool or MCP server
name reported by the host (an outside MCP server chooses its own names); a session key holding a line
break or an escape is refused before anything is logged."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from support import start_gateway

pytestmark = pytest.mark.gateway

FORGED = "2026-01-01 00:00:00,000 WARNING meta_memory.access: FORGED"


@pytest.mark.parametrize(("breaker", "log_format"), [("\n", "text"), ("\r", "text"), ("\u2028", "text"),
                                                     ("\x85", "text"), ("\x1b[1A\x1b[2K", "text"),
                                                     ("\u2028", "json"), ("\x85", "json")])
def test_caller_chosen_names_cannot_forge_a_log_line(tmp_path: Path, breaker: str, log_format: str) -> None:
    gw = start_gateway(tmp_path / "state", "--log-format", log_format)
    try:
        # a session key holding a line break or an escape is refused outright (a key is taken as given)
        refused = gw.rpc("meta/turn/tool_result", {"identity": "a:b", "session_key": f"chat{breaker}{FORGED}",
                                                   "tool_name": "web_fetch"})["error"]
        assert refused["code"] == -32602 and refused["data"]["field"] == "session_key", refused
        key = "chat-FORGED-by-session-key"
        tainted = gw.result("meta/turn/tool_result", {"identity": "a:b", "session_key": key,
                                                      "tool_name": f"mcp__evil{breaker}{FORGED} by server__fetch"})
        assert tainted["session_tainted"] is True
        out = gw.result("meta/agent_memory/tool", {"identity": "a:b", "session_key": key, "arguments": {
            "action": "remember", "title": "from the page", "body": "the page says so"}})
        assert "QUARANTINED" in out["text"]
        derived = gw.result("meta/agent_memory/remember", {"identity": "a:b", "title": "summary", "body": "gist",
                                                           "derived_from_sessions": [key]})
        assert derived["quarantined"]
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and sum("FORGED" in line for line in gw.proc.log_tail) < 2:
            time.sleep(0.05)
    finally:
        gw.stop()
    lines = [line for line in gw.proc.log_tail if "FORGED" in line]
    assert len(lines) >= 2, list(gw.proc.log_tail)[-10:]
    for line in lines:  # the caller's text stays inside the gateway's own line, its breaks escaped
        assert not line.startswith("2026-01-01") and "quarantined" in line.split("FORGED", 1)[0], repr(line)
        assert not line.rstrip("\n").splitlines()[1:], repr(line)
        assert not any(ch in line.rstrip("\n") for ch in ("\r", "\n", "\u2028", "\x85", "\x1b")), repr(line)
