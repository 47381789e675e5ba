"""Typed results of the system methods: ``meta/status``, ``meta/storage/doctor``,
``meta/capabilities``, ``meta/events/list`` (docs/rpc.md, "System"): each the method's result model
(:mod:`meta_memory.rpc.results`) opened (:class:`OpenModel`), nested members re-typed to their opened
models. ``rpc.discover``'s document (:class:`OpenRpcDocument`) is typed here only."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import Field

from ...rpc import results as wire
from ._base import OPEN, OpenModel

__all__ = ["OpenRpcMethod", "OpenRpcDocument", "StorageSlot", "LedgerStatus", "StorageStatus", "UnlistedTool",
           "ContentTrustStatus", "AgentMemoryStatus", "EventsStatus", "Status", "DoctorFinding", "DoctorReport",
           "BackupFile", "BackupReport", "ExportPage", "CanRead", "AccessEnabled", "Capabilities", "TimelineEvent",
           "EventPage"]


class StorageSlot(wire.Slot, OpenModel):
    """One storage slot: ``{slot, path, durability, resolution, exists}``."""

    model_config = OPEN


class LedgerStatus(wire.LedgerStatus, OpenModel):
    """``{persisted, backend, assertions, max_retained, evicted}``."""

    model_config = OPEN


class StorageStatus(wire.StorageStatus, OpenModel):
    """``{slots}``: the storage census."""

    model_config = OPEN
    slots: Sequence[StorageSlot]


class UnlistedTool(wire.UnlistedTool, OpenModel):
    """A tool trusted only because no rule names it, and how often it was seen: ``{name, count}``."""

    model_config = OPEN


class ContentTrustStatus(wire.ContentTrustStatus, OpenModel):
    """How tool results are classified (``meta/status`` ``agent_memory.content_trust``): ``default``,
    ``names_any_tool``, ``default_untrusted_tools``, ``unlisted_trusted_tools``, a ``warning``."""

    model_config = OPEN
    unlisted_trusted_tools: Sequence[UnlistedTool]


class AgentMemoryStatus(wire.AgentMemoryStatus, OpenModel):
    """``{enabled, store, realm, realms, taint_tracker, content_trust, injection_sessions, recorder_tool,
    vector_backlog, telemetry}`` (all but ``enabled`` ``None`` when agent memory is off)."""

    model_config = OPEN
    content_trust: ContentTrustStatus | None = None


class EventsStatus(wire.EventsStatus, OpenModel):
    """``{last_event_id}``."""

    model_config = OPEN


class Status(wire.StatusResult, OpenModel):
    """``meta/status``: ``{version, state_dir, ledger, storage: {slots}, agent_memory, events}``.

    ``ledger`` is ``{persisted, backend, assertions, max_retained, evicted}``; ``agent_memory``
    (``enabled``, ``store``, ``realm``, ``realms``, counters) and ``events`` (``last_event_id``)."""

    model_config = OPEN
    ledger: LedgerStatus
    storage: StorageStatus
    agent_memory: AgentMemoryStatus
    events: EventsStatus


class DoctorFinding(wire.Finding, OpenModel):
    """One storage finding: ``{kind, severity ("blocks_startup" | "warning" | "error"), paths, message, fix}``
    (``kind``: ``predecessor_ledger``, ``file_name_twins``, ``leftover_stage``, ...)."""

    model_config = OPEN


class DoctorReport(wire.DoctorResult, OpenModel):
    """``meta/storage/doctor``: ``{state_dir, ok, slots, findings}`` (``state_dir`` ``None`` in memory)."""

    model_config = OPEN
    slots: Sequence[StorageSlot]
    findings: Sequence[DoctorFinding]


class BackupFile(wire.BackupFile, OpenModel):
    """One copied file: ``{path, kind (sqlite|ledger|key|file), bytes}`` (``key``: an installation key file)."""

    model_config = OPEN


class BackupReport(wire.BackupResult, OpenModel):
    """``meta/storage/backup``: ``dest``, ``began_at_ms`` (the consistency point), ``files``, their total
    ``bytes``, ``elsewhere`` (stores the directory does not hold, e.g. ``"postgres"``), ``seconds`` and
    ``removed_partials`` (``None``, or the working copies of killed backups removed beside ``dest``)."""

    model_config = OPEN
    files: Sequence[BackupFile]


class ExportPage(wire.ExportPageResult, OpenModel):
    """``meta/storage/export``: the next ``lines`` of the export file; ``done`` after the last one."""

    model_config = OPEN


class CanRead(wire.CanRead, OpenModel):
    """``{can_read}``."""

    model_config = OPEN


class AccessEnabled(wire.AccessEnabled, OpenModel):
    """``{enabled}``."""

    model_config = OPEN


class Capabilities(wire.CapabilitiesResult, OpenModel):
    """``meta/capabilities``: ``{methods (sorted wire names advertised to this caller), memory: {can_read},
    access: {enabled}}``."""

    model_config = OPEN
    memory: CanRead
    access: AccessEnabled


class TimelineEvent(wire.Event, OpenModel):
    """One timeline event: ``{event_id, identity, event_type, timestamp_ms, data}``; ``event_id`` is
    ``"console-evt-<n>"``, or ``"evt-<16 hex>"`` (ids of this caller alone) to a caller who sees only some
    identities' events."""

    model_config = OPEN


class EventPage(wire.EventsListResult, OpenModel):
    """``meta/events/list``: events oldest first, and the id to pass back as ``after``."""

    model_config = OPEN
    events: Sequence[TimelineEvent]


class OpenRpcMethod(OpenModel):
    """One method of the OpenRPC document: ``{name, summary?, params, result?}``."""

    name: str
    summary: str | None = None
    params: list[dict[str, Any]] = Field(default_factory=list)
    result: dict[str, Any] | None = None


class OpenRpcDocument(OpenModel):
    """``rpc.discover``: the gateway's OpenRPC document (``{openrpc, info, methods}``), built from its
    method table."""

    openrpc: str
    info: dict[str, Any] = Field(default_factory=dict)
    methods: list[OpenRpcMethod] = Field(default_factory=list)
