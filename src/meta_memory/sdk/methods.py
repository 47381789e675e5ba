"""The SDK's method list: one declaration per gateway method, shared by every handle.

Each entry is ``@rpc(wire, parse)`` over a function that turns the Python arguments into the
JSON-RPC params of the spec's method (docs/rpc.md). :class:`~meta_memory.sdk.handle.MetaHandle`
reads them as methods returning the typed result; :class:`~meta_memory.sdk.handle.AsyncMetaHandle`
as methods returning awaitables of it (see :mod:`meta_memory.sdk.binding`).

Naming: the wire path after ``meta/``, snake_cased (``rpc.discover`` is ``discover``) (``meta/turn/tool_result`` -> ``turn_tool_result``,
``meta/memory/panel/dream_runs`` -> ``memory_panel_dream_runs``), except the agent-memory record
methods, which keep the seed's names (``remember_agent_memory``, ``recall_agent_memory``, ...).

Every method raises the typed :class:`~meta_memory.errors.MetaError` the gateway answered:
``InvalidParams`` (-32602, ``field`` names the field), ``MethodNotFound`` (-32601, e.g. the panel
on a store without one), ``AccessDenied`` (-32030), ``RecordNotFound`` (-32001),
``MemoryBackendUnavailable`` (-32010), ``AgentMemoryError`` (-32040, ``reason``) or
``QuarantineReviewRefused`` (-32043, ``reason``). Remote handles raise ``GatewayUnreachable``
when the gateway cannot be reached.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, TypeVar

from pydantic import BaseModel

from .. import strict_json
from ..errors import InvalidParams
from ..ledger.model import MemoryIndexResult, MemoryQueryResult, MemoryResolveResult, MemoryStoreInfo
from ..limits import MAX_BATCH_OPS
from .binding import rpc
from .models import (
    AgentMemoryForgetResult,
    AgentMemoryPage,
    AgentMemoryRecordMeta,
    AgentMemoryUpdateResult,
    BackupReport,
    Capabilities,
    DefangResult,
    DoctorReport,
    DreamRun,
    EraseResult,
    EventPage,
    ExportPage,
    GatingCheck,
    GatingDecision,
    Harvest,
    InjectionBlock,
    MemoryToolDefinition,
    MemoryToolResult,
    OpenRpcDocument,
    PanelAuditVerdicts,
    PanelDreamRuns,
    PanelDreams,
    PanelHarvests,
    PanelInjections,
    PanelOverview,
    PanelProposals,
    PanelQuarantine,
    PanelRecordDetail,
    PanelRecordPage,
    ProposalDecision,
    ProposalList,
    QuarantineDecision,
    RecalledRecords,
    RecordHistory,
    RememberBatchResult,
    RememberedRecord,
    SessionCompactedResult,
    SessionState,
    Status,
    TurnToolResult,
)

__all__ = ["HandleMethods", "Selection", "Tier", "Surface", "Scope", "RecordStatus"]

M = TypeVar("M", bound=BaseModel)

Selection = Literal["contextual", "always"]
Tier = Literal["working_set", "full"]
Surface = Literal["turn", "build"]
Scope = Literal["identity", "mob", "operator", "realm"]
RecordStatus = Literal["active", "quarantined", "superseded", "tombstoned"]


def _batch_item(index: int, item: Any) -> dict[str, Any]:
    """A ``(title, body)`` / ``(title, body, tags)`` tuple as a batch record; any other shape raises
    ``InvalidParams`` naming ``records.<index>`` (as the gateway names a batch item's fields), nothing sent."""
    if not isinstance(item, (tuple, list)):
        raise InvalidParams(f"records.{index} must be a dict or a (title, body[, tags]) tuple, not "
                            f"{type(item).__name__}", f"records.{index}")
    if len(item) not in (2, 3):
        raise InvalidParams(f"records.{index} must be a dict or a (title, body[, tags]) tuple, not a "
                            f"{type(item).__name__} of {len(item)} item{'' if len(item) == 1 else 's'}",
                            f"records.{index}")
    return _params(title=item[0], body=item[1], tags=item[2] if len(item) > 2 else None)


def _params(**params: Any) -> dict[str, Any]:
    """The params object: members left as ``None`` are omitted (the gateway's defaults apply)."""
    return {k: v for k, v in params.items() if v is not None}


def _raw(value: Any) -> Any:
    return value


def _each(model: type[M], key: str) -> Callable[[Any], list[M]]:
    """Parse ``result[key]`` as a list of ``model``."""
    return lambda result: [model.model_validate(item) for item in result[key]]


class HandleMethods:
    """Every gateway method, declared once (the sync and async handles derive from this)."""

    def _invoke(self, method: str, params: dict[str, Any] | None, parse: Callable[[Any], Any]) -> Any:  # pragma: no cover
        raise NotImplementedError

    # -- system (docs/rpc.md "System") ------------------------------------------------------------
    @rpc("meta/status", Status.model_validate)
    def status(self) -> dict[str, Any] | None:
        """Version, ledger backend, the storage census (``storage.slots``), agent-memory counters."""
        return None

    @rpc("meta/storage/doctor", DoctorReport.model_validate)
    def storage_doctor(self) -> dict[str, Any] | None:
        """Slots, file-name twins, predecessor files, leftover stages, each finding with its ``fix``."""
        return None

    @rpc("meta/storage/backup", BackupReport.model_validate)
    def storage_backup(self, dest: str) -> dict[str, Any] | None:
        """Write a consistent copy of the gateway's state directory into the new directory ``dest`` (a path on
        the gateway's machine, inside its ``[gateway] backup_dir``) while it keeps serving; ``operator.backup``."""
        return {"dest": dest}

    @rpc("meta/storage/export", ExportPage.model_validate)
    def storage_export(self, *, export_id: str | None = None, realm: str | None = None, identity: str | None = None,
                       ledger: bool | None = None, max_bytes: int | None = None) -> dict[str, Any] | None:
        """One page of the gateway's export file (``meta-memory export``): start one (``realm``, ``identity``,
        ``ledger``), then fetch by ``export_id`` until ``done``; ``operator.backup``."""
        return _params(export_id=export_id, realm=realm, identity=identity, ledger=ledger, max_bytes=max_bytes)

    @rpc("meta/capabilities", Capabilities.model_validate)
    def capabilities(self) -> dict[str, Any] | None:
        """The methods this gateway advertises to this caller, and the caller's memory capabilities."""
        return None

    @rpc("rpc.discover", OpenRpcDocument.model_validate)
    def discover(self) -> dict[str, Any] | None:
        """The gateway's OpenRPC document (the JSON-RPC service-discovery convention). A gateway that
        serves none answers ``MethodNotFound``."""
        return None

    @rpc("meta/events/list", EventPage.model_validate)
    def events_list(self, after: str | int | None = None, *, limit: int | None = None) -> dict[str, Any] | None:
        """Timeline events after ``after`` (an ``event_id`` this caller was shown, or a sequence number
        when it sees every event), oldest first; ``limit`` 1..1000 (default 100). Events the caller may
        not see are left out, and not counted by ``limit`` or ``last_event_id``."""
        return _params(after=after, limit=limit)

    # -- assertion ledger (seed: Indexing, Querying, Memory store info) ----------------------------
    @rpc("meta/memory/index", MemoryIndexResult.model_validate)
    def memory_index(
        self, entity: str, topic: str, store: str | None = None, *, fact: str | None = None,
        metadata: dict[str, Any] | None = None, conflict: bool | None = None, conflict_reason: str | None = None,
    ) -> dict[str, Any] | None:
        """Index an assertion (``fact``) and/or a conflict signal (``conflict=True``).

        Returns :class:`MemoryIndexResult` (canonical entity/topic/store, ``assertion_id`` or ``None``,
        ``conflict_active``). Raises ``InvalidParams`` (e.g. ``fact is required unless conflict=true``)
        or ``MemoryBackendUnavailable`` when the persist or health check fails (nothing changes)."""
        return _params(entity=entity, topic=topic, store=store, fact=fact, metadata=metadata, conflict=conflict,
                       conflict_reason=conflict_reason)

    @rpc("meta/memory/resolve", MemoryResolveResult.model_validate)
    def memory_resolve(self, entity: str, topic: str, store: str | None = None) -> dict[str, Any] | None:
        """Resolve the conflict signal of ``entity``/``topic`` in ``store`` (``None``: in every store), so
        ``gating_check`` allows again.

        Returns :class:`MemoryResolveResult` (canonical entity/topic/store, ``resolved``: the signals
        removed, empty when none was active; ``conflict_active``: a signal left in another store). Raises
        ``InvalidParams`` (e.g. an unsupported ``store``) or ``MemoryBackendUnavailable`` when the persist
        or health check fails (nothing changes)."""
        return _params(entity=entity, topic=topic, store=store)

    @rpc("meta/memory/query", MemoryQueryResult.model_validate)
    def memory_query(self, /, query: str | dict[str, Any] | None = None, **filters: Any) -> dict[str, Any] | None:
        """Query assertions and conflict signals: exact ``entity``/``topic``/``store`` filters (trimmed,
        ASCII-lowercased) and an optional case-insensitive substring ``query``.

        ``query`` may be the substring (str), a dict of filters, or ``None``. Raises ``TypeError`` for
        another type, ``InvalidParams`` for bad filters."""
        if isinstance(query, str):
            return {"query": query, **filters}
        if isinstance(query, dict):
            return {**query, **filters}
        if query is None:
            return dict(filters)
        raise TypeError("memory_query query must be a string, dict, or None")

    @rpc("meta/memory/stores", _each(MemoryStoreInfo, "stores"))
    def memory_stores(self) -> dict[str, Any] | None:
        """One :class:`MemoryStoreInfo` ``{store, record_count}`` per supported store, in the fixed order."""
        return None

    # -- agent memory (seed: Agent memory injection; docs/rpc.md "Agent memory") ------------------
    @rpc("meta/agent_memory/remember", RememberedRecord.model_validate)
    def remember_agent_memory(
        self, identity: str, *, title: str, body: str, tags: list[str] | None = None, realm: str | None = None,
        derived_from_sessions: list[str] | None = None, ttl_s: int | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> dict[str, Any] | None:
        """Write one identity-scoped record (application author; never quarantined unless it names
        ``derived_from_sessions``).

        ``title`` <= 200 bytes, ``body`` <= 64 KiB, <= 32 ``tags`` of <= 64 bytes. ``metadata``: a JSON
        object stored and returned with the record (<= 8 KiB as JSON, 5 levels, 128 keys; keys without
        ``.`` or a leading ``$``; docs/rpc.md "Record metadata"), not part of the content: an active record
        with the same title and body is returned instead of writing (``created=False``, its metadata kept). ``derived_from_sessions``
        (1..64 session keys of the identity in ``realm``): the content was derived from those sessions
        (the host's own summary or notes); it is kept as provenance and the record lands quarantined
        (result ``quarantined`` = the reason) when one of them is tainted or was tainted when reset; it
        needs ``agent.session.manage`` on the identity. Raises ``InvalidParams`` (field caps) or
        ``AgentMemoryError`` (``secret_detected``, ...). ``ttl_s`` (seconds, 1..``agent_memory.max_ttl_s``):
        the record expires then (``expires_at_ms``); it is never recalled, injected, listed or exported
        as active afterwards, and a background sweep tombstones it."""
        return _params(identity=identity, title=title, body=body, tags=tags, realm=realm,
                       derived_from_sessions=derived_from_sessions, ttl_s=ttl_s, metadata=metadata)

    @rpc("meta/agent_memory/remember_batch", RememberBatchResult.model_validate)
    def remember_agent_memory_batch(
        self, identity: str, records: list[dict[str, Any]] | list[tuple[Any, ...]], *, realm: str | None = None,
        derived_from_sessions: list[str] | None = None,
    ) -> dict[str, Any] | None:
        """Write many identity-scoped records in one transaction.

        ``records``: up to 1,024 items, 4 MiB of text together, each ``{"title", "body", "tags"?, "ttl_s"?, "metadata"?}`` or a
        ``(title, body)`` / ``(title, body, tags)`` tuple. Returns a result per record, in order: its
        ``memory_id`` and ``created`` (``False`` for exact-content duplicates, of a stored record or of an
        earlier item), or the ``error`` refusing that record alone (nothing of it was written). Raises
        ``InvalidParams`` for a malformed call (nothing written) and ``AccessDenied`` without
        ``agent.memory.write`` on the identity. ``derived_from_sessions`` applies to every record as in
        :meth:`remember_agent_memory`.

        More than 1,024 records are refused here, before anything is sent (``InvalidParams``, field
        ``records``, ``records must contain at most 1024 records (got N)...``): the batch commits in one
        transaction, so the SDK never splits it. Send several calls when the records need not commit
        together (each call then commits on its own)."""
        if isinstance(records, (list, tuple)) and len(records) > MAX_BATCH_OPS:
            raise InvalidParams(
                f"records must contain at most {MAX_BATCH_OPS} records (got {len(records)}); the batch commits in "
                "one transaction, so it is not split: send several calls if the records need not commit together",
                "records")
        items = [r if isinstance(r, dict) else _batch_item(i, r) for i, r in enumerate(records)]
        return _params(identity=identity, records=items, realm=realm, derived_from_sessions=derived_from_sessions)

    @rpc("meta/agent_memory/recall", RecalledRecords.from_result)
    def recall_agent_memory(
        self, identity: str, *, realm: str | None = None, selection: Selection | None = None,
        query_text: str | None = None, query_terms: list[str] | None = None, max_entries: int | None = None,
        filter: dict[str, Any] | None = None,  # noqa: A002 - the RPC field's name
    ) -> dict[str, Any] | None:
        """Active records of ``identity``, best first (``selection`` ``contextual`` by default: ranked
        against ``query_text`` (<= 16 KiB) / ``query_terms``; ``always``: every record);
        ``max_entries`` 1..64; ``filter``: only records whose metadata passes it (``{"key": value}``,
        ``$eq $ne $gt $gte $lt $lte $in $nin $and $or $not``; docs/rpc.md "Metadata filters"), the best
        among those. Returns :class:`RecalledRecords`: a list of records with the recall's
        ``skip_reason`` and ``degraded_reason`` (e.g. hybrid recall answering lexically,
        ``"embedding_timeout"``)."""
        return _params(identity=identity, realm=realm, selection=selection, query_text=query_text,
                       query_terms=query_terms, max_entries=max_entries, filter=filter)

    @rpc("meta/agent_memory/forget", AgentMemoryForgetResult.model_validate)
    def forget_agent_memory(self, identity: str, memory_id: str, *, realm: str | None = None) -> dict[str, Any] | None:
        """Tombstone one record: it leaves every recall and injection path at once (reviewers may
        still read it; :meth:`erase_agent_memory` removes the content for good)."""
        return _params(identity=identity, memory_id=memory_id, realm=realm)

    @rpc("meta/agent_memory/history", RecordHistory.model_validate)
    def history_agent_memory(self, identity: str, memory_id: str, *, realm: str | None = None) -> dict[str, Any] | None:
        """The versions of one of ``identity``'s records (``memory_id`` names any of them), oldest first,
        each with author, trust tier, status, times and the reason it changed; quarantined content is
        withheld and erased versions show only that they were erased. Raises ``RecordNotFound`` for
        another identity's or realm's record and an unknown id alike."""
        return _params(identity=identity, memory_id=memory_id, realm=realm)

    @rpc("meta/agent_memory/update", AgentMemoryUpdateResult.model_validate)
    def update_agent_memory(
        self, identity: str, memory_id: str, *, title: str | None = None, body: str | None = None,
        tags: list[str] | None = None, realm: str | None = None, ttl_s: int | None = None,
        clear_expiry: bool = False, metadata: dict[str, Any] | None = None,
    ) -> dict[str, Any] | None:
        """Supersede ``memory_id`` with a new version (same identity scope): ``{memory_id, supersedes, record}``.
        An omitted ``title``, ``body``, ``tags`` or ``metadata`` keeps the prior's value (at least one of them,
        ``ttl_s`` or ``clear_expiry`` is required; ``tags=[]`` clears the tags; a ``metadata`` object replaces
        the prior's whole, ``{}`` clears it). Expiry: ``ttl_s`` (seconds) sets a new one from now,
        ``clear_expiry=True`` removes it, neither keeps the prior's. An expired record is not active:
        updating it raises ``AgentMemoryError``, as a superseded or forgotten version does. An id that names
        no record of the identity (unknown, another identity's or realm's, erased) raises ``RecordNotFound``
        (-32001). An update that changes nothing (the same title, body, tags, metadata, expiry and trust
        tier) writes nothing: the answer is the current version, ``supersedes`` ``None``."""
        return _params(identity=identity, memory_id=memory_id, title=title, body=body, tags=tags, realm=realm,
                       ttl_s=ttl_s, clear_expiry=clear_expiry or None, metadata=metadata)

    @rpc("meta/agent_memory/manifest", _each(AgentMemoryRecordMeta, "records"))
    def manifest_agent_memory(
        self, identity: str, *, realm: str | None = None, tier: Tier | None = None, k: int | None = None,
    ) -> dict[str, Any] | None:
        """Body-free metadata of active records. ``tier="working_set"`` (the default; ``k`` 1..512, default
        32): up to ``k`` ranked records, then the most recently updated, at most ``2 * k`` records in all.
        ``tier="full"``: every active record, ranked first."""
        return _params(identity=identity, realm=realm, tier=tier, k=k)

    @rpc("meta/agent_memory/list", AgentMemoryPage.model_validate)
    def list_agent_memory(
        self, identity: str, *, realm: str | None = None, tags: list[str] | None = None, limit: int | None = None,
        cursor: str | None = None, filter: dict[str, Any] | None = None,  # noqa: A002 - the RPC field's name
    ) -> dict[str, Any] | None:
        """One page of ``identity``'s active records holding every tag in ``tags`` and passing the metadata
        ``filter`` (as :meth:`recall_agent_memory`), newest updated first (``limit`` 1..500, default 100);
        pass ``next_cursor`` back as ``cursor``, with the same filter, for the next page."""
        return _params(identity=identity, realm=realm, tags=tags, limit=limit, cursor=cursor, filter=filter)

    @rpc("meta/agent_memory/erase", EraseResult.model_validate)
    def erase_agent_memory(
        self, identity: str, memory_id: str, *, realm: str | None = None, dry_run: bool = False,
        reason: str | None = None,
    ) -> dict[str, Any] | None:
        """Erase ``memory_id`` and its content closure (every version, every derived copy) for good.

        Needs ``agent.memory.erase``. Raises ``RecordNotFound`` (-32001) for an unknown id or one outside the
        identity, ``AgentMemoryError`` ``review_pending`` while a pending gated promotion waits on any of it
        (a quarantined record is erased too: erasure never waits on a quarantine review)."""
        return {**_params(identity=identity, memory_id=memory_id, realm=realm, reason=reason), "dry_run": dry_run}

    @rpc("meta/agent_memory/erase_identity", EraseResult.model_validate)
    def erase_identity_agent_memory(
        self, identity: str, *, realm: str | None = None, dry_run: bool = False, reason: str | None = None,
    ) -> dict[str, Any] | None:
        """Erase every record of ``identity`` (and their closures); ``dry_run=True`` only counts."""
        return {**_params(identity=identity, realm=realm, reason=reason), "dry_run": dry_run}

    # -- the host surface (spec README, "The host surface") ----------------------------------------
    @rpc("meta/session/note", SessionState.model_validate)
    def session_note(
        self, identity: str, session_key: str, *, realm: str | None = None,
        tool_results: Literal["reported", "unreported"] | None = None,
    ) -> dict[str, Any] | None:
        """``identity`` now speaks from ``session_key`` (a new key starts clean). Session state
        (taint, injection budget, nonce) is keyed by realm, identity and session key.

        ``tool_results="unreported"`` declares that this session's tool results are never reported
        (:meth:`turn_tool_result`): the session is then tainted from the start (fail closed)."""
        return _params(identity=identity, session_key=session_key, realm=realm, tool_results=tool_results)

    @rpc("meta/session/reset", SessionState.model_validate)
    def session_reset(
        self, identity: str, session_key: str | None = None, *, realm: str | None = None,
    ) -> dict[str, Any] | None:
        """A fresh-context boundary of ``identity``'s own session: clears its taint, the session's
        injection budget and dedup set, and rotates the injection nonce."""
        return _params(identity=identity, session_key=session_key, realm=realm)

    @rpc("meta/session/compacted", SessionCompactedResult.model_validate)
    def session_compacted(self, identity: str, session_key: str, *, realm: str | None = None) -> dict[str, Any] | None:
        """``identity``'s session was compacted: taint is kept; injection dedup and byte budget start over."""
        return _params(identity=identity, session_key=session_key, realm=realm)

    @rpc("meta/session/retire", Harvest.model_validate)
    def session_retire(
        self, identity: str, *, cause: str, session_key: str | None = None, realm: str | None = None,
    ) -> dict[str, Any] | None:
        """A session ends (``cause`` <= 400 bytes): records the exit-interview harvest the next dream
        decides. Advertised when review is enabled."""
        return _params(identity=identity, cause=cause, session_key=session_key, realm=realm)

    @rpc("meta/turn/tool_result", TurnToolResult.model_validate)
    def turn_tool_result(
        self, identity: str, session_key: str, tool_name: str, *, provenance: dict[str, Any] | None = None,
        is_error: bool = False, server_tool: bool = False, realm: str | None = None,
    ) -> dict[str, Any] | None:
        """Classify one tool result BEFORE the model sees it.

        ``provenance`` is the tool catalog's ``{kind, source_id}`` (``kind = "mcp"`` names the server in
        ``source_id``); ``server_tool`` marks provider-native server-tool content. An untrusted result
        taints the session before this call returns."""
        return {**_params(identity=identity, session_key=session_key, tool_name=tool_name, provenance=provenance,
                          realm=realm), "is_error": is_error, "server_tool": server_tool}

    @rpc("meta/turn/inject", InjectionBlock.model_validate)
    def turn_inject(
        self, identity: str, *, query_text: str = "", session_key: str | None = None, realm: str | None = None,
        surface: Surface = "turn", mobs: list[str] | None = None, operator: str | None = None,
    ) -> dict[str, Any] | None:
        """The quoted observation block for this turn (``surface="turn"``) or a build (``"build"``), or a
        typed ``skip_reason``. Raises ``AgentMemoryError`` only under ``recall_failure_policy = "fail"``."""
        return _params(identity=identity, query_text=query_text, session_key=session_key, realm=realm,
                       surface=surface, mobs=mobs, operator=operator)

    @rpc("meta/turn/defang", DefangResult.model_validate)
    def turn_defang(self, text: str | None = None, *, blocks: list[Any] | None = None) -> dict[str, Any] | None:
        """Neutralise forged memory markers in inbound ``text`` (or content ``blocks``): ``{text|blocks, hits}``."""
        return _params(text=text, blocks=blocks)

    @rpc("meta/agent_memory/tool", MemoryToolResult.model_validate)
    def agent_memory_tool(
        self, identity: str, arguments: dict[str, Any] | str, *, session_key: str | None = None,
        mob: str | None = None, realm: str | None = None,
    ) -> dict[str, Any] | None:
        """Dispatch one ``memory`` tool call (an LLM-authored write, gated by the firewall) from
        ``identity``'s ``session_key`` in ``realm`` (``None``: the gateway's ``[agent_memory] realm``):
        the write gate reads that session's taint in that realm and the write lands there.

        Refusals come back as ``is_error`` results, not exceptions; ``arguments`` (an object, or the
        model's JSON text of one) that are not a JSON object raise ``InvalidParams`` (field ``arguments``)."""
        if isinstance(arguments, str):  # the model's JSON text; anything but an object is refused (-32602)
            try:
                arguments = strict_json.loads(arguments)
            except ValueError:
                pass
        return {**_params(identity=identity, session_key=session_key, mob=mob, realm=realm), "arguments": arguments}

    @rpc("meta/agent_memory/tool_schema", MemoryToolDefinition.model_validate)
    def agent_memory_tool_schema(self) -> dict[str, Any] | None:
        """The ``memory`` tool's definition for a model. Raises ``AgentMemoryError`` (reason
        ``unsupported``) when ``recorder_tool = false``."""
        return None

    # -- review (seed: Reviewing quarantined records; docs/rpc.md "Review") ------------------------
    @rpc("meta/memory/quarantine/decide", QuarantineDecision.model_validate)
    def memory_quarantine_decide(
        self, identity: str, memory_id: str, *, verdict: Literal["release", "tombstone"], expected_content_hash: str,
        rationale: str | None = None, realm: str | None = None,
    ) -> dict[str, Any] | None:
        """Release or tombstone a quarantined record (or decide a held forget) in one transaction.

        ``expected_content_hash`` is the ``content_hash`` of the record as reviewed (from
        :meth:`memory_panel_record`); ``rationale`` <= 400 bytes. The reviewer recorded is the
        authenticated principal. Raises ``QuarantineReviewRefused`` (-32043, ``reason``)."""
        return _params(identity=identity, memory_id=memory_id, verdict=verdict,
                       expected_content_hash=expected_content_hash, rationale=rationale, realm=realm)

    @rpc("meta/gating/decide", GatingDecision.model_validate)
    def gating_decide(
        self, pending_id: str, decision: Literal["approve", "deny"], *, realm: str | None = None,
    ) -> dict[str, Any] | None:
        """Approve (publish the staged batch) or deny (discard it) a gated promotion."""
        return _params(pending_id=pending_id, decision=decision, realm=realm)

    @rpc("meta/gating/check", GatingCheck.model_validate)
    def gating_check(self, entity: str, topic: str, store: str | None = None) -> dict[str, Any] | None:
        """``allowed`` is ``False`` while a conflict signal is active in the ledger for entity/topic."""
        return _params(entity=entity, topic=topic, store=store)

    @rpc("meta/memory/steward/dream", DreamRun.model_validate)
    def memory_steward_dream(self, *, realm: str | None = None) -> dict[str, Any] | None:
        """Run one steward dream over a realm now; returns the run."""
        return _params(realm=realm)

    @rpc("meta/memory/proposals/list", ProposalList.model_validate)
    def memory_proposals_list(
        self, *, realm: str | None = None, status: Literal["pending", "held", "accepted", "rejected"] | None = None,
        limit: int | None = None,
    ) -> dict[str, Any] | None:
        """Proposals (body-free, with the propose-time taint flag) by ``status``."""
        return _params(realm=realm, status=status, limit=limit)

    @rpc("meta/memory/proposals/decide", ProposalDecision.model_validate)
    def memory_proposals_decide(
        self, proposal_id: str, action: Literal["accept", "hold", "reject"], *, rationale: str | None = None,
        realm: str | None = None,
    ) -> dict[str, Any] | None:
        """Accept (commit into mob scope), hold or reject a proposal."""
        return _params(proposal_id=proposal_id, action=action, rationale=rationale, realm=realm)

    # -- the console panel (seed: Console Memory panel; docs/rpc.md "Console panel methods") --------
    @rpc("meta/memory/panel/records", PanelRecordPage.model_validate)
    def memory_panel_records(
        self, *, realm: str | None = None, scope: Scope | None = None, identity: str | None = None,
        scope_key: str | None = None, status: RecordStatus | None = None, query: str | None = None,
        limit: int | None = None, cursor: str | None = None,
    ) -> dict[str, Any] | None:
        """Records newest-updated first, body-free, keyset-paged across realms (``limit`` 1..200, 50).

        ``query`` (beyond the seed): every whitespace-separated term (<= 8, <= 200 characters in all)
        must occur, case-insensitively, in the title, description, body or tags; rows the caller may
        not read are never returned. Send a ``cursor`` with the same filters and query."""
        return _params(realm=realm, scope=scope, identity=identity, scope_key=scope_key, status=status, query=query,
                       limit=limit, cursor=cursor)

    @rpc("meta/memory/panel/record", PanelRecordDetail.model_validate)
    def memory_panel_record(self, memory_id: str, *, realm: str | None = None) -> dict[str, Any] | None:
        """One record with body and content hash, its supersede chain and injection usage.
        Raises ``RecordNotFound`` (-32001) or ``AccessDenied`` (-32030)."""
        return _params(memory_id=memory_id, realm=realm)

    @rpc("meta/memory/panel/quarantine", PanelQuarantine.model_validate)
    def memory_panel_quarantine(
        self, *, realm: str | None = None, limit: int | None = None, cursor: str | None = None,
    ) -> dict[str, Any] | None:
        """The quarantine queue (a page of it, newest created first: pass ``next_cursor`` back as
        ``cursor`` for the next), pending gated promotions and held forgets (``limit`` 1..200, 50)."""
        return _params(realm=realm, limit=limit, cursor=cursor)

    @rpc("meta/memory/panel/dreams", PanelDreams.model_validate)
    def memory_panel_dreams(self, *, realm: str | None = None, limit: int | None = None) -> dict[str, Any] | None:
        """Steward dream summaries from the audit rows (``limit`` 1..100, 20)."""
        return _params(realm=realm, limit=limit)

    @rpc("meta/memory/panel/dream_runs", PanelDreamRuns.model_validate)
    def memory_panel_dream_runs(self, *, realm: str | None = None, limit: int | None = None) -> dict[str, Any] | None:
        """Durable dream-run rows (``limit`` 1..100, 20)."""
        return _params(realm=realm, limit=limit)

    @rpc("meta/memory/panel/audit_verdicts", PanelAuditVerdicts.model_validate)
    def memory_panel_audit_verdicts(
        self, *, realm: str | None = None, limit: int | None = None,
    ) -> dict[str, Any] | None:
        """Open usage-audit verdicts (``limit`` 1..200, 50)."""
        return _params(realm=realm, limit=limit)

    @rpc("meta/memory/panel/overview", PanelOverview.model_validate)
    def memory_panel_overview(self, *, realm: str | None = None) -> dict[str, Any] | None:
        """Per-scope status counts and body bytes with floors and pressure."""
        return _params(realm=realm)

    @rpc("meta/memory/panel/proposals", PanelProposals.model_validate)
    def memory_panel_proposals(self, *, realm: str | None = None, limit: int | None = None) -> dict[str, Any] | None:
        """Pending mob/operator proposals (metadata and taint flag, no bodies; ``limit`` 1..200, 50)."""
        return _params(realm=realm, limit=limit)

    @rpc("meta/memory/panel/injections", PanelInjections.model_validate)
    def memory_panel_injections(self, *, realm: str | None = None, limit: int | None = None) -> dict[str, Any] | None:
        """Recent injection-ledger rows, newest first (``limit`` 1..200, 50)."""
        return _params(realm=realm, limit=limit)

    @rpc("meta/memory/panel/harvests", PanelHarvests.model_validate)
    def memory_panel_harvests(self, *, realm: str | None = None, limit: int | None = None) -> dict[str, Any] | None:
        """Pending exit-interview harvests (``limit`` 1..200, 50)."""
        return _params(realm=realm, limit=limit)

    # -- any method by name --------------------------------------------------------------------------
    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Call any method of the table by name; returns the raw JSON result (sync) or an awaitable of it."""
        return self._invoke(method, params, _raw)
