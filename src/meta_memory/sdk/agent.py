"""The bound objects: one agent identity (:class:`Agent`) and one of its sessions (:class:`Session`).

``agent = handle.agent("lead:main", realm="default")`` binds the identity and realm every
agent-memory call repeats; ``session = agent.session("s1")`` binds the session key of the host
surface as well. Each method is one gateway call (see :mod:`meta_memory.sdk.methods` for the
params' rules and the errors raised); on an async handle the same methods return awaitables
(:class:`AsyncAgent`, :class:`AsyncSession`).

Application writes (``remember``, ``update``, ``forget``) carry the ``application`` author and are
never quarantined. ``session.tool(arguments)`` is the model's ``memory`` tool: an LLM-authored
write that goes through the firewall (quarantined while the session is tainted); ``session.remember(...)``
is the host's own write of content derived from the session (its LLM's summary): an application write
that the session's taint follows. Every session method, the ``memory`` tool included, names the
agent's realm (``realm=None``: the gateway's ``[agent_memory] realm``): session state is keyed by that
realm, identity and session key, and the tool's writes, held forgets and proposals land in that realm.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any, Literal

from ..session_ref import session_key_secret
from .binding import AsyncSide, SyncSide, bound, renaming, sdk_names
from .methods import Selection, Surface, Tier
from .models import (
    AgentMemoryForgetResult,
    AgentMemoryPage,
    AgentMemoryRecord,
    AgentMemoryRecordMeta,
    AgentMemoryUpdateResult,
    DefangResult,
    EraseResult,
    Harvest,
    InjectionBlock,
    MemoryToolDefinition,
    MemoryToolResult,
    RecalledRecords,
    RecordHistory,
    RememberBatchResult,
    RememberedRecord,
    SessionCompactedResult,
    SessionState,
    TurnToolResult,
)

if TYPE_CHECKING:  # pragma: no cover
    from .handle import MetaHandle

__all__ = ["Agent", "AsyncAgent", "Session", "AsyncSession"]


class _AgentMethods:
    # The bodies are checked against the sync handle; on the async side the handle returns awaitables
    # and so do these methods (``bound`` types them so).
    _handle: "MetaHandle"

    def __init__(self, handle: Any, identity: str, realm: str | None = None) -> None:
        self._handle = handle
        self.identity = identity
        self.realm = realm

    def __repr__(self) -> str:
        return f"{type(self).__name__}(identity={self.identity!r}, realm={self.realm!r})"

    @bound
    def remember(self, title: str, body: str, *, tags: list[str] | None = None,
                 derived_from_sessions: list[str] | None = None, ttl_s: int | None = None,
                 metadata: dict[str, Any] | None = None) -> RememberedRecord:
        """Remember one record (``title`` <= 200 B, ``body`` <= 64 KiB, <= 32 ``tags``); an identical active
        record is returned instead (``created=False``, its own metadata kept). ``derived_from_sessions``: this
        identity's sessions the content was derived from (quarantined, ``quarantined`` set, when one is
        tainted; see :meth:`Session.remember`). ``ttl_s``: seconds until the record expires
        (``expires_at_ms``). ``metadata``: a JSON object kept with the record, filterable on :meth:`recall`
        and :meth:`list` (the rules of :meth:`MetaHandle.remember_agent_memory`; a refusal is
        ``InvalidParams`` naming ``metadata``). ``meta/agent_memory/remember``."""
        return self._handle.remember_agent_memory(self.identity, title=title, body=body, tags=tags, realm=self.realm,
                                                  derived_from_sessions=derived_from_sessions, ttl_s=ttl_s,
                                                  metadata=metadata)

    @bound
    def remember_batch(self, records: "list[dict[str, Any]] | list[tuple[Any, ...]]", *,
                       derived_from_sessions: list[str] | None = None) -> RememberBatchResult:
        """Remember many records in one transaction: ``[(title, body), (title, body, tags), {"title": ...,
        "body": ..., "tags": ..., "ttl_s": ...}, ...]`` (up to 1,024; more are refused before sending, never split);
        a result per record, in order, refusals per
        record. ``meta/agent_memory/remember_batch``."""
        return self._handle.remember_agent_memory_batch(self.identity, records, realm=self.realm,
                                                        derived_from_sessions=derived_from_sessions)

    @bound
    @sdk_names(query_text="query", query_terms="terms", max_entries="k")
    def recall(
        self, query: str | None = None, k: int = 8, *, selection: Selection | None = None,
        terms: list[str] | None = None, filter: dict[str, Any] | None = None,  # noqa: A002 - the RPC field's name
    ) -> RecalledRecords:
        """The ``k`` (1..64) records that best match ``query`` (or ``terms``), best first. Without a query
        (and no ``selection``) every record is eligible (``selection="always"``). ``filter``: only records
        whose metadata passes it (``{"project": "apollo", "n": {"$gte": 3}}``; the operators of
        :meth:`MetaHandle.recall_agent_memory`). ``meta/agent_memory/recall``; its refusals name ``query``,
        ``terms``, ``k`` and ``filter``, not the wire fields they are sent as."""
        if selection is None and query is None and terms is None:
            selection = "always"
        return self._handle.recall_agent_memory(self.identity, realm=self.realm, selection=selection,
                                                query_text=query, query_terms=terms, max_entries=k, filter=filter)

    @bound
    def update(self, memory_id: str, title: str | None = None, body: str | None = None, *,
               tags: list[str] | None = None, ttl_s: int | None = None,
               clear_expiry: bool = False, metadata: dict[str, Any] | None = None) -> AgentMemoryUpdateResult:
        """Supersede ``memory_id`` with a new version; an omitted ``title``, ``body``, ``tags`` or ``metadata``
        keeps the prior's value (at least one of them, ``ttl_s`` or ``clear_expiry`` is required; a
        ``metadata`` object replaces the prior's whole, ``{}`` clears it). ``ttl_s`` gives the version a new
        expiry from now, ``clear_expiry=True`` none; neither keeps the prior's. The result names the new
        ``memory_id`` and the one it ``supersedes``; an update that changes nothing writes nothing and
        answers the current version (``supersedes`` ``None``). ``meta/agent_memory/update``."""
        return self._handle.update_agent_memory(self.identity, memory_id, title=title, body=body, tags=tags,
                                                realm=self.realm, ttl_s=ttl_s, clear_expiry=clear_expiry,
                                                metadata=metadata)

    @bound
    def forget(self, memory_id: str) -> AgentMemoryForgetResult:
        """Tombstone ``memory_id`` (out of recall and injection at once). ``meta/agent_memory/forget``."""
        return self._handle.forget_agent_memory(self.identity, memory_id, realm=self.realm)

    @bound
    def history(self, memory_id: str) -> RecordHistory:
        """The versions of ``memory_id`` (any version of the record), oldest first, each with author, trust
        tier, status, times and the reason it changed (quarantined content withheld, erased versions
        shown only as erased). ``meta/agent_memory/history``."""
        return self._handle.history_agent_memory(self.identity, memory_id, realm=self.realm)

    @bound
    def manifest(self, *, tier: Tier | None = None, k: int | None = None) -> list[AgentMemoryRecordMeta]:
        """Body-free metadata of active records: the working set (up to ``k`` ranked records, then the most
        recently updated, at most ``2 * k`` in all) or the ``full`` list. ``meta/agent_memory/manifest``."""
        return self._handle.manifest_agent_memory(self.identity, realm=self.realm, tier=tier, k=k)

    @bound
    def erase(self, memory_id: str, *, dry_run: bool = False, reason: str | None = None) -> EraseResult:
        """Erase ``memory_id`` and its content closure for good (``dry_run`` only counts).
        ``meta/agent_memory/erase``."""
        return self._handle.erase_agent_memory(self.identity, memory_id, realm=self.realm, dry_run=dry_run,
                                               reason=reason)

    @bound
    def erase_all(self, *, dry_run: bool = False, reason: str | None = None) -> EraseResult:
        """Erase every record of this identity in this realm. ``meta/agent_memory/erase_identity``."""
        return self._handle.erase_identity_agent_memory(self.identity, realm=self.realm, dry_run=dry_run,
                                                        reason=reason)

    @bound
    def tool_schema(self) -> MemoryToolDefinition:
        """The ``memory`` tool's definition to offer the model. ``meta/agent_memory/tool_schema``."""
        return self._handle.agent_memory_tool_schema()

    # ``list`` last: after it, ``list`` in this class body names the method, not the builtin.
    @bound
    def list(self, *, tags: list[str] | None = None, limit: int | None = None, cursor: str | None = None,
             filter: dict[str, Any] | None = None) -> AgentMemoryPage:  # noqa: A002 - the RPC field's name
        """One page of active records holding every tag in ``tags`` and whose metadata passes ``filter`` (as
        :meth:`recall`'s), newest updated first (``limit`` 1..500, default 100; pass ``next_cursor`` back as
        ``cursor``, with the same ``tags`` and ``filter``). ``meta/agent_memory/list``."""
        return self._handle.list_agent_memory(self.identity, realm=self.realm, tags=tags, limit=limit, cursor=cursor,
                                              filter=filter)


class Agent(_AgentMethods, SyncSide):
    """One identity on a sync handle: ``remember``, ``remember_batch``, ``recall``, ``update``, ``forget``, ``list``,
    ``history``, ``manifest``, ``erase``, ``erase_all``, ``tool_schema``, ``iter_records`` and ``session(key)``."""

    def session(self, session_key: str) -> "Session":
        """The host surface for one session of this agent (nothing is sent until a method is called)."""
        return Session(self, session_key)

    def iter_records(self, *, tags: "list[str] | None" = None, page_size: int = 100,
                     filter: "dict[str, Any] | None" = None) -> Iterator[AgentMemoryRecord]:  # noqa: A002
        """Every active record holding all ``tags`` and passing ``filter``, newest updated first, fetched
        ``page_size`` (1..500) at a time through :meth:`list` (a refusal of the page size names ``page_size``)."""
        cursor: str | None = None
        while True:
            with renaming({"limit": "page_size"}):
                page = self.list(tags=tags, limit=page_size, cursor=cursor, filter=filter)
            yield from page.records
            if page.next_cursor is None:
                return
            cursor = page.next_cursor


class AsyncAgent(_AgentMethods, AsyncSide):
    """One identity on an async handle: the methods of :class:`Agent`, returning awaitables."""

    def session(self, session_key: str) -> "AsyncSession":
        """The host surface for one session of this agent."""
        return AsyncSession(self, session_key)

    async def iter_records(
        self, *, tags: "list[str] | None" = None, page_size: int = 100,
        filter: "dict[str, Any] | None" = None,  # noqa: A002 - the RPC field's name
    ) -> AsyncIterator[AgentMemoryRecord]:
        """Every active record holding all ``tags`` and passing ``filter``, newest updated first (``async for``)."""
        cursor: str | None = None
        while True:
            with renaming({"limit": "page_size"}):
                page = await self.list(tags=tags, limit=page_size, cursor=cursor, filter=filter)
            for record in page.records:
                yield record
            if page.next_cursor is None:
                return
            cursor = page.next_cursor


class _SessionMethods:
    _handle: "MetaHandle"

    def __init__(self, agent: _AgentMethods, session_key: str) -> None:
        self.agent = agent
        self._handle = agent._handle
        self.session_key = session_key

    @property
    def identity(self) -> str:
        """The agent's identity."""
        return self.agent.identity

    @property
    def realm(self) -> str | None:
        """The agent's realm (``None``: the gateway's ``[agent_memory] realm``)."""
        return self.agent.realm

    def __repr__(self) -> str:
        # a key holding a credential is never recorded by the gateway, nor shown in a repr (a log line)
        secret = session_key_secret(self.session_key) if isinstance(self.session_key, str) else None
        key = repr(self.session_key) if secret is None else f"<holds a secret ({secret})>"
        return f"{type(self).__name__}(identity={self.identity!r}, realm={self.realm!r}, session_key={key})"

    @bound
    def note(self, *, tool_results: Literal["reported", "unreported"] | None = None) -> SessionState:
        """The agent now speaks from this session (a new key starts clean; ``tool_results="unreported"``:
        its tool results never reach :meth:`tool_result`, so it counts as tainted). ``meta/session/note``."""
        return self._handle.session_note(self.identity, self.session_key, realm=self.agent.realm,
                                         tool_results=tool_results)

    @bound
    def tool_result(
        self, tool_name: str, *, provenance: dict[str, Any] | None = None, is_error: bool = False,
        server_tool: bool = False,
    ) -> TurnToolResult:
        """Classify a tool result BEFORE the model sees it; an untrusted one taints this session.
        ``meta/turn/tool_result``."""
        return self._handle.turn_tool_result(self.identity, self.session_key, tool_name, provenance=provenance,
                                             is_error=is_error, server_tool=server_tool, realm=self.agent.realm)

    @bound
    @sdk_names(query_text="query")
    def inject(
        self, query: str = "", *, surface: Surface = "turn", mobs: list[str] | None = None,
        operator: str | None = None,
    ) -> InjectionBlock:
        """The observation block for this turn (``text``) or a typed ``skip_reason``. ``meta/turn/inject``;
        its refusals name ``query``, not the wire field ``query_text``."""
        return self._handle.turn_inject(self.identity, query_text=query, session_key=self.session_key,
                                        realm=self.agent.realm, surface=surface, mobs=mobs, operator=operator)

    @bound
    def tool(self, arguments: dict[str, Any] | str, *, mob: str | None = None) -> MemoryToolResult:
        """Dispatch the model's ``memory`` tool call in this session's realm (gated by the firewall on
        this session's taint there; refusals are ``is_error`` results). ``meta/agent_memory/tool``."""
        return self._handle.agent_memory_tool(self.identity, arguments, session_key=self.session_key, mob=mob,
                                              realm=self.agent.realm)

    @bound
    def defang(self, text: str | None = None, *, blocks: list[Any] | None = None) -> DefangResult:
        """Neutralise forged memory markers in inbound content. ``meta/turn/defang``."""
        return self._handle.turn_defang(text, blocks=blocks)

    @bound
    def reset(self) -> SessionState:
        """A fresh-context boundary: clears taint, budget and dedup; new nonce. ``meta/session/reset``."""
        return self._handle.session_reset(self.identity, self.session_key, realm=self.agent.realm)

    @bound
    def compacted(self) -> SessionCompactedResult:
        """The context was compacted: taint kept, dedup and budget start over. ``meta/session/compacted``."""
        return self._handle.session_compacted(self.identity, self.session_key, realm=self.agent.realm)

    @bound
    def remember(self, title: str, body: str, *, tags: list[str] | None = None) -> RememberedRecord:
        """The host's own write of content derived from this session (its LLM's summary, notes): an
        application write that names this session (``derived_from_sessions``), so the session's taint
        follows it. Lands quarantined (``quarantined`` holds the reason) when this session is tainted or
        was tainted when a reset closed it; active otherwise. Needs ``agent.session.manage`` on the
        identity as well as ``agent.memory.write``. ``meta/agent_memory/remember``."""
        return self._handle.remember_agent_memory(self.identity, title=title, body=body, tags=tags,
                                                  realm=self.agent.realm, derived_from_sessions=[self.session_key])

    @bound
    def remember_batch(self, records: "list[dict[str, Any]] | list[tuple[Any, ...]]") -> RememberBatchResult:
        """:meth:`remember` for many records in one transaction (one verdict for all of them).
        ``meta/agent_memory/remember_batch``."""
        return self._handle.remember_agent_memory_batch(self.identity, records, realm=self.agent.realm,
                                                        derived_from_sessions=[self.session_key])

    @bound
    def retire(self, cause: str) -> Harvest:
        """The session ends: record the exit-interview harvest. ``meta/session/retire``."""
        return self._handle.session_retire(self.identity, cause=cause, session_key=self.session_key,
                                           realm=self.agent.realm)


class Session(_SessionMethods, SyncSide):
    """One session of an :class:`Agent`: ``note``, ``tool_result``, ``inject``, ``tool``, ``defang``,
    ``reset``, ``compacted``, ``remember``, ``remember_batch``, ``retire``."""


class AsyncSession(_SessionMethods, AsyncSide):
    """One session of an :class:`AsyncAgent`: the methods of :class:`Session`, returning awaitables."""
