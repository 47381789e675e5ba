"""A ``memory_id`` longer than any record's id is refused naming the field, and never echoed back: a
caller (or a model steered through the ``memory`` tool) cannot make the gateway answer with megabytes
of its own text."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from meta_memory.agent_memory.fields import MAX_MEMORY_ID_CHARS
from support import GatewayProcess, module_gateway

IDENT = "lead:main"
HUGE = "m" * 1_000_000
CALLS = [
    ("meta/agent_memory/history", {"identity": IDENT}),
    ("meta/agent_memory/forget", {"identity": IDENT}),
    ("meta/agent_memory/update", {"identity": IDENT, "body": "b"}),
    ("meta/agent_memory/erase", {"identity": IDENT, "dry_run": True}),
    ("meta/memory/panel/record", {}),
    ("meta/memory/quarantine/decide", {"identity": IDENT, "verdict": "release", "expected_content_hash": "0" * 64}),
]


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """One gateway for the module: every call here is refused or names a record that does not exist."""
    yield from module_gateway(tmp_path_factory, "memory-id-cap")


@pytest.mark.parametrize(("method", "params"), CALLS, ids=[m for m, _ in CALLS])
def test_an_oversized_memory_id_is_refused_without_an_echo(gateway: Any, method: str, params: dict[str, Any]) -> None:
    body = gateway.rpc(method, {**params, "memory_id": HUGE})
    err = body["error"]
    assert err["code"] == -32602 and err["data"]["field"] == "memory_id", err
    assert f"at most {MAX_MEMORY_ID_CHARS} characters" in err["message"]
    assert len(str(body)) < 2_000
    # an id of the longest allowed length is looked up as usual (not found, or nothing to forget)
    longest = gateway.rpc(method, {**params, "memory_id": "m" * MAX_MEMORY_ID_CHARS})
    assert "error" not in longest or longest["error"]["code"] != -32602, longest


def test_the_memory_tool_refuses_an_oversized_id_a_steered_model_sends(gateway: Any) -> None:
    for action in ("forget", "update"):
        args = {"action": action, "memory_id": HUGE, "title": "t", "body": "b"}
        out = gateway.result("meta/agent_memory/tool", {"identity": IDENT, "session_key": "s", "arguments": args})
        assert out["is_error"] is True and f"at most {MAX_MEMORY_ID_CHARS} characters" in out["text"], out
        assert len(out["text"]) < 2_000
