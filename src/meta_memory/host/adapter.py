"""A small adapter a host wraps around its model loop (spec README, "The host surface").

:class:`MemoryHost` puts the memory calls at the seams of any agent loop
(LangGraph, the OpenAI Agents SDK, a hand-written loop) over any SDK handle:
embedded (``Meta.builder()...build()``), remote (``Meta.connect(url)``) or
spawned (``Meta.spawn(dir)``). One ``MemoryHost`` follows one agent identity
through its sessions::

    host = MemoryHost(handle)
    host.start_session("agent:researcher", "sess-1")     # meta/session/note
    tools = [my_tools..., host.memory_tool()]             # offer the memory tool
    while True:
        user_text = host.defang(incoming_text)            # meta/turn/defang
        memory = host.before_turn(user_text)              # meta/turn/inject (a separate context body)
        reply = model(system, memory, user_text, tools)
        for call in reply.tool_calls:
            if call.name == "memory":
                out = host.dispatch_memory_tool(call.arguments)   # meta/agent_memory/tool
            else:
                result = run_tool(call)
                host.tool_result(call.name, provenance=catalog_provenance(call.name))  # BEFORE the model sees it
        ...
    host.compacted()   # after the host compacts the session's context
    host.reset()       # a fresh context: taint cleared, injection starts over

The ordering that makes the firewall work is the host's part: classify every
tool result with :meth:`MemoryHost.tool_result` before handing it to the
model, so any memory write the model derives from it is gated as tainted.
"""

from __future__ import annotations

from typing import Any

from .. import strict_json
from ..identity import parse_identity
from ..tool.schema import MEMORY_TOOL_NAME

__all__ = ["MemoryHost", "NoSessionError"]


class NoSessionError(RuntimeError):
    """A per-session call was made before :meth:`MemoryHost.start_session`."""


class MemoryHost:
    """Memory for one agent identity's model loop, over a synchronous SDK handle.

    Args:
        handle: a :class:`~meta_memory.sdk.MetaHandle` (embedded, HTTP or stdio).
        realm: the realm of every call (``None``: the runtime's ``agent_memory.realm``): the session's
            taint, its injection and the ``memory`` tool's writes all live there.
        mob: the mob the agent runs in (enables ``propose_to_mob``; the build index lists its records and
            the tool's ``recall`` searches them, so under ``[access]`` the handle needs ``mob.memory.read``
            on it), or ``None``.

    Errors from the handle (``MetaError`` subclasses) propagate, except in
    :meth:`dispatch_memory_tool`, which always returns a tool result.
    """

    def __init__(self, handle: Any, *, realm: str | None = None, mob: str | None = None) -> None:
        self.handle = handle
        self.realm = realm
        self.mob = mob
        self.identity: str | None = None
        self.session_key: str | None = None
        self.session_tainted = False

    # -- session lifecycle ----------------------------------------------------------------------
    def start_session(self, identity: str, session_key: str) -> None:
        """The agent ``identity`` now speaks from ``session_key`` (``meta/session/note``).

        A session key the identity has not used before starts clean. Raises ``ValueError`` for an
        empty identity (never defaulted)."""
        self.identity = parse_identity(identity)
        state = self.handle.session_note(self.identity, session_key, realm=self.realm)
        self.session_key = session_key
        self.session_tainted = state.tainted

    def reset(self) -> None:
        """A fresh-context boundary (``meta/session/reset``): the session's taint is cleared, its
        injection budget and dedup set start over, and the injection nonce rotates."""
        identity, session_key = self._session()
        self.handle.session_reset(identity, session_key, realm=self.realm)
        # the host goes on speaking from the same key: note it again so taint attributes to it
        state = self.handle.session_note(identity, session_key, realm=self.realm)
        self.session_tainted = state.tainted

    def compacted(self) -> None:
        """The host compacted this session's context (``meta/session/compacted``): records already
        injected may be injected again; taint is kept."""
        identity, session_key = self._session()
        state = self.handle.session_compacted(identity, session_key, realm=self.realm)
        self.session_tainted = state.tainted

    # -- per turn -------------------------------------------------------------------------------
    def tool_result(self, name: str, provenance: dict[str, Any] | None = None, is_error: bool = False,
                    *, server_tool: bool = False) -> bool:
        """Classify one tool result before the model sees it (``meta/turn/tool_result``).

        ``provenance`` is the tool catalog's ``{"kind", "source_id"}`` (``kind = "mcp"`` with the
        server's name attributes an unqualified MCP tool to its server); ``server_tool`` marks
        provider-native server-tool content (always untrusted). Tool errors count like results.
        Returns whether this result is trusted; an untrusted one taints the session for every
        later memory write from it.

        Raises what the handle raises (``InvalidParams`` for a name over 512 bytes or a malformed
        ``provenance``, ``AccessDenied``, ``GatewayUnreachable``): do not hand the result to the model
        then. A refused report still taints the session on the gateway (docs/security.md), and
        :attr:`session_tainted` turns ``True`` on any failure (its taint is no longer known)."""
        identity, session_key = self._session()
        try:
            verdict = self.handle.turn_tool_result(identity, session_key, name, provenance=provenance,
                                                   is_error=is_error, server_tool=server_tool, realm=self.realm)
        except BaseException:
            self.session_tainted = True  # fail closed: the result was not classified
            raise
        self.session_tainted = bool(verdict.session_tainted)
        return bool(verdict.trusted)

    def defang(self, text: str) -> str:
        """Inbound text with forged memory markers neutralised (``meta/turn/defang``)."""
        return self.handle.turn_defang(text).text or ""

    def before_turn(self, query_text: str) -> str | None:
        """The quoted observation block for this turn (``meta/turn/inject``), or ``None`` when
        nothing is injected (see :meth:`last_skip_reason`). Deliver it to the model as its own
        context body, never fused into the user's text."""
        identity, session_key = self._session()
        block = self.handle.turn_inject(identity, query_text=query_text, session_key=session_key,
                                        realm=self.realm, surface="turn")
        self._last_skip: str | None = block.skip_reason
        text: str | None = block.text
        return text

    def build_context(self, query_text: str = "") -> str | None:
        """Build-time memory (``surface = "build"``: protocol, per-scope index, bodies) for a fresh
        context (create, resume, reset), or ``None``."""
        identity, _ = self._session()
        block = self.handle.turn_inject(identity, query_text=query_text, realm=self.realm, surface="build",
                                        mobs=[self.mob] if self.mob else None)
        self._last_skip = block.skip_reason
        text: str | None = block.text
        return text

    @property
    def last_skip_reason(self) -> str | None:
        """Why the last :meth:`before_turn` / :meth:`build_context` injected nothing (``None`` if it did)."""
        return getattr(self, "_last_skip", None)

    def remember(self, title: str, body: str, *, tags: list[str] | None = None) -> Any:
        """The host's own write of content derived from this session (its LLM's summary of the
        conversation, notes): ``meta/agent_memory/remember`` with ``derived_from_sessions`` = this
        session, so the session's taint follows it. Returns the record (``quarantined`` holds the reason
        when this session is tainted, or was tainted when reset). Never write a summary of a session
        through a plain application write: that launders the session's untrusted content."""
        identity, session_key = self._session()
        return self.handle.remember_agent_memory(identity, title=title, body=body, tags=tags, realm=self.realm,
                                                 derived_from_sessions=[session_key])

    # -- the memory tool ------------------------------------------------------------------------
    def memory_tool(self) -> dict[str, Any]:
        """The ``memory`` tool's definition ``{name, description, input_schema}`` to offer the model.
        Raises ``AgentMemoryError`` when the runtime has ``recorder_tool = false``."""
        definition: dict[str, Any] = self.handle.agent_memory_tool_schema().for_model()
        return definition

    def memory_tool_protocol(self) -> str:
        """The recorder protocol text to add to the system prompt alongside the tool."""
        protocol: str = self.handle.agent_memory_tool_schema().protocol
        return protocol

    def dispatch_memory_tool(self, arguments: dict[str, Any] | str) -> dict[str, Any]:
        """Run one ``memory`` tool call the model made (``meta/agent_memory/tool``).

        ``arguments`` is the model's argument object or its JSON text. Returns the tool result
        ``{text, is_error, exclude_from_indexing}``: refusals (unknown fields, secrets, records
        not found, the tool disabled) are ``is_error`` results for the model, never exceptions.
        Keep the result out of any semantic index (``exclude_from_indexing``)."""
        from ..errors import MetaError

        identity, session_key = self._session()
        if isinstance(arguments, str):
            try:
                arguments = strict_json.loads(arguments)
            except strict_json.DuplicateKeyError as exc:
                return _tool_error(f"memory tool arguments must be a JSON object: {exc}")
            except ValueError:
                return _tool_error("memory tool arguments must be a JSON object")
        if not isinstance(arguments, dict):
            return _tool_error("memory tool arguments must be a JSON object")
        try:
            out = self.handle.agent_memory_tool(identity, arguments, session_key=session_key, mob=self.mob,
                                                realm=self.realm)
        except MetaError as exc:
            return _tool_error(exc.message)
        return {"text": out.text, "is_error": out.is_error, "exclude_from_indexing": out.exclude_from_indexing}

    @staticmethod
    def is_memory_tool(name: str) -> bool:
        """True when a model's tool call names the ``memory`` tool."""
        return name == MEMORY_TOOL_NAME

    # -- internals ------------------------------------------------------------------------------
    def _session(self) -> tuple[str, str]:
        if self.identity is None or self.session_key is None:
            raise NoSessionError("call start_session(identity, session_key) first")
        return self.identity, self.session_key


def _tool_error(text: str) -> dict[str, Any]:
    return {"text": text, "is_error": True, "exclude_from_indexing": True}
