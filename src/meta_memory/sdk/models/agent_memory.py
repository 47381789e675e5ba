"""Typed results of the agent-memory methods, as the SDK returns them (pydantic v2).

Wire shapes (reference §2A "Wire-level record", §10 "Handle methods"):
``AgentMemoryRecord {memory_id, title, body, tags, metadata, created_at_ms, updated_at_ms, expires_at_ms}``,
``AgentMemoryForgetResult {memory_id, deleted}``,
``AgentMemoryUpdateResult {memory_id, supersedes}``,
``AgentMemoryRecordMeta {id, kind, title, description, age_days, rank}``,
``RememberBatchResult {results: [{op_index, memory_id?, created?, supersedes?, tags_added?, error?}], created, existing, refused}``,
``EraseResult {dry_run, erased_at_ms, count, scopes, records}`` (beyond the seed: erase),
``RecordHistory {memory_id, order, versions: [RecordVersion], truncated}`` (beyond the seed: history).
``meta/agent_memory/recall`` answers :class:`RecalledRecords` (a list of records carrying
``skip_reason`` and ``degraded_reason``).
Extra members the gateway adds (e.g. ``status``) are kept, not refused.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ._base import OpenModel

__all__ = ["AgentMemoryRecord", "RecalledRecords", "AgentMemoryForgetResult", "AgentMemoryUpdateResult",
           "AgentMemoryRecordMeta", "AgentMemoryPage", "RememberBatchItemResult", "RememberBatchResult",
           "ErasedRecord", "EraseResult", "HistoryAuthor", "HistoryChange", "RecordVersion", "RecordHistory"]

class AgentMemoryRecord(OpenModel):
    memory_id: str = Field(min_length=1)
    title: str = Field(min_length=1)
    body: str = Field(min_length=1)
    tags: list[str] = Field(default_factory=list)
    #: The record's metadata, a JSON object given at remember/update (``{}`` when none), never interpreted.
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at_ms: int
    updated_at_ms: int
    #: When the record stops being active (epoch ms, UTC); ``None`` when it never expires.
    expires_at_ms: int | None = None
    #: ``meta/agent_memory/remember`` only: ``False`` when an active exact-content duplicate was returned.
    created: bool | None = None
    #: ``meta/agent_memory/remember`` only, when the duplicate lacked some of the given tags: they were
    #: merged into a new version, which supersedes this id.
    supersedes: str | None = None
    #: ...and the tags that merge added.
    tags_added: list[str] | None = None
    #: ``meta/agent_memory/remember`` with ``derived_from_sessions`` only: the reason the record waits in
    #: quarantine (a named session is tainted); ``None`` when it is active.
    quarantined: str | None = None


class RememberBatchItemResult(OpenModel):
    """One item of ``meta/agent_memory/remember_batch``: ``memory_id`` and ``created`` when the record was
    stored or deduplicated, else ``error`` (``{code, message, data}``, ``data.op_index`` = ``op_index``)."""

    op_index: int
    memory_id: str | None = None
    created: bool | None = None
    #: A duplicate that brought new tags: the record its merge superseded...
    supersedes: str | None = None
    #: ...and the tags that merge added.
    tags_added: list[str] | None = None
    #: With ``derived_from_sessions``: the reason the record waits in quarantine (``None``: active).
    quarantined: str | None = None
    #: The record's expiry (epoch ms; ``None``: never).
    expires_at_ms: int | None = None
    error: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        """Whether the record is stored (created now or already there)."""
        return self.error is None


class RememberBatchResult(OpenModel):
    """``meta/agent_memory/remember_batch``: a result per record, in order, and the counts."""

    results: list[RememberBatchItemResult]
    created: int
    existing: int
    refused: int


class AgentMemoryForgetResult(OpenModel):
    memory_id: str
    deleted: bool


class AgentMemoryUpdateResult(OpenModel):
    memory_id: str
    supersedes: str
    #: The new version as stored.
    record: AgentMemoryRecord | None = None


class AgentMemoryPage(OpenModel):
    """``meta/agent_memory/list``: one page of records and the cursor of the next (``None`` at the end)."""

    records: list[AgentMemoryRecord]
    next_cursor: str | None = None


class AgentMemoryRecordMeta(OpenModel):
    id: str
    kind: str
    title: str
    description: str = ""
    age_days: int
    rank: int | None = None


class ErasedRecord(OpenModel):
    """One record of an erase's content closure: ``{memory_id, scope, content_hash, status}``."""

    memory_id: str
    scope: dict[str, Any] = Field(default_factory=dict)
    content_hash: str | None = None
    status: str | None = None


class EraseResult(OpenModel):
    """``meta/agent_memory/erase`` and ``erase_identity``: what left (or, with ``dry_run``, would leave).

    ``erased_at_ms`` is ``None`` for a dry run; ``scopes`` names every scope the closure reached."""

    dry_run: bool
    erased_at_ms: int | None = None
    count: int
    scopes: list[str] = Field(default_factory=list)
    records: list[ErasedRecord] = Field(default_factory=list)
    #: ids of the proposals erased with the records (the identity's own, or holding the erased content)
    proposals: list[str] = Field(default_factory=list)


class HistoryAuthor(OpenModel):
    """Who wrote a version or a change: ``author`` (operator|application|agent|steward|distiller) and the
    agent's ``identity`` or the steward's ``run_id``."""

    author: str
    identity: str | None = None
    run_id: str | None = None


class HistoryChange(OpenModel):
    """One change of a version: ``change`` (created|import|update|tag_merge|release|promotion|forget|
    forget_released|tombstone|retier|rank|erase), ``at_ms`` (UTC epoch ms), ``by`` (``None`` for an erased version)."""

    change: str
    at_ms: int
    by: HistoryAuthor | None = None


class RecordVersion(OpenModel):
    """One version of a record. ``reason`` is the change that wrote it; ``withheld`` is ``"quarantined"``
    (quarantined content: ``title``, ``body``, ``tags``, ``metadata`` are ``None``), ``"erased"`` (only
    the id, ``status_before_erase`` and its changes' kinds and times remain) or ``None``. ``metadata``: the
    version's JSON object; ``expires_at_ms``: its expiry (UTC epoch ms; ``None``: never)."""

    memory_id: str
    status: str
    status_before_erase: str | None = None
    superseded_by: str | None = None
    supersedes: str | None = None
    derived_from: list[str] = Field(default_factory=list)
    author: HistoryAuthor | None = None
    trust: str | None = None
    created_at_ms: int | None = None
    updated_at_ms: int | None = None
    reason: str
    withheld: str | None = None
    title: str | None = None
    body: str | None = None
    tags: list[str] | None = None
    metadata: dict[str, Any] | None = None
    expires_at_ms: int | None = None
    changes: list[HistoryChange] = Field(default_factory=list)


class RecordHistory(OpenModel):
    """``meta/agent_memory/history``: the versions of a record, oldest first (``order`` is
    ``"oldest_first"``), at most 200 (``truncated`` when more are linked)."""

    memory_id: str
    order: str = "oldest_first"
    versions: list[RecordVersion]
    truncated: bool = False


class RecalledRecords(list[AgentMemoryRecord]):
    """The records of ``meta/agent_memory/recall``, best first (a plain ``list`` of
    :class:`AgentMemoryRecord`), with the recall's two labels:

    ``skip_reason``: ``None``, or why a contextual recall searched nothing (``"no_query_terms"``).
    ``degraded_reason``: ``None``, or why the provider answered with its fallback ranking; under hybrid
    recall the lexical ranking alone, e.g. ``"embedding_timeout"`` when the query's embedding did not
    finish within its share of ``recall_timeout_ms`` (every label: ``docs/rpc.md``).
    """

    skip_reason: str | None
    degraded_reason: str | None

    def __init__(self, records: list[AgentMemoryRecord] = (), *,  # type: ignore[assignment]
                 skip_reason: str | None = None, degraded_reason: str | None = None) -> None:
        super().__init__(records)
        self.skip_reason = skip_reason
        self.degraded_reason = degraded_reason

    @classmethod
    def from_result(cls, result: dict[str, Any]) -> RecalledRecords:
        """Parse a ``meta/agent_memory/recall`` result."""
        return cls([AgentMemoryRecord.model_validate(r) for r in result["records"]],
                   skip_reason=result.get("skip_reason"), degraded_reason=result.get("degraded_reason"))
