"""The method table, assembled from one module per domain.

Each module exposes ``register(table)``; :func:`build_method_table` calls them
all. Every transport (HTTP, stdio, embedded SDK, MCP) uses the table this
returns.
"""

from __future__ import annotations

from functools import lru_cache

from ..registry import MethodTable

__all__ = ["build_method_table"]


@lru_cache(maxsize=1)
def build_method_table() -> MethodTable:
    from . import agent_memory, host, ledger, panel, review, storage, system

    table = MethodTable()
    for module in (system, storage, ledger, agent_memory, host, review, panel):
        module.register(table)
    system.register_discover(table)
    return table
