"""Wire models of the assertion ledger and the strict parsers of its RPC params.

Seed: Indexing, Querying, Conflict detection, Memory store info. Reference §1.2
(field names, serialised exactly as shown), §1.7 and §1.12 (refusal rules).

Every parser raises :class:`meta_memory.ledger.errors.LedgerValidationError`
carrying ``field`` and ``rule`` (the RPC layer answers it as -32602,
message ``Invalid params: <rule>``, ``data.field`` naming the field). Unknown
param members are refused with ``unknown field '<name>'``. A JSON ``null`` for
an optional member means *absent*.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict

from meta_memory.agent_memory.fields import FieldError, hidden_text_rule, normalize_metadata
from meta_memory.agent_memory.secrets import scan_values, secret_rule
from meta_memory.errors import echo
from meta_memory.ledger.errors import LedgerValidationError
from meta_memory.ledger.normalise import (
    DEFAULT_STORE,
    SUPPORTED_STORES,
    canonical_text,
    canonical_token,
    control_character_rule,
    has_control_character,
    name_rule,
    unsupported_store_rule,
)

__all__ = [
    "MemoryAssertion",
    "MemoryConflictSignal",
    "MemoryStoreInfo",
    "MemoryIndexResult",
    "MemoryQueryResult",
    "MemoryResolveResult",
    "IndexRequest",
    "QueryRequest",
    "ResolveRequest",
    "CanonicalIndex",
    "canonical_index",
    "canonical_resolve",
    "parse_index_params",
    "parse_query_params",
    "parse_resolve_params",
    "parse_stores_params",
]

#: Cap on each text field (bytes); ``metadata`` follows agent memory's metadata rule (8 KiB as JSON). The
#: ledger rewrites its whole file on every index and keeps 4,096 assertions, so the file stays bounded.
MAX_LEDGER_TEXT_BYTES = 65_536

_FROZEN = ConfigDict(frozen=True, extra="forbid", strict=True)


class MemoryAssertion(BaseModel):
    """One stored assertion.

    JSON: ``{"assertion_id": "memory-assert-000001", "entity", "topic", "store",
    "fact", "metadata": {...} | null, "indexed_at_ms": <UTC epoch ms>}``.
    ``metadata`` is kept verbatim (treat it as read-only).
    """

    model_config = _FROZEN

    assertion_id: str
    entity: str
    topic: str
    store: str
    fact: str
    metadata: Any = None
    indexed_at_ms: int


class MemoryConflictSignal(BaseModel):
    """One conflict signal, unique per ``(entity, topic, store)``.

    JSON: ``{"entity", "topic", "store", "reason": str | null, "updated_at_ms": <UTC epoch ms>}``.
    """

    model_config = _FROZEN

    entity: str
    topic: str
    store: str
    reason: str | None = None
    updated_at_ms: int


class MemoryStoreInfo(BaseModel):
    """``{"store": <name>, "record_count": <assertions + conflict signals in that store>}``."""

    model_config = _FROZEN

    store: str
    record_count: int


class MemoryIndexResult(BaseModel):
    """Result of ``meta/memory/index``.

    ``entity``/``topic``/``store`` are canonical; ``assertion_id`` is ``null`` when
    only a conflict was recorded; ``conflict_active`` is true when any conflict
    signal exists for this entity and topic, in any store.
    """

    model_config = _FROZEN

    entity: str
    topic: str
    store: str
    assertion_id: str | None = None
    conflict_active: bool = False


class MemoryQueryResult(BaseModel):
    """Result of ``meta/memory/query``: assertions in insertion order, conflicts in key order."""

    model_config = _FROZEN

    assertions: list[MemoryAssertion]
    conflicts: list[MemoryConflictSignal]


class IndexRequest(BaseModel):
    """Params of ``meta/memory/index`` (raw, as the caller gave them).

    ``entity`` and ``topic`` are required; ``store`` defaults to
    ``knowledge_graph``; ``fact`` is required unless ``conflict`` is true.
    """

    model_config = _FROZEN

    entity: str
    topic: str
    store: str | None = None
    fact: str | None = None
    metadata: dict[str, Any] | None = None
    conflict: bool | None = None
    conflict_reason: str | None = None


class MemoryResolveResult(BaseModel):
    """Result of ``meta/memory/resolve``.

    ``entity``/``topic`` are canonical, ``store`` too (``null``: every store); ``resolved`` holds the
    conflict signals this call removed, in key order (empty when none was active: nothing changed);
    ``conflict_active`` is true when a signal still exists for this entity and topic in any store
    (what ``meta/gating/check`` reads).
    """

    model_config = _FROZEN

    entity: str
    topic: str
    store: str | None = None
    resolved: list[MemoryConflictSignal]
    conflict_active: bool


class ResolveRequest(BaseModel):
    """Params of ``meta/memory/resolve`` (raw): ``entity`` and ``topic`` required, ``store`` optional
    (absent: the signals of every store for this entity and topic, the ones ``meta/gating/check`` reads)."""

    model_config = _FROZEN

    entity: str
    topic: str
    store: str | None = None


class QueryRequest(BaseModel):
    """Params of ``meta/memory/query``; every filter optional (raw, canonicalised by the ledger)."""

    model_config = _FROZEN

    entity: str | None = None
    topic: str | None = None
    store: str | None = None
    query: str | None = None


@dataclass(frozen=True, slots=True)
class CanonicalIndex:
    """An index request after canonicalisation: what the ledger actually writes."""

    entity: str
    topic: str
    store: str
    fact: str | None
    metadata: dict[str, Any] | None
    conflict: bool
    conflict_reason: str | None


def _canonical_key(raw_entity: str, raw_topic: str, *, new_name: bool = True) -> tuple[str, str]:
    """The canonical ``(entity, topic)`` of a write (index or resolve): trimmed, ASCII-lowercased, non-empty,
    no control character, and (``new_name``: an index, which may create the key) one spelling each
    (:func:`~meta_memory.ledger.normalise.name_rule`); refused naming the field."""
    out: list[str] = []
    for name, raw in (("entity", raw_entity), ("topic", raw_topic)):
        token = canonical_token(raw)
        if token is None:
            raise LedgerValidationError(f"{name} must be a non-empty string", name)
        if has_control_character(token):
            raise LedgerValidationError(control_character_rule(name), name)
        if new_name and (rule := name_rule(name, token)) is not None:
            raise LedgerValidationError(rule, name)
        out.append(token)
    return out[0], out[1]


def _canonical_store_param(raw: str | None) -> str | None:
    """A write's ``store`` param, canonical (``None`` when absent); an empty or unsupported one is refused."""
    if raw is None:
        return None
    token = canonical_token(raw)
    if token is None:
        raise LedgerValidationError("store must be a non-empty string when provided", "store")
    if token not in SUPPORTED_STORES:
        raise LedgerValidationError(unsupported_store_rule(token), "store")
    return token


def _check_sizes(fields: tuple[tuple[str, str | None], ...]) -> None:
    """Each named text of a write at most :data:`MAX_LEDGER_TEXT_BYTES` of UTF-8, checked as given (before
    trimming): the one place of the rule, for the RPC params, an import's ledger lines and an embedded
    caller alike. Raises :class:`LedgerValidationError` naming the first field over it."""
    for name, value in fields:
        if value is not None and len(value.encode("utf-8", "surrogatepass")) > MAX_LEDGER_TEXT_BYTES:
            raise LedgerValidationError(f"{name} must be at most {MAX_LEDGER_TEXT_BYTES} bytes", name)


def canonical_resolve(req: ResolveRequest) -> tuple[str, str, str | None]:
    """The canonical ``(entity, topic, store | None)`` a ``meta/memory/resolve`` names: the rules of
    :func:`canonical_index` for the three (``None``: every store), but the name rule
    (:func:`~meta_memory.ledger.normalise.name_rule`), so a signal indexed before it can still be removed.

    Raises:
        LedgerValidationError: a member over :data:`MAX_LEDGER_TEXT_BYTES`, empty entity/topic, a
            control character in either, an empty or unsupported store.
    """
    _check_sizes((("entity", req.entity), ("topic", req.topic), ("store", req.store)))
    entity, topic = _canonical_key(req.entity, req.topic, new_name=False)  # a signal older than the name rule
    return entity, topic, _canonical_store_param(req.store)


def canonical_index(req: IndexRequest) -> CanonicalIndex:
    """Canonicalise and check an :class:`IndexRequest` (reference §1.5).

    Raises:
        LedgerValidationError: entity, topic, store, fact or conflict reason over
            :data:`MAX_LEDGER_TEXT_BYTES` (65,536) bytes of UTF-8, naming the field (every write path:
            the RPC params, an import's ledger lines, an embedded caller); empty entity/topic, a control character (U+0000..U+001F, U+007F) left
            in entity or topic after trimming, empty or unsupported store, a blank
            fact, or no fact without ``conflict=true``; ``metadata`` breaking the one metadata rule
            agent memory's records follow (:func:`~meta_memory.agent_memory.fields.normalize_metadata`:
            a JSON object, no NaN or Infinity, safe integers, keys 1-64 bytes not starting with ``$`` and
            without ``.``, ``"``, a backslash or control characters, at most 5 levels, 128 keys and 8 KiB as JSON),
            with field ``metadata`` and that rule; a credential in any text
            field or anywhere in ``metadata`` (keys and string values), named by
            its secret class, never echoed (:mod:`meta_memory.agent_memory.secrets`); a Unicode tag
            character or a stray variation selector (hidden text,
            :func:`meta_memory.agent_memory.fields.hidden_text_rule`) in entity, topic, fact, conflict
            reason or metadata, naming the field.

    Only new writes pass through here: an assertion already in the ledger file is loaded with its
    metadata verbatim (:func:`meta_memory.ledger.persistence.load`) and rewritten unchanged.
    """
    _check_sizes((("entity", req.entity), ("topic", req.topic), ("store", req.store), ("fact", req.fact),
                  ("conflict_reason", req.conflict_reason)))
    entity, topic = _canonical_key(req.entity, req.topic)
    store = _canonical_store_param(req.store) or DEFAULT_STORE
    fact = None
    if req.fact is not None:
        fact = canonical_text(req.fact)
        if fact is None:
            raise LedgerValidationError("fact must be a non-empty string when provided", "fact")
    conflict = req.conflict is True
    if fact is None and not conflict:
        raise LedgerValidationError("fact is required unless conflict=true", "fact")
    conflict_reason = canonical_text(req.conflict_reason)
    for name, value in (("entity", entity), ("topic", topic), ("fact", fact), ("conflict_reason", conflict_reason)):
        if value is not None and (rule := hidden_text_rule(name, value)) is not None:
            raise LedgerValidationError(rule, name)
    metadata = None
    if req.metadata is not None:
        try:
            metadata = normalize_metadata(req.metadata, "metadata")
        except FieldError as exc:
            raise LedgerValidationError(exc.rule, exc.field) from None
    found = scan_values(
        {"entity": entity, "topic": topic, "fact": fact, "conflict_reason": conflict_reason, "metadata": metadata}
    )
    if found is not None:
        field, secret_class = found
        raise LedgerValidationError(secret_rule(field, secret_class), field)
    return CanonicalIndex(
        entity=entity,
        topic=topic,
        store=store,
        fact=fact,
        metadata=metadata,
        conflict=conflict,
        conflict_reason=conflict_reason,
    )


def _as_object(params: object) -> dict[str, Any]:
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise LedgerValidationError("params must be a JSON object", "params")
    return params


def _refuse_unknown(params: dict[str, Any], allowed: tuple[str, ...]) -> None:
    """An unknown member refused naming it as every refusal repeats a caller's name (:func:`meta_memory.errors.echo`:
    cut short, invisible and controlling characters escaped)."""
    for key in params:
        if key not in allowed:
            name = echo(str(key))
            raise LedgerValidationError(f"unknown field '{name}'", name)


def _optional(params: dict[str, Any], key: str, kind: type, what: str) -> Any:
    """``params[key]``, ``None`` when absent or null; any other value not a ``kind`` is refused
    with ``LedgerValidationError("<key> must be <what> when provided", key)``."""
    value = params.get(key)
    if value is not None and not isinstance(value, kind):
        raise LedgerValidationError(f"{key} must be {what} when provided", key)
    return value


def parse_index_params(params: object) -> IndexRequest:
    """Parse ``meta/memory/index`` params.

    Shape: ``{entity: str, topic: str, store?: str, fact?: str, metadata?: object,
    conflict?: bool, conflict_reason?: str}``.

    Raises:
        LedgerValidationError: with the reference's rule text, e.g.
            ``entity must be a non-empty string``,
            ``entity must not contain control characters (tab, newline, NUL, ...)`` (likewise topic),
            ``store 'x' is unsupported (allowed: knowledge_graph, vector, timeline, todo, top_of_mind)``,
            ``fact is required unless conflict=true``, ``params must be a JSON object``,
            ``unknown field 'x'``.
    """
    if params is None or not isinstance(params, dict):
        raise LedgerValidationError("params must be a JSON object", "params")
    _refuse_unknown(params, ("entity", "topic", "store", "fact", "metadata", "conflict", "conflict_reason"))
    entity = params.get("entity")
    if not isinstance(entity, str) or canonical_token(entity) is None:
        raise LedgerValidationError("entity must be a non-empty string", "entity")
    topic = params.get("topic")
    if not isinstance(topic, str) or canonical_token(topic) is None:
        raise LedgerValidationError("topic must be a non-empty string", "topic")
    store = _optional(params, "store", str, "a non-empty string")
    fact = _optional(params, "fact", str, "a non-empty string")
    metadata = _optional(params, "metadata", dict, "a JSON object")
    conflict = _optional(params, "conflict", bool, "a boolean")
    reason = _optional(params, "conflict_reason", str, "a string")
    req = IndexRequest(
        entity=entity,
        topic=topic,
        store=store,
        fact=fact,
        metadata=metadata,
        conflict=conflict,
        conflict_reason=reason,
    )
    canonical_index(req)  # store, fact and the fact-or-conflict rule
    return req


def parse_resolve_params(params: object) -> ResolveRequest:
    """Parse ``meta/memory/resolve`` params: ``{entity: str, topic: str, store?: str}``.

    Raises:
        LedgerValidationError: ``params must be a JSON object``, ``unknown field 'x'``,
            ``entity must be a non-empty string`` (likewise topic), ``entity must not contain control
            characters (tab, newline, NUL, ...)``, ``store must be a non-empty string when provided``,
            ``store 'x' is unsupported (allowed: ...)``, a member over 65,536 bytes.
    """
    if params is None or not isinstance(params, dict):
        raise LedgerValidationError("params must be a JSON object", "params")
    _refuse_unknown(params, ("entity", "topic", "store"))
    entity = params.get("entity")
    if not isinstance(entity, str):
        raise LedgerValidationError("entity must be a non-empty string", "entity")
    topic = params.get("topic")
    if not isinstance(topic, str):
        raise LedgerValidationError("topic must be a non-empty string", "topic")
    store = _optional(params, "store", str, "a non-empty string")
    req = ResolveRequest(entity=entity, topic=topic, store=store)
    canonical_resolve(req)
    return req


def parse_query_params(params: object) -> QueryRequest:
    """Parse ``meta/memory/query`` params: ``null`` or ``{entity?, topic?, store?, query?}`` (all strings).

    Empty filters and unsupported store names are *not* refused here: the seed
    treats them as absent filters (Querying).

    Raises:
        LedgerValidationError: ``params must be a JSON object``, ``unknown field 'x'``,
            ``entity filter must be a string`` (likewise topic, store, query).
    """
    obj = _as_object(params)
    _refuse_unknown(obj, ("entity", "topic", "store", "query"))
    values: dict[str, str | None] = {}
    for key in ("entity", "topic", "store", "query"):
        value = obj.get(key)
        if value is not None and not isinstance(value, str):
            raise LedgerValidationError(f"{key} filter must be a string", key)
        values[key] = value
    return QueryRequest(**values)


def parse_stores_params(params: object) -> None:
    """Check ``meta/memory/stores`` params: ``null`` or ``{}``.

    Raises:
        LedgerValidationError: ``params must be a JSON object`` or ``unknown field 'x'``.
    """
    obj = _as_object(params)
    _refuse_unknown(obj, ())
