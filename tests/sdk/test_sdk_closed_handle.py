"""A handle used after ``close()``: every mode refuses with ``HandleClosed`` (a caller's mistake, told
as one), before anything is sent; closing twice is harmless."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from meta_memory.errors import MetaError
from meta_memory.sdk import HandleClosed


def test_a_closed_handle_refuses_every_call_in_every_mode(handle: Any) -> None:
    agent = handle.agent("lead:main")
    agent.remember("Kept", "a record written before the close")
    handle.close()
    for call in (lambda: agent.recall("record"), lambda: handle.recall_agent_memory("lead:main", query_text="x"),
                 lambda: handle.ledger.stores(), lambda: agent.session("s1").note()):
        with pytest.raises(HandleClosed, match="handle is closed") as refused:
            call()
        assert not isinstance(refused.value, MetaError)  # not a gateway's answer, nor an I/O failure
    handle.close()  # again: nothing happens


@pytest.mark.parametrize("mode", ["embedded", "http"])
def test_a_closed_async_handle_refuses_when_awaited(async_handle: Any, mode: str) -> None:
    async def scenario() -> None:
        h = async_handle(mode)
        async with h:
            await h.agent("lead:main").remember("Kept", "written before the close")
        with pytest.raises(HandleClosed):
            await h.agent("lead:main").recall("kept")
        await h.aclose()

    asyncio.run(scenario())
