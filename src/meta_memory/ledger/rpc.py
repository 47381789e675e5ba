"""JSON-RPC handlers of the assertion ledger: ``meta/memory/index|query|stores``.

Each handler takes the ledger and the raw ``params`` (already JSON-decoded) and
returns the JSON-ready ``result``. Refusals are raised as
:class:`~meta_memory.errors.InvalidParams` (-32602) or
:class:`~meta_memory.errors.MemoryBackendUnavailable` (-32010) for the one
error mapper to translate.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from meta_memory.ledger.ledger import AssertionLedger
from meta_memory.ledger.model import parse_index_params, parse_query_params, parse_stores_params

__all__ = ["memory_index", "memory_query", "memory_stores", "METHODS"]


def memory_index(ledger: AssertionLedger, params: object) -> dict[str, Any]:
    """``meta/memory/index`` -> ``{entity, topic, store, assertion_id, conflict_active}``."""
    return ledger.index(parse_index_params(params)).model_dump(mode="json")


def memory_query(ledger: AssertionLedger, params: object) -> dict[str, Any]:
    """``meta/memory/query`` -> ``{assertions: [...], conflicts: [...]}``."""
    return ledger.query(parse_query_params(params)).model_dump(mode="json")


def memory_stores(ledger: AssertionLedger, params: object) -> dict[str, Any]:
    """``meta/memory/stores`` -> ``{stores: [{store, record_count}, ...]}`` (five entries, fixed order)."""
    parse_stores_params(params)
    return {"stores": [info.model_dump(mode="json") for info in ledger.stores()]}


#: Method name -> handler, for the gateway's method table.
METHODS: dict[str, Callable[[AssertionLedger, object], dict[str, Any]]] = {
    "meta/memory/index": memory_index,
    "meta/memory/query": memory_query,
    "meta/memory/stores": memory_stores,
}
