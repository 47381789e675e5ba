"""``meta/status``, ``meta/storage/doctor``, ``meta/capabilities``, ``meta/events/list``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field, field_validator

from ...access.requirements import PUBLIC, anywhere, unscoped
from ...errors import ValueRuleBroken
from ...events.cursor import AFTER_RULE, is_event_cursor
from ..openrpc import build_openrpc
from ..params import Params
from ..registry import CallContext, MethodTable
from ..results import AccessEnabled, CanRead, CapabilitiesResult, DoctorResult, EventsListResult, StatusResult

if TYPE_CHECKING:  # pragma: no cover
    from ...events.bus import EventEnvelope
    from ...runtime import Runtime


class EventsListParams(Params):
    after: str | int | None = None
    limit: int = Field(default=100)

    @field_validator("after")
    @classmethod
    def _after(cls, value: Any) -> Any:
        if value is not None and not is_event_cursor(value):
            raise ValueError(AFTER_RULE)
        return value

    @field_validator("limit")
    @classmethod
    def _limit(cls, value: int) -> int:
        if not 1 <= value <= 1000:
            raise ValueError("limit must be between 1 and 1000")
        return value


def register(table: MethodTable) -> None:
    @table.method("meta/status", requires=unscoped("operator.status"), mutating=False,
                  result=StatusResult)
    def status(runtime: "Runtime", ctx: CallContext, params: Any) -> dict[str, Any]:
        """Version, ledger backend and the storage census (``storage.slots``)."""
        return runtime.status()

    @table.method("meta/storage/doctor", requires=unscoped("operator.status"), mutating=False,
                  result=DoctorResult)
    def doctor(runtime: "Runtime", ctx: CallContext, params: Any) -> dict[str, Any]:
        """Slots, file-name twins, predecessor files, leftover stages, a malformed ledger, damaged databases,
        orphaned ``-wal`` files and low disk, each with a fix (headers and schema pages only: the full
        ``PRAGMA quick_check`` runs in the background, see ``GET /v1/ready``, and offline in ``meta-memory doctor``)."""
        if runtime.layout is None:
            return {"state_dir": None, "slots": [], "findings": []}
        backup_dir = runtime.config.gateway.backup_dir
        return runtime.layout.doctor(min_free_disk_mb=runtime.config.gateway.min_free_disk_mb,
                                     backup_dirs=[Path(backup_dir)] if backup_dir else [])

    @table.method("meta/capabilities", requires=PUBLIC, mutating=False,
                  result=CapabilitiesResult)
    def capabilities(runtime: "Runtime", ctx: CallContext, params: Any) -> CapabilitiesResult:
        """The methods advertised on this gateway and the caller's memory capabilities."""
        return CapabilitiesResult(methods=table.names(runtime),
                                  memory=CanRead(can_read=runtime.access.memory_can_read(ctx.principal)),
                                  access=AccessEnabled(enabled=runtime.access.enabled))

    @table.method("meta/events/list", EventsListParams, requires=anywhere("agent.memory.read"), mutating=False,
                  result=EventsListResult)
    def events_list(runtime: "Runtime", ctx: CallContext, params: EventsListParams) -> dict[str, Any]:
        """Timeline events after ``after`` (an event_id this caller was shown, or a sequence number when
        it sees every event), oldest first. A caller who sees only some identities' events is shown
        opaque ids of its own (:mod:`meta_memory.events.cursor`), at most ``limit`` of its events, and a
        ``last_event_id`` that names its own last event (or echoes ``after``): nothing counts the events
        it may not see. Every caller's empty page echoes ``after`` as its id (``null`` when no ``after``,
        or ``0``, was given), so a client polling with ``after = last_event_id`` never starts over. Raises ``ValueRuleBroken`` (``-32602``, ``field: after``) for a cursor it was not given: a plain number
        from such a caller, or an id made up or shown to another caller, refused alike
        (:meth:`~meta_memory.events.cursor.EventCursor.parse`)."""
        cursor = runtime.access.event_cursor(ctx.principal)
        after = cursor.parse(params.after, runtime.events.last_seq) if params.after is not None else None
        if params.after is not None and after is None:
            raise ValueRuleBroken("after must be an event_id this caller was shown ('evt-<16 hex>') or 0: event "
                                  "ids are per caller here", "after")
        if not cursor.opaque:
            events = runtime.events.list(after, params.limit)
            visible = [e for e in events if _event_visible(runtime, ctx, e)]
            last_seq = events[-1].seq if events else after
        else:
            visible = [e for e in runtime.events.list(after, runtime.events.retention)
                       if _event_visible(runtime, ctx, e)][:params.limit]
            last_seq = visible[-1].seq if visible else after
        # an empty page echoes ``after`` (as this caller's id), so polling with it never starts over
        last = cursor.event_id(last_seq) if last_seq else None
        return {"events": [runtime.access.event_json(ctx.principal, e, cursor) for e in visible],
                "last_event_id": last}


def register_discover(table: MethodTable) -> None:
    """``rpc.discover`` (the OpenRPC convention), registered last so it describes every method."""

    @table.method("rpc.discover", requires=PUBLIC, mutating=False, result=dict[str, Any])
    def discover(runtime: "Runtime", ctx: CallContext, params: Any) -> dict[str, Any]:
        """The OpenRPC document of the methods this gateway advertises (params and result schemas)."""
        return build_openrpc(table, runtime)


def _event_visible(runtime: "Runtime", ctx: CallContext, event: EventEnvelope) -> bool:
    return runtime.access.event_visible(ctx.principal, event)
