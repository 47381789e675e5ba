"""``agent.history(memory_id)`` on every handle: embedded, HTTP and stdio, sync and async."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from meta_memory.errors import InvalidParams, RecordNotFound
from meta_memory.sdk.models import RecordHistory


def test_history_of_a_record_and_the_one_refusal(handle: Any) -> None:
    agent = handle.agent("lead:main", realm="default")
    first = agent.remember("Fig tree", "The fig fruits in June.", tags=["garden"])
    second = agent.update(first.memory_id, body="The fig fruits in July.")
    merged = agent.remember("Fig tree", "The fig fruits in July.", tags=["yard"])
    assert merged.supersedes == second.memory_id
    agent.forget(merged.memory_id)

    got = agent.history(second.memory_id)
    assert isinstance(got, RecordHistory) and got.order == "oldest_first" and not got.truncated
    assert [v.memory_id for v in got.versions] == [first.memory_id, second.memory_id, merged.memory_id]
    assert [v.reason for v in got.versions] == ["created", "update", "tag_merge"]
    assert [v.status for v in got.versions] == ["superseded", "superseded", "tombstoned"]
    assert [c.change for c in got.versions[2].changes] == ["tag_merge", "forget"]
    assert got.versions[0].body == "The fig fruits in June." and got.versions[2].tags == ["garden", "yard"]
    assert got.versions[0].author is not None and got.versions[0].author.author == "application"

    with pytest.raises(RecordNotFound):
        handle.agent("lead:other").history(first.memory_id)
    with pytest.raises(RecordNotFound):
        handle.agent("lead:main", realm="elsewhere").history(first.memory_id)
    with pytest.raises(InvalidParams) as exc:
        agent.history(" ")
    assert exc.value.data.get("field") == "memory_id"


@pytest.mark.parametrize("mode", ["embedded", "http"])
def test_async_agent_history(mode: str, async_handle: Any) -> None:
    async def run() -> None:
        async with async_handle(mode) as h:
            agent = h.agent("lead:main")
            rec = await agent.remember("Elm", "The elm shades the porch.")
            up = await agent.update(rec.memory_id, body="The elm was cut down.")
            erased = await agent.erase(rec.memory_id)
            assert erased.count == 2
            got = await agent.history(up.memory_id)
            assert [v.memory_id for v in got.versions] == [rec.memory_id, up.memory_id]
            assert all(v.status == "erased" and v.withheld == "erased" and v.body is None for v in got.versions)
            with pytest.raises(RecordNotFound):
                await h.agent("lead:other").history(up.memory_id)

    asyncio.run(run())
