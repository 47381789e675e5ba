"""The ``memory`` tool's refusal of a ``ttl_s`` out of range names the range the tool takes
(``[agent_memory] tool_max_ttl_s``, 30 days by default), whatever side it falls out on: a model told the
installation's 100-year caller cap would retry with a value the tool refuses again. Driven through the
SDK's bound session on an embedded runtime (``session.tool``, the tool a model calls)."""

from __future__ import annotations

from pathlib import Path

import pytest

from meta_memory import Meta

DAY = 86_400


@pytest.mark.parametrize("ttl_s", [0, -1, 36_500 * DAY + 1, 10**30])
def test_an_out_of_range_ttl_names_the_tools_own_range(tmp_path: Path, ttl_s: int) -> None:
    with Meta.builder().persistent_state(tmp_path / "state").build() as meta:
        result = meta.agent("lead:main").session("s1").tool(
            {"action": "remember", "title": "Note", "body": "Kept a while.", "ttl_s": ttl_s})
    assert result.is_error
    assert result.text == f"`ttl_s` must be between 1 and {30 * DAY} seconds", result.text


def test_a_configured_tool_cap_is_the_range_named(tmp_path: Path) -> None:
    with Meta.builder().persistent_state(tmp_path / "state").agent_memory(tool_max_ttl_s=3600).build() as meta:
        session = meta.agent("lead:main").session("s1")
        low = session.tool({"action": "remember", "title": "Note", "body": "Kept a while.", "ttl_s": 0})
        shape = session.tool({"action": "remember", "title": "Note", "body": "Kept a while.", "ttl_s": "60"})
        kept = session.tool({"action": "remember", "title": "Note", "body": "Kept a while.", "ttl_s": 3600})
    assert low.is_error and low.text == "`ttl_s` must be between 1 and 3600 seconds", low.text
    assert shape.is_error and shape.text == "`ttl_s` must be an integer number of seconds (1 to 3600)", shape.text
    assert not kept.is_error, kept.text
