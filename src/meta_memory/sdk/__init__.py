"""The Python SDK: ``Meta.builder()`` (embedded), ``Meta.connect(url)`` (HTTP), ``Meta.spawn(dir)`` (stdio).

``handle.agent(identity, realm=...)`` binds an identity (:class:`Agent`); ``agent.session(key)`` a
session (:class:`Session`); ``handle.ledger`` is the assertion ledger. ``MobHandle`` is the spec's name
of :class:`MetaHandle` (``MobHandle.memory_index(...)``). See docs/sdk.md.

The names below load on first use, so a program that only talks to a gateway over HTTP (the shell commands
with ``--url``) does not import the embedded builder and the runtime it starts.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

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


def __getattr__(name: str) -> object:
    """A public name of the SDK, imported from its module on first use; AttributeError for any other name."""
    if name in ("memory", "models"):
        return importlib.import_module(f"{__name__}.{name}")
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)


def __dir__() -> list[str]:
    """The module's names, the ones loaded on first use included."""
    return sorted({*globals(), *__all__})
