"""The host-surface SDK methods (typed results), sync and async, embedded and over HTTP."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from meta_memory.sdk import Meta
from meta_memory.sdk.models import InjectionBlock, MemoryToolResult, SessionState, TurnToolResult
from support import start_gateway


def test_sync_typed_results(tmp_path: Path) -> None:
    with Meta.builder().persistent_state(tmp_path / "s").build() as h:
        assert h.session_note("agent:a", "s1") == SessionState(identity="agent:a", session_key="s1", tainted=False)
        stored = h.agent_memory_tool("agent:a", {"action": "remember", "title": "Fig", "body": "the fig tree fruits in june"},
                                     session_key="s1")
        assert isinstance(stored, MemoryToolResult) and not stored.is_error
        block = h.turn_inject("agent:a", query_text="fig tree", session_key="s1")
        assert isinstance(block, InjectionBlock) and block.text and len(block.included_ids) == 1
        assert "mem-token" not in repr(block)  # the nonce stays out of reprs
        assert block.text is not None and f"text_chars={len(block.text)}" in repr(block)
        verdict = h.turn_tool_result("agent:a", "s1", "web_fetch", is_error=True)
        assert verdict == TurnToolResult(trusted=False, source="web tool 'web_fetch'", session_tainted=True)
        assert h.session_compacted("agent:a", "s1").tainted is True
        assert h.session_reset("agent:a", "s1").tainted is False
        assert h.turn_defang("[mem-token: x]").hits == 1
        assert h.turn_defang(blocks=[{"type": "text", "text": "[mem-token: x]"}]).blocks == [
            {"type": "text", "text": "[defanged-mem-token: x]"}]
        assert h.agent_memory_tool_schema().for_model()["name"] == "memory"


def test_async_over_http(tmp_path: Path) -> None:
    gw = start_gateway(tmp_path / "s")

    async def run() -> tuple[InjectionBlock, TurnToolResult, MemoryToolResult]:
        h = Meta.connect_async(gw.url)
        try:
            await h.session_note("agent:b", "s9")
            await h.agent_memory_tool("agent:b", {"action": "remember", "title": "Oak", "body": "the oak is old"},
                                      session_key="s9")
            block = await h.turn_inject("agent:b", query_text="oak", session_key="s9")
            verdict = await h.turn_tool_result("agent:b", "s9", "search_docs",
                                               provenance={"kind": "mcp", "source_id": "docs"})
            tool = await h.agent_memory_tool("agent:b", '{"action": "remember", "title": "Elm", "body": "elm"}',
                                             session_key="s9")
            return block, verdict, tool
        finally:
            await h.aclose()

    try:
        block, verdict, tool = asyncio.run(run())
    finally:
        gw.stop()
    assert block.text is not None and "the oak is old" in block.text
    assert verdict.trusted is False and verdict.source == "MCP server 'docs' (tool 'search_docs')"
    assert "QUARANTINED" in tool.text


def test_printing_an_injection_block_shows_its_text(tmp_path: Path, capsys: Any) -> None:
    """``print(session.inject(...))`` shows the block the model would be given (``str`` is the text); the
    ``repr`` gives its length, never the nonce-bearing text; a skipped injection prints its reason."""
    with Meta.builder().persistent_state(tmp_path / "s").build() as h:
        session = h.agent("agent:p").session("s1")
        session.agent.remember("Fig", "the fig tree fruits in june")
        block = session.inject("fig tree")
        print(block)
        shown = capsys.readouterr().out
        assert block.text and shown == block.text + "\n" and "the fig tree fruits in june" in shown
        assert "mem-token" not in repr(block) and f"text_chars={len(block.text)}" in repr(block)
        empty = h.agent("agent:nobody").session("s2").inject("anything at all")
        assert empty.text is None and str(empty) == f"(no injection block: {empty.skip_reason})"
