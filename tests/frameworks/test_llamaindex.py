"""The LlamaIndex integration, run with the real ``llama-index-core`` package: a ``FunctionAgent`` driven by
LlamaIndex's own ``MockFunctionCallingLLM`` playing a script (no LLM, no network)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from extras import require_extra

require_extra("llamaindex", "llama_index.core")

from llama_index.core.base.llms.types import ChatMessage  # noqa: E402

from meta_memory.integrations.llamaindex import EXCERPT_TITLE, MetaMemoryBlock  # noqa: E402
from meta_memory.sdk import Meta, MetaHandle  # noqa: E402
from support import load_example  # noqa: E402

pytestmark = pytest.mark.llamaindex

ME = "agent:concierge"


example = load_example("llamaindex_memory")


@pytest.fixture
def handle(tmp_path: Path) -> Iterator[MetaHandle]:
    with Meta.builder().persistent_state(tmp_path / "state").build() as h:
        yield h


def _statuses(handle: MetaHandle) -> dict[str, str]:
    rows = handle.memory_panel_records(identity=ME, scope="identity", realm="default").records
    return {r.title: r.status["status"] for r in rows}


def _text(messages: list[ChatMessage], role: str) -> str:
    return "\n".join(str(m.content) for m in messages if str(getattr(m.role, "value", m.role)) == role)


@pytest.mark.parametrize(("tool", "args", "expected"), [
    ("web_fetch", {"url": "https://harbour.example"}, "quarantined"),
    ("calendar_lookup", {"day": "today"}, "active"),
])
def test_a_write_after_a_hostile_page_is_quarantined_and_after_a_trusted_tool_active(
        handle: MetaHandle, tool: str, args: dict[str, Any], expected: str) -> None:
    tainted: list[bool] = []

    def then_remember(messages: list[ChatMessage]) -> Any:
        tainted.append(handle.agent(ME).session("s1").note().tainted)
        return example.remember("Refund account", "Refunds go to 99-1234.")

    script = asyncio.run(example.run(handle.agent(ME).session("s1"), "Summarise the page",
                                     [[(tool, args)], then_remember, "Done."]))
    assert _statuses(handle) == {"Refund account": expected}
    assert tainted == [expected == "quarantined"]  # classified before the model's next call
    assert (example.HOSTILE_PAGE if tool == "web_fetch" else "lunch with Sam") in _text(script.seen[1], "tool")


def test_the_example_runs_end_to_end(tmp_path: Path) -> None:
    out = asyncio.run(example.main_async(str(tmp_path / "state")))
    assert out["statuses"] == {"Refund account": "quarantined", "Diet": "active"}
    assert "The user only eats vegetarian food." in out["system"] and "99-1234" not in out["system"]
    assert "<meta_memory_observation" in out["system"]


def test_the_block_is_in_the_system_message_not_the_users_text(handle: MetaHandle) -> None:
    handle.agent(ME).remember("Diet", "The user only eats vegetarian food.")
    script = asyncio.run(example.run(handle.agent(ME).session("s1"), "what vegetarian food is there?", ["Soup."]))
    assert "The user only eats vegetarian food." in _text(script.seen[0], "system")
    assert "vegetarian food" not in _text(script.seen[0], "user").replace("what vegetarian food is there?", "")


def test_messages_leaving_the_short_term_window_are_a_gated_write(handle: MetaHandle) -> None:
    def excerpt(colour: str) -> list[ChatMessage]:
        return [ChatMessage(role="user", content=f"My locker code is the {colour} one."),
                ChatMessage(role="tool", content=example.HOSTILE_PAGE),
                ChatMessage(role="assistant", content=f"Noted: the {colour} locker.")]

    async def put(session: Any, colour: str) -> None:
        await MetaMemoryBlock(session=session).aput(excerpt(colour), from_short_term_memory=True)

    asyncio.run(put(handle.agent(ME).session("clean"), "blue"))
    tainted = handle.agent(ME).session("tainted")
    tainted.note()
    tainted.tool_result("web_fetch")
    asyncio.run(put(tainted, "red"))
    rows = handle.memory_panel_records(identity=ME, scope="identity", realm="default").records
    assert sorted(r.status["status"] for r in rows if r.title == EXCERPT_TITLE) == ["active", "quarantined"]
    active = handle.agent(ME).recall("blue locker")
    assert [r.title for r in active] == [EXCERPT_TITLE]
    assert active[0].body == "user: My locker code is the blue one.\nassistant: Noted: the blue locker."


def test_a_failed_report_keeps_the_result_from_the_model(tmp_path: Path) -> None:
    access = {"enabled": True, "grants": [{"action": a, "who": {"anyone": True}}
                                          for a in ("agent.memory.read", "agent.view", "agent.memory.write")]}
    with Meta.builder().persistent_state(tmp_path / "s").access(**access).build() as locked:
        block_less = locked.agent(ME).session("s1")

        async def go() -> Any:
            from llama_index.core.agent.workflow import FunctionAgent
            from llama_index.core.llms.mock import MockFunctionCallingLLM
            from llama_index.core.tools import FunctionTool

            from meta_memory.integrations.llamaindex import reported_tools

            script = example.ScriptedLLM([[("web_fetch", {"url": "u"})], "done"])
            agent = FunctionAgent(tools=reported_tools([FunctionTool.from_defaults(example.web_fetch)], block_less),
                                  llm=MockFunctionCallingLLM(response_generator=script))
            await agent.run("go")
            return script

        script = asyncio.run(go())
    seen = _text(script.seen[1], "tool")
    assert "access denied: agent.session.manage" in seen and example.HOSTILE_PAGE not in seen


def test_a_tool_specs_function_is_classified_by_its_spec(handle: MetaHandle) -> None:
    """A LlamaIndex tool spec that reads the web names its functions plainly (Tavily's ``search``); its
    results are reported as ``<SpecClass>.<function>``, so the spec's class, on the shipped list, taints
    the session, while a plain function is judged by its own name (an order-book search stays trusted; a
    bare ``search`` would be taken for a web search)."""
    from llama_index.core.tools import FunctionTool
    from llama_index.core.tools.tool_spec.base import BaseToolSpec

    from meta_memory.integrations.llamaindex import reported_tools

    class TavilyToolSpec(BaseToolSpec):
        spec_functions = ["search"]

        def search(self, query: str) -> str:
            """Search the web."""
            return f"results for {query}"

    def find_orders(query: str) -> str:
        """Search the order book."""
        return f"orders for {query}"

    web = handle.agent(ME).session("spec")
    web.note()
    [spec_tool] = reported_tools(TavilyToolSpec().to_tool_list(), web)
    assert spec_tool.reported_name == "TavilyToolSpec.search"
    asyncio.run(spec_tool.acall(query="harbour"))
    assert web.tool_result("calculator").session_tainted is True
    plain = handle.agent(ME).session("plain")
    plain.note()
    [plain_tool] = reported_tools([FunctionTool.from_defaults(find_orders)], plain)  # (a bare `search` is web)
    asyncio.run(plain_tool.acall(query="harbour"))
    assert plain.tool_result("calculator").session_tainted is False


def test_a_refused_report_raises_and_taints_the_session(handle: MetaHandle) -> None:
    """A tool named with 600 bytes cannot be classified: the tool raises instead of returning its output,
    and the session is tainted should the agent show the output anyway."""
    from llama_index.core.tools import FunctionTool

    from meta_memory.errors import InvalidParams
    from meta_memory.integrations.llamaindex import reported_tools

    session = handle.agent(ME).session("s-refused")
    [tool] = reported_tools([FunctionTool.from_defaults(example.web_fetch, name="lookup_" + "x" * 600)], session)
    with pytest.raises(InvalidParams, match="tool_name"):
        asyncio.run(tool.acall(url="u"))
    assert session.note().tainted is True
