"""``meta/memory/index``, ``meta/memory/resolve``, ``meta/memory/query``, ``meta/memory/stores`` (seed: Indexing,
Conflict detection, Querying, Memory store info)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...access.requirements import unscoped
from ...ledger.model import (
    IndexRequest,
    MemoryIndexResult,
    MemoryQueryResult,
    MemoryResolveResult,
    QueryRequest,
    ResolveRequest,
    parse_index_params,
    parse_query_params,
    parse_resolve_params,
    parse_stores_params,
)
from ..params import NoParams
from ..registry import CallContext, MethodTable
from ..results import StoresResult

if TYPE_CHECKING:  # pragma: no cover
    from ...runtime import Runtime


def register(table: MethodTable) -> None:
    @table.method("meta/memory/index", parse_index_params, requires=unscoped("ledger.write"), mutating=True,
                  result=MemoryIndexResult, params_model=IndexRequest)
    def index(runtime: "Runtime", ctx: CallContext, req: IndexRequest) -> MemoryIndexResult:
        """Index an assertion and/or a conflict signal; persists the whole ledger (-32010 on failure)."""
        return runtime.ledger.index(req)

    @table.method("meta/memory/resolve", parse_resolve_params, requires=unscoped("ledger.write"), mutating=True,
                  result=MemoryResolveResult, params_model=ResolveRequest)
    def resolve(runtime: "Runtime", ctx: CallContext, req: ResolveRequest) -> MemoryResolveResult:
        """Resolve the conflict signal of ``(entity, topic, store)`` (no ``store``: of every store), so
        ``meta/gating/check`` allows again; persists the whole ledger (-32010 on failure, nothing changed).
        Each resolve that removed signals emits ``memory.conflict.resolved`` ``{entity, topic, stores}``."""
        out = runtime.ledger.resolve(req)
        if out.resolved:
            runtime.events.emit("memory.conflict.resolved", {
                "entity": out.entity, "topic": out.topic, "stores": [s.store for s in out.resolved]})
        return out

    @table.method("meta/memory/query", parse_query_params, requires=unscoped("ledger.read"), mutating=False,
                  result=MemoryQueryResult, params_model=QueryRequest)
    def query(runtime: "Runtime", ctx: CallContext, req: QueryRequest) -> MemoryQueryResult:
        """Exact filters on entity/topic/store plus an optional substring ``query``."""
        return runtime.ledger.query(req)

    @table.method("meta/memory/stores", parse_stores_params, requires=unscoped("ledger.read"), mutating=False,
                  result=StoresResult, params_model=NoParams)
    def stores(runtime: "Runtime", ctx: CallContext, req: None) -> StoresResult:
        """One ``{store, record_count}`` per supported store, in the fixed order."""
        return StoresResult(stores=runtime.ledger.stores())
