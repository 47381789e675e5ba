"""The operational assertion ledger (``meta/memory/*``): assertions and conflict
signals held by the runtime and persisted as one local JSON file.

Public entry points: :class:`AssertionLedger`, :func:`parse_memory_section`,
the wire models and their param parsers (the RPC methods are registered in :mod:`meta_memory.rpc.methods.ledger`).
"""

from meta_memory.ledger.config import LedgerConfig, parse_memory_section
from meta_memory.ledger.ledger import ASSERTION_ID_PREFIX, LEDGER_FILE_NAME, AssertionLedger
from meta_memory.ledger.model import (
    IndexRequest,
    MemoryAssertion,
    MemoryConflictSignal,
    MemoryIndexResult,
    MemoryQueryResult,
    MemoryResolveResult,
    MemoryStoreInfo,
    QueryRequest,
    ResolveRequest,
    parse_index_params,
    parse_query_params,
    parse_resolve_params,
    parse_stores_params,
)
from meta_memory.ledger.normalise import DEFAULT_STORE, SUPPORTED_STORES
from meta_memory.ledger.persistence import MAX_RETAINED

__all__ = [
    "ASSERTION_ID_PREFIX",
    "LEDGER_FILE_NAME",
    "MAX_RETAINED",
    "DEFAULT_STORE",
    "SUPPORTED_STORES",
    "AssertionLedger",
    "LedgerConfig",
    "parse_memory_section",
    "IndexRequest",
    "QueryRequest",
    "ResolveRequest",
    "MemoryAssertion",
    "MemoryConflictSignal",
    "MemoryIndexResult",
    "MemoryQueryResult",
    "MemoryResolveResult",
    "MemoryStoreInfo",
    "parse_index_params",
    "parse_query_params",
    "parse_resolve_params",
    "parse_stores_params",
]
