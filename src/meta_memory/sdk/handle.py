"""The handle: one interface over every mode (embedded or remote; sync or async).

Method bodies are written once in :class:`_HandleMethods`; each builds the
JSON-RPC params of the spec's method and names the result parser. The sync
handles return values; the async handles return awaitables of the same
values. Every method raises the typed :class:`~meta_memory.errors.MetaError`
the gateway gave (e.g. ``InvalidParams`` -32602, ``MemoryBackendUnavailable``
-32010, ``AgentMemoryError`` -32040).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from ..ledger.model import MemoryIndexResult, MemoryQueryResult, MemoryStoreInfo
from .models import (
    AgentMemoryForgetResult,
    AgentMemoryRecord,
    AgentMemoryPage,
    AgentMemoryRecordMeta,
    AgentMemoryUpdateResult,
    DefangResult,
    InjectionBlock,
    MemoryToolDefinition,
    MemoryToolResult,
    RememberBatchResult,
    SessionCompactedResult,
    SessionState,
    TurnToolResult,
)

__all__ = ["MetaHandle", "AsyncMetaHandle"]


def _drop_none(**params: Any) -> dict[str, Any]:
    return {k: v for k, v in params.items() if v is not None}


def _identity(value: Any) -> Any:
    return value


def _vector_backlog(status: Any) -> dict[str, Any]:
    report = ((status or {}).get("agent_memory") or {}).get("vector_backlog")
    if not isinstance(report, dict):
        raise ValueError("meta/status has no agent_memory.vector_backlog: agent memory is off on this gateway")
    return report


def _backlog_timeout(report: dict[str, Any], timeout_s: float) -> TimeoutError:
    realms = ", ".join(f"{r['realm']}: {r['pending']}" for r in report.get("realms") or [] if r.get("pending"))
    return TimeoutError(f"{report.get('pending')} record(s) still wait for a vector after {timeout_s:g} s ({realms})")


class _HandleMethods:
    """Shared method bodies; subclasses define ``_invoke(method, params, parse)``."""

    def _invoke(self, method: str, params: dict[str, Any] | None, parse: Callable[[Any], Any]) -> Any:  # pragma: no cover
        raise NotImplementedError

    # -- generic -----------------------------------------------------------------------------
    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Call any method of the table by name; returns the raw JSON result."""
        return self._invoke(method, params, _identity)

    def status(self) -> Any:
        """``meta/status``: version, ledger backend, ``storage.slots``."""
        return self._invoke("meta/status", None, _identity)

    def storage_doctor(self) -> Any:
        """``meta/storage/doctor``: slots, twins, predecessor files, leftover stages, with fixes."""
        return self._invoke("meta/storage/doctor", None, _identity)

    # -- assertion ledger (seed: Indexing, Querying, Memory store info) ---------------------------
    def memory_index(
        self,
        entity: str,
        topic: str,
        store: str | None = None,
        *,
        fact: str | None = None,
        metadata: dict[str, Any] | None = None,
        conflict: bool | None = None,
        conflict_reason: str | None = None,
    ) -> MemoryIndexResult:
        """Index an assertion (``fact``) and/or a conflict signal (``conflict=True``).

        Returns :class:`MemoryIndexResult` (canonical entity/topic/store, ``assertion_id`` or
        ``None``, ``conflict_active``). Raises ``InvalidParams`` (e.g. ``fact is required unless
        conflict=true``) or ``MemoryBackendUnavailable`` when the persist or health check fails
        (the write is rolled back).
        """
        params = _drop_none(entity=entity, topic=topic, store=store, fact=fact, metadata=metadata,
                            conflict=conflict, conflict_reason=conflict_reason)
        return self._invoke("meta/memory/index", params, MemoryIndexResult.model_validate)

    def memory_query(self, query: str | dict[str, Any] | None = None, **filters: Any) -> MemoryQueryResult:
        """Query assertions and conflict signals: exact ``entity``/``topic``/``store`` filters
        (trimmed, ASCII-lowercased) and an optional case-insensitive substring ``query``.

        ``query`` may be the substring (str), a dict of filters, or ``None``.
        Raises ``TypeError`` for another type, ``InvalidParams`` for bad filters.
        """
        if isinstance(query, str):
            params = {"query": query, **filters}
        elif isinstance(query, dict):
            params = {**query, **filters}
        elif query is None:
            params = dict(filters)
        else:
            raise TypeError("memory_query query must be a string, dict, or None")
        return self._invoke("meta/memory/query", params, MemoryQueryResult.model_validate)

    def memory_stores(self) -> list[MemoryStoreInfo]:
        """One :class:`MemoryStoreInfo` per supported store, in the fixed order."""
        return self._invoke(
            "meta/memory/stores", None, lambda r: [MemoryStoreInfo.model_validate(s) for s in r["stores"]]
        )

    # -- agent memory (seed: Agent memory injection) -------------------------------------------
    def remember_agent_memory(
        self, identity: str, *, title: str, body: str, tags: list[str] | None = None, realm: str | None = None
    ) -> AgentMemoryRecord:
        """Write one identity-scoped record (application author; never quarantined).

        Exact-content dedup: an active record with the same content hash is returned
        instead of writing. Raises ``InvalidParams`` (field caps) or ``AgentMemoryError``
        (secret detected, ...)."""
        params = _drop_none(identity=identity, title=title, body=body, tags=tags, realm=realm)
        return self._invoke("meta/agent_memory/remember", params, AgentMemoryRecord.model_validate)

    def remember_agent_memory_batch(
        self, identity: str, records: list[dict[str, Any]] | list[tuple[Any, ...]], *, realm: str | None = None
    ) -> RememberBatchResult:
        """Write many identity-scoped records in one transaction (``meta/agent_memory/remember_batch``).

        ``records``: up to 1,024 items, 4 MiB of text together, each ``{"title", "body", "tags"?}`` or a
        ``(title, body)`` / ``(title, body, tags)`` tuple. Returns a result per record, in order: its
        ``memory_id`` and ``created`` (``False`` for exact-content duplicates, of a stored record or of an
        earlier item), or the ``error`` refusing that record alone (nothing of it was written). Raises
        ``InvalidParams`` for a malformed call (nothing written) and ``AccessDenied`` without
        ``agent.memory.write`` on the identity."""
        items = [r if isinstance(r, dict) else _drop_none(title=r[0], body=r[1], tags=r[2] if len(r) > 2 else None)
                 for r in records]
        params = _drop_none(identity=identity, records=items, realm=realm)
        return self._invoke("meta/agent_memory/remember_batch", params, RememberBatchResult.model_validate)

    def recall_agent_memory(
        self,
        identity: str,
        *,
        realm: str | None = None,
        selection: str | None = None,
        query_text: str | None = None,
        query_terms: list[str] | None = None,
        max_entries: int | None = None,
    ) -> list[AgentMemoryRecord]:
        """Recall active records of ``identity`` (``selection`` contextual by default; 1..64 entries)."""
        params = _drop_none(identity=identity, realm=realm, selection=selection, query_text=query_text,
                            query_terms=query_terms, max_entries=max_entries)
        return self._invoke(
            "meta/agent_memory/recall", params, lambda r: [AgentMemoryRecord.model_validate(x) for x in r["records"]]
        )

    def forget_agent_memory(self, identity: str, memory_id: str, *, realm: str | None = None) -> AgentMemoryForgetResult:
        """Tombstone one record: it leaves every recall and injection path at once."""
        params = _drop_none(identity=identity, memory_id=memory_id, realm=realm)
        return self._invoke("meta/agent_memory/forget", params, AgentMemoryForgetResult.model_validate)

    def update_agent_memory(
        self, identity: str, memory_id: str, *, title: str, body: str, tags: list[str] | None = None,
        realm: str | None = None,
    ) -> AgentMemoryUpdateResult:
        """Supersede ``memory_id`` with a new version (same identity scope)."""
        params = _drop_none(identity=identity, memory_id=memory_id, title=title, body=body, tags=tags, realm=realm)
        return self._invoke("meta/agent_memory/update", params, AgentMemoryUpdateResult.model_validate)

    def manifest_agent_memory(
        self, identity: str, *, realm: str | None = None, tier: str | None = None, k: int | None = None
    ) -> list[AgentMemoryRecordMeta]:
        """Metadata of active records (``tier`` ``working_set`` (default, ``k`` 1..512) or ``full``)."""
        params = _drop_none(identity=identity, realm=realm, tier=tier, k=k)
        return self._invoke(
            "meta/agent_memory/manifest", params, lambda r: [AgentMemoryRecordMeta.model_validate(x) for x in r["records"]]
        )

    def erase_agent_memory(
        self, identity: str, memory_id: str, *, realm: str | None = None, dry_run: bool = False,
        reason: str | None = None,
    ) -> dict[str, Any]:
        """Erase ``memory_id`` and its content closure (every version, every derived copy) for good:
        ``{dry_run, erased_at_ms, count, scopes, records}``. Needs ``agent.memory.erase``; refused
        (``review_pending``) while any of it awaits quarantine review."""
        params = _drop_none(identity=identity, memory_id=memory_id, realm=realm, reason=reason)
        params["dry_run"] = dry_run
        return self._invoke("meta/agent_memory/erase", params, _identity)

    def erase_identity_agent_memory(
        self, identity: str, *, realm: str | None = None, dry_run: bool = False, reason: str | None = None,
    ) -> dict[str, Any]:
        """Erase every record of ``identity`` (and their closures); ``dry_run=True`` only counts."""
        params = _drop_none(identity=identity, realm=realm, reason=reason)
        params["dry_run"] = dry_run
        return self._invoke("meta/agent_memory/erase_identity", params, _identity)

    def list_agent_memory(
        self, identity: str, *, realm: str | None = None, tags: list[str] | None = None, limit: int | None = None,
        cursor: str | None = None,
    ) -> AgentMemoryPage:
        """One page of ``identity``'s active records holding every tag in ``tags``, newest updated first
        (``limit`` 1..500, default 100); pass ``next_cursor`` back as ``cursor`` for the next page."""
        params = _drop_none(identity=identity, realm=realm, tags=tags, limit=limit, cursor=cursor)
        return self._invoke("meta/agent_memory/list", params, AgentMemoryPage.model_validate)

    # -- the host surface (spec README, "The host surface") ---------------------------------------
    def session_note(
        self, identity: str, session_key: str, *, realm: str | None = None, tool_results: str | None = None
    ) -> SessionState:
        """``meta/session/note``: ``identity`` now speaks from ``session_key`` (a new key starts clean).

        ``tool_results="unreported"`` declares that this session's tool results are never reported
        (``turn_tool_result``): the session is then tainted from the start (fail closed)."""
        params = _drop_none(identity=identity, session_key=session_key, realm=realm, tool_results=tool_results)
        return self._invoke("meta/session/note", params, SessionState.model_validate)

    def session_reset(self, identity: str, session_key: str | None = None, *, realm: str | None = None) -> SessionState:
        """``meta/session/reset``: a fresh-context boundary of ``identity``'s session; clears its taint,
        the session's injection budget and dedup set, and rotates the injection nonce."""
        params = _drop_none(identity=identity, session_key=session_key, realm=realm)
        return self._invoke("meta/session/reset", params, SessionState.model_validate)

    def session_compacted(self, identity: str, session_key: str, *, realm: str | None = None) -> SessionCompactedResult:
        """``meta/session/compacted``: ``identity``'s session was compacted; taint is kept, injection
        dedup and byte budget start over."""
        params = _drop_none(identity=identity, session_key=session_key, realm=realm)
        return self._invoke("meta/session/compacted", params, SessionCompactedResult.model_validate)

    def turn_tool_result(
        self, identity: str, session_key: str, tool_name: str, *, provenance: dict[str, Any] | None = None,
        is_error: bool = False, server_tool: bool = False, realm: str | None = None,
    ) -> TurnToolResult:
        """``meta/turn/tool_result``: classify one tool result BEFORE the model sees it.

        ``provenance`` is the tool catalog's ``{kind, source_id}`` (``kind = "mcp"`` names the
        server in ``source_id``); ``server_tool`` marks provider-native server-tool content.
        An untrusted result taints the session before this call returns."""
        params = _drop_none(identity=identity, session_key=session_key, tool_name=tool_name, provenance=provenance,
                            realm=realm)
        params["is_error"] = is_error
        params["server_tool"] = server_tool
        return self._invoke("meta/turn/tool_result", params, TurnToolResult.model_validate)

    def turn_inject(
        self, identity: str, *, query_text: str = "", session_key: str | None = None, realm: str | None = None,
        surface: str = "turn", mobs: list[str] | None = None, operator: str | None = None,
    ) -> InjectionBlock:
        """``meta/turn/inject``: the quoted observation block for this turn (``surface="turn"``) or
        build (``"build"``), or a typed ``skip_reason``. Raises ``AgentMemoryError`` only under
        ``recall_failure_policy = "fail"``."""
        params = _drop_none(identity=identity, query_text=query_text, session_key=session_key, realm=realm,
                            surface=surface, mobs=mobs, operator=operator)
        return self._invoke("meta/turn/inject", params, InjectionBlock.model_validate)

    def turn_defang(self, text: str | None = None, *, blocks: list[Any] | None = None) -> DefangResult:
        """``meta/turn/defang``: neutralise forged memory markers in inbound ``text`` (or ``blocks``)."""
        return self._invoke("meta/turn/defang", _drop_none(text=text, blocks=blocks), DefangResult.model_validate)

    def agent_memory_tool(
        self, identity: str, arguments: dict[str, Any] | str, *, session_key: str | None = None,
        mob: str | None = None,
    ) -> MemoryToolResult:
        """``meta/agent_memory/tool``: dispatch one ``memory`` tool call (an LLM-authored write,
        gated by the firewall). Refusals come back as ``is_error`` results, not exceptions;
        ``arguments`` that are not a JSON object raise ``InvalidParams`` (field ``arguments``)."""
        if isinstance(arguments, str):  # the model's JSON text; anything but an object is refused (-32602)
            import json

            try:
                arguments = json.loads(arguments)
            except ValueError:
                pass
        params = _drop_none(identity=identity, session_key=session_key, mob=mob)
        params["arguments"] = arguments
        return self._invoke("meta/agent_memory/tool", params, MemoryToolResult.model_validate)

    def agent_memory_tool_schema(self) -> MemoryToolDefinition:
        """``meta/agent_memory/tool_schema``: the ``memory`` tool's definition for a model.
        Raises ``AgentMemoryError`` (reason ``unsupported``) when ``recorder_tool = false``."""
        return self._invoke("meta/agent_memory/tool_schema", None, MemoryToolDefinition.model_validate)


class MetaHandle(_HandleMethods):
    """Synchronous handle over a transport (embedded, HTTP or stdio). Use as a context manager."""

    def __init__(self, transport: Any) -> None:
        self._transport = transport

    def _invoke(self, method: str, params: dict[str, Any] | None, parse: Callable[[Any], Any]) -> Any:
        return parse(self._transport.call(method, params))

    @property
    def runtime(self) -> Any:
        """The in-process runtime (embedded mode only; ``None`` when remote)."""
        gateway = getattr(self._transport, "gateway", None)
        return gateway.runtime if gateway is not None else None

    def wait_for_vectors(self, timeout_s: float = 60.0, poll_s: float = 0.25) -> dict[str, Any]:
        """Poll ``meta/status`` until hybrid ranking is complete: no active record waits for a vector.

        Returns the final ``agent_memory.vector_backlog`` report (``{"provider", "pending", "realms",
        "complete", ...}``; at once for lexical recall, whose ``pending`` is always 0). ``timeout_s``
        and ``poll_s`` are seconds. Raises ``TimeoutError`` naming the records still pending when
        ``timeout_s`` passes, ``ValueError`` for a gateway without agent memory, and the typed
        ``MetaError`` the gateway gave (e.g. ``PermissionDenied`` without ``operator.status``).
        """
        deadline = time.monotonic() + max(0.0, timeout_s)
        while True:
            report = _vector_backlog(self._invoke("meta/status", None, _identity))
            if report.get("complete"):
                return report
            if time.monotonic() >= deadline:
                raise _backlog_timeout(report, timeout_s)
            time.sleep(max(0.01, poll_s))

    def close(self) -> None:
        self._transport.close()

    def __enter__(self) -> "MetaHandle":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncMetaHandle(_HandleMethods):
    """Asynchronous handle: every method returns an awaitable. Use with ``async with``."""

    def __init__(self, transport: Any) -> None:
        self._transport = transport

    def _invoke(self, method: str, params: dict[str, Any] | None, parse: Callable[[Any], Any]) -> Any:
        async def run() -> Any:
            if hasattr(self._transport, "acall"):
                raw = await self._transport.acall(method, params)
            else:
                raw = await self._transport.call(method, params)
            return parse(raw)

        return run()

    @property
    def runtime(self) -> Any:
        gateway = getattr(self._transport, "gateway", None)
        return gateway.runtime if gateway is not None else None

    async def wait_for_vectors(self, timeout_s: float = 60.0, poll_s: float = 0.25) -> dict[str, Any]:
        """Poll ``meta/status`` (without blocking the loop) until hybrid ranking is complete: no active record waits for a vector.

        Returns the final ``agent_memory.vector_backlog`` report (``{"provider", "pending", "realms",
        "complete", ...}``; at once for lexical recall, whose ``pending`` is always 0). ``timeout_s``
        and ``poll_s`` are seconds. Raises ``TimeoutError`` naming the records still pending when
        ``timeout_s`` passes, ``ValueError`` for a gateway without agent memory, and the typed
        ``MetaError`` the gateway gave (e.g. ``PermissionDenied`` without ``operator.status``).
        """
        deadline = time.monotonic() + max(0.0, timeout_s)
        while True:
            report = _vector_backlog(await self._invoke("meta/status", None, _identity))
            if report.get("complete"):
                return report
            if time.monotonic() >= deadline:
                raise _backlog_timeout(report, timeout_s)
            await asyncio.sleep(max(0.01, poll_s))

    async def aclose(self) -> None:
        if hasattr(self._transport, "aclose"):
            await self._transport.aclose()
        else:
            self._transport.close()

    async def __aenter__(self) -> "AsyncMetaHandle":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
