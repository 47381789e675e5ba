"""How a LangGraph store item is a meta-memory record: the one mapping :class:`~.langgraph.MetaMemoryStore`
writes and ``meta-memory import --from langgraph`` lands (no LangGraph import: the importer reads a
LangGraph database without the ``langgraph`` extra).

An item ``(namespace, key, value)`` is one record:

- ``title``: ``key`` (cut to the 200-byte title cap on a character boundary; ``"item"`` if that is empty);
- ``body``: ``{"created_at_ms", "key", "namespace", "ttl_minutes", "value"}`` as JSON (sorted keys, UTF-8 kept), at most
  the 64 KiB body cap; ``created_at_ms`` is the item's first creation time when a later version
  supersedes the first (``None`` on the first version: the record's own creation time is the item's);
  ``ttl_minutes`` the item's LangGraph ttl (``None``: it does not expire), which a read re-arms;
- ``tags``: ``lg:item``, ``lg:k:<hash of namespace + key>`` and ``lg:n<d>:<hash of the first d labels>``
  for each depth ``d`` (a prefix matches whole labels); at most 30 labels (32 tags per record).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from meta_memory.agent_memory.fields import MAX_MEMORY_TAGS, MAX_TITLE_BYTES, FieldError, normalize_metadata
from meta_memory.errors import echo
from meta_memory.identity import parse_identity

__all__ = ["ITEM_TAG", "TAG_PREFIX", "ItemRecord", "identity_label", "item_record", "key_tag", "prefix_tag"]

#: What every tag of an item's record begins with. Reserved: the ``memory`` tool refuses a tag beginning with
#: it (in any case), so a model's write is never read back by the store as an application's item.
TAG_PREFIX = "lg:"
#: The tag every item's record carries.
ITEM_TAG = f"{TAG_PREFIX}item"


def _h(labels: Iterable[str]) -> str:
    return hashlib.sha256(json.dumps(list(labels), ensure_ascii=False).encode("utf-8")).hexdigest()[:40]


def key_tag(namespace: tuple[str, ...], key: str) -> str:
    """The tag naming one item: ``lg:k:<hash of namespace + key>``."""
    return f"lg:k:{_h((*namespace, key))}"


def prefix_tag(prefix: tuple[str, ...]) -> str:
    """The tag of every item under ``prefix`` (whole labels): ``lg:n<depth>:<hash of the labels>``."""
    return f"lg:n{len(prefix)}:{_h(prefix)}"


@dataclass(frozen=True, slots=True)
class ItemRecord:
    """The record fields of one item: ``title``, ``body`` (the JSON envelope), ``tags`` and ``metadata``
    (:func:`item_metadata` of the value)."""

    title: str
    body: str
    tags: tuple[str, ...]
    metadata: dict[str, Any]


#: The metadata of an item whose value does not fit metadata's rules: such items are always candidates
#: of a filtered search, and the store checks them itself.
PARTIAL = "lg:partial"


def item_metadata(value: Mapping[str, Any]) -> dict[str, Any]:
    """The record metadata of an item's value: the value itself when it fits metadata's rules
    (``agent_memory/fields.py``), else ``{"lg:partial": true}``."""
    try:
        return normalize_metadata(value)
    except FieldError:
        return {PARTIAL: True}


def check_depth(namespace: tuple[str, ...]) -> None:
    """Refuse a namespace deeper than a record's tags can index (one tag per depth), before any label is
    hashed: a put's tags hash every prefix, so a namespace of many labels would cost time quadratic in
    its depth before it could be refused."""
    if len(namespace) > MAX_MEMORY_TAGS - 2:
        raise ValueError(f"a namespace deeper than {MAX_MEMORY_TAGS - 2} labels cannot be stored "
                         f"({MAX_MEMORY_TAGS} tags per record; this one has {len(namespace)} labels)")


def item_record(namespace: tuple[str, ...], key: str, value: Mapping[str, Any],
                created_at_ms: int | None = None, ttl_minutes: float | None = None) -> ItemRecord:
    """The record of the item ``(namespace, key)`` holding ``value`` (see the module doc).

    Raises ``ValueError`` naming the rule: an empty or non-string key, a value that is not a dict or
    not JSON, a namespace deeper than 30 labels. The body cap is the validator's (a larger body is
    refused when written)."""
    if not isinstance(key, str) or not key:
        raise ValueError(f"a LangGraph store key must be a non-empty string (got {echo(repr(key))})")
    if not isinstance(value, Mapping):
        raise ValueError(f"a LangGraph store value must be a dict (got {type(value).__name__})")
    check_depth(namespace)
    try:
        body = json.dumps({"namespace": list(namespace), "key": key, "value": dict(value),
                           "created_at_ms": created_at_ms, "ttl_minutes": ttl_minutes}, ensure_ascii=False,
                          sort_keys=True, allow_nan=False)  # strict JSON: every reader (JSON.parse too) reads it
    except (TypeError, ValueError) as exc:
        raise ValueError(f"LangGraph store values must be JSON: {exc}") from None
    except RecursionError:
        raise ValueError("LangGraph store values must be JSON: nested too deep") from None
    tags = (ITEM_TAG, key_tag(namespace, key), *(prefix_tag(namespace[:d]) for d in range(1, len(namespace) + 1)))
    encoded = key.encode("utf-8")
    title = key if len(encoded) <= MAX_TITLE_BYTES else encoded[:MAX_TITLE_BYTES].decode("utf-8", "ignore")
    return ItemRecord(title=title or "item", body=body, tags=tags, metadata=item_metadata(value))


def identity_label(label: str) -> str:
    """The identity a namespace label names (``identity_segment``): the label itself, exactly.

    The gateway reads an identity as its logical name (``rt:bob:9`` is ``bob``), so a label it would read
    as another identity would let one user's namespace write into another's memory. The mapping is
    one-to-one: a label is refused (``ValueError`` naming the label and the rule) unless it is already the
    identity it names -- no ``rt:<name>:<generation>`` respawn form, and nothing the gateway refuses as an
    identity (surrounding white space, control characters, more than 512 bytes, empty).
    """
    try:
        canonical = parse_identity(label)
    except ValueError as exc:
        raise ValueError(f"namespace label {echo(repr(label))} cannot name an identity (identity_segment): "
                         f"{exc}") from None
    if canonical != label:
        raise ValueError(
            f"namespace label {echo(repr(label))} names the identity {echo(repr(canonical))} (identity_segment): "
            "a label must be "
            "the identity itself, without surrounding white space or an rt:<name>:<generation> respawn form, "
            "so that no two labels share one identity's memory"
        )
    return label
