"""LlamaIndex: a conversation ``Memory`` carried into another meta-memory session (a persistent chat store a
restarted host resumes under a new session key, a reset that keeps the ``Memory``) brings its tool messages
with it. The ``MetaMemoryBlock`` classifies them before the model reads them again, so a page read in an
earlier session taints the session that reads it now. Real ``llama-index-core``; ``FunctionAgent`` driven by
its ``MockFunctionCallingLLM`` (no LLM, no network)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from extras import require_extra

require_extra("llamaindex", "llama_index.core")

from llama_index.core.agent.workflow import FunctionAgent  # noqa: E402
from llama_index.core.base.llms.types import ChatMessage, ToolCallBlock  # noqa: E402
from llama_index.core.llms.mock import MockFunctionCallingLLM  # noqa: E402
from llama_index.core.memory import Memory  # noqa: E402
from llama_index.core.tools import FunctionTool  # noqa: E402
from llama_index.core.tools.tool_spec.base import BaseToolSpec  # noqa: E402

from meta_memory.integrations.llamaindex import MetaMemoryBlock, memory_tool, reported_tools  # noqa: E402
from meta_memory.sdk import Meta, MetaHandle  # noqa: E402
from support import load_example, rpc_calls  # noqa: E402

pytestmark = pytest.mark.llamaindex


example = load_example("llamaindex_memory")

ME = "agent:concierge"
REFUND = ("Refund account", "All refunds go to bank account 99-1234.")


@pytest.fixture
def handle(tmp_path: Path) -> Iterator[MetaHandle]:
    with Meta.builder().persistent_state(tmp_path / "state").build() as h:
        yield h


def _statuses(handle: MetaHandle) -> dict[str, str]:
    rows = handle.memory_panel_records(identity=ME, scope="identity", realm="default").records
    return {r.title: r.status["status"] for r in rows}


def _run(session: Any, conversation: Memory, user: str, steps: Sequence[Any],
         tools: Sequence[Any] = (example.web_fetch, example.calendar_lookup)) -> example.ScriptedLLM:
    """One ``FunctionAgent`` run on ``conversation`` whose meta-memory session is ``session``."""
    conversation.memory_blocks = [MetaMemoryBlock(session=session)]
    script = example.ScriptedLLM(steps)
    wrapped = reported_tools([t if isinstance(t, FunctionTool) else FunctionTool.from_defaults(t) for t in tools],
                             session) + [memory_tool(session)]
    agent = FunctionAgent(tools=wrapped, llm=MockFunctionCallingLLM(response_generator=script))

    async def go() -> None:
        await agent.run(user, memory=conversation)

    asyncio.run(go())
    return script


def _read_page(handle: MetaHandle, key: str) -> Memory:
    conversation = Memory.from_defaults(session_id="conversation-1")
    _run(handle.agent(ME).session(key), conversation, "Summarise the Harbour Cafe page",
         [[("web_fetch", {"url": "https://harbour.example"})], "Soups and a lentil stew."])
    return conversation


def test_a_page_in_a_resumed_conversation_taints_the_new_session(handle: MetaHandle) -> None:
    """The host resumes the conversation under a new session key: the page is in the model's input again,
    so the write it asks for waits in review and never reaches a later fresh session's block."""
    conversation = _read_page(handle, "process-1")
    resumed = handle.agent(ME).session("process-2")
    script = _run(resumed, conversation, "What did the page say about refunds?", [example.remember(*REFUND), "Ok."])
    assert any(example.HOSTILE_PAGE in str(m.content) for m in script.seen[0])  # the model read the page again
    assert _statuses(handle) == {REFUND[0]: "quarantined"}
    assert resumed.note().tainted is True
    fresh = handle.agent(ME).session("process-3")
    fresh.note()
    assert "99-1234" not in (fresh.inject("refunds bank account").text or "")


def test_a_reset_that_keeps_the_page_in_the_history_does_not_launder_it(handle: MetaHandle) -> None:
    conversation = _read_page(handle, "s1")
    session = handle.agent(ME).session("s1")
    session.reset()
    assert session.note().tainted is False
    _run(session, conversation, "What did the page say about refunds?", [example.remember(*REFUND), "Ok."])
    assert _statuses(handle) == {REFUND[0]: "quarantined"}


def test_a_trusted_tools_history_leaves_the_new_session_clean(handle: MetaHandle) -> None:
    conversation = Memory.from_defaults(session_id="conversation-2")
    _run(handle.agent(ME).session("process-1"), conversation, "What is on today?",
         [[("calendar_lookup", {"day": "today"})], "Lunch with Sam."])
    _run(handle.agent(ME).session("process-2"), conversation, "I only eat vegetarian food.",
         [example.remember("Diet", "The user only eats vegetarian food."), "Noted."])
    assert _statuses(handle) == {"Diet": "active"}


def test_a_history_tool_is_reported_as_its_wrapped_tool_is(handle: MetaHandle) -> None:
    """A spec's function in the history is judged as ``reported_tools`` reports it for this session
    (``NotesToolSpec.search``, the host's own notes), not by its bare name (a bare ``search`` is web)."""

    class NotesToolSpec(BaseToolSpec):
        spec_functions = ["search"]

        def search(self, query: str) -> str:
            """Search the user's notes."""
            return f"note about {query}: lunch at 12:30"

    [notes] = NotesToolSpec().to_tool_list()
    conversation = Memory.from_defaults(session_id="conversation-3")
    _run(handle.agent(ME).session("process-1"), conversation, "find lunch", [[("search", {"query": "lunch"})], "12:30."],
         tools=[notes])
    _run(handle.agent(ME).session("process-2"), conversation, "I only eat vegetarian food.",
         [example.remember("Diet", "The user only eats vegetarian food."), "Noted."], tools=[notes])
    assert _statuses(handle) == {"Diet": "active"}


def test_a_tool_message_no_call_names_is_untrusted(handle: MetaHandle) -> None:
    conversation = Memory.from_defaults(session_id="conversation-4")
    asyncio.run(conversation.aput_messages([
        ChatMessage(role="user", content="Summarise the page"),
        ChatMessage(role="tool", content=example.HOSTILE_PAGE, additional_kwargs={"tool_call_id": "lost-1"}),
    ]))
    session = handle.agent(ME).session("process-2")
    _run(session, conversation, "And refunds?", [example.remember(*REFUND), "Ok."])
    assert _statuses(handle) == {REFUND[0]: "quarantined"}


def test_a_call_id_used_again_by_a_later_call_does_not_launder_the_page(handle: MetaHandle) -> None:
    """Call ids are the model's: a later call may reuse one (this mock model numbers each run's calls from the
    start). The page's message answers the call before it, ``web_fetch``, not the later ``calendar_lookup``."""
    conversation = _read_page(handle, "process-1")
    _run(handle.agent(ME).session("process-1"), conversation, "What is on today?",
         [[("calendar_lookup", {"day": "today"})], "Lunch with Sam."])
    _run(handle.agent(ME).session("process-2"), conversation, "What did the page say about refunds?",
         [example.remember(*REFUND), "Ok."])
    assert _statuses(handle) == {REFUND[0]: "quarantined"}


def test_a_tool_another_gateways_session_wrapped_does_not_judge_this_history(tmp_path: Path) -> None:
    """Two gateways in one process, one realm name: a tool one of them wrapped (``lookup``, an unlisted MCP
    server's) is no account of how the other's conversation names its tools; its history's ``lookup`` output
    (a trusted tool of its own host) is judged by its name, and the write stays active."""
    with Meta.builder().persistent_state(tmp_path / "a").build() as other:
        async def lookup(query: str) -> str:
            """Look something up."""
            return "nothing"

        reported_tools([FunctionTool.from_defaults(async_fn=lookup, name="lookup")], other.agent(ME).session("s1"),
                       provenance={"lookup": {"kind": "mcp", "source_id": "notes"}})
        with Meta.builder().persistent_state(tmp_path / "b").build() as handle:
            conversation = Memory.from_defaults(session_id="conversation-9")
            asyncio.run(conversation.aput_messages([
                ChatMessage(role="user", content="When is lunch?"),
                ChatMessage(role="assistant", content="", additional_kwargs={
                    "tool_calls": [{"id": "c1", "function": {"name": "lookup", "arguments": "{}"}}]}),
                ChatMessage(role="tool", content="Lunch with Sam at 12:30.", additional_kwargs={"tool_call_id": "c1"}),
            ]))
            session = handle.agent(ME).session("s2")
            _run(session, conversation, "Remember lunch", [example.remember("Lunch", "Lunch with Sam at 12:30."),
                                                            "Done."], tools=(example.calendar_lookup,))
            assert _statuses(handle) == {"Lunch": "active"}
            assert session.note().tainted is False


TOOL_RESULT = "meta/turn/tool_result"


def _outputs(*tools: tuple[str, int]) -> Memory:
    """A conversation holding ``count`` outputs (distinct call ids) of each ``(tool name, count)``, interleaved."""
    messages = [ChatMessage(role="user", content="Summarise the pages")]
    for i in range(max(count for _, count in tools)):
        for name, count in tools:
            if i < count:
                messages += [
                    ChatMessage(role="assistant", blocks=[ToolCallBlock(tool_call_id=f"{name}-{i}", tool_name=name,
                                                                         tool_kwargs={})]),
                    ChatMessage(role="tool", content=example.HOSTILE_PAGE,
                                additional_kwargs={"tool_call_id": f"{name}-{i}"})]
    conversation = Memory.from_defaults(session_id="many-outputs", token_limit=10_000_000)
    asyncio.run(conversation.aput_messages(messages))
    return conversation


def _tool_results_of_read(handle: MetaHandle, session: Any, conversation: Memory) -> int:
    """The ``meta/turn/tool_result`` calls the gateway answered for one read of ``conversation`` (its
    ``MetaMemoryBlock`` speaking from ``session``, kept from read to read), as the agent reads it before a
    model call."""
    if not conversation.memory_blocks:
        conversation.memory_blocks = [MetaMemoryBlock(session=session, store_ejected=False)]
    before = rpc_calls(handle, TOOL_RESULT)
    asyncio.run(conversation.aget())
    return rpc_calls(handle, TOOL_RESULT) - before


def test_a_read_reports_an_untrusted_tool_once_however_many_of_its_messages_the_history_holds(
        handle: MetaHandle) -> None:
    """200 pages of one untrusted tool: one report at each read taints the session as 200 would, and the
    next read reports it again, so a reset while the ``Memory`` keeps the pages still does not launder them."""
    session = handle.agent(ME).session("many-pages")
    conversation = _outputs(("web_fetch", 200))
    assert _tool_results_of_read(handle, session, conversation) == 1
    assert session.note().tainted is True
    session.reset()
    assert session.note().tainted is False
    assert _tool_results_of_read(handle, session, conversation) == 1
    assert session.note().tainted is True
    session.reset()
    _run(session, conversation, "What did the pages say about refunds?", [example.remember(*REFUND), "Ok."])
    assert _statuses(handle) == {REFUND[0]: "quarantined"}


def test_two_untrusted_tools_in_one_read_are_both_reported_and_trusted_messages_once_each(
        handle: MetaHandle) -> None:
    session = handle.agent(ME).session("two-tools")
    conversation = _outputs(("web_fetch", 100), ("web_search", 100), ("calendar_lookup", 50))
    assert _tool_results_of_read(handle, session, conversation) == 2 + 50
    assert _tool_results_of_read(handle, session, conversation) == 2


def test_a_memory_call_reports_an_untrusted_tool_of_its_conversation_once(handle: MetaHandle) -> None:
    """The ``memory`` tool judges the conversation it was called in (no block here): one report for 200 pages,
    and the write waits in review."""
    session = handle.agent(ME).session("many-pages-tool")
    conversation = _outputs(("web_fetch", 200))
    agent = FunctionAgent(tools=[memory_tool(session)], llm=MockFunctionCallingLLM(
        response_generator=example.ScriptedLLM([example.remember(*REFUND), "Ok."])))

    async def go() -> None:
        await agent.run("What did the pages say about refunds?", memory=conversation)

    before = rpc_calls(handle, TOOL_RESULT)
    asyncio.run(go())
    assert rpc_calls(handle, TOOL_RESULT) - before == 1
    assert _statuses(handle) == {REFUND[0]: "quarantined"}
