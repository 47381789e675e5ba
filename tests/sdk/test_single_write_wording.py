"""A refusal of a call that wrote one record speaks of that record, not of a batch: no ``op 0:`` in the
message (its data keeps ``op_index`` 0, which clients read). A bulk remember, even of one item, keeps naming its items."""

from __future__ import annotations

from typing import Any

import pytest

from meta_memory import Meta
from meta_memory.errors import AgentMemoryError

ME = "lead:main"
AWS = "AKIA" + "IOSFODNN7EXAMPLE"


def _superseded(agent: Any) -> str:
    first = agent.remember("Deploy", "Deploy on Fridays")
    agent.update(first.memory_id, body="Deploy on Thursdays")
    return str(first.memory_id)


def _single_calls(handle: Any) -> None:
    agent = handle.agent(ME)
    old = _superseded(agent)
    with pytest.raises(AgentMemoryError) as caught:
        agent.update(old, body="again")
    assert caught.value.message.startswith(f"invalid agent memory record: record '{old}' is not active (superseded")
    assert "op 0" not in caught.value.message and caught.value.data.get("op_index") == 0
    with pytest.raises(AgentMemoryError) as caught:
        agent.remember("Key", f"the key is {AWS}")
    assert caught.value.reason == "secret_detected" and "op 0" not in caught.value.message
    assert caught.value.message.startswith("invalid agent memory record: write refused: content matches")
    # the prefix says "invalid agent memory record" once; the rest names the field and its rule
    told = agent.session("s-1").tool({"action": "remember", "title": "Big", "body": "x" * 100_000})
    assert told.is_error and told.text == "invalid agent memory record: body must be at most 65536 bytes"
    current = agent.remember("Deploy day", "Deploy on Mondays").memory_id
    told = agent.session("s-1").tool({"action": "update", "memory_id": current, "title": "Big", "body": "x" * 100_000})
    assert told.is_error and told.text == "invalid agent memory record: body must be at most 65536 bytes"
    told = agent.session("s-1").tool({"action": "propose_to_mob", "title": "Big", "body": "x" * 100_000}, mob="crew")
    assert told.is_error and told.text == "invalid agent memory record: body must be at most 65536 bytes"
    told = agent.session("s-1").tool({"action": "update", "memory_id": old, "title": "Deploy", "body": "again"})
    assert told.is_error and "op 0" not in told.text and "is not active" in told.text


def _batch_of_one_keeps_its_item(handle: Any) -> None:
    out = handle.agent(ME).remember_batch([("Key", f"the key is {AWS}")])
    (item,) = out.results
    assert item.error is not None and item.error["data"]["op_index"] == 0
    assert "op 0: write refused" in item.error["message"]


def test_embedded(tmp_path: Any) -> None:
    with Meta.builder().persistent_state(tmp_path).agent_memory(True).build() as handle:
        _single_calls(handle)
        _batch_of_one_keeps_its_item(handle)


def test_over_a_gateway(gateway: Any) -> None:
    with Meta.connect(gateway.url) as handle:
        _single_calls(handle)
        _batch_of_one_keeps_its_item(handle)
