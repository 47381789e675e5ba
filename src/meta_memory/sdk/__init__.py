"""The Python SDK: ``Meta.builder()`` (embedded), ``Meta.connect(url)`` (HTTP), ``Meta.spawn(dir)`` (stdio).

``handle.agent(identity, realm=...)`` binds an identity (:class:`Agent`); ``agent.session(key)`` a
session (:class:`Session`); ``handle.ledger`` is the assertion ledger. ``MobHandle`` is the spec's name
of :class:`MetaHandle` (``MobHandle.memory_index(...)``). See docs/sdk.md.
"""

from . import memory, models
from .agent import Agent, AsyncAgent, AsyncSession, Session
from .builder import Meta, MetaBuilder
from .handle import AsyncLedger, AsyncMetaHandle, AsyncMobHandle, Ledger, MetaHandle, MobHandle
from .methods import HandleMethods
from .transport import GatewayUnreachable, HandleClosed, NotAGateway, UnreadableAnswer

__all__ = ["Meta", "MetaBuilder", "MetaHandle", "AsyncMetaHandle", "MobHandle", "AsyncMobHandle", "Agent", "AsyncAgent",
           "Session", "AsyncSession", "Ledger", "AsyncLedger", "HandleMethods", "GatewayUnreachable", "NotAGateway", "UnreadableAnswer", "HandleClosed", "memory", "models"]
