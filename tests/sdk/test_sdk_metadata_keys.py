"""Through every handle (embedded, a gateway over HTTP, a spawned stdio gateway, sync and async), a
metadata key that shows as another key (a zero-width or bidirectional character in it) is refused as
``InvalidParams`` naming ``metadata.<key>`` (escaped) and the rule, and nothing is stored."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from meta_memory.errors import InvalidParams


def test_a_key_with_an_invisible_character_is_refused_naming_it(handle: Any) -> None:
    agent = handle.agent("lead:main", realm="default")
    with pytest.raises(InvalidParams, match="invisible or direction-changing characters") as caught:
        agent.remember("T", "B", metadata={"project\u200b": "apollo"})
    assert caught.value.field == "metadata.project\\u200b"
    kept = agent.remember("Kept", "kept body", metadata={"project": "apollo"})
    with pytest.raises(InvalidParams) as caught:
        agent.update(kept.memory_id, metadata={"\u202etcejorp": "gemini"})
    assert caught.value.field == "metadata.\\u202etcejorp"
    assert [(r.title, r.metadata) for r in agent.list().records] == [("Kept", {"project": "apollo"})]


@pytest.mark.parametrize("mode", ["embedded", "http"])
def test_async_handles_refuse_the_same_key(async_handle: Any, mode: str) -> None:
    async def run() -> None:
        async with async_handle(mode) as h:
            with pytest.raises(InvalidParams) as caught:
                await h.agent("lead:main").remember("T", "B", metadata={"a": {"b\u00adc": 1}})
            assert caught.value.field == "metadata.a.b\\xadc"

    asyncio.run(run())
