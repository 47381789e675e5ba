"""A forget of a superseded version is refused as an update of it is: ``-32040`` ``invalid_record`` naming
the current version's id, and nothing changes (the current version stays active and recalled). Through
every surface: the RPC over a real gateway, the SDK (embedded and over HTTP), the command line and the
``memory`` tool. A forget of an id already forgotten keeps its answer (``deleted: false``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from meta_memory import Meta
from meta_memory.errors import AgentMemoryError
from support import GatewayProcess

pytestmark = pytest.mark.gateway

ID = "lead:main"


def _chain(gw: GatewayProcess, identity: str = ID) -> tuple[str, str]:
    """``(A, B)``: a record and the version an update made of it."""
    a = gw.result("meta/agent_memory/remember", {"identity": identity, "title": "Office", "body": "Floor 3"})
    b = gw.result("meta/agent_memory/update", {"identity": identity, "memory_id": a["memory_id"], "body": "Floor 4"})
    return a["memory_id"], b["memory_id"]


def _recalled(gw: GatewayProcess, identity: str = ID) -> list[str]:
    got = gw.result("meta/agent_memory/recall", {"identity": identity, "query_text": "office floor"})
    return [r["memory_id"] for r in got["records"]]


def test_rpc_forget_of_a_superseded_version_is_refused_like_its_update(gateway: GatewayProcess) -> None:
    a, b = _chain(gateway)
    update = gateway.error("meta/agent_memory/update", {"identity": ID, "memory_id": a, "body": "x"})
    forget = gateway.error("meta/agent_memory/forget", {"identity": ID, "memory_id": a})
    assert forget["code"] == update["code"] == -32040
    assert forget["data"]["kind"] == update["data"]["kind"]
    assert forget["data"]["reason"] == update["data"]["reason"] == "invalid_record"
    assert f"record '{a}' is not active (superseded by '{b}'; forget that record instead)" in forget["message"]
    assert _recalled(gateway) == [b]  # nothing changed
    # the current version forgets; then the old id, and the current one again, answer as before
    assert gateway.result("meta/agent_memory/forget", {"identity": ID, "memory_id": b}) == {
        "memory_id": b, "deleted": True}
    assert _recalled(gateway) == []
    assert gateway.result("meta/agent_memory/forget", {"identity": ID, "memory_id": b})["deleted"] is False
    assert gateway.error("meta/agent_memory/forget", {"identity": ID, "memory_id": a})["code"] == -32040


def test_another_identity_cannot_learn_the_successor(gateway: GatewayProcess) -> None:
    """The refusal names the successor only to the identity holding the record: another identity's forget
    of the same id answers as for an unknown id."""
    a, b = _chain(gateway)
    other = gateway.result("meta/agent_memory/forget", {"identity": "scout:one", "memory_id": a})
    assert other == {"memory_id": a, "deleted": False}
    assert _recalled(gateway) == [b]


def test_memory_tool_forget_of_a_superseded_version_is_a_tool_error(gateway: GatewayProcess) -> None:
    agent = "writer:main"
    gateway.result("meta/session/note", {"identity": agent, "session_key": "s"})
    a, b = _chain(gateway, agent)
    out = gateway.result("meta/agent_memory/tool", {"identity": agent, "session_key": "s",
                                                    "arguments": {"action": "forget", "memory_id": a}})
    assert out["is_error"] is True
    assert f"superseded by '{b}'; forget that record instead" in out["text"]
    assert _recalled(gateway, agent) == [b]


@pytest.mark.parametrize("mode", ["embedded", "http"])
def test_sdk_forget_of_a_superseded_version_raises(mode: str, tmp_path: Path, gateway_factory: Any) -> None:
    handle = (Meta.builder().persistent_state(tmp_path / "e").build() if mode == "embedded"
              else Meta.connect(gateway_factory(tmp_path / "h").url))
    with handle:
        agent = handle.agent(ID)
        a = agent.remember("Office", "Floor 3").memory_id
        b = agent.update(a, body="Floor 4").memory_id
        with pytest.raises(AgentMemoryError) as refused:
            agent.forget(a)
        assert refused.value.reason == "invalid_record" and f"superseded by '{b}'" in str(refused.value)
        assert [r.memory_id for r in agent.recall("office floor")] == [b]
        assert agent.forget(b).deleted is True
        assert agent.forget(b).deleted is False


def test_cli_forget_of_a_superseded_version_exits_1_naming_the_current_version(gateway: GatewayProcess) -> None:
    a, b = _chain(gateway)
    env = {**os.environ, "COLUMNS": "200"}
    args = [sys.executable, "-m", "meta_memory.cli", "forget", a, "--url", gateway.url, "--identity", ID]
    said = subprocess.run(args, capture_output=True, text=True, timeout=120, env=env)
    assert said.returncode == 1 and "forgotten" not in said.stdout
    assert f"superseded by '{b}'; forget that record instead" in " ".join(said.stderr.split())
    as_json = subprocess.run([*args, "--json"], capture_output=True, text=True, timeout=120, env=env)
    assert as_json.returncode == 1
    error = json.loads(as_json.stdout)["error"]
    assert error["code"] == -32040 and error["data"]["reason"] == "invalid_record"
    assert _recalled(gateway) == [b]
