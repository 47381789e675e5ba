"""The bound agent takes ``metadata`` (``remember``, ``update``) and ``filter`` (``recall``, ``list``,
``iter_records``) as the handle's methods do, refused by the same rules naming the same fields.

Before, ``agent.update(id, metadata=...)`` was a ``TypeError``, and ``agent.update(id)`` answered that
it "needs at least one of title, body, tags, metadata" although metadata could not be passed. Through
real handles: embedded, a gateway over HTTP and a spawned stdio gateway, sync and async.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from meta_memory.errors import InvalidParams


def test_agent_metadata_and_filters(handle: Any) -> None:
    agent = handle.agent("lead:main", realm="default")
    apollo = agent.remember("Launch", "The launch window opens Tuesday.", metadata={"project": "apollo", "n": 3})
    assert apollo.metadata == {"project": "apollo", "n": 3}
    agent.remember("Budget", "The launch budget is fixed.", metadata={"project": "gemini", "n": 1})
    found = agent.recall("launch", filter={"project": "apollo"})
    assert [r.memory_id for r in found] == [apollo.memory_id]
    assert [r.title for r in agent.list(filter={"n": {"$gte": 2}}).records] == ["Launch"]
    assert [r.title for r in agent.iter_records(filter={"project": "gemini"})] == ["Budget"]

    updated = agent.update(apollo.memory_id, metadata={"project": "apollo", "n": 4})
    assert updated.supersedes == apollo.memory_id and updated.record.metadata == {"project": "apollo", "n": 4}
    assert updated.record.title == "Launch"  # metadata alone is a change; the rest is kept
    assert [r.memory_id for r in agent.recall("launch", filter={"n": 4})] == [updated.memory_id]

    # the handle's rules, naming the same fields
    for call, field in ((lambda: agent.remember("T", "B", metadata={"$bad": 1}), "metadata"),
                        (lambda: agent.update(updated.memory_id, metadata={"a.b": 1}), "metadata"),
                        (lambda: agent.recall("launch", filter={"n": {"$near": 1}}), "filter"),
                        (lambda: agent.list(filter={"n": {"$near": 1}}), "filter")):
        with pytest.raises(InvalidParams) as exc:
            call()
        assert exc.value.field is not None and re.split(r"[.[]", exc.value.field)[0] == field, exc.value.message
    with pytest.raises(InvalidParams) as exc:
        agent.update(updated.memory_id)
    assert "metadata" in exc.value.message
    # no single member is at fault: the refusal names the params object and the rule
    assert exc.value.field == "params" and exc.value.data["field"] == "params"
    assert "at least one of title, body, tags, metadata, ttl_s, clear_expiry" in exc.value.message
    with pytest.raises(InvalidParams) as exc:
        agent.update(updated.memory_id, ttl_s=60, clear_expiry=True)
    assert exc.value.field == "clear_expiry" and "exclusive" in exc.value.message


@pytest.mark.parametrize("mode", ["embedded", "http"])
def test_async_agent_metadata_and_filters(async_handle: Any, mode: str) -> None:
    async def run() -> None:
        async with async_handle(mode) as h:
            agent = h.agent("lead:main")
            rec = await agent.remember("Tea", "Green tea at nine.", metadata={"kind": "habit"})
            await agent.remember("Coffee", "Coffee never.", metadata={"kind": "dislike"})
            got = await agent.recall(filter={"kind": "habit"})
            assert [r.memory_id for r in got] == [rec.memory_id]
            up = await agent.update(rec.memory_id, metadata={"kind": "ritual"})
            assert up.record.metadata == {"kind": "ritual"}
            page = await agent.list(filter={"kind": "ritual"})
            assert [r.memory_id for r in page.records] == [up.memory_id]
            assert [r.title async for r in agent.iter_records(filter={"kind": "dislike"})] == ["Coffee"]

    asyncio.run(run())
