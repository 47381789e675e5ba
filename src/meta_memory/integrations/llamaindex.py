"""meta-memory for LlamaIndex agents (the ``llamaindex`` extra: ``pip install 'meta-memory[llamaindex]'``).

:class:`MetaMemoryBlock` is a memory block of LlamaIndex's ``Memory`` (``llama_index.core.memory``)
backed by one identity's session (``meta.agent(identity, realm=...).session(key)``, sync or async)::

    session = meta.agent("agent:concierge").session("s1")
    memory = Memory.from_defaults(session_id="s1", memory_blocks=[MetaMemoryBlock(session=session)])
    agent = FunctionAgent(tools=reported_tools([web_fetch], session) + [memory_tool(session)], llm=llm)
    await agent.run("Summarise the page", memory=memory)

* **injection** (``aget``): each time the agent reads its memory, the block is this turn's quoted
  observation block (``meta/turn/inject`` with the last user message as the query), which ``Memory``
  puts in the system message (its ``insert_method``), apart from the user's text; nothing when the
  injection is skipped (:attr:`MetaMemoryBlock.last_skip_reason`).
* **long-term writes** (``aput``): the messages ``Memory`` moves out of its short-term window (user and
  assistant text; tool messages are left out) are remembered as one record, QUARANTINED for review when
  the session is tainted now *or was tainted when a reset closed it* (``store_ejected=False`` turns this
  off). The messages may have entered the window before a ``meta/session/reset`` the host made while
  keeping its ``Memory``, and a reset must not launder them: they go through the ``memory`` tool's path (an
  LLM-authored write of this session, so ``llm_writes = "quarantined"`` holds them too), except when the
  session is clean now but a reset closed it tainted (``meta/session/note``'s ``derived_tainted``): then
  they are written as content derived from this session (``meta/agent_memory/remember`` with
  ``derived_from_sessions`` = this session), which the session's reset mark keeps quarantined.
* **the firewall's reporting**: :func:`reported_tools` wraps the agent's tools so each result (an
  error too) is classified by ``meta/turn/tool_result`` before the tool returns it to the agent, and so
  before the model sees it; a failed report raises from the tool instead of returning its output. A tool
  an MCP tool spec (``McpToolSpec``) made is reported as its server's (``mcp_server=``, judged by
  ``trusted_mcp_servers``) or, with no server named, as ``McpToolSpec.<tool>`` (untrusted). The server's
  tool descriptions reach the model with no tool called (tool poisoning): at each read the block, and before
  each call the ``memory`` tool, report the listing of every MCP server whose tools were wrapped for their
  session as that server's result (``mcp_list_tools``; ``McpToolSpec.mcp_list_tools`` with no server named),
  an untrusted one each time (a reset does not launder it while the tools are wrapped), a trusted one once.
* **the history's tool results** (``aget``, the backstop): a conversation ``Memory`` holds (a persistent
  chat store resumed by a new process, a ``chat_history=`` handed to ``run``) reaches the model again,
  tool messages included, under whatever session the block now speaks from. Before the block answers a
  read, each tool message of the history it has not reported yet is classified for its session, by the
  name of the call it answers (the latest call of that id before it, as :func:`reported_tools` reports that
  tool for this session: a spec's function qualified by its spec, an MCP spec's tool with its server; and
  when other sessions of the realm wrapped a tool of that name too, as each of them reports it: the message
  does not say which agent's tool answered) or, when no call before it
  has its id, as untrusted server-tool content. So a page read in an earlier session taints the session
  that reads it again, and again after a ``meta/session/reset`` while the message is still in the history.
  A read reports each untrusted source (reported name, provenance, server-tool flag) once, however many of
  its messages the history holds: one report taints the session as many would.
  Outputs of the ``memory`` tool are not reported (the memory tool's own results), unless a tool named
  ``memory`` was wrapped by :func:`reported_tools` for a session of the realm (another agent's tool of that
  name): the output is then reported as that tool reports it.
  A ``Memory`` without this block has no backstop: nothing of the integration sees its history.
* **the ``memory`` tool**: :func:`memory_tool`, a LlamaIndex tool calling ``meta/agent_memory/tool``. Before
  each call it classifies, for its own session, the tool messages of the conversation the agent passes it
  (the workflow ``Context``'s ``Memory``, archived messages included), as the block does: in an
  ``AgentWorkflow`` whose agents share one ``Memory``, a page the handing agent read is in the receiving
  agent's context, so the receiver's session is tainted and its model's writes quarantined. A call with no
  conversation to read is judged untrusted (:class:`MemoryTool`).
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Literal, Optional

try:
    from llama_index.core.base.llms.types import ChatMessage
    from llama_index.core.memory.memory import BaseMemoryBlock
    from llama_index.core.tools.function_tool import FunctionTool
    from llama_index.core.tools.tool_spec.base import BaseToolSpec
    from llama_index.core.tools.types import AsyncBaseTool, BaseTool, ToolMetadata, ToolOutput, adapt_to_async_tool
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("meta_memory.integrations.llamaindex needs the llamaindex extra: "
                      "pip install 'meta-memory[llamaindex]'") from exc

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, create_model

from ..sdk.agent import AsyncSession, Session
from ..tool.schema import MEMORY_TOOL_NAME, memory_tool_definition
from ._session import ReportPass, SessionCalls, last_user_text, message_text

__all__ = ["MetaMemoryBlock", "MemoryTool", "ReportedTool", "memory_tool", "reported_tools"]

#: Title and tag of a record made from messages leaving the short-term window.
EXCERPT_TITLE = "Conversation excerpt"
EXCERPT_TAG = "llamaindex-excerpt"
_BODY_CAP = 60_000  # under the record body cap (64 KiB), leaving room for the role labels
#: The class name of ``llama-index-tools-mcp``'s tool spec; its tools are reported as ``McpToolSpec.<tool>``.
MCP_TOOL_SPEC = "McpToolSpec"
#: The tool name an MCP server's tool listing (its tools' descriptions) is reported under, as the server's result.
MCP_LISTING_NAME = "mcp_list_tools"
#: The name a history's tool message is reported under when no call in the history names it.
UNATTRIBUTED_TOOL_MESSAGE = "unattributed tool message"
#: Trusted tool messages (call id, tool) a block or memory tool remembers as reported; sessions whose wrapped
#: tools are remembered.
_REMEMBERED = 4096

_Catalog = OrderedDict[tuple[str | None, str, str], dict[str, tuple[str, dict[str, str] | None]]]
#: How :class:`ReportedTool` reports each tool of a session, per gateway: (realm, identity, session key) -> tool
#: name -> (the reported name, its provenance). The block's backstop reports a history's output of that tool
#: alike. A gateway reached by URL is one catalogue for every handle on that URL; any other handle (an embedded
#: runtime, a spawned stdio gateway) has its own, gone with it. Two gateways in one process, each with a realm
#: of one name, do not judge each other's conversations.
_CATALOGS: weakref.WeakKeyDictionary[Any, _Catalog] = weakref.WeakKeyDictionary()
_URL_CATALOGS: dict[str, _Catalog] = {}
_CATALOG_LOCK = threading.Lock()


class _NoHandle:
    """The handle of a session that names none (a test double)."""


_NO_HANDLE = _NoHandle()


def _session_id(session: Any) -> tuple[str | None, str, str]:
    return (session.realm, session.identity, session.session_key)


def _catalog_of(session: Any) -> _Catalog:
    """The catalogue of ``session``'s gateway (the caller holds :data:`_CATALOG_LOCK`)."""
    handle = getattr(session, "_handle", None)
    url = getattr(getattr(handle, "_transport", None), "url", None)
    if isinstance(url, str):
        return _URL_CATALOGS.setdefault(url, OrderedDict())
    try:
        return _CATALOGS.setdefault(_NO_HANDLE if handle is None else handle, OrderedDict())
    except TypeError:  # a handle no weak reference can name
        return _CATALOGS.setdefault(_NO_HANDLE, OrderedDict())


def _catalogue(session: Any, name: str, reported: str, provenance: dict[str, str] | None) -> None:
    with _CATALOG_LOCK:
        catalog, key = _catalog_of(session), _session_id(session)
        catalog.setdefault(key, {})[name] = (reported, provenance)
        catalog.move_to_end(key)
        while len(catalog) > _REMEMBERED:
            catalog.popitem(last=False)


def _get(item: Any, key: str) -> Any:
    return item.get(key) if isinstance(item, Mapping) else getattr(item, key, None)


def _add_call_names(message: ChatMessage, names: dict[str, str]) -> None:
    """Note in ``names`` (tool-call id -> tool name) the calls ``message`` makes (``ToolCallBlock`` blocks, or an
    OpenAI-style ``additional_kwargs["tool_calls"]``); a call id made again names its latest call."""
    for block in getattr(message, "blocks", None) or ():
        call_id, name = getattr(block, "tool_call_id", None), getattr(block, "tool_name", None)
        if isinstance(call_id, str) and isinstance(name, str):
            names[call_id] = name
    calls = (getattr(message, "additional_kwargs", None) or {}).get("tool_calls")
    for call in calls if isinstance(calls, (list, tuple)) else ():
        call_id, name = _get(call, "id"), _get(_get(call, "function"), "name")
        if isinstance(call_id, str) and isinstance(name, str):
            names[call_id] = name


def _reported_as(session: Any, name: str) -> list[tuple[str, dict[str, str] | None]]:
    """How a conversation's output of the tool ``name`` is reported for ``session``: as every wrapped tool of
    that name of ``session`` and of the other sessions of its realm reports it (``session``'s own first; in a
    shared conversation a message does not say which agent's tool answered it, so a name two agents use for
    different tools is judged as the least trusted of them); else by its name alone."""
    with _CATALOG_LOCK:
        catalog = _catalog_of(session)
        own = catalog.get(_session_id(session), {}).get(name)
        found: list[tuple[str, dict[str, str] | None]] = [own] if own is not None else []
        for key, tools in catalog.items():
            entry = tools.get(name) if key[0] == session.realm else None
            if entry is not None and entry not in found:
                found.append(entry)
    return found or [(name, None)]


def _wrapped_in_realm(session: Any, name: str) -> bool:
    """Whether a tool named ``name`` was wrapped (:class:`ReportedTool`) for a session of ``session``'s realm."""
    with _CATALOG_LOCK:
        return any(key[0] == session.realm and name in tools for key, tools in _catalog_of(session).items())


async def _report_tool_messages(report: ReportPass, messages: list[ChatMessage],
                                reported: OrderedDict[str, None]) -> None:
    """Classify, in ``report``'s pass for its session, each tool message of ``messages`` not in ``reported`` (its call id and
    tool name, added here when found trusted): by the name of the call it answers, the latest call of its id
    before it (:func:`_reported_as`), or, when no call before it has its id, as untrusted server-tool
    content. Outputs of a ``memory`` call are not reported (the memory tool's own), unless a tool of that name was
    wrapped by :func:`reported_tools` in the session's realm (another agent's tool called ``memory``): then
    they are reported as that tool reports them. An untrusted one is reported at each pass (a reset
    of the session does not take it out of the conversation), each untrusted source once a pass
    (:class:`~._session.ReportPass`). A failed report raises."""
    session = report.calls.session
    names: dict[str, str] = {}  # the calls made so far: a tool message answers the latest call of its id before it
    for m in messages:
        _add_call_names(m, names)
        if str(getattr(m.role, "value", m.role)) != "tool":
            continue
        call_id = (m.additional_kwargs or {}).get("tool_call_id")
        call_id = call_id if isinstance(call_id, str) and call_id else None
        name = names.get(call_id) if call_id is not None else None
        if name == MEMORY_TOOL_NAME and not _wrapped_in_realm(session, name):
            continue  # the memory tool's own output: no tool of that name was wrapped (reported_tools) in the realm
        seen = f"call\x00{call_id}\x00{name}" if call_id is not None and name is not None else None
        if seen is not None and seen in reported:  # a call id used again for another tool is judged again
            continue
        trusted = True
        if name is None:
            verdict = await report.tool_result(UNATTRIBUTED_TOOL_MESSAGE, server_tool=True)
            trusted = verdict.trusted
        else:
            for reported_name, provenance in _reported_as(session, name):
                verdict = await report.tool_result(reported_name, provenance=provenance)
                trusted = trusted and verdict.trusted
        if seen is not None and trusted:  # an untrusted one taints again after a reset
            reported[seen] = None
            while len(reported) > _REMEMBERED:
                reported.popitem(last=False)


def _mcp_servers(session: Any) -> list[str | None]:
    """The MCP servers among the tools wrapped for ``session`` (:func:`reported_tools`): each typed MCP
    provenance's server, and ``None`` when an ``McpToolSpec`` tool was wrapped with no server named."""
    with _CATALOG_LOCK:
        entries = list(_catalog_of(session).get(_session_id(session), {}).values())
    servers: list[str | None] = []
    for reported, provenance in entries:
        if provenance is not None and str(provenance.get("kind", "")).strip().lower() == "mcp":
            servers.append(provenance.get("source_id"))
        elif provenance is None and reported.startswith(f"{MCP_TOOL_SPEC}."):
            servers.append(None)
    return list(dict.fromkeys(servers))


async def _report_mcp_listings(report: ReportPass, reported: OrderedDict[str, None]) -> None:
    """Report, in ``report``'s pass for its session, the tool listing of each MCP server among the tools wrapped for it
    (:func:`_mcp_servers`): the tools' descriptions are the server's text, which the model reads with no tool
    called. Reported as ``mcp_list_tools`` with the server's typed provenance (``trusted_mcp_servers`` judges
    it), or as ``McpToolSpec.mcp_list_tools`` (untrusted) for a spec's tools with no server named. A listing
    found trusted is remembered in ``reported``; any other is reported each time (a reset while the server's
    tools are still wrapped for the session does not launder it). A failed report raises."""
    for server in _mcp_servers(report.calls.session):
        seen = f"listing\x00{server}"
        if seen in reported:
            continue
        if server is None:
            verdict = await report.tool_result(f"{MCP_TOOL_SPEC}.{MCP_LISTING_NAME}")
        else:
            verdict = await report.tool_result(MCP_LISTING_NAME, provenance={"kind": "mcp", "source_id": server})
        if verdict.trusted:
            reported[seen] = None


class MetaMemoryBlock(BaseMemoryBlock[str]):
    """A LlamaIndex memory block over meta-memory's injection and the firewall-gated write path.

    Fields: ``session`` (the bound session), ``name`` (default ``"meta_memory"``), ``priority``
    (``0``: never truncated), ``store_ejected`` (remember messages leaving the short-term window)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    session: Any = Field(description="meta.agent(identity, realm=...).session(key)")
    name: str = Field(default="meta_memory")
    description: Optional[str] = Field(default="Records meta-memory recalled for this turn.")
    priority: int = Field(default=0)
    store_ejected: bool = Field(default=True)
    _calls: SessionCalls = PrivateAttr()
    _skip: Optional[str] = PrivateAttr(default=None)
    _reported: OrderedDict[str, None] = PrivateAttr(default_factory=OrderedDict)

    def model_post_init(self, context: Any) -> None:
        self._calls = SessionCalls(self.session)

    @property
    def last_skip_reason(self) -> str | None:
        """Why the last read injected nothing (``None`` when it injected a block)."""
        return self._skip

    async def _aget(self, messages: Optional[list[ChatMessage]] = None, **block_kwargs: Any) -> str:
        report = ReportPass(self._calls)  # this read is one pass: each untrusted source reported once
        await _report_mcp_listings(report, self._reported)
        await self._report_history(report, messages or [])
        query = last_user_text(
            {"role": str(getattr(m.role, "value", m.role)), "content": m.content or ""} for m in messages or [])
        block = await self._calls.inject(query)
        self._skip = block.skip_reason
        return block.text or ""

    async def _report_history(self, report: ReportPass, messages: list[ChatMessage]) -> None:
        """Classify each tool message of ``messages`` in ``report``'s pass (module doc, "the history's tool
        results"); one found trusted is not reported again by this block, an untrusted source is at every read,
        once a read (a reset of the session does not take the page out of the history the model reads). A
        failed report raises, so the read (and the model call) does not happen."""
        await _report_tool_messages(report, messages, self._reported)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        if not self.store_ejected:
            return
        lines: list[str] = []
        for m in messages:
            role = str(getattr(m.role, "value", m.role))
            text = message_text(m.content or "").strip()
            if role in ("user", "assistant") and text:
                lines.append(f"{role}: {text}")
        if not lines:
            return
        body = "\n".join(lines)
        if len(body.encode("utf-8")) > _BODY_CAP:
            body = body.encode("utf-8")[-_BODY_CAP:].decode("utf-8", "ignore")
        await self._store_excerpt(body)

    async def _store_excerpt(self, body: str) -> None:
        """Remember ``body`` (messages leaving the window) judged by every taint they can carry: the
        session's live taint (the ``memory`` tool's path) and, when the session is clean now, the taint a
        reset closed (a write derived from this session), since they may have entered before it."""
        state = await self._calls.note()
        if not state.tainted and state.derived_tainted:
            await self._calls.remember_derived(EXCERPT_TITLE, body, tags=[EXCERPT_TAG])
        else:  # tainted now, or never reset tainted: an LLM-derived write (llm_writes = "quarantined" holds it too)
            await self._calls.tool({"action": "remember", "title": EXCERPT_TITLE, "body": body, "tags": [EXCERPT_TAG]})


def _arguments_model(schema: dict[str, Any]) -> type[BaseModel]:
    """A pydantic model of the ``memory`` tool's JSON schema (LlamaIndex describes tools by models)."""
    kinds: dict[str, Any] = {"string": str, "integer": int, "array": list[str], "boolean": bool}
    required = set(schema.get("required", []))
    fields: dict[str, Any] = {}
    for name, prop in schema["properties"].items():
        kind: Any = Literal[tuple(prop["enum"])] if "enum" in prop else kinds[prop["type"]]
        if name in required:
            fields[name] = (kind, Field(..., description=prop.get("description")))
        else:
            fields[name] = (Optional[kind], Field(None, description=prop.get("description")))
    return create_model("MemoryToolArguments", **fields)


#: The tool name a conversation shared with another session's agent is reported under (typed agent provenance
#: naming that session, so its taint carries to the ``memory`` tool's session).
SHARED_CONVERSATION = "shared conversation"
#: The tool name a ``memory`` call is reported under when the conversation it was made in cannot be read (no
#: workflow ``Context``, or one without a memory): untrusted, so the call's writes are quarantined.
UNJUDGED_CONVERSATION = "unjudged conversation"


class MemoryTool(FunctionTool):
    """The ``memory`` tool (``meta/agent_memory/tool``) for one session; refusals are error outputs.

    A LlamaIndex agent passes it the workflow's ``Context`` (it declares one, as a ``FunctionTool`` with a
    ``ctx: Context`` parameter does). Before each call it classifies, for its session, the tool messages of the
    conversation the model wrote the call in (the ``Memory`` in the context, archived messages included), as
    :class:`MetaMemoryBlock` does: in an ``AgentWorkflow`` sharing one ``Memory``, a page another agent read
    before handing off is in this model's context, so this session is tainted and the write quarantined. A
    call whose conversation cannot be read (no ``Context``, or one without a memory) is judged untrusted
    (reported as ``unjudged conversation``, server-tool content): its writes are quarantined. A failed report
    raises instead of making the call.

    What another agent of the conversation wrote may carry a taint no tool message shows (its model read a
    poisoned MCP tool description, or its session was tainted before): for each ``MetaMemoryBlock`` of the
    conversation's ``Memory`` that speaks from another session, the tool also reports ``shared conversation``
    with agent provenance naming that session (``{"kind": "agent", "source_id": <identity>, "session_key":
    <key>}``), so that session's taint carries to this one before each call."""

    def __init__(self, session: Session | AsyncSession) -> None:
        definition = memory_tool_definition()
        self._calls = SessionCalls(session)
        self._reported: OrderedDict[str, None] = OrderedDict()
        super().__init__(async_fn=self._invoke, metadata=ToolMetadata(
            name=definition["name"], description=definition["description"],
            fn_schema=_arguments_model(definition["input_schema"])))
        self.requires_context, self.ctx_param_name = True, "ctx"  # the agent passes its workflow Context as ctx

    async def _invoke(self, **kwargs: Any) -> str:
        """The tool's function (``fn`` / ``async_fn``): :meth:`acall`'s text."""
        return str((await self.acall(**kwargs)).content)

    def call(self, *args: Any, **kwargs: Any) -> ToolOutput:
        import asyncio

        return asyncio.run(self.acall(*args, **kwargs))

    async def acall(self, *args: Any, **kwargs: Any) -> ToolOutput:
        ctx = kwargs.pop("ctx", None)
        await self._judge_conversation(ctx)
        arguments = {k: v for k, v in kwargs.items() if v is not None}
        out = await self._calls.tool(arguments)
        return ToolOutput(content=out.text, tool_name=self._metadata.get_name(), raw_input=kwargs,
                          raw_output=out.text, is_error=out.is_error)

    async def _judge_conversation(self, ctx: Any) -> None:
        """Classify the tool messages of the conversation in ``ctx`` (the workflow's ``Memory``), or report
        the conversation as unjudged when there is none to read; and the tool listings of the MCP servers
        whose tools are wrapped for this session (:func:`reported_tools`), which its model reads too."""
        report = ReportPass(self._calls)  # this call is one pass: each untrusted source reported once
        await _report_mcp_listings(report, self._reported)
        store = getattr(ctx, "store", None)
        memory = await store.get("memory", default=None) if store is not None else None
        get_all = getattr(memory, "aget_all", None)
        if get_all is None:
            await report.tool_result(UNJUDGED_CONVERSATION, server_tool=True)
            return
        await _report_tool_messages(report, list(await get_all()), self._reported)
        for block in getattr(memory, "memory_blocks", None) or ():  # the agents this conversation speaks from
            other = getattr(block, "session", None) if isinstance(block, MetaMemoryBlock) else None
            if other is not None and _session_id(other) != _session_id(self._calls.session):
                await report.tool_result(SHARED_CONVERSATION, provenance={
                    "kind": "agent", "source_id": other.identity, "session_key": other.session_key})


def memory_tool(session: Session | AsyncSession) -> MemoryTool:
    """The ``memory`` tool for ``session`` (see :class:`MemoryTool`)."""
    return MemoryTool(session)


def _spec_of(tool: object) -> BaseToolSpec | None:
    """The tool spec that made ``tool``: the owner of its bound method (``fn`` / ``async_fn``, of the tool
    or of the tool it adapts), or a spec its function closes over (``McpToolSpec`` builds each tool as a
    closure over the spec and the MCP tool's name)."""
    for holder in (tool, getattr(tool, "base_tool", None)):
        for attr in ("fn", "async_fn"):
            fn = getattr(holder, attr, None) if holder is not None else None
            if fn is None:
                continue
            owner = getattr(fn, "__self__", None)
            if isinstance(owner, BaseToolSpec):
                return owner
            for cell in getattr(fn, "__closure__", None) or ():
                try:
                    value = cell.cell_contents
                except ValueError:  # an empty cell
                    continue
                if isinstance(value, BaseToolSpec):
                    return value
    return None


def _is_mcp_spec(spec: BaseToolSpec) -> bool:
    """Whether ``spec`` is (a subclass of) ``llama-index-tools-mcp``'s ``McpToolSpec``."""
    return any(c.__name__ == MCP_TOOL_SPEC or c.__module__.startswith("llama_index.tools.mcp")
               for c in type(spec).__mro__ if c is not object)


class ReportedTool(AsyncBaseTool):
    """A tool whose every result (or error) is classified (``meta/turn/tool_result``) before it returns.

    ``provenance``: the tool's typed owner (``{"kind": "mcp", "source_id": <server>}``); ``mcp_server``:
    the MCP server a tool made by an ``McpToolSpec`` comes from, reported as that typed provenance when
    ``provenance`` is not given (so ``trusted_mcp_servers`` decides)."""

    def __init__(self, tool: BaseTool, session: Session | AsyncSession, *,
                 provenance: dict[str, str] | None = None, mcp_server: str | None = None) -> None:
        self.inner = adapt_to_async_tool(tool)
        self._calls = SessionCalls(session)
        #: the tool spec that made the tool (found once: the name every result is reported under reads it)
        self.spec = _spec_of(self.inner)
        self.mcp = self.spec is not None and _is_mcp_spec(self.spec)
        if provenance is None and mcp_server is not None and self.mcp:
            provenance = {"kind": "mcp", "source_id": mcp_server}
        self.provenance = provenance
        _catalogue(session, self.metadata.get_name(), self.reported_name, provenance)

    @property
    def metadata(self) -> ToolMetadata:
        return self.inner.metadata

    def call(self, *args: Any, **kwargs: Any) -> ToolOutput:
        import asyncio

        return asyncio.run(self.acall(*args, **kwargs))

    @property
    def reported_name(self) -> str:
        """The name its results are classified under: the tool's name, qualified by its tool spec's class
        when a ``BaseToolSpec`` made it (``TavilyToolSpec.search``), so a spec that reads the web is known by
        its class whatever its functions are called (``firewall/outside_tools.py`` lists such classes). A
        tool an ``McpToolSpec`` (or a subclass) made is ``McpToolSpec.<tool>``, on that list: an MCP
        server's result is untrusted unless its typed provenance names a trusted server; with that
        provenance it keeps the MCP tool's own name."""
        name = self.metadata.get_name()
        if self.mcp:
            return name if self.provenance is not None else f"{MCP_TOOL_SPEC}.{name}"
        if self.spec is not None:
            return f"{type(self.spec).__name__}.{name}"
        return name

    async def acall(self, *args: Any, **kwargs: Any) -> ToolOutput:
        name = self.reported_name
        try:
            out = await self.inner.acall(*args, **kwargs)
        except Exception:
            await self._calls.tool_result(name, provenance=self.provenance, is_error=True)
            raise
        await self._calls.tool_result(name, provenance=self.provenance, is_error=bool(getattr(out, "is_error", False)))
        return out


def reported_tools(tools: list[BaseTool], session: Session | AsyncSession, *,
                   provenance: dict[str, dict[str, str]] | None = None,
                   mcp_server: str | None = None) -> list[BaseTool]:
    """``tools``, each wrapped in a :class:`ReportedTool` for ``session`` (a ``memory`` tool is left as it
    is). ``provenance``: tool name -> ``{"kind": "mcp", "source_id": <server>}`` for MCP tools;
    ``mcp_server``: the server of the tools an ``McpToolSpec`` made among ``tools`` (one server per
    call: call it once per spec; tools of two specs with one ``mcp_server`` are refused, ``ValueError``).
    Without either, an ``McpToolSpec``'s tool is reported as ``McpToolSpec.<tool>`` (untrusted under the
    shipped outside-content list)."""
    out: list[BaseTool] = []
    specs: set[int] = set()  # the McpToolSpecs the wrapped tools come from
    for tool in tools:
        if isinstance(tool, (MemoryTool, ReportedTool)):
            out.append(tool)
            continue
        wrapped = ReportedTool(tool, session, provenance=(provenance or {}).get(tool.metadata.get_name()),
                               mcp_server=mcp_server)
        if wrapped.mcp:
            specs.add(id(wrapped.spec))
        out.append(wrapped)
    if mcp_server is not None and len(specs) > 1:
        raise ValueError("mcp_server names the server of one McpToolSpec: call reported_tools once per spec "
                         f"(these tools come from {len(specs)})")
    return out
