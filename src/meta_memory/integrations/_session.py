"""What the framework integrations share: calling a bound session from async code, and reading the
turn's text out of chat messages. The session is noted (``meta/session/note``) before its first
other call, so the agent speaks from it as the host surface expects.

Every integration works on the SDK's bound session (``meta.agent(identity, realm=...).session(key)``),
sync or async, embedded or remote. :class:`SessionCalls` runs a sync session's calls on a worker
thread (a sync handle is safe to share between threads), so an event loop never blocks on the
gateway, and awaits an async session's calls directly. :class:`ReportPass` is how a backstop reports what
one model call is about to read: each untrusted source once a pass, however many of its outputs it holds.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Mapping
from typing import Any

from ..sdk.agent import AsyncSession, Session
from ..sdk.models import InjectionBlock, MemoryToolResult, RememberedRecord, SessionState, TurnToolResult

__all__ = ["ReportPass", "SessionCalls", "SourceKey", "check_session", "message_text", "last_user_text", "source_key"]


def check_session(session: object) -> Session | AsyncSession:
    """``session`` when it is a bound session (``meta.agent(...).session(key)``); ``TypeError`` otherwise."""
    if not isinstance(session, (Session, AsyncSession)):
        raise TypeError("expected a bound session: meta.agent(identity, realm=...).session(session_key), "
                        f"got {type(session).__name__}")
    return session


class SessionCalls:
    """The host-surface calls of one bound session, awaitable whatever the handle.

    Errors are the handle's (``MetaError`` subclasses, ``GatewayUnreachable``): an integration lets
    them propagate where a swallowed error would let a tool result reach the model unclassified."""

    def __init__(self, session: Session | AsyncSession) -> None:
        self.session = check_session(session)
        self.identity = session.identity
        self.session_key = session.session_key
        self.noted = False

    async def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        fn = getattr(self.session, method)
        if isinstance(self.session, AsyncSession):
            return await fn(*args, **kwargs)
        return await asyncio.to_thread(fn, *args, **kwargs)

    async def note(self) -> SessionState:
        """``meta/session/note``: the agent speaks from this session."""
        out: SessionState = await self._call("note")
        self.noted = True
        return out

    async def _noted(self) -> None:
        """Note the session before its first other call (the host surface's order)."""
        if not self.noted:
            await self.note()

    async def tool_result(self, tool_name: str, *, provenance: dict[str, Any] | None = None,
                          is_error: bool = False, server_tool: bool = False) -> TurnToolResult:
        """``meta/turn/tool_result``: classify one tool result before the model sees it."""
        await self._noted()
        out: TurnToolResult = await self._call("tool_result", tool_name, provenance=provenance, is_error=is_error,
                                               server_tool=server_tool)
        return out

    async def inject(self, query: str) -> InjectionBlock:
        """``meta/turn/inject`` (surface ``turn``) for ``query``."""
        await self._noted()
        out: InjectionBlock = await self._call("inject", query)
        return out

    async def tool(self, arguments: dict[str, Any] | str) -> MemoryToolResult:
        """``meta/agent_memory/tool``: the model's ``memory`` tool call (gated by the firewall)."""
        await self._noted()
        out: MemoryToolResult = await self._call("tool", arguments)
        return out

    async def remember_derived(self, title: str, body: str, *, tags: list[str] | None = None) -> RememberedRecord:
        """``meta/agent_memory/remember`` with ``derived_from_sessions`` = this session: content derived
        from this session, quarantined when the session is tainted or was tainted when a reset closed it."""
        await self._noted()
        out: RememberedRecord = await self._call("remember", title, body, tags=tags)
        return out


#: A tool result's source as the firewall judges it: (tool name, provenance as canonical JSON or ``""``, server_tool).
SourceKey = tuple[str, str, bool]


def source_key(tool_name: str, provenance: Mapping[str, Any] | None, server_tool: bool) -> SourceKey:
    """The source of a tool result as a ``meta/turn/tool_result`` verdict reads it: the reported name, the typed
    provenance and ``server_tool`` (``firewall/classify.py``). Besides these the verdict reads only the
    gateway's configuration and, for agent provenance, that agent's session taint, which one pass takes as
    unchanged. ``is_error`` is not in it: an error taints exactly as a result does (``Firewall.tool_result``).
    Names and provenances are kept as sent (no folding): two spellings are two sources, each reported."""
    prov = "" if provenance is None else json.dumps(dict(provenance), sort_keys=True, default=str)
    return (tool_name, prov, server_tool)


class ReportPass:
    """The reports a backstop makes in one pass over what a model is about to read (one model call, one
    memory read, one ``memory`` tool call): ``meta/turn/tool_result`` for each tool result, except that a
    source (:func:`source_key`) found untrusted earlier in the pass is not reported again. One report of it
    taints the session as many would (the first taint of a session wins), so a history holding 500 outputs of
    one untrusted tool costs one call per pass instead of 500. A new pass reports it again: a
    ``meta/session/reset`` between two model calls does not launder a page the history still holds. A trusted
    verdict is not kept here (the integrations remember trusted results by call id). Errors are
    :meth:`SessionCalls.tool_result`'s, and nothing is kept of a failed report."""

    def __init__(self, calls: SessionCalls) -> None:
        self.calls = calls
        self._untrusted: dict[SourceKey, TurnToolResult] = {}

    async def tool_result(self, tool_name: str, *, provenance: dict[str, Any] | None = None,
                          server_tool: bool = False) -> TurnToolResult:
        """The verdict on one tool result of ``tool_name``: reported unless its source was found untrusted
        earlier in this pass (that verdict is returned again)."""
        key = source_key(tool_name, provenance, server_tool)
        found = self._untrusted.get(key)
        if found is not None:
            return found
        verdict = await self.calls.tool_result(tool_name, provenance=provenance, server_tool=server_tool)
        if not verdict.trusted:
            self._untrusted[key] = verdict
        return verdict


def message_text(content: Any) -> str:
    """The text of a chat message's content: a string, or the text parts of a list of parts
    (``{"type": "input_text" | "text" | "output_text", "text": ...}`` or objects with ``.text``)."""
    if isinstance(content, str):
        return content
    if isinstance(content, Iterable) and not isinstance(content, (bytes, Mapping)):
        texts: list[str] = []
        for part in content:
            text = part.get("text") if isinstance(part, Mapping) else getattr(part, "text", None)
            if isinstance(text, str):
                texts.append(text)
        return "\n".join(texts)
    return ""


def last_user_text(items: Iterable[Any]) -> str:
    """The text of the last ``role: "user"`` message among ``items`` (dicts or objects), or ``""``."""
    text = ""
    for item in items:
        role = item.get("role") if isinstance(item, Mapping) else getattr(item, "role", None)
        if role == "user":
            content = item.get("content") if isinstance(item, Mapping) else getattr(item, "content", None)
            text = message_text(content)
    return text
