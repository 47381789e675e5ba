"""The ``memory`` recorder tool over MCP (spec README, "Going beyond the reference": an MCP server).

``meta-memory mcp --state-dir DIR --identity ID`` (or ``--url http://host:port`` to
use a running gateway) serves one tool, ``memory``,
over the MCP stdio transport with the official ``mcp`` Python SDK, so any MCP
client (an IDE agent, a desktop assistant, another runtime) can use an
identity's durable memory unchanged.

Every ``tools/call`` is dispatched through the gateway's method table as
``meta/agent_memory/tool`` for the configured identity and session: it is an
LLM-authored write, so the firewall's write gate decides whether it lands
quarantined. The identity, realm, session and mob are fixed by the server's
command line and named in every call (``--realm``, default the runtime's
``[agent_memory] realm``); nothing in the tool arguments can retarget them.

Fail closed on taint (``--session-taint``): an MCP server sees only the calls to
its own tool, never the other tool results (web pages, files, other servers)
that the client's model read, so it cannot know whether the session is tainted.
By default (``unknown``) the server notes its session with
``tool_results = "unreported"`` and the gateway treats the session as tainted
from the start: every write lands quarantined pending review, under either
``llm_writes`` posture. ``--session-taint reported`` restores the normal posture;
it is meant for ``--url`` deployments whose host reports every tool result of
this identity and ``--session-key`` to that gateway with
``meta/turn/tool_result`` (then only writes after untrusted content quarantine).
With ``--state-dir`` nothing can report tool results, so ``reported`` there is
an explicit opt-out of the firewall and the CLI warns about it.

Results map onto MCP like this:

- a tool result (``{text, is_error, exclude_from_indexing}``) becomes a
  ``CallToolResult`` with one text block, ``isError`` as given, and
  ``_meta = {"meta_memory/exclude_from_indexing": true}`` (tool results are an
  indexing-excluded message class);
- a refusal by the gateway (for instance the tool disabled with
  ``recorder_tool = false``, or an unknown tool name) is a tool error
  (``isError: true`` with the refusal's message), never a protocol error.

The server notes its session at start (``meta/session/note``), so the
identity speaks from that session; with ``--session-taint unknown`` it notes it
again (``tool_results = "unreported"``) before every tool call, so neither a
reset of the session by another caller nor the expiry of an idle session's
state lets a write land active. Taint lives in the runtime that serves the
calls: with ``--state-dir`` that is this process; with ``--url`` the calls go to
a running gateway, where the host's ``meta/turn/tool_result`` calls for the same
identity and ``--session-key`` taint this server's writes.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any, cast

import anyio
import mcp_types as types
from mcp.server import Server

from .clock import new_nonce
from .errors import InvalidRequest, MetaError, MethodNotFound, ParseError, echo
from .rpc.dispatch import decode_body, error_response
from .rpc.lines import oversized_line_error, read_line
from .server.config import DEFAULT_MAX_REQUEST_BYTES
from .tool.schema import MEMORY_TOOL_NAME, memory_tool_definition

__all__ = [
    "SESSION_TAINT_CHOICES",
    "EXCLUDE_FROM_INDEXING_META",
    "MAX_IN_FLIGHT",
    "MCP_SERVER_NAME",
    "McpMemoryBridge",
    "RefusalLog",
    "build_mcp_server",
    "serve_mcp_stdio",
]

log = logging.getLogger("meta_memory.mcp")

#: The MCP server's advertised name.
MCP_SERVER_NAME = "meta-memory"
#: Requests handed to the MCP SDK and not yet answered, at most: past it, stdin is not read until one is
#: answered (or cancelled), so a client that floods requests without reading answers holds only this many.
MAX_IN_FLIGHT = 64

#: ``_meta`` key set on every tool result: hosts must keep it out of semantic indexing.
EXCLUDE_FROM_INDEXING_META = "meta_memory/exclude_from_indexing"

#: ``--session-taint`` values: ``unknown`` (default; fail closed) or ``reported`` (the host reports tool results).
SESSION_TAINT_CHOICES = ("unknown", "reported")

#: ``call(method, params) -> result``; raises :class:`~meta_memory.errors.MetaError` on a refusal.
RpcCall = Callable[[str, "dict[str, Any] | None"], Any]


@dataclass
class McpMemoryBridge:
    """Maps MCP ``tools/list`` and ``tools/call`` onto the method table for one identity.

    Args:
        call: how to reach the method table (``Gateway.call`` bound to a context, or any
            SDK handle's ``call``); raises ``MetaError`` on a refusal.
        identity: the calling agent's identity (every write is scoped to it).
        session_key: the session the calls come from (taint and the write gate follow it).
        mob: the mob the agent runs in (``propose_to_mob`` needs one; ``recall`` then also searches the
            mob's shared records, which under ``[access]`` needs ``mob.memory.read`` on it), or ``None``.
        realm: the realm of the session and of every write (``None``: the runtime's
            ``[agent_memory] realm``); named in every call, so taint recorded in that realm by the host
            gates this server's writes there.
        session_taint: ``"unknown"`` (default: the session's tool results are not reported, so the
            gateway treats it as tainted and every write lands quarantined) or ``"reported"`` (the host
            reports them with ``meta/turn/tool_result``; the normal posture applies).
    """

    call: RpcCall
    identity: str
    session_key: str
    mob: str | None = None
    session_taint: str = "unknown"
    realm: str | None = None

    def __post_init__(self) -> None:
        if self.session_taint not in SESSION_TAINT_CHOICES:
            raise ValueError("session_taint must be 'unknown' or 'reported'")

    def note_session(self) -> None:
        """Tell the runtime that ``identity`` now speaks from ``session_key`` (``meta/session/note``),
        and whether its tool results are reported (``tool_results``); raises when the runtime refuses."""
        tool_results = "reported" if self.session_taint == "reported" else "unreported"
        self.call("meta/session/note", {**self._session(), "tool_results": tool_results})

    def _session(self) -> dict[str, Any]:
        """The session every call names: ``{identity, session_key, realm?}``."""
        out: dict[str, Any] = {"identity": self.identity, "session_key": self.session_key}
        if self.realm is not None:
            out["realm"] = self.realm
        return out

    def tools(self) -> list[types.Tool]:
        """The tool list: ``memory`` with its JSON input schema, or nothing when the tool is disabled."""
        try:
            definition = self.call("meta/agent_memory/tool_schema", None)
        except MetaError as exc:
            log.info("memory tool unavailable: %s", exc.message)
            return []
        except Exception as exc:  # noqa: BLE001 - nothing to offer while the gateway is unreachable
            log.warning("memory tool schema unavailable: %r", exc)
            return []
        return [_tool(definition)]

    def call_tool(self, name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        """Run one tool call. Never raises for a refusal: refusals are tool errors (``isError``)."""
        if name != MEMORY_TOOL_NAME:
            return _result(f"unknown tool '{echo(str(name))}' (this server offers '{MEMORY_TOOL_NAME}')", True)
        params: dict[str, Any] = {**self._session(), "arguments": arguments if arguments is not None else {}}
        if self.mob:
            params["mob"] = self.mob
        try:
            if self.session_taint != "reported":
                # the posture comes from this server's configuration, declared again before every call: a
                # reset by another caller or the expiry of an idle session cannot leave it reported
                self.note_session()
            out = self.call("meta/agent_memory/tool", params)
        except MetaError as exc:
            return _result(exc.message, True)
        except Exception as exc:  # noqa: BLE001 - a lost gateway is a tool error, not a protocol failure
            from .sdk.transport import GatewayUnreachable

            log.warning("memory tool call failed: %r", exc)
            if isinstance(exc, GatewayUnreachable) and exc.unanswered:  # sent, then no answer: maybe applied
                return _result("the memory service did not answer this call: it may or may not have been applied; "
                               "recall to check before repeating it", True)
            return _result(f"the memory service is unavailable ({type(exc).__name__})", True)
        return _result(str(out.get("text", "")), bool(out.get("is_error", False)))


def _tool(definition: dict[str, Any]) -> types.Tool:
    fallback = memory_tool_definition()
    return types.Tool(
        name=definition.get("name", fallback["name"]),
        description=definition.get("description", fallback["description"]),
        input_schema=definition.get("input_schema", fallback["input_schema"]),
    )


def _result(text: str, is_error: bool) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        is_error=is_error,
        _meta={EXCLUDE_FROM_INDEXING_META: True},
    )


def build_mcp_server(bridge: McpMemoryBridge) -> Server[Any]:
    """An MCP low-level server whose ``tools/list`` and ``tools/call`` go through ``bridge``.

    Blocking method-table calls run on worker threads, so the MCP event loop never waits on SQLite.
    """
    from . import __version__

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=await anyio.to_thread.run_sync(bridge.tools))

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = dict(params.arguments) if params.arguments is not None else None
        return await anyio.to_thread.run_sync(bridge.call_tool, params.name, arguments)

    return Server(
        MCP_SERVER_NAME,
        version=__version__,
        instructions=(
            f"Durable memory of identity '{bridge.identity}'. Use the '{MEMORY_TOOL_NAME}' tool to remember, "
            "update, forget and recall records; writes may be quarantined pending review."
        ),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def default_session_key() -> str:
    """A fresh session key for a server started without ``--session-key`` (``mcp-<32 hex>``)."""
    return f"mcp-{new_nonce()}"


class RefusalLog:
    """The log of refused message lines, bounded however many bad lines a client sends.

    The first ``first`` refusals are logged one by one (``refused an MCP message: ...``); after them,
    refusals are counted and at most one summary line per ``interval_s`` seconds (``clock``, monotonic
    seconds) says how many more were answered unlogged; :meth:`close` logs the count still pending when
    the input ends. Every refused line is still answered; only its log line is saved."""

    def __init__(self, first: int = 10, interval_s: float = 60.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.first = first
        self.interval_s = interval_s
        self._clock = clock
        self._logged = 0
        self._unlogged = 0
        self._summary_at: float | None = None

    def refused(self, reason: str, *args: object) -> None:
        """Log one refusal (``reason`` a ``%``-format of ``args``) or count it under the limit."""
        if self._logged < self.first:
            self._logged += 1
            log.warning("refused an MCP message: " + reason, *args)
            if self._logged == self.first:
                log.warning("refused MCP messages beyond these %d are counted, one line per %g s at most",
                            self.first, self.interval_s)
                self._summary_at = self._clock()
            return
        self._unlogged += 1
        now = self._clock()
        if self._summary_at is None or now - self._summary_at >= self.interval_s:
            self._summary()
            self._summary_at = now

    def close(self) -> None:
        """Log the refusals counted since the last summary, if any."""
        self._summary()

    def _summary(self) -> None:
        if self._unlogged:
            log.warning("%d more bad MCP message lines answered (not logged one by one)", self._unlogged)
            self._unlogged = 0


class _StrictLines:
    """The stdin lines the MCP SDK reads, less every line that is not a message it can serve, each of
    which is answered here with a JSON-RPC error as ``meta-memory gateway --stdio`` answers it.

    The SDK sends nothing back for a line it cannot read (the client's request would wait until it times
    out), and decodes a message itself (the last copy of a repeated key wins). So each line is read as
    bytes under the cap and checked before the SDK sees it (blank lines are skipped):

    * a line over ``limit`` bytes is read to its end and dropped unparsed (never more than ``limit`` of it
      held; see ``rpc/lines.py``), logged with its size, and answered ``-32600`` naming the cap, under
      the ``id`` its head names or ``null``;
    * a line that is not JSON (invalid UTF-8, a syntax error, a key named twice: the one strict reader,
      ``strict_json.py``, decides) is logged and answered ``-32700`` under ``null``;
    * JSON that is not a JSON-RPC message the SDK reads (by its own message model) is answered
      ``-32600`` under the object's ``id`` when it is a string or an integer, else ``null``.

    Every refused line is answered; the log of them is bounded (:class:`RefusalLog`: the first few one
    by one, then a count at most once a minute), so a client sending bad lines cannot fill the log.

    The answers go out on the transport's write stream, handed over by :meth:`answer_on` once the
    transport is up.

    At the end of input the lines end only once every request handed to the SDK has been answered (the
    server's answers pass through :meth:`relay`), or cancelled by the client's ``notifications/cancelled``:
    the SDK cancels the calls still running when its input ends, so a client that writes its calls and
    closes stdin would otherwise get no answer to a call whose write was nevertheless committed.

    At most ``max_in_flight`` requests are handed to the SDK unanswered (:data:`MAX_IN_FLIGHT` by
    default): with that many open, no further line is read until one is answered or cancelled. The SDK
    runs every request it reads at once and keeps its answer until the client reads it, so a client that
    writes requests faster than it reads answers (or never reads them) would otherwise grow the server's
    memory without bound; now it is held back by its own pipe, as ``gateway --stdio`` holds it."""

    def __init__(self, source: Any, limit: int, refusals: RefusalLog | None = None,
                 max_in_flight: int | None = None) -> None:
        self._source = source
        self._limit = limit
        self._refusals = refusals or RefusalLog()
        self._replies: Any = None
        self._ready = anyio.Event()
        self._in_flight: set[str | int] = set()
        self._settled = anyio.Event()
        self._settled.set()
        self._max_in_flight = MAX_IN_FLIGHT if max_in_flight is None else max_in_flight
        self._room = anyio.Event()  # set while fewer than max_in_flight requests are open
        self._room.set()

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    def answer_on(self, write_stream: Any) -> None:
        """Write refusals to ``write_stream`` (the transport's stream of messages to the client)."""
        self._replies = write_stream
        self._ready.set()

    async def _answer(self, response: dict[str, Any]) -> None:
        from mcp.shared.message import SessionMessage

        await self._ready.wait()
        await self._replies.send(SessionMessage(types.JSONRPCError.model_validate(response)))

    async def relay(self, answers: Any, write_stream: Any) -> None:
        """Forward the server's messages (``answers``, the receiving end of the stream the SDK writes to)
        to ``write_stream``, noting each request answered; ``write_stream`` is closed when they end."""
        async with answers, write_stream:
            async for message in answers:
                await write_stream.send(_bounded(message))
                if isinstance(message.message, (types.JSONRPCResponse, types.JSONRPCError)):
                    self._settle(message.message.id)

    def _track(self, message: Any) -> None:
        """Note a request the SDK must answer, or a request the client cancelled (never answered)."""
        if not isinstance(message, dict) or not isinstance(message.get("method"), str):
            return
        if "id" in message:
            raw_id = message["id"]
            if isinstance(raw_id, (str, int)) and not isinstance(raw_id, bool):
                self._in_flight.add(raw_id)
                self._settled = anyio.Event()
                if len(self._in_flight) >= self._max_in_flight and self._room.is_set():
                    self._room = anyio.Event()
        elif message["method"] == "notifications/cancelled" and isinstance(message.get("params"), dict):
            self._settle(message["params"].get("requestId"))

    def _settle(self, request_id: object) -> None:
        if isinstance(request_id, (str, int)):
            self._in_flight.discard(request_id)
        if len(self._in_flight) < self._max_in_flight:
            self._room.set()
        if not self._in_flight:
            self._settled.set()

    async def _lines(self) -> AsyncIterator[str]:
        while True:
            await self._room.wait()  # back-pressure: the client's next line waits in its pipe
            read = await anyio.to_thread.run_sync(read_line, self._source, self._limit)
            if read is None:
                self._refusals.close()
                await self._settled.wait()  # the calls still running are answered before the input ends
                return
            if read.oversized:
                self._refusals.refused("a line of %d bytes is over max_request_bytes (%d)", read.oversized, self._limit)
                await self._answer(oversized_line_error(read, self._limit))
                continue
            if not read.data.strip():
                continue
            try:
                message = decode_body(read.data)
            except ParseError as exc:
                self._refusals.refused("%s", exc.message)
                await self._answer(error_response(_mcp_id(exc.request_id), exc))
                continue
            line = read.data.decode("utf-8")
            try:
                types.jsonrpc_message_adapter.validate_json(line, by_name=False)
            except ValueError:
                raw_id = message.get("id") if isinstance(message, dict) else None
                self._refusals.refused("not a JSON-RPC 2.0 message")
                await self._answer(error_response(_mcp_id(raw_id), InvalidRequest("not a JSON-RPC 2.0 message")))
                continue
            self._track(message)
            yield line


def _bounded(message: Any) -> Any:
    """``message`` as the client gets it: the SDK's ``-32601`` answer repeats the method the client sent
    whole (megabytes, bidi overrides and terminal escapes included) as its ``data``; it is answered as
    ``meta-memory gateway --stdio`` answers an unknown method (:class:`~meta_memory.errors.MethodNotFound`:
    at most 64 characters of the name, every hidden or controlling one escaped). Other messages pass as
    they are."""
    from mcp.shared.message import SessionMessage

    answer = message.message
    if not isinstance(answer, types.JSONRPCError) or answer.error.code != types.METHOD_NOT_FOUND:
        return message
    method = answer.error.data if isinstance(answer.error.data, str) else ""
    bounded = types.JSONRPCError.model_validate(error_response(answer.id, MethodNotFound(method)))
    return SessionMessage(bounded, metadata=message.metadata)


def _mcp_id(raw_id: Any) -> str | int | None:
    """``raw_id`` when it is an id MCP holds (a string or an integer), else ``None``: what a refusal of a
    message the SDK never reads is answered under."""
    return raw_id if isinstance(raw_id, (str, int)) and not isinstance(raw_id, bool) else None


@contextmanager
def _claimed_stdin(limit: int) -> Iterator[_StrictLines]:
    """The wire's stdin, read through :class:`_StrictLines` (lines over ``limit`` bytes refused); while
    serving, fd 0 reads the null device (as the SDK's own claim does), so nothing else in the process
    reads the client's messages."""
    try:
        private = os.dup(0)
    except OSError:  # no descriptor 0: read the interpreter's stream in place
        yield _StrictLines(sys.stdin.buffer, limit)
        return
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    # never closed: a worker thread may still block reading it after the transport exits
    wire = os.fdopen(private, "rb", closefd=False)
    try:
        yield _StrictLines(wire, limit)
    finally:
        with suppress(OSError):
            os.dup2(private, 0)


async def _serve(server: Server[Any], max_line_bytes: int) -> None:
    from mcp.server.stdio import stdio_server

    with _claimed_stdin(max_line_bytes) as stdin:
        async with stdio_server(stdin=cast(Any, stdin)) as (read_stream, write_stream):
            stdin.answer_on(write_stream)
            answers_in, answers_out = anyio.create_memory_object_stream[Any](0)
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(stdin.relay, answers_out, write_stream)
                await server.run(read_stream, answers_in, server.create_initialization_options())


def serve_mcp_stdio(bridge: McpMemoryBridge, max_line_bytes: int = DEFAULT_MAX_REQUEST_BYTES) -> None:
    """Note the bridge's session, then serve MCP on stdin/stdout until the client closes stdin and every
    call still running then has been answered.

    ``max_line_bytes`` (the runtime's ``[gateway] max_request_bytes``; 8 MiB by default): a message
    line longer than this is read to its end, never buffered whole, logged and answered with a ``-32600``
    error; a line that is not JSON is answered ``-32700`` (see :class:`_StrictLines`)."""
    bridge.note_session()
    anyio.run(_serve, build_mcp_server(bridge), max_line_bytes)
