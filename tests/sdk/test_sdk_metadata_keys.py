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


def test_a_key_holding_a_dot_is_named_as_one_key_not_a_nested_path(tmp_path: Any) -> None:
    """``{"a.b": 1}`` is refused naming ``metadata["a.b"]``: ``metadata.a.b`` would name key ``b`` inside key
    ``a``. A plain key keeps the dotted form (``metadata.$k``, ``metadata.a.b.$x`` for ``$x`` inside ``b``
    inside ``a``); a key that would read as an array index or holds a quote is bracketed too."""
    from meta_memory import Meta

    cases = [
        ({"a.b": 1}, 'metadata["a.b"]'),
        ({"a": {"b": {"$x": 1}}}, "metadata.a.b.$x"),
        ({"ok": [{"x.y": 1}]}, 'metadata.ok.0["x.y"]'),
        ({"0": {"$x": 1}}, 'metadata["0"].$x'),
        ({'say "hi"': 1}, 'metadata["say \\"hi\\""]'),
        ({"$k": 1}, "metadata.$k"),
    ]
    with Meta.builder().persistent_state(tmp_path / "state").build() as h:
        agent = h.agent("lead:main")
        for metadata, field in cases:
            with pytest.raises(InvalidParams) as caught:
                agent.remember("T", "B", metadata=metadata)
            assert caught.value.field == field, (metadata, caught.value.field)
            assert caught.value.message.startswith(f"Invalid params: {field}: metadata keys must be"), caught.value
        assert agent.list().records == []
