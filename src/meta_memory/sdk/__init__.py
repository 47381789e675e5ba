"""The Python SDK: ``Meta.builder()`` (embedded), ``Meta.connect(url)`` (HTTP), ``Meta.spawn(dir)`` (stdio).

``handle.agent(identity, realm=...)`` binds an identity (:class:`Agent`); ``agent.session(key)`` a
session (:class:`Session`); ``handle.ledger`` is the assertion ledger. ``MobHandle`` is the spec's name
of :class:`MetaHandle` (``MobHandle.memory_index(...)``). See docs/sdk.md.

The names below load on first use, so a program that only talks to a gateway over HTTP (the shell commands
with ``--url``) does not import the embedded builder and the runtime it starts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy_names import lazy_names

if TYPE_CHECKING:  # pragma: no cover
    from . import memory, models
    from .agent import Agent, AsyncAgent, AsyncSession, Session
    from .builder import Meta, MetaBuilder
    from .handle import AsyncLedger, AsyncMetaHandle, AsyncMobHandle, Ledger, MetaHandle, MobHandle
    from .methods import HandleMethods
    from .transport import GatewayUnreachable, HandleClosed, NotAGateway, UnreadableAnswer

__all__ = ["Meta", "MetaBuilder", "MetaHandle", "AsyncMetaHandle", "MobHandle", "AsyncMobHandle", "Agent", "AsyncAgent",
           "Session", "AsyncSession", "Ledger", "AsyncLedger", "HandleMethods", "GatewayUnreachable", "NotAGateway", "UnreadableAnswer", "HandleClosed", "memory", "models"]

#: Where each public name is defined (a module of this package; ``memory`` and ``models`` are modules).
_HOMES = {
    "Agent": "agent", "AsyncAgent": "agent", "AsyncSession": "agent", "Session": "agent",
    "Meta": "builder", "MetaBuilder": "builder",
    "AsyncLedger": "handle", "AsyncMetaHandle": "handle", "AsyncMobHandle": "handle", "Ledger": "handle",
    "MetaHandle": "handle", "MobHandle": "handle",
    "HandleMethods": "methods",
    "GatewayUnreachable": "transport", "HandleClosed": "transport", "NotAGateway": "transport",
    "UnreadableAnswer": "transport",
}


__getattr__, __dir__ = lazy_names(__name__, _HOMES, modules=("memory", "models"))
