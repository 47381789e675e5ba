"""The one rule of how a timeline event about stored records names whose records they are.

An event about records of one scope is shown only to the readers of those records
(:meth:`meta_memory.services.access.AccessService.event_visible`): an identity scope's is published as an
event of that identity; another scope's (a mob, an operator scope, the realm) as a system event naming
``scope_kind`` and ``scope_key`` in its data, which a reader needs that scope's read grant to see. A
system event naming no scope is shown to every unscoped reader, so no part publishes record ids that way.
"""

from __future__ import annotations

from typing import Any

from .model import Scope, ScopeKind

__all__ = ["about_scope"]


def about_scope(event_type: str, data: dict[str, Any], scope: Scope) -> tuple[str, dict[str, Any], str | None]:
    """``(event_type, data, identity)`` for :meth:`~meta_memory.events.bus.EventBus.emit_many`: the event
    about records of ``scope``, of its identity for an identity scope, else naming the scope in ``data``
    (``scope_kind``, ``scope_key``: :meth:`~meta_memory.agent_memory.model.Scope.storage`)."""
    if scope.kind is ScopeKind.IDENTITY:
        return event_type, data, scope.key
    kind, key = scope.storage()
    return event_type, {**data, "scope_kind": kind, "scope_key": key}, None
