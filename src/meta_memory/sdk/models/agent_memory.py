"""Typed results of the agent-memory methods, as the SDK returns them (pydantic v2).

Each is the method's result model (:mod:`meta_memory.rpc.results`, reference §2A "Wire-level record",
§10 "Handle methods") opened (:class:`OpenModel`: members a newer gateway adds are kept, not refused);
the members are declared once, where the gateway holds its answers to them. A nested member is
re-typed only to its opened model.

``meta/agent_memory/remember`` answers :class:`RememberedRecord` (an :class:`AgentMemoryRecord` with
``created``, ``supersedes``, ``tags_added``, ``quarantined``); ``meta/agent_memory/recall`` answers
:class:`RecalledRecords` (a list of records carrying ``skip_reason`` and ``degraded_reason``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...rpc import results as wire
from ._base import OPEN, OpenModel

__all__ = ["AgentMemoryRecord", "RememberedRecord", "RecalledRecords", "AgentMemoryForgetResult",
           "AgentMemoryUpdateResult", "AgentMemoryRecordMeta", "AgentMemoryPage", "BatchItemError",
           "RememberBatchItemResult", "RememberBatchResult", "ScopeRef", "StatusRef", "ErasedRecord", "EraseResult",
           "HistoryAuthor", "HistoryChange", "RecordVersion", "RecordHistory"]


class AgentMemoryRecord(wire.WireRecord, OpenModel):
    """A record as the wire carries it: ``{memory_id, title, body, tags, metadata, created_at_ms,
    updated_at_ms, expires_at_ms}`` (``metadata`` ``{}`` when none; ``expires_at_ms`` ``None``: never)."""

    model_config = OPEN


class RememberedRecord(wire.RememberResult, AgentMemoryRecord):
    """``meta/agent_memory/remember``: the record, and ``created`` (``False``: an active exact-content
    duplicate was returned), ``supersedes`` and ``tags_added`` (the duplicate lacked some of the given
    tags: they were merged into a new version, which supersedes this id), ``quarantined`` (with
    ``derived_from_sessions`` only: why the record waits in quarantine; ``None`` when it is active)."""

    model_config = OPEN


class BatchItemError(wire.BatchError, OpenModel):
    """A refused batch item's error: ``{code, message, data}`` (``data.op_index`` the item's index)."""

    model_config = OPEN


class RememberBatchItemResult(wire.BatchItem, OpenModel):
    """One item of ``meta/agent_memory/remember_batch``: ``memory_id`` and ``created`` when the record was
    stored or deduplicated, else ``error`` (``{code, message, data}``, ``data.op_index`` = ``op_index``)."""

    model_config = OPEN
    error: BatchItemError | None = None

    @property
    def ok(self) -> bool:
        """Whether the record is stored (created now or already there)."""
        return self.error is None


class RememberBatchResult(wire.RememberBatchResult, OpenModel):
    """``meta/agent_memory/remember_batch``: a result per record, in order, and the counts."""

    model_config = OPEN
    results: Sequence[RememberBatchItemResult]


class AgentMemoryForgetResult(wire.ForgetResult, OpenModel):
    """``meta/agent_memory/forget``: ``{memory_id, deleted}``."""

    model_config = OPEN


class AgentMemoryUpdateResult(wire.UpdateResult, OpenModel):
    """``meta/agent_memory/update``: ``{memory_id, supersedes, record}`` (``record``: the new version as stored;
    an update that changed nothing answers the current version with ``supersedes`` ``None``)."""

    model_config = OPEN
    record: AgentMemoryRecord


class AgentMemoryPage(wire.ListResult, OpenModel):
    """``meta/agent_memory/list``: one page of records and the cursor of the next (``None`` at the end)."""

    model_config = OPEN
    records: Sequence[AgentMemoryRecord]


class AgentMemoryRecordMeta(wire.ManifestRow, OpenModel):
    """A row of ``meta/agent_memory/manifest``: ``{id, kind, title, description, age_days, rank}``."""

    model_config = OPEN


class ScopeRef(wire.ScopeRef, OpenModel):
    """``{scope, realm, identity? | mob? | operator?}``."""

    model_config = OPEN


class StatusRef(wire.StatusRef, OpenModel):
    """``{status, by?, reason?}``: ``by`` the successor of a superseded record, ``reason`` a quarantine's."""

    model_config = OPEN


class ErasedRecord(wire.ErasedRecord, OpenModel):
    """One record of an erase's content closure: ``{memory_id, scope, content_hash, status}``."""

    model_config = OPEN
    scope: ScopeRef


class EraseResult(wire.EraseResult, OpenModel):
    """``meta/agent_memory/erase`` and ``erase_identity``: what left (or, with ``dry_run``, would leave).

    ``erased_at_ms`` is ``None`` for a dry run; ``scopes`` names every scope the closure reached."""

    model_config = OPEN
    records: Sequence[ErasedRecord]


class HistoryAuthor(wire.HistoryAuthor, OpenModel):
    """Who wrote a version or a change: ``author`` (operator|application|agent|steward|distiller) and the
    agent's ``identity`` or the steward's ``run_id``."""

    model_config = OPEN


class HistoryChange(wire.HistoryChange, OpenModel):
    """One change of a version: ``change`` (created|import|update|tag_merge|release|promotion|forget|
    forget_released|tombstone|retier|rank|erase), ``at_ms`` (UTC epoch ms), ``by`` (``None`` for an erased version)."""

    model_config = OPEN
    by: HistoryAuthor | None


class RecordVersion(wire.HistoryVersion, OpenModel):
    """One version of a record. ``reason`` is the change that wrote it; ``withheld`` is ``"quarantined"``
    (quarantined content: ``title``, ``body``, ``tags``, ``metadata`` are ``None``), ``"erased"`` (only
    the id, ``status_before_erase`` and its changes' kinds and times remain) or ``None``. ``metadata``: the
    version's JSON object; ``expires_at_ms``: its expiry (UTC epoch ms; ``None``: never)."""

    model_config = OPEN
    author: HistoryAuthor | None
    changes: Sequence[HistoryChange]


class RecordHistory(wire.HistoryResult, OpenModel):
    """``meta/agent_memory/history``: the versions of a record, oldest first (``order`` is
    ``"oldest_first"``), at most 200 (``truncated`` when more are linked)."""

    model_config = OPEN
    versions: Sequence[RecordVersion]


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
