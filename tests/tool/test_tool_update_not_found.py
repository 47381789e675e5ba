"""The ``memory`` tool's ``update`` of an id that is not the calling identity's answers as ``forget`` does
(through a real gateway and over the store directly): ``memory <id> was not found in your scope``, an
error, the same for an id that never existed, another identity's record and another realm's record, so
the reply tells nothing of other scopes; nothing is written."""

from __future__ import annotations

from typing import Any

import pytest

from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from meta_memory.clock import ManualClock
from meta_memory.firewall import Firewall
from meta_memory.session_ref import SessionRef
from meta_memory.tool import RecorderTool
from meta_memory.tool.store_ops import StoreRecorderOps
from support import GatewayProcess

ME, OTHER = "lead:main", "scout:one"
MISSING = "mem-1-1-1-00000000deadbeef"


def _tool(gw: GatewayProcess, identity: str, realm: str = "default", **arguments: Any) -> dict[str, Any]:
    out = gw.result("meta/agent_memory/tool", {"identity": identity, "realm": realm, "session_key": "s1",
                                               "arguments": arguments})
    return dict(out)


@pytest.mark.gateway
def test_update_of_an_id_outside_the_scope_answers_like_forget(gateway: GatewayProcess) -> None:
    mine = gateway.result("meta/agent_memory/remember", {"identity": ME, "title": "own", "body": "mine"})
    theirs = gateway.result("meta/agent_memory/remember", {"identity": OTHER, "title": "theirs", "body": "secret"})
    elsewhere = gateway.result("meta/agent_memory/remember", {"identity": ME, "realm": "hr", "title": "hr",
                                                              "body": "in another realm"})
    before = {who: gateway.result("meta/agent_memory/list", {"identity": who})["records"] for who in (ME, OTHER)}
    for memory_id in (MISSING, theirs["memory_id"], elsewhere["memory_id"]):
        update = _tool(gateway, ME, action="update", memory_id=memory_id, title="changed", body="changed")
        forget = _tool(gateway, ME, action="forget", memory_id=memory_id)
        expected = f"memory {memory_id} was not found in your scope"
        assert (update["text"], update["is_error"]) == (expected, True), update
        assert (forget["text"], forget["is_error"]) == (expected, True), forget
    after = {who: gateway.result("meta/agent_memory/list", {"identity": who})["records"] for who in (ME, OTHER)}
    assert after == before
    # the identity's own record is still updated as usual
    own = _tool(gateway, ME, action="update", memory_id=mine["memory_id"], title="own", body="mine, revised")
    assert own["text"].startswith("Updated: new record memory mem-") and not own.get("is_error")


def test_update_of_another_identitys_id_and_an_unknown_id_give_one_answer(tmp_path: Any) -> None:
    clock = ManualClock(1_700_000_000_000)
    store = SqliteAgentMemoryStore(tmp_path / "agent-memory", clock)
    try:
        tool = RecorderTool(StoreRecorderOps(store, Firewall(None, clock).gate), max_entries=8)
        stored = tool.dispatch(SessionRef("default", OTHER, "s1"), None,
                               {"action": "remember", "title": "theirs", "body": "their fact"})
        theirs = stored.text.split()[2].rstrip(".")
        answers = {memory_id: tool.dispatch(SessionRef("default", ME, "s1"), None,
                                            {"action": "update", "memory_id": memory_id, "body": "x", "title": "x"})
                   for memory_id in (theirs, MISSING)}
        assert {(r.text.replace(m, "<id>"), r.is_error) for m, r in answers.items()} == \
            {("memory <id> was not found in your scope", True)}
    finally:
        store.close()
