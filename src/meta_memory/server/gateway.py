"""The gateway: a runtime plus the method table plus a dispatcher, shared by every transport."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from ..rpc.dispatch import Dispatcher
from ..rpc.methods import build_method_table
from ..rpc.registry import CallContext, MethodTable
from ..runtime import Runtime

__all__ = ["Gateway"]


@dataclass
class Gateway:
    """Binds one :class:`~meta_memory.runtime.Runtime` to the method table."""

    runtime: Runtime
    table: MethodTable
    dispatcher: Dispatcher
    stopping: threading.Event = field(default_factory=threading.Event)
    """Set when the server begins a graceful shutdown: long-lived streams (``/events``) end."""

    @classmethod
    def for_runtime(cls, runtime: Runtime) -> "Gateway":
        table = build_method_table()
        settings = runtime.config.gateway
        return cls(runtime, table, Dispatcher(table, runtime, max_batch=settings.max_batch,
                                              max_batch_ms=settings.max_batch_ms,
                                              max_response_bytes=settings.max_response_bytes))

    def authenticate(self, authorization: str | None) -> Any:
        """The principal for an ``Authorization`` header (anonymous when access is not configured).

        Raises :class:`~meta_memory.access.principal.AuthenticationFailed` for a bad token."""
        return self.runtime.access.authenticate(authorization)

    def call(self, method: str, params: Any, ctx: CallContext | None = None) -> Any:
        """One call through the table (the embedded SDK's path). Raises ``MetaError``."""
        return self.table.call(self.runtime, ctx or CallContext(transport="embedded"), method, params)
