"""The framework integrations' backstop: what one model call costs with a long history of untrusted outputs.

Usage::

    python benchmarks/framework_history.py                    # 500 untrusted outputs, 7 model calls each
    python benchmarks/framework_history.py --outputs 200 --calls 5

Before each model call the integrations classify the tool outputs in the conversation they are given
(``meta/turn/tool_result``): a trusted one once, an untrusted one at every call that still holds it, so a
``meta/session/reset`` while the host keeps the history does not launder it. This script builds a
conversation of ``--outputs`` outputs of one untrusted tool (``web_fetch``, distinct call ids), then times
one model call on it, ``--calls`` times, through the real packages on an embedded runtime (a temporary
state directory):

* OpenAI Agents SDK (the ``openai-agents`` extra): ``Runner.run`` of an attached agent whose
  ``ScriptedModel`` answers at once, the history as its input (the hooks' backstop, the injection, one
  model call);
* LlamaIndex (the ``llamaindex`` extra): ``FunctionAgent.run`` whose ``MockFunctionCallingLLM`` answers at
  once, on a ``Memory`` holding the history with a ``MetaMemoryBlock`` (the block's read, one model call).

An extra that is not installed is skipped. Prints one ``key=value`` line per figure: the median wall time
of a model call (ms) and the ``meta/turn/tool_result`` calls the runtime counted for one
(``meta_memory_rpc_calls_total``), plus the machine's load average.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from meta_memory.sdk import Meta, MetaHandle

IDENTITY = "agent:bench"
PAGE = "Harbour Cafe spring menu: soups and a lentil stew."
METHOD = "meta/turn/tool_result"


def tool_results(handle: MetaHandle) -> int:
    """The ``meta/turn/tool_result`` calls the embedded runtime has counted (``meta_memory_rpc_calls_total``)."""
    registry = handle.runtime.observability.metrics.registry
    return int(registry.get_sample_value("meta_memory_rpc_calls_total", {"method": METHOD}) or 0)


def openai_agents(handle: MetaHandle, outputs: int, calls: int) -> tuple[float, float] | None:
    """``(median ms, tool_result calls)`` of one model call, or ``None`` without the extra."""
    try:
        from agents import Agent, RunConfig, Runner, function_tool
        from agents.testing import ScriptedModel, assistant_message
    except ImportError:
        return None
    from meta_memory.integrations.openai_agents import AgentMemory

    @function_tool
    def web_fetch(url: str) -> str:
        """Fetch a web page."""
        return PAGE

    history: list[Any] = [{"role": "user", "content": "Summarise the pages"}]
    for i in range(outputs):
        history += [{"type": "function_call", "call_id": f"c{i}", "name": "web_fetch", "arguments": "{}"},
                    {"type": "function_call_output", "call_id": f"c{i}", "output": PAGE}]
    history.append({"role": "user", "content": "And the refund policy?"})
    memory = AgentMemory(handle.agent(IDENTITY).session("openai-agents"))
    times, counts = [], []
    for _ in range(calls):
        model = ScriptedModel([[assistant_message("Soups.")]])
        agent = memory.attach(Agent(name="bench", instructions="Answer.", tools=[web_fetch], model=model))
        before = tool_results(handle)
        t0 = time.perf_counter()
        asyncio.run(Runner.run(agent, history, run_config=RunConfig(tracing_disabled=True)))
        times.append((time.perf_counter() - t0) * 1e3)
        counts.append(tool_results(handle) - before)
    return statistics.median(times), statistics.median(counts)


def llamaindex(handle: MetaHandle, outputs: int, calls: int) -> tuple[float, float] | None:
    """``(median ms, tool_result calls)`` of one model call, or ``None`` without the extra."""
    try:
        from llama_index.core.agent.workflow import FunctionAgent
        from llama_index.core.base.llms.types import ChatMessage, ToolCallBlock
        from llama_index.core.llms.mock import MockFunctionCallingLLM
        from llama_index.core.memory import Memory
        from llama_index.core.tools import FunctionTool
    except ImportError:
        return None
    from meta_memory.integrations.llamaindex import MetaMemoryBlock, reported_tools

    def web_fetch(url: str) -> str:
        """Fetch a web page."""
        return PAGE

    history = [ChatMessage(role="user", content="Summarise the pages")]
    for i in range(outputs):
        history += [ChatMessage(role="assistant", blocks=[ToolCallBlock(tool_call_id=f"c{i}", tool_name="web_fetch",
                                                                         tool_kwargs={})]),
                    ChatMessage(role="tool", content=PAGE, additional_kwargs={"tool_call_id": f"c{i}"})]
    session = handle.agent(IDENTITY).session("llamaindex")
    tools = reported_tools([FunctionTool.from_defaults(web_fetch)], session)
    times, counts = [], []
    for _ in range(calls):
        memory = Memory.from_defaults(session_id="bench", token_limit=10_000_000,
                                      memory_blocks=[MetaMemoryBlock(session=session, store_ejected=False)])
        asyncio.run(memory.aput_messages(history))
        agent = FunctionAgent(tools=tools, llm=MockFunctionCallingLLM(
            response_generator=lambda messages, **kw: ChatMessage(role="assistant", content="Soups.")))

        async def go() -> None:
            await agent.run("And the refund policy?", memory=memory)

        before = tool_results(handle)
        t0 = time.perf_counter()
        asyncio.run(go())
        times.append((time.perf_counter() - t0) * 1e3)
        counts.append(tool_results(handle) - before)
    return statistics.median(times), statistics.median(counts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--outputs", type=int, default=500, help="untrusted tool outputs in the history")
    ap.add_argument("--calls", type=int, default=7, help="model calls timed (the median is printed)")
    args = ap.parse_args()
    print("load_average={:.2f},{:.2f},{:.2f} cpus={}".format(*os.getloadavg(), os.cpu_count()))
    with tempfile.TemporaryDirectory(prefix="meta-bench-history-") as tmp:
        with Meta.builder().persistent_state(Path(tmp) / "state").build() as handle:
            for name, run in (("openai_agents", openai_agents), ("llamaindex", llamaindex)):
                found = run(handle, args.outputs, args.calls)
                if found is None:
                    print(f"{name}=skipped (extra not installed)")
                    continue
                ms, count = found
                print(f"{name}.outputs={args.outputs} {name}.model_call_ms={ms:.1f} {name}.tool_result_calls={count:g}")
    print("load_average_after={:.2f},{:.2f},{:.2f}".format(*os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
