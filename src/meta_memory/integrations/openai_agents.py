"""meta-memory for the OpenAI Agents SDK (the ``openai-agents`` extra: ``pip install 'meta-memory[openai-agents]'``).

One :class:`AgentMemory` follows one agent identity's session (``meta.agent(identity,
realm=...).session(key)``, sync or async, embedded or remote) and gives an ``agents.Agent``:

* **the ``memory`` tool** (:meth:`AgentMemory.tool`): a ``FunctionTool`` whose calls go to
  ``meta/agent_memory/tool`` for this identity and session, so every write the model makes is an
  LLM-authored write the firewall gates (quarantined while the session is tainted). Refusals come
  back to the model as the tool's text.
* **the firewall's reporting** (:meth:`AgentMemory.hooks`, ``AgentHooks``): every other tool's result
  is classified by ``meta/turn/tool_result`` before the model sees it:

  - ``on_tool_end`` reports each local tool (function, MCP, shell, computer, agent-as-tool, ...) as it
    finishes, before the next model call, whatever its call id (a provider may number calls anew in each
    response: only a trusted verdict is remembered, by call id and name, and only by the backstop); an MCP tool is attributed to its server
    (``provenance = {"kind": "mcp", "source_id": <server>}``, so ``trusted_mcp_servers`` applies), and an
    agent used as a tool (``Agent.as_tool``) is reported as that agent's output
    (``{"kind": "agent", "source_id": <its identity>}`` when the agent is attached to an ``AgentMemory``
    of its own, so its session's taint carries to this one; ``{"kind": "agent"}``, untrusted, when it is
    not: its taint cannot be known);
  - ``on_llm_end`` reports hosted tools (web search, file search, code interpreter, hosted MCP, image
    generation) whose results come inside the model's response, as provider-native server-tool
    content (always untrusted), before any tool of that response runs; a hosted MCP server's tool
    listing (``mcp_list_tools``: its tools' descriptions, the server's text) counts as its content too;
  - ``on_llm_start`` first reports the tool listing of each MCP server whose tools the agent's model is
    given (``Agent(mcp_servers=[...])``, or function tools the SDK attributes to a server): the tools'
    descriptions are the server's text, read with no tool called (tool poisoning), so the listing is
    reported as ``mcp_list_tools`` with that server's provenance (``trusted_mcp_servers`` judges it); an
    untrusted one at every model call (a reset while the server is attached does not launder it), a trusted
    one once;
  - ``on_llm_start`` is also the backstop: before every model call it reports each tool output in the
    model's input not found trusted yet under its call id and name (results in a resumed conversation,
    in the history a handoff passes on, or of a tool family that runs no hook), by the name of its call; an output
    whose call is not in the input is reported as untrusted server-tool content. An untrusted output
    is reported at every model call whose input holds it, so a reset of the session while the host
    keeps sending that history (``result.to_input_list()``) does not launder it; a model call reports
    each untrusted source (reported name, provenance, server-tool flag) once, however many of its
    outputs the input holds (one report taints the session as many would).

  Only the outputs of the ``memory`` tool this ``AgentMemory`` made (:meth:`AgentMemory.tool`), known by
  the call ids it ran (or, in ``on_tool_end``, by the tool object), are never reported. Any other tool
  named ``memory`` -- a namespaced or MCP tool, a hosted MCP server's, another agent's in a history --
  is classified like every tool (a ``memory`` output in a resumed conversation from an earlier process
  included: it is judged by its name, or by the ``provenance`` argument's ``memory`` entry).

  A reporting failure (gateway unreachable, access denied) raises: the run stops rather than let a
  tool result reach the model unclassified.
* **injection** (:meth:`AgentMemory.instructions`): dynamic instructions that append the recorder
  protocol and this turn's quoted observation block (``meta/turn/inject`` on the run's last user
  message) to the agent's own instructions. The block is fetched once per run and repeated on that
  run's later model calls (the session's injection budget and dedup count it once).

:meth:`AgentMemory.attach` does all three on a copy of an agent::

    memory = AgentMemory(meta.agent("agent:concierge").session("s1"))
    agent = memory.attach(Agent(name="concierge", instructions="You are a concierge.", tools=[web_fetch]))
    result = await Runner.run(agent, "Summarise https://example.com")

Multi-agent runs: attach each agent to the ``AgentMemory`` of its own identity (an agent used as a tool
too: attach it, then call ``as_tool`` on the attached copy). A handoff is content
from another agent, whatever the handoff's input filter or history nesting kept of it: when an attached
agent receives one, its session gets a tool result ``handoff`` with typed agent provenance
(``{"kind": "agent", "source_id": <the handing agent's identity>}``, so that agent's taint carries;
``{"kind": "agent"}``, untrusted, when the handing agent is not attached to an ``AgentMemory``), before
its first model call (:meth:`AgentMemory.handoff_received`). Its backstop also reports the tool outputs
of the history it is given, under its own session.
"""

from __future__ import annotations

import json
import threading
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

try:
    from agents import Agent, AgentHooks, FunctionTool, RunContextWrapper, Tool
    from agents.tool_context import ToolContext
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("meta_memory.integrations.openai_agents needs the openai-agents extra: "
                      "pip install 'meta-memory[openai-agents]'") from exc

from .. import strict_json
from ..sdk.agent import AsyncSession, Session
from ..tool.schema import RECORDER_PROTOCOL_INSTRUCTIONS, memory_tool_definition
from ._session import ReportPass, SessionCalls, last_user_text

__all__ = ["AgentMemory", "MemoryHooks", "HOSTED_CALL_TYPES", "HANDOFF_TOOL_NAME", "MCP_LISTING_NAME", "TOOL_INPUT_NAME",
           "tool_provenance"]

#: Response items of hosted (provider-run) tools whose results arrive inside the model's response; a hosted MCP
#: server's tool listing (``mcp_list_tools``) too: its tool descriptions are the server's text, in the model's input.
HOSTED_CALL_TYPES = frozenset({"web_search_call", "file_search_call", "code_interpreter_call", "mcp_call",
                               "mcp_list_tools", "image_generation_call", "tool_search_call"})
_HOSTED_MCP_TYPES = ("mcp_call", "mcp_list_tools")
#: Input items that carry a local tool's output, and the item type of the call each answers.
_OUTPUT_TYPES = {"function_call_output": "function_call", "custom_tool_call_output": "custom_tool_call",
                 "computer_call_output": "computer_call", "local_shell_call_output": "local_shell_call",
                 "shell_call_output": "shell_call", "apply_patch_call_output": "apply_patch_call"}
_CALL_NAMES = {"computer_call": "computer", "local_shell_call": "local_shell", "shell_call": "shell",
               "apply_patch_call": "apply_patch"}
_REMEMBERED_CALLS = 4096
#: The tool name a received handoff is reported under (with typed agent provenance).
HANDOFF_TOOL_NAME = "handoff"
#: The tool name an MCP server's tool listing (its tools' descriptions) is reported under, as the server's result.
MCP_LISTING_NAME = "mcp_list_tools"
#: The tool name the input of an agent run as another agent's tool (``Agent.as_tool``) is reported under.
TOOL_INPUT_NAME = "agent_tool_input"

#: The runs (by the id of their shared ``Usage`` object, held by a weak reference) in which an attached agent
#: has started: only a run's first such start may be taken for the resumption of an interrupted agent.
_STARTED_RUNS: dict[int, weakref.ref[Any]] = {}
_STARTED_RUNS_LOCK = threading.Lock()


def _first_start(run: Any) -> bool:
    """Whether this is the first start of an attached agent seen in ``run`` (and note it)."""
    with _STARTED_RUNS_LOCK:
        for key in [k for k, ref in _STARTED_RUNS.items() if ref() is None]:
            del _STARTED_RUNS[key]
        seen = _STARTED_RUNS.get(id(run))
        if seen is not None and seen() is run:
            return False
        _STARTED_RUNS[id(run)] = weakref.ref(run)
        return True


def _approved_tool_names(context: Any) -> set[str]:
    """The names of the tools whose calls the run's context holds approval decisions for (a run resumed after
    a tool approval); an entry whose key is not the SDK's ``<prefix>:["<scope>", "<tool>"]`` is left out."""
    names: set[str] = set()
    for key in getattr(context, "_approvals", None) or {}:
        text = key if isinstance(key, str) else ""
        try:
            parts = json.loads(text[text.index(":") + 1:])
        except ValueError:
            continue
        if isinstance(parts, list) and parts and isinstance(parts[-1], str):
            names.add(parts[-1])
    return names


Instructions = str | Callable[[RunContextWrapper[Any], Agent[Any]], str | Awaitable[str]] | None


def _get(item: Any, key: str) -> Any:
    return item.get(key) if isinstance(item, Mapping) else getattr(item, key, None)


def _mcp_server(tool: object) -> str | None:
    """The MCP server a function tool came from, when the SDK recorded it."""
    try:
        from agents.tool import get_function_tool_origin
    except ImportError:  # pragma: no cover - older SDKs
        return None
    if not isinstance(tool, FunctionTool):
        return None
    origin = get_function_tool_origin(tool)
    server = getattr(origin, "mcp_server_name", None) if origin is not None else None
    return server if isinstance(server, str) and server else None


def _agent_tool_identity(tool: object) -> tuple[bool, str | None]:
    """``(is an agent used as a tool, the identity that agent reports for)``: an ``Agent.as_tool`` tool is
    recognised by its origin (``agent_as_tool``); the identity is known when the agent's hooks are a
    :class:`MemoryHooks` (the agent was attached with :meth:`AgentMemory.attach`, or given
    :meth:`AgentMemory.hooks`), else ``None``."""
    if not isinstance(tool, FunctionTool):
        return False, None
    origin: Any = None
    try:
        from agents.tool import get_function_tool_origin
    except ImportError:  # pragma: no cover - older SDKs
        pass
    else:
        origin = get_function_tool_origin(tool)
    by_origin = getattr(getattr(origin, "type", None), "value", None) == "agent_as_tool"
    if not (by_origin or getattr(tool, "_is_agent_tool", False) is True):
        return False, None
    memory = _memory_of(getattr(tool, "_agent_instance", None))
    return True, memory.calls.identity if memory is not None else None


def tool_provenance(tool: object) -> dict[str, str] | None:
    """The typed provenance a tool's results are reported with: ``{"kind": "mcp", "source_id": <server>}``
    for a tool the SDK attributes to an MCP server; for an agent used as a tool (``Agent.as_tool``),
    ``{"kind": "agent", "source_id": <its identity>}`` when that agent reports to meta-memory (its output
    then carries its session's taint), else ``{"kind": "agent"}`` (an agent of unknown taint: untrusted,
    whatever its name); ``None`` for any other tool (judged by its name)."""
    server = _mcp_server(tool)
    if server:
        return {"kind": "mcp", "source_id": server}
    is_agent, identity = _agent_tool_identity(tool)
    if not is_agent:
        return None
    return {"kind": "agent", "source_id": identity} if identity else {"kind": "agent"}


def _memory_of(agent: object) -> "AgentMemory | None":
    """The ``AgentMemory`` an agent is attached to (its hooks are :class:`MemoryHooks`), else ``None``."""
    hooks = getattr(agent, "hooks", None)
    return hooks.memory if isinstance(hooks, MemoryHooks) else None


class AgentMemory:
    """meta-memory for agents of one identity's session (see the module doc).

    Args:
        session: ``meta.agent(identity, realm=...).session(key)`` (sync or async handle).
        provenance: tool name -> ``{"kind": "mcp", "source_id": <server>}`` for tools whose origin the
            SDK does not record (MCP tools the SDK does attribute need nothing here), or ``{"kind":
            "agent", "source_id": <identity>}`` for an agent used as a tool that is not attached to an
            ``AgentMemory`` of its own (one that is needs nothing here).
        protocol: append the recorder protocol (how to use the ``memory`` tool) to the instructions.
    """

    def __init__(self, session: Session | AsyncSession, *, provenance: Mapping[str, Mapping[str, str]] | None = None,
                 protocol: bool = True) -> None:
        self.calls = SessionCalls(session)
        self.provenance = {k: dict(v) for k, v in (provenance or {}).items()}
        self.protocol = protocol
        self._definition = memory_tool_definition()
        self.tool_name: str = self._definition["name"]
        # the results found trusted, by (call id, reported name): the backstop does not report them again. A
        # result that just ran (``on_tool_end``, a response's hosted tools) is reported whatever its call id: a
        # provider may number calls anew in each response, so an id says nothing of a result it did not see
        self._reported: OrderedDict[tuple[str, str], None] = OrderedDict()
        # the call ids of this memory's own ``memory`` tool calls (marked as they run): the backstop skips an
        # output of such an id only when its call is named ``memory``; ``on_tool_end`` skips this memory's own
        # tool instances by the object, so a foreign tool also named ``memory`` is reported
        self._own: OrderedDict[str, None] = OrderedDict()
        self._tools: list[weakref.ref[FunctionTool]] = []
        self._listed: set[str] = set()  # the MCP servers whose tool listing was reported and found trusted
        self._blocks: weakref.WeakKeyDictionary[Any, tuple[str, str | None]] = weakref.WeakKeyDictionary()
        #: The last injection's ``skip_reason`` (``None`` when a block was injected).
        self.last_skip_reason: str | None = None
        # per run (by the id of its shared ``Usage`` object, unhashable, held by a weak reference): the starts
        # of this memory's agent already explained by a report made for them (a received handoff, a call as
        # another attached agent's tool), one token each, consumed by the start or dropped with its tool call
        self._explained: dict[int, tuple[weakref.ref[Any], list[object]]] = {}
        # the tool calls of this memory's agent that run an attached agent as a tool: (run, call id) -> (that
        # agent's memory, the token explaining its start)
        self._tool_calls: OrderedDict[tuple[int, str], tuple[AgentMemory, object]] = OrderedDict()

    # -- bookkeeping --------------------------------------------------------------------------
    def _seen(self, call_id: object, name: str) -> bool:
        """Whether the result of call ``call_id`` reported as ``name`` was found trusted already."""
        return isinstance(call_id, str) and (call_id, name) in self._reported

    def _own_call(self, call_id: object, name: str | None) -> bool:
        """Whether ``call_id``, a call named ``name``, is one this memory's own ``memory`` tool ran."""
        return isinstance(call_id, str) and call_id in self._own and name == self.tool_name

    @staticmethod
    def _remember(into: "OrderedDict[Any, None]", key: Any) -> None:
        into[key] = None
        into.move_to_end(key)
        while len(into) > _REMEMBERED_CALLS:
            into.popitem(last=False)

    def _mark_own(self, call_id: object) -> None:
        if isinstance(call_id, str) and call_id:
            self._remember(self._own, call_id)

    async def _note(self) -> None:
        if not self.calls.noted:
            await self.calls.note()

    async def report(self, name: str, *, call_id: str | None = None, provenance: Mapping[str, str] | None = None,
                     server_tool: bool = False, within: ReportPass | None = None, fresh: bool = False) -> None:
        """Classify one tool result (``meta/turn/tool_result``) unless its ``call_id`` (with ``name``) was
        reported already and found trusted; ``fresh``: a result that just ran, reported whatever its call id (a
        provider may number call ids anew in each response). Only a trusted verdict is remembered. An untrusted one is reported again each time it is met (in every model input that
        still holds it), so a ``meta/session/reset`` while the host goes on sending that history does not
        launder it. ``within``: the pass this report belongs to (one model call's input, one response),
        in which a source found untrusted already is not reported again (:class:`~._session.ReportPass`)."""
        if not fresh and call_id is not None and self._seen(call_id, name):
            return
        await self._note()
        prov = dict(provenance) if provenance is not None else self.provenance.get(name)
        report = within if within is not None else ReportPass(self.calls)
        verdict = await report.tool_result(name or "unknown_tool", provenance=prov, server_tool=server_tool)
        if verdict.trusted and isinstance(call_id, str) and call_id:
            self._remember(self._reported, (call_id, name))

    def _provenance_of(self, name: str, tool: object) -> Mapping[str, str] | None:
        """``tool``'s provenance (:func:`tool_provenance`); the ``provenance`` argument's entry for ``name``
        when the SDK attributes nothing, or names an agent used as a tool but not its identity."""
        found = tool_provenance(tool)
        if found is None or (found["kind"] == "agent" and "source_id" not in found):
            return self.provenance.get(name, found)
        return found

    # -- what reaches this memory's agent from other agents ---------------------------------------
    @staticmethod
    def _run_of(context: Any) -> Any:
        """The run's shared ``Usage`` object (``None`` when the context has none, or it cannot be weakly held)."""
        usage = getattr(context, "usage", None)
        try:
            weakref.ref(usage)
        except TypeError:
            return None
        return usage

    def _explain(self, run: Any) -> object:
        """A token explaining one start of this memory's agent in ``run``."""
        self._explained = {k: v for k, v in self._explained.items() if v[0]() is not None}
        token = object()
        if run is not None:
            entry = self._explained.setdefault(id(run), (weakref.ref(run), []))
            if entry[0]() is run:
                entry[1].append(token)
        return token

    def _forget_token(self, run: Any, token: object) -> None:
        entry = self._explained.get(id(run)) if run is not None else None
        if entry is not None and entry[0]() is run and token in entry[1]:
            entry[1].remove(token)

    def _consume(self, run: Any) -> bool:
        entry = self._explained.get(id(run)) if run is not None else None
        if entry is None or entry[0]() is not run or not entry[1]:
            return False
        entry[1].pop(0)
        return True

    async def handoff_received(self, source: object, *, context: Any = None) -> None:
        """This memory's agent receives a handoff from ``source`` (an ``Agent``): report it for this
        session as the tool result ``handoff`` with typed agent provenance ``{"kind": "agent",
        "source_id": <source's identity>}`` (its taint carries, whatever the handoff's input filter or
        history nesting kept), or ``{"kind": "agent"}`` (untrusted: its taint cannot be known) when
        ``source`` is not attached to an ``AgentMemory``. ``context``: the run's context, so the
        agent's start in that run does not report the same handoff again. Errors propagate (the run
        stops before the receiving agent's model reads the handoff)."""
        origin = _memory_of(source)
        provenance = {"kind": "agent", "source_id": origin.calls.identity} if origin is not None else {"kind": "agent"}
        await self.report(HANDOFF_TOOL_NAME, provenance=provenance)
        self._explain(self._run_of(context))

    async def called_as_tool(self, caller: "AgentMemory", context: Any) -> object:
        """``caller``'s agent is about to run this memory's agent as a tool (``Agent.as_tool``, seen by the
        caller's ``on_tool_start``): its input is what the caller's model wrote, content from that agent,
        reported now for this session as ``agent_tool_input`` with ``caller``'s agent provenance (its taint
        carries). Returns the token that explains the start it causes (:meth:`tool_call_ended` drops it if
        the agent never starts, e.g. the tool's arguments did not parse)."""
        await self.report(TOOL_INPUT_NAME, provenance={"kind": "agent", "source_id": caller.calls.identity})
        return self._explain(self._run_of(context))

    def tool_call_ended(self, context: Any, token: object) -> None:
        """The tool call :meth:`called_as_tool` explained ended: a start it explained and that did not
        happen explains nothing more."""
        self._forget_token(self._run_of(context), token)

    async def agent_started(self, context: Any, agent: Any = None) -> None:
        """This memory's agent (``agent``) starts in a run (``on_start``). A start explained by a report
        already made for it (a received handoff, a call as an attached agent's tool) reports nothing more.
        Otherwise, when a model already answered in that run (``context.usage.requests > 0``), what it
        receives came from an agent no hook of this integration saw (one not attached to an
        ``AgentMemory``): reported as ``handoff`` with ``{"kind": "agent"}`` (untrusted). One exception: a
        run resumed after a tool approval starts its interrupted agent again; that start is the run's first
        start of an attached agent, and the context holds an approval decision on one of the agent's own
        tools. Any later start of the run is judged as above."""
        await self._note()
        run = self._run_of(context)  # None: a run this integration cannot follow, judged by its request count
        first = run is not None and _first_start(run)  # noted before any explanation: later starts never are
        if run is not None and self._consume(run):
            return
        if int(getattr(getattr(context, "usage", None), "requests", 0) or 0) == 0:
            return
        own = {getattr(t, "name", None) for t in getattr(agent, "tools", None) or ()}
        if first and own & _approved_tool_names(context):
            return
        await self.report(HANDOFF_TOOL_NAME, provenance={"kind": "agent"})

    def _track_tool_call(self, context: Any, sub: "AgentMemory", token: object) -> None:
        run, call_id = self._run_of(context), getattr(context, "tool_call_id", None)
        if run is None or not isinstance(call_id, str):
            return
        self._tool_calls[(id(run), call_id)] = (sub, token)
        while len(self._tool_calls) > _REMEMBERED_CALLS:
            self._tool_calls.popitem(last=False)

    def _end_tool_call(self, context: Any) -> None:
        run, call_id = self._run_of(context), getattr(context, "tool_call_id", None)
        if run is None or not isinstance(call_id, str):
            return
        found = self._tool_calls.pop((id(run), call_id), None)
        if found is not None:
            found[0].tool_call_ended(context, found[1])

    # -- the memory tool ------------------------------------------------------------------------
    def tool(self) -> FunctionTool:
        """The ``memory`` tool for this identity and session (``meta/agent_memory/tool``)."""

        async def invoke(ctx: ToolContext[Any], arguments: str) -> str:
            self._mark_own(getattr(ctx, "tool_call_id", None))  # our own output: never a tool result to classify
            await self._note()
            try:
                parsed: Any = strict_json.loads(arguments) if arguments else {}
            except ValueError:
                parsed = arguments  # the gateway answers malformed JSON with an is_error text
            out = await self.calls.tool(parsed)
            return out.text

        made = FunctionTool(name=self.tool_name, description=self._definition["description"],
                            params_json_schema=self._definition["input_schema"], on_invoke_tool=invoke,
                            strict_json_schema=False)
        self._tools = [ref for ref in self._tools if ref() is not None] + [weakref.ref(made)]
        return made

    # -- injection --------------------------------------------------------------------------------
    def instructions(self, base: Instructions = None) -> Callable[[RunContextWrapper[Any], Agent[Any]], Awaitable[str]]:
        """Dynamic instructions: ``base`` (a string, or the SDK's ``(context, agent)`` callable), then the
        recorder protocol, then this run's observation block (``meta/turn/inject`` with the run's last user
        message as the query; nothing when it is skipped, see :attr:`last_skip_reason`)."""

        async def instructions(ctx: RunContextWrapper[Any], agent: Agent[Any]) -> str:
            parts: list[str] = []
            text = base(ctx, agent) if callable(base) else base
            if text is not None and not isinstance(text, str):
                text = await text
            if text:
                parts.append(text)
            if self.protocol:
                parts.append(RECORDER_PROTOCOL_INSTRUCTIONS)
            block = await self._block(ctx)
            if block:
                parts.append(block)
            return "\n\n".join(parts)

        return instructions

    async def _block(self, ctx: RunContextWrapper[Any]) -> str | None:
        query = last_user_text(getattr(ctx, "turn_input", None) or [])
        try:
            cached = self._blocks.get(ctx)
        except TypeError:  # a context that cannot be weakly referenced: inject every call
            cached = None
        if cached is not None and cached[0] == query:
            return cached[1]
        await self._note()
        block = await self.calls.inject(query)
        self.last_skip_reason = block.skip_reason
        try:
            self._blocks[ctx] = (query, block.text)
        except TypeError:
            pass
        return block.text

    # -- wiring ---------------------------------------------------------------------------------
    def hooks(self, inner: AgentHooks[Any] | None = None) -> "MemoryHooks":
        """The agent hooks that report tool results (see the module doc); ``inner`` (the agent's own
        hooks, if any) is called after each of them."""
        return MemoryHooks(self, inner)

    def attach(self, agent: Agent[Any]) -> Agent[Any]:
        """A copy of ``agent`` with the ``memory`` tool added, its instructions made dynamic
        (:meth:`instructions`) and its hooks wrapped (:meth:`hooks`). ``ValueError`` when the agent
        already has a tool named ``memory``."""
        if any(getattr(t, "name", None) == self.tool_name for t in agent.tools):
            raise ValueError(f"agent {agent.name!r} already has a tool named {self.tool_name!r}")
        return agent.clone(tools=[*agent.tools, self.tool()], instructions=self.instructions(agent.instructions),
                           hooks=self.hooks(agent.hooks))

    # -- what the hooks do ------------------------------------------------------------------------
    async def tool_finished(self, context: Any, tool: Tool) -> None:
        """A local tool finished (``on_tool_end``): report it, whatever its call id (an earlier result's id,
        trusted or this memory's own, says nothing of this one), unless it is one of the ``memory`` tool
        instances :meth:`tool` made; another tool named ``memory`` (a namespaced or MCP tool) is reported like
        any other."""
        call_id = getattr(context, "tool_call_id", None)
        name = getattr(tool, "name", None) or type(tool).__name__
        if any(ref() is tool for ref in self._tools):
            return  # this memory's own tool
        await self.report(name, call_id=call_id if isinstance(call_id, str) else None,
                          provenance=self._provenance_of(name, tool), fresh=True)

    async def response_received(self, response: Any) -> None:
        """The model answered (``on_llm_end``): report the hosted tools whose results it carries (each
        untrusted source once)."""
        within = ReportPass(self.calls)
        for item in getattr(response, "output", None) or []:
            kind = _get(item, "type")
            if kind not in HOSTED_CALL_TYPES:
                continue
            await self._report_hosted(item, kind, within, fresh=True)

    async def _report_hosted(self, item: Any, kind: str, within: ReportPass, *, fresh: bool = False) -> None:
        ident = _get(item, "id") or _get(item, "call_id")
        if kind in _HOSTED_MCP_TYPES:
            name = _get(item, "name") or kind
            server = _get(item, "server_label")
            await self.report(str(name), call_id=ident, server_tool=True, within=within, fresh=fresh,
                              provenance={"kind": "mcp", "source_id": str(server)} if server else None)
        else:
            await self.report(kind.removesuffix("_call"), call_id=ident, server_tool=True, within=within, fresh=fresh)

    async def _report_mcp_listings(self, agent: Any, within: ReportPass) -> None:
        """Report the tool listing of each MCP server whose tools ``agent``'s model is given (its
        ``mcp_servers``, and the servers the SDK attributes its function tools to) as a tool result
        ``mcp_list_tools`` of that server (``{"kind": "mcp", "source_id": <server>}``): the tools'
        descriptions are the server's text in the model's input, read with no tool called. A server
        ``trusted_mcp_servers`` lists is reported once; any other at every model call (a reset while the
        server is still attached does not launder it); a server with no name as server-tool content."""
        servers: list[str | None] = []
        for server in getattr(agent, "mcp_servers", None) or ():
            name = getattr(server, "name", None)
            servers.append(name if isinstance(name, str) and name else None)
        servers += [_mcp_server(t) for t in getattr(agent, "tools", None) or () if _mcp_server(t)]
        for name in dict.fromkeys(servers):
            if name is None:
                await self.report(MCP_LISTING_NAME, server_tool=True, within=within)
            elif name not in self._listed:
                await self._note()
                verdict = await within.tool_result(MCP_LISTING_NAME, provenance={"kind": "mcp", "source_id": name})
                if verdict.trusted:
                    self._listed.add(name)

    async def model_input(self, items: Iterable[Any], agent: Any = None) -> None:
        """Before a model call (``on_llm_start``): report every tool output in the input not found trusted yet
        (by call id and name), by its call's name; a name of one of ``agent``'s tools takes that tool's provenance
        (:func:`tool_provenance`: an agent used as a tool is reported as that agent's output). Only the
        outputs of calls this memory's own tool ran are skipped: an output of a ``memory`` call it did not
        run (another agent's tool of that name, an earlier process's history) is reported too. The call is
        one pass: each untrusted source (reported name, provenance, server-tool flag) is reported once,
        however many outputs of it the input holds."""
        within = ReportPass(self.calls)
        await self._report_mcp_listings(agent, within)
        items = list(items)
        tools = {getattr(t, "name", None): t for t in (getattr(agent, "tools", None) or [])}
        names: dict[str, str] = {}
        for item in items:
            kind = _get(item, "type")
            call_id = _get(item, "call_id")
            if kind in _OUTPUT_TYPES.values() and isinstance(call_id, str):
                names[call_id] = str(_get(item, "name") or _CALL_NAMES.get(kind, kind))
        for item in items:
            kind = _get(item, "type")
            if kind in HOSTED_CALL_TYPES:
                await self._report_hosted(item, kind, within)
                continue
            if kind not in _OUTPUT_TYPES:
                continue
            call_id = _get(item, "call_id")
            name = names.get(call_id) if isinstance(call_id, str) else None
            if self._own_call(call_id, name):
                continue  # an output of this memory's own memory tool
            if name is None:  # an output whose call is not in the input: nothing attributes it
                await self.report(f"unattributed {kind}", call_id=call_id, server_tool=True, within=within)
            else:
                tool = tools.get(name)
                await self.report(name, call_id=call_id, within=within,
                                  provenance=self._provenance_of(name, tool) if tool is not None else None)


class MemoryHooks(AgentHooks[Any]):
    """``AgentHooks`` reporting an agent's tool results to its :class:`AgentMemory` (then ``inner``'s)."""

    def __init__(self, memory: AgentMemory, inner: AgentHooks[Any] | None = None) -> None:
        self.memory = memory
        self.inner = inner

    async def on_start(self, context: Any, agent: Any) -> None:
        await self.memory.agent_started(context, agent)
        if self.inner is not None:
            await self.inner.on_start(context, agent)

    async def on_end(self, context: Any, agent: Any, output: Any) -> None:
        if self.inner is not None:
            await self.inner.on_end(context, agent, output)

    async def on_handoff(self, context: Any, agent: Any, source: Any) -> None:
        # the SDK calls this on the handing agent's hooks (``agent`` is the receiver): report for the receiver
        receiver = _memory_of(agent)
        if receiver is not None:
            await receiver.handoff_received(source, context=context)
        if self.inner is not None:
            await self.inner.on_handoff(context, agent, source)

    async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
        if _agent_tool_identity(tool)[0]:
            sub = _memory_of(getattr(tool, "_agent_instance", None))
            if sub is not None and sub is not self.memory:
                self.memory._track_tool_call(context, sub, await sub.called_as_tool(self.memory, context))
        if self.inner is not None:
            await self.inner.on_tool_start(context, agent, tool)

    async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
        self.memory._end_tool_call(context)
        await self.memory.tool_finished(context, tool)
        if self.inner is not None:
            await self.inner.on_tool_end(context, agent, tool, result)

    async def on_llm_start(self, context: Any, agent: Any, system_prompt: Any, input_items: Any) -> None:
        await self.memory.model_input(input_items or [], agent)
        if self.inner is not None:
            await self.inner.on_llm_start(context, agent, system_prompt, input_items)

    async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
        await self.memory.response_received(response)
        if self.inner is not None:
            await self.inner.on_llm_end(context, agent, response)
