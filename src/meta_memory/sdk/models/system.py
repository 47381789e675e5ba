"""Typed results of the system methods: ``meta/status``, ``meta/storage/doctor``,
``meta/capabilities``, ``meta/events/list`` (docs/rpc.md, "System")."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ._base import OpenModel

__all__ = ["OpenRpcMethod", "OpenRpcDocument", "StorageSlot", "Status", "DoctorFinding", "DoctorReport", "BackupFile", "BackupReport", "ExportPage", "Capabilities", "TimelineEvent", "EventPage"]


class StorageSlot(OpenModel):
    """One storage slot: ``{slot, path, durability, resolution, exists}``."""

    slot: str
    path: str | None = None
    durability: str | None = None
    resolution: str | None = None
    exists: bool | None = None


class _Storage(OpenModel):
    slots: list[StorageSlot] = Field(default_factory=list)


class Status(OpenModel):
    """``meta/status``: ``{version, state_dir, ledger, storage: {slots}, agent_memory, events}``.

    ``ledger`` is ``{persisted, backend}``; ``agent_memory`` (``enabled``, ``store``, ``realm``,
    ``realms``, counters) and ``events`` (``last_event_id``) are kept as the gateway sends them."""

    version: str
    state_dir: str | None = None
    ledger: dict[str, Any] = Field(default_factory=dict)
    storage: _Storage = Field(default_factory=_Storage)
    agent_memory: dict[str, Any] = Field(default_factory=dict)
    events: dict[str, Any] = Field(default_factory=dict)


class DoctorFinding(OpenModel):
    """One storage finding: ``{kind, severity ("blocks_startup" | "warning"), paths, message, fix}``
    (``kind``: ``predecessor_ledger``, ``file_name_twins``, ``leftover_stage``, ...)."""

    kind: str
    severity: str | None = None
    paths: list[str] = Field(default_factory=list)
    message: str | None = None
    fix: str | None = None


class DoctorReport(OpenModel):
    """``meta/storage/doctor``: ``{state_dir, ok, slots, findings}`` (``state_dir`` ``None`` in memory)."""

    state_dir: str | None = None
    ok: bool | None = None
    slots: list[StorageSlot] = Field(default_factory=list)
    findings: list[DoctorFinding] = Field(default_factory=list)


class BackupFile(OpenModel):
    path: str = ""
    kind: str = ""
    bytes: int = 0


class BackupReport(OpenModel):
    """``meta/storage/backup``: ``dest``, ``began_at_ms`` (the consistency point), ``files``, their total
    ``bytes``, ``elsewhere`` (stores the directory does not hold, e.g. ``"postgres"``) and ``seconds``."""

    dest: str = ""
    began_at_ms: int = 0
    files: list[BackupFile] = Field(default_factory=list)
    bytes: int = 0
    elsewhere: list[str] = Field(default_factory=list)
    seconds: float = 0.0


class ExportPage(OpenModel):
    """``meta/storage/export``: the next ``lines`` of the export file; ``done`` after the last one."""

    export_id: str = ""
    lines: list[str] = Field(default_factory=list)
    done: bool = False


class _CanRead(OpenModel):
    can_read: bool = False


class _AccessInfo(OpenModel):
    enabled: bool = False


class Capabilities(OpenModel):
    """``meta/capabilities``: ``{methods (sorted wire names advertised to this caller), memory: {can_read},
    access: {enabled}}``."""

    methods: list[str]
    memory: _CanRead = Field(default_factory=_CanRead)
    access: _AccessInfo = Field(default_factory=_AccessInfo)


class TimelineEvent(OpenModel):
    """One timeline event: ``{event_id ("console-evt-<n>"), identity, event_type, timestamp_ms, data}``."""

    event_id: str
    identity: str | None = None
    event_type: str
    timestamp_ms: int
    data: dict[str, Any] = Field(default_factory=dict)


class EventPage(OpenModel):
    """``meta/events/list``: events oldest first, and the id to pass back as ``after``."""

    events: list[TimelineEvent] = Field(default_factory=list)
    last_event_id: str | None = None


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
