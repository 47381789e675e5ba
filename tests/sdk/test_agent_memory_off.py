"""With agent memory off, every agent-memory method's refusal says why and what turns it on: an embedded
handle built without ``persistent_state`` (no state directory), and a gateway whose configuration sets
``[agent_memory] enabled = false`` (over HTTP, through the SDK and the raw RPC)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from meta_memory import Meta
from meta_memory.errors import MethodNotFound
from support import write_config

NEEDS_STATE = ("agent memory is off: it needs a state directory; build the handle with "
               "Meta.builder().persistent_state(path), or run meta-memory serve --state-dir DIR")
DISABLED = "agent memory is off: the configuration sets [agent_memory] enabled = false"


def _every_agent_call(handle: Any) -> dict[str, Any]:
    agent = handle.agent("lead:main")
    return {
        "meta/agent_memory/remember": lambda: agent.remember("Office", "Floor 3"),
        "meta/agent_memory/recall": lambda: agent.recall("office"),
        "meta/agent_memory/forget": lambda: agent.forget("mem-1"),
        "meta/agent_memory/update": lambda: agent.update("mem-1", body="Floor 4"),
        "meta/agent_memory/list": lambda: agent.list(),
        "meta/agent_memory/history": lambda: agent.history("mem-1"),
        "meta/agent_memory/manifest": lambda: agent.manifest(),
    }


def test_an_embedded_handle_without_a_state_directory_says_agent_memory_needs_one() -> None:
    with Meta.builder().build() as handle:
        assert handle.status().agent_memory.enabled is False
        for method, call in _every_agent_call(handle).items():
            with pytest.raises(MethodNotFound) as refused:
                call()
            assert str(refused.value) == f"Method not found: {method} ({NEEDS_STATE})", method


@pytest.mark.gateway
def test_a_gateway_with_agent_memory_disabled_names_the_key(tmp_path: Path, gateway_factory: Any) -> None:
    gw = gateway_factory(config=write_config(tmp_path / "meta.toml", "[agent_memory]\nenabled = false\n"))
    with Meta.connect(gw.url) as handle:
        for method, call in _every_agent_call(handle).items():
            with pytest.raises(MethodNotFound) as refused:
                call()
            assert str(refused.value) == f"Method not found: {method} ({DISABLED})", method
    for method, params in (("meta/agent_memory/tool", {"identity": "a:b", "session_key": "s", "arguments": {}}),
                           ("meta/session/note", {"identity": "a:b", "session_key": "s"}),
                           ("meta/memory/quarantine/decide", {}),
                           ("meta/memory/panel/records", {})):
        err = gw.error(method, params)
        assert err["code"] == -32601 and err["message"] == f"Method not found: {method} ({DISABLED})", err
    # a method no gateway has keeps the bare answer
    assert gw.error("meta/agent_memory/nope", {})["message"] == "Method not found: meta/agent_memory/nope"
