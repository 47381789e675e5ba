"""Result models of the system, ledger, agent-memory and host methods.

They are what each method returns: the method table holds every answer to its
method's model (:meth:`~meta_memory.rpc.registry.MethodSpec.answer`), the OpenRPC
document (``rpc.discover``) is built from them (``docs/rpc.md`` is checked against
it, and the TypeScript SDK's wire types are generated from it), and the Python SDK's
typed results (``meta_memory.sdk.models``) are these models opened to members a
newer gateway adds. Times are UTC epoch milliseconds, sizes UTF-8 bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..ledger.model import MemoryStoreInfo
from .deferred import DEFER_BUILD

__all__ = [
    "Result",
    "StatusResult", "DoctorResult", "CapabilitiesResult", "EventsListResult",
    "StoresResult",
    "ScopeRef", "StatusRef",
    "WireRecord", "RememberResult", "RememberBatchResult", "RecallResult", "ForgetResult", "UpdateResult",
    "ManifestResult", "ListResult", "EraseResult", "HistoryResult",
    "SessionResult", "CompactedResult", "ToolResultVerdict", "InjectResult", "DefangResult",
    "ToolSchemaResult", "ToolCallResult",
]


class Result(BaseModel):
    """Base of every result model: the listed members only."""

    model_config = ConfigDict(extra="forbid", defer_build=DEFER_BUILD)


# --------------------------------------------------------------------------- shared


class ScopeRef(Result):
    """``{scope: identity|mob|operator|realm, realm, identity? | mob? | operator?}`` (the key named by ``scope``)."""

    scope: Literal["identity", "mob", "operator", "realm"]
    realm: str
    identity: str | None = None
    mob: str | None = None
    operator: str | None = None


class StatusRef(Result):
    """``{status, by?, reason?}``: ``by`` the successor of a superseded record, ``reason`` a quarantine's."""

    status: Literal["active", "quarantined", "superseded", "tombstoned"]
    by: str | None = None
    reason: str | None = None


# --------------------------------------------------------------------------- system


class Slot(Result):
    slot: str
    path: str
    durability: str
    resolution: str
    exists: bool


class LedgerStatus(Result):
    persisted: bool
    backend: Literal["local_json", "in_memory"]
    assertions: int
    max_retained: int
    evicted: int


class StorageStatus(Result):
    slots: Sequence[Slot]


class UnlistedTool(Result):
    name: str
    count: int


class ContentTrustStatus(Result):
    """How tool results are classified: ``default``, whether the configuration ``names_any_tool``, how
    many ``default_untrusted_tools`` names taint, the tool names trusted only because no rule names them
    (``unlisted_trusted_tools``, with counts since start; ``unlisted_trusted_tools_other`` past 256
    names) and a ``warning`` when no rule names the host's tools."""

    default: str
    names_any_tool: bool
    default_untrusted_tools: int
    unlisted_trusted_tools: Sequence[UnlistedTool]
    unlisted_trusted_tools_other: int
    warning: str | None


class AgentMemoryStatus(Result):
    enabled: bool
    store: str | None = None
    realm: str | None = None
    realms: list[str] | None = None
    taint_tracker: dict[str, Any] | None = None
    content_trust: ContentTrustStatus | None = None
    injection_sessions: dict[str, Any] | None = None
    recorder_tool: bool | None = None
    #: Records still waiting for a vector (hybrid recall), per realm: ``{provider, pending, realms, complete, ...}``.
    vector_backlog: dict[str, Any] | None = None
    #: Usage marks and injection-ledger rows dropped since start (a full disk, a busy writer): ``{dropped}``.
    telemetry: dict[str, int] | None = None
    #: The process's memory and each bounded component beside its bound, in bytes (``memory_report.py``).
    memory: dict[str, Any] | None = None


class EventsStatus(Result):
    last_event_id: str | None


class StatusResult(Result):
    """``meta/status``. ``ledger.evicted`` counts assertions the 4,096 cap dropped since start."""

    version: str
    state_dir: str | None
    ledger: LedgerStatus
    storage: StorageStatus
    agent_memory: AgentMemoryStatus
    events: EventsStatus


class Finding(Result):
    kind: str
    severity: Literal["blocks_startup", "warning", "error"]
    paths: list[str]
    message: str
    fix: str


class DoctorResult(Result):
    """``meta/storage/doctor``: ``ok`` false when a finding blocks start-up or is an error."""

    state_dir: str | None
    ok: bool = True
    slots: Sequence[Slot]
    findings: Sequence[Finding]


class BackupFile(Result):
    path: str
    kind: Literal["sqlite", "ledger", "key", "file"]
    bytes: int


class BackupResult(Result):
    """``meta/storage/backup``: the copy's directory, its consistency point (UTC epoch ms), its files,
    their total bytes, the stores it does not hold (``"postgres"``: use ``pg_dump``), seconds taken and,
    when there were some, the working copies of killed backups it removed beside ``dest``."""

    dest: str
    began_at_ms: int
    files: Sequence[BackupFile]
    bytes: int
    elsewhere: list[str]
    seconds: float
    removed_partials: list[str] | None = None


class ExportPageResult(Result):
    """``meta/storage/export``: the next ``lines`` of the export file (each one JSON object, without its
    newline); ``done`` once the last line was given."""

    export_id: str
    lines: list[str]
    done: bool


class CanRead(Result):
    can_read: bool


class AccessEnabled(Result):
    enabled: bool


class CapabilitiesResult(Result):
    methods: list[str]
    memory: CanRead
    access: AccessEnabled


class Event(Result):
    event_id: str
    identity: str
    event_type: str
    timestamp_ms: int
    data: dict[str, Any]


class EventsListResult(Result):
    events: Sequence[Event]
    last_event_id: str | None


# --------------------------------------------------------------------------- ledger


class StoresResult(Result):
    stores: list[MemoryStoreInfo]


# --------------------------------------------------------------------------- agent memory


class WireRecord(Result):
    memory_id: str
    title: str
    body: str
    tags: list[str]
    #: the record's JSON object (``{}`` when it has none)
    metadata: dict[str, Any]
    created_at_ms: int
    updated_at_ms: int
    #: When the record stops being active (epoch ms, UTC); ``null`` when it never expires.
    expires_at_ms: int | None


class RememberResult(WireRecord):
    """``created`` false: an active record with the same content existed; ``supersedes`` and
    ``tags_added`` say whether the call's new tags were merged into a new version of it."""

    created: bool
    supersedes: str | None
    tags_added: list[str]
    #: Only for a write naming ``derived_from_sessions`` whose session is tainted: the reason it waits in
    #: quarantine (it is not recalled or injected until a review releases it).
    quarantined: str | None = None


class BatchError(Result):
    code: int
    message: str
    data: dict[str, Any] | None = None


class BatchItem(Result):
    """A stored or deduplicated item (``memory_id``, ``created``, and as a single remember answers it
    ``supersedes`` and ``tags_added`` of a tag merge), or a refused one (``error``)."""

    op_index: int
    memory_id: str | None = None
    created: bool | None = None
    supersedes: str | None = None
    tags_added: list[str] | None = None
    #: As ``meta/agent_memory/remember``'s ``quarantined``.
    quarantined: str | None = None
    #: The record's expiry (epoch ms; ``null``: never), for a stored or deduplicated item.
    expires_at_ms: int | None = None
    error: BatchError | None = None


class RememberBatchResult(Result):
    results: Sequence[BatchItem]
    created: int
    existing: int
    refused: int


class RecallResult(Result):
    """``degraded_reason`` (present only then): why the provider answered with its fallback ranking (hybrid
    recall: the lexical ranking alone; labels ``model_loading``, ``embedding_timeout``, ``embedder_busy``,
    ``embedder_failed``, ``vector_search_timeout``, ``budget_spent``; a custom provider's own label)."""

    records: list[WireRecord]
    skip_reason: Literal["no_query_terms"] | None
    degraded_reason: str | None = None


class ForgetResult(Result):
    memory_id: str
    deleted: bool


class UpdateResult(Result):
    """``supersedes`` is ``None`` when the update changed nothing: ``memory_id`` and ``record`` are then the
    current version's, and nothing was written."""

    memory_id: str
    supersedes: str | None
    record: WireRecord


class ManifestRow(Result):
    id: str
    kind: str
    title: str
    description: str
    age_days: int
    rank: int | None


class ManifestResult(Result):
    records: list[ManifestRow]


class ListResult(Result):
    records: Sequence[WireRecord]
    next_cursor: str | None


class ErasedRecord(Result):
    """``content_hash`` is ``None`` to a caller who may not read the record's scope (``agent.memory.read``)."""

    memory_id: str
    scope: ScopeRef
    content_hash: str | None
    status: str


class EraseResult(Result):
    """``erased_at_ms`` is ``None`` for a dry run (which only counts what would go)."""

    dry_run: bool
    erased_at_ms: int | None
    count: int
    scopes: list[str]
    records: Sequence[ErasedRecord]
    #: ids of the proposals erased with the records (the identity's own, or holding the erased content)
    proposals: list[str]


class HistoryAuthor(Result):
    """Who wrote a version or a change: ``author`` (operator|application|agent|steward|distiller), the
    agent's ``identity`` or the steward's / distiller's ``run_id`` (an operator's principal is not shown)."""

    author: str
    identity: str | None = None
    run_id: str | None = None


class HistoryChange(Result):
    """One audited change of a version: ``change`` (created|import|update|tag_merge|release|promotion|
    forget|forget_released|tombstone|retier|rank|erase), ``at_ms``, ``by`` (``null`` for an erased version)."""

    change: str
    at_ms: int
    by: HistoryAuthor | None


class HistoryVersion(Result):
    """One version. ``reason``: the change that wrote it. ``withheld``: ``quarantined`` (quarantined
    content: ``title``, ``body``, ``tags``, ``metadata`` are ``null``) or ``erased`` (only the id,
    ``status_before_erase`` and the kinds and times of its changes remain); ``null`` when the content is
    shown. ``metadata``: the version's JSON object (``{}`` when it had none); ``expires_at_ms``: its expiry
    (UTC epoch ms, ``null``: never)."""

    memory_id: str
    status: Literal["active", "expired", "quarantined", "superseded", "tombstoned", "erased"]
    status_before_erase: str | None
    superseded_by: str | None
    supersedes: str | None
    derived_from: list[str]
    author: HistoryAuthor | None
    trust: str | None
    created_at_ms: int | None
    updated_at_ms: int | None
    reason: str
    withheld: Literal["quarantined", "erased"] | None
    title: str | None
    body: str | None
    tags: list[str] | None
    metadata: dict[str, Any] | None
    expires_at_ms: int | None
    changes: Sequence[HistoryChange]


class HistoryResult(Result):
    """``meta/agent_memory/history``: the record's versions, oldest first (``order``), at most 200
    (``truncated`` when more are linked)."""

    memory_id: str
    order: Literal["oldest_first"]
    versions: Sequence[HistoryVersion]
    truncated: bool


# --------------------------------------------------------------------------- host surface


class SessionResult(Result):
    identity: str
    session_key: str | None
    #: The session's LLM writes carry taint (so they land quarantined): its own taint, the identity's
    #: pending one, or another identity's taint of the same key in the realm that counts for it.
    tainted: bool
    #: Content derived from the session (``derived_from_sessions``) would land quarantined: it is tainted
    #: now, or a reset closed it tainted (the reset mark keeps that taint for derived writes), or another
    #: identity's session of the key that counts for the caller (``[agent_memory] shared_key_taint``) is.
    derived_tainted: bool = False


class CompactedResult(Result):
    identity: str
    session_key: str
    tainted: bool


class ToolResultVerdict(Result):
    trusted: bool
    source: str | None = None
    session_tainted: bool


class InjectResult(Result):
    #: The observation block; it carries the session's nonce, so it is left out of ``repr``.
    text: str | None = Field(repr=False)
    skip_reason: str | None
    included_ids: list[str]
    rendered_bytes: int
    surface: Literal["turn", "build"]


class DefangResult(Result):
    """``{text, hits}`` for a ``text`` call, ``{blocks, hits}`` for a ``blocks`` call."""

    text: str | None = None
    blocks: list[Any] | None = None
    hits: int


class ToolSchemaResult(Result):
    name: Literal["memory"]
    description: str
    input_schema: dict[str, Any]
    protocol: str


class ToolCallResult(Result):
    text: str
    is_error: bool
    exclude_from_indexing: Literal[True]
