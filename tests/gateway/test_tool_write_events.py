"""The ``memory`` tool's writes put the same ``memory.record.*`` events on the timeline as the
application's writes (through a real gateway): ids only, after the write commits; a quarantined write
announces itself as ``memory.write.quarantined`` instead, and a duplicate changes nothing and says nothing.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from support import GatewayProcess

pytestmark = pytest.mark.gateway

AGENT = "writer:main"


def _tool(gw: GatewayProcess, session: str, **arguments: Any) -> str:
    out = gw.result("meta/agent_memory/tool", {"identity": AGENT, "session_key": session, "arguments": arguments})
    assert not out.get("is_error"), out
    return str(out["text"])


def _id(text: str) -> str:
    found = re.search(r"mem-[0-9a-f-]+", text)
    assert found, text
    return found.group(0)


def _events(gw: GatewayProcess, mark: str) -> list[tuple[str, dict[str, Any]]]:
    events = gw.result("meta/events/list", {"after": mark, "limit": 1000})["events"]
    return [(e["event_type"], e["data"]) for e in events
            if e["identity"] == AGENT and e["event_type"].startswith(("memory.record.", "memory.write."))]


def test_tool_remember_update_forget_emit_record_events(gateway: GatewayProcess) -> None:
    gateway.result("meta/session/note", {"identity": AGENT, "session_key": "clean"})
    mark = gateway.result("meta/status")["events"]["last_event_id"]
    body = "the secret plan is to ship on friday"
    first = _id(_tool(gateway, "clean", action="remember", title="Plan", body=body))
    _tool(gateway, "clean", action="remember", title="Plan", body=body)  # exact duplicate: nothing
    second = _id(_tool(gateway, "clean", action="update", memory_id=first, title="Plan", body=body + " or monday"))
    _tool(gateway, "clean", action="forget", memory_id=second)
    events = _events(gateway, mark)
    assert events == [
        ("memory.record.created", {"realm": "default", "record_id": first}),
        ("memory.record.updated", {"realm": "default", "record_id": second, "supersedes": first}),
        ("memory.record.forgotten", {"realm": "default", "record_id": second}),
    ]
    assert "ship on friday" not in json.dumps(events)


def test_a_quarantined_tool_write_is_announced_as_quarantined_only(gateway: GatewayProcess) -> None:
    gateway.result("meta/session/note", {"identity": AGENT, "session_key": "web"})
    verdict = gateway.result("meta/turn/tool_result", {"identity": AGENT, "session_key": "web",
                                                       "tool_name": "web_fetch"})
    assert verdict["session_tainted"] is True
    mark = gateway.result("meta/status")["events"]["last_event_id"]
    held = _id(_tool(gateway, "web", action="remember", title="From the web", body="a page said so"))
    [(kind, data)] = _events(gateway, mark)
    assert kind == "memory.write.quarantined" and data["record_id"] == held
