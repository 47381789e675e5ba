"""A LangGraph ``BaseStore`` over meta-memory (the ``langgraph`` extra: ``pip install 'meta-memory[langgraph]'``).

``MetaMemoryStore(handle)`` gives a compiled graph (``graph.compile(store=...)``, ``get_store()``) a store
whose items are meta-memory records, on any handle: embedded (``Meta.builder()...build()``), over
HTTP (``Meta.connect(url)``) or stdio.

Mapping (one record per item, newest version active; an update supersedes it):

==================  ====================================================================================
LangGraph           meta-memory
==================  ====================================================================================
store instance      one ``realm`` and one ``identity`` (default ``"langgraph"``), or ``identity_segment=i``:
                    the namespace's ``i``-th label names the identity, so each user's items live (and are
                    access-controlled) under their own identity; the label must be that identity exactly
                    (one label, one identity: `` bob `` or ``rt:bob:9`` is refused, see
                    :func:`identity_label`)
``(namespace, key)`` the record title is ``key``; tags ``lg:item``, ``lg:k:<hash of namespace+key>`` and one
                    ``lg:n<d>:<hash of the first d labels>`` per depth: a prefix is matched on whole labels
                    (``("tenant", "acme")`` never matches ``("tenant", "acme-corp")``)
``value``           the record body: ``{"namespace", "key", "value", "created_at_ms", "ttl_minutes"}`` as
                    JSON (at most the body cap, 64 KiB); and the value itself as the record's ``metadata``
                    when it fits metadata's rules (8 KiB, 5 levels, keys without ``.`` or a leading ``$``),
                    else the metadata ``{"lg:partial": true}``
``ttl`` (minutes)   the record's expiry: ``ttl_s`` = ``ceil(ttl * 60)`` on the write, so the record expires
                    (``expires_at_ms``) and leaves every read then; ``ttl=None`` (or no ``default_ttl``):
                    none. A read with ``refresh_ttl`` (``TTLConfig.refresh_on_read``, default true)
                    re-arms the item's ttl from now: an update of the record with ``ttl_s`` alone
``put`` / ``delete`` ``meta/agent_memory/remember`` or ``update``; ``forget`` (a tombstone)
``get``             ``meta/agent_memory/list`` on the item's key tag
``search(query=)``  ``meta/agent_memory/recall`` (at most 64 ranked records) with ``filter`` as the
                    recall's metadata ``filter`` (the best among the matching items), then the prefix,
                    ``offset`` and ``limit``; ``score`` falls with the rank (1.0, 0.5, 0.33, ...)
``search()``        ``meta/agent_memory/list`` on the prefix tag with ``filter`` as its metadata ``filter``,
                    newest updated first
``list_namespaces`` every item's namespace (one listing of the identity), matched, truncated, de-duplicated
==================  ====================================================================================

These are application writes (the ``meta/agent_memory/*`` RPCs): they are never quarantined. Writes a
*model* makes through a tool keep going through the firewall: give the model meta-memory's ``memory``
tool (``meta/agent_memory/tool``), not this store. ``index=`` is accepted and ignored (every record is
full-text indexed). ``supports_ttl`` is true: ``put(..., ttl=minutes)`` and the store's ``TTLConfig``
(``MetaMemoryStore(handle, ttl={"default_ttl": 60, "refresh_on_read": True})``) become record expiry
(the gateway's ``[agent_memory] max_ttl_s`` caps it, a longer ttl is refused, -32602
``ttl_s``); the gateway's own sweep tombstones expired items, so ``sweep_interval_minutes`` and
``omit_expired`` need nothing here (an expired item is never returned). ``abatch`` runs ``batch`` in a
worker thread.

``filter`` has the gateway's metadata-filter semantics (docs/rpc.md "Metadata filters"): equality,
``$eq $ne $gt $gte $lt $lte $in $nin $and $or $not``, dotted paths into nested dicts; a missing key reads
as ``null`` (so ``$ne`` matches it, as on LangGraph's own stores); numbers compare as numbers and strings
as strings, never across types (LangGraph's in-memory store casts ``$gt`` operands with ``float()``; here
``"5"`` is not greater than ``3``). An item whose value does not fit metadata is always a candidate and
is checked against the filter here, with the same evaluator, so every item answers alike.

A ``put`` of the value an item already holds, with no ttl on the put or the item, writes nothing: the item
keeps its record version and its ``updated_at`` (the time of its last change). LangGraph's own stores
(``InMemoryStore``, ``SqliteStore``, ``PostgresStore``) set ``updated_at`` to now on every put, so there a
repeated put also moves the item to the front of a query-less ``search`` (newest updated first); here it
does not. Matching them would take a new version of the record for a put that changes nothing (the
gateway itself answers an update that changes nothing with the record as it is): a write in the item's
history, the event stream and every backup for no change. A put that changes the value, or names a ttl
(which re-arms the expiry), writes a new version and moves ``updated_at``.

A store instance writes one put at a time (a put reads the item, then writes it), so parallel nodes and
``abatch`` calls putting one key leave one item. Two processes putting one key at the same moment may
leave two records of it; ``get`` and ``search`` answer the newest one.
"""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Any

from meta_memory import strict_json
from meta_memory.agent_memory.fields import MAX_BODY_BYTES
from meta_memory.agent_memory.filters import matches, parse_filter
from meta_memory.errors import InvalidParams, echo
from meta_memory.integrations.langgraph_items import (
    ITEM_TAG,
    PARTIAL,
    check_depth,
    identity_label,
    item_metadata,
    item_record,
    key_tag,
    prefix_tag,
)
from meta_memory.limits import MAX_LIST_LIMIT, MAX_MEMORY_ENTRIES

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
        TTLConfig,
    )
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("meta_memory.integrations.langgraph needs the langgraph extra: "
                      "pip install 'meta-memory[langgraph]'") from exc

__all__ = ["MetaMemoryStore", "identity_label"]

_PAGE = MAX_LIST_LIMIT


def _ttl_seconds(minutes: float) -> int:
    """LangGraph's ttl (minutes) as meta-memory's ``ttl_s`` (whole seconds, rounded up, at least 1)."""
    return max(1, math.ceil(minutes * 60))


def _dt(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc)


def _server_filter(flt: dict[str, Any] | None) -> dict[str, Any] | None:
    """The gateway filter of a search's ``filter``: matching items, or items checked here."""
    if not flt:
        return None
    return {"$or": [dict(flt), {PARTIAL: True}]}


def _matches(value: dict[str, Any], flt: dict[str, Any] | None) -> bool:
    """Whether an item's value passes ``flt`` (the gateway's semantics, :mod:`meta_memory.agent_memory.filters`)."""
    if not flt:
        return True
    return matches(parse_filter(flt), value)


def _condition_holds(namespace: tuple[str, ...], cond: MatchCondition) -> bool:
    path = tuple(cond.path)
    if len(path) > len(namespace):
        return False
    part = namespace[: len(path)] if cond.match_type == "prefix" else namespace[len(namespace) - len(path):]
    return all(p == "*" or p == n for p, n in zip(path, part, strict=True))


def _check_window(limit: Any, offset: Any) -> None:
    """A listing's ``limit`` (0 or more) and ``offset`` (0 or more); a negative one would slice from the end."""
    for name, n in (("limit", limit), ("offset", offset)):
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"{name} must be an integer of at least 0 (got {n!r})")



class MetaMemoryStore(BaseStore):
    """LangGraph's ``BaseStore`` on a meta-memory handle (see the module doc for the mapping).

    Args:
        handle: a synchronous ``MetaHandle`` (embedded, HTTP or stdio).
        realm: the realm of every record and of every access check (``<realm>/<identity>``); ``None``
            sends none, so the gateway's default for ``meta/agent_memory/*`` applies (realm
            ``"default"``). Give the realm your host's sessions use, so the items and what the model
            writes through the ``memory`` tool (``session.tool`` in that realm) are one memory.
        identity: the identity that owns every item (default ``"langgraph"``), unless ``identity_segment``.
        identity_segment: when set, ``namespace[identity_segment]`` names the owning identity; then
            every search and ``list_namespaces`` prefix must reach that label (``ValueError`` otherwise).

        ttl: LangGraph's ``TTLConfig``: ``default_ttl`` (minutes) for a ``put`` that names no ``ttl``,
            ``refresh_on_read`` (default true) for ``get`` and ``search`` that name no ``refresh_ttl``.

    Raises ``ValueError`` for an empty key, a value that is not a dict or is not JSON, a ``ttl`` that is
    not a positive number of minutes, and a negative ``limit`` or ``offset``; ``InvalidParams`` (field
    ``value``, naming the key, the namespace and the 65,536-byte cap) for a value larger than an item
    holds, before anything is sent; and the handle's typed errors (``AccessDenied``, ``AgentMemoryError``,
    ``InvalidParams`` for a ttl over the gateway's cap, ...) as they come.
    """

    supports_ttl = True

    def __init__(self, handle: Any, *, realm: str | None = None, identity: str = "langgraph",
                 identity_segment: int | None = None, ttl: TTLConfig | None = None) -> None:
        self.handle = handle
        self.realm = realm
        self.identity = identity
        self.identity_segment = identity_segment
        self.ttl_config = ttl
        # a put reads the item's record, then writes it: two puts of one key at once (parallel graph
        # nodes, abatch threads) would otherwise both create it, or race one update against another
        self._writes = threading.Lock()

    # -- the one entry point -------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order; one result per op (``Item | None``, ``list[SearchItem]``,
        ``list[tuple[str, ...]]`` or ``None`` for a put)."""
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(tuple(op.namespace), op.key, op.refresh_ttl))
            elif isinstance(op, PutOp):
                self._put(tuple(op.namespace), op.key, op.value, op.ttl)
                results.append(None)
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                raise ValueError(f"unknown LangGraph store op {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` in a worker thread (the handle is synchronous)."""
        return await asyncio.to_thread(self.batch, list(ops))

    # -- helpers ---------------------------------------------------------------------------------
    def _owner(self, namespace: tuple[str, ...]) -> str:
        if self.identity_segment is None:
            return self.identity
        if len(namespace) <= self.identity_segment:
            raise ValueError(f"namespace {namespace} does not reach label {self.identity_segment}, "
                             "which names the identity (identity_segment)")
        return identity_label(namespace[self.identity_segment])

    def _page(self, identity: str, tags: list[str], cursor: str | None, flt: dict[str, Any] | None = None) -> Any:
        return self.handle.list_agent_memory(identity, realm=self.realm, tags=tags, limit=_PAGE, cursor=cursor,
                                             filter=_server_filter(flt))

    def _find(self, namespace: tuple[str, ...], key: str) -> tuple[Any, dict[str, Any]] | None:
        page = self.handle.list_agent_memory(self._owner(namespace), realm=self.realm,
                                             tags=[key_tag(namespace, key)], limit=8)
        for rec in page.records:  # newest first; the key tag hashes namespace and key together
            env = self._envelope(rec)
            if env is not None and tuple(env["namespace"]) == namespace and env["key"] == key:
                return rec, env
        return None

    @staticmethod
    def _envelope(rec: Any) -> dict[str, Any] | None:
        try:  # a record of the identity that is not an item (one nested past the reader, too) is skipped
            env = strict_json.loads(rec.body)
        except ValueError:
            return None
        if not isinstance(env, dict) or not {"namespace", "key", "value"} <= env.keys():
            return None
        return env

    @staticmethod
    def _item(rec: Any, env: dict[str, Any], score: float | None = None, search: bool = False) -> Item:
        created = _dt(int(env.get("created_at_ms") or rec.created_at_ms))
        kw = dict(namespace=tuple(env["namespace"]), key=env["key"], value=env["value"],
                  created_at=created, updated_at=_dt(rec.updated_at_ms))
        return SearchItem(**kw, score=score) if search else Item(**kw)

    def _refresh(self, rec: Any, env: dict[str, Any]) -> Any:
        """Re-arm an item's ttl from now (a read with ``refresh_ttl``): the record's new version, or
        ``rec`` when the item has no ttl. A record that expired or changed meanwhile is left as it is."""
        minutes = env.get("ttl_minutes")
        if not isinstance(minutes, (int, float)) or isinstance(minutes, bool) or rec.expires_at_ms is None:
            return rec
        identity = self._owner(tuple(env["namespace"]))
        with self._writes:
            try:
                out = self.handle.update_agent_memory(identity, rec.memory_id, realm=self.realm,
                                                      ttl_s=_ttl_seconds(minutes))
            except Exception:  # noqa: BLE001 - superseded or expired under us: the read still answers
                return rec
        return out.record if out.record is not None else rec

    # -- ops -------------------------------------------------------------------------------------
    def _get(self, namespace: tuple[str, ...], key: str, refresh: bool = False) -> Item | None:
        found = self._find(namespace, key)
        if found is None:
            return None
        rec, env = found
        return self._item(self._refresh(rec, env) if refresh else rec, env)

    def _put(self, namespace: tuple[str, ...], key: str, value: Mapping[str, Any] | None,
             ttl: float | None = None) -> None:
        if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, (int, float))
                                or not math.isfinite(ttl) or ttl <= 0):
            raise ValueError(f"a LangGraph store ttl must be a positive number of minutes (got {ttl!r})")
        if value is not None and (not isinstance(key, str) or not key):
            raise ValueError(f"a LangGraph store key must be a non-empty string (got {echo(repr(key))})")
        if value is not None and not isinstance(value, Mapping):
            raise ValueError(f"a LangGraph store value must be a dict (got {type(value).__name__})")
        check_depth(namespace)
        identity = self._owner(namespace)
        with self._writes:
            self._put_locked(identity, namespace, key, None if value is None else dict(value), ttl)

    def _put_locked(self, identity: str, namespace: tuple[str, ...], key: str, value: dict[str, Any] | None,
                    ttl: float | None = None) -> None:
        found = self._find(namespace, key)
        if value is None:
            if found is not None:
                self.handle.forget_agent_memory(identity, found[0].memory_id, realm=self.realm)
            return
        ttl_s = None if ttl is None else _ttl_seconds(ttl)
        metadata = item_metadata(value)
        if (found is not None and found[1]["value"] == value and getattr(found[0], "metadata", None) == metadata
                and ttl_s is None and found[0].expires_at_ms is None):
            return  # the same value, and neither it nor the put expires: nothing to write
        # an update keeps the item's first creation time (the record's own is the new version's)
        created_ms = (found[1].get("created_at_ms") or found[0].created_at_ms) if found is not None else None
        rec = item_record(namespace, key, value, created_ms, ttl)
        stored = len(rec.body.encode("utf-8"))
        if stored > MAX_BODY_BYTES:  # told in the store's terms, before anything is sent
            raise InvalidParams(f"the value of item {echo(repr(key))} in namespace {echo(repr(namespace))} is too "
                                "large: stored with "
                                f"its namespace and key it takes {stored} bytes of JSON, and an item holds at most "
                                f"{MAX_BODY_BYTES} bytes (the record body cap)", field="value")
        if found is None:
            self.handle.remember_agent_memory(identity, title=rec.title, body=rec.body, tags=list(rec.tags),
                                              realm=self.realm, ttl_s=ttl_s, metadata=metadata)
        else:  # a put replaces the item: its ttl is this put's (none clears the record's expiry)
            self.handle.update_agent_memory(identity, found[0].memory_id, title=rec.title, body=rec.body,
                                            tags=list(rec.tags), realm=self.realm, ttl_s=ttl_s,
                                            clear_expiry=ttl_s is None, metadata=metadata)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        _check_window(op.limit, op.offset)
        prefix = tuple(op.namespace_prefix)
        identity = self._owner(prefix) if self.identity_segment is not None else self.identity
        tag = prefix_tag(prefix) if prefix else ITEM_TAG
        want = op.offset + op.limit
        out: list[tuple[Any, dict[str, Any], float | None]] = []
        seen: set[tuple[tuple[str, ...], str]] = set()  # one item per key: the newest record of it

        def first(env: dict[str, Any]) -> bool:
            item_key = (tuple(env["namespace"]), env["key"])
            if item_key in seen:
                return False
            seen.add(item_key)
            return True

        if op.filter:
            parse_filter(op.filter)  # a bad filter is refused before any call (ValueError naming the rule)
        if op.query:
            records = self.handle.recall_agent_memory(identity, realm=self.realm, query_text=op.query,
                                                      max_entries=MAX_MEMORY_ENTRIES, filter=_server_filter(op.filter))
            for rank, rec in enumerate(records):
                env = self._envelope(rec)
                if tag in rec.tags and env is not None and _matches(env["value"], op.filter) and first(env):
                    out.append((rec, env, 1.0 / (rank + 1)))
            return self._found(out[op.offset:want], op.refresh_ttl)
        cursor: str | None = None
        while len(out) < want:
            page = self._page(identity, [tag], cursor, op.filter)
            for rec in page.records:
                env = self._envelope(rec)
                if env is not None and _matches(env["value"], op.filter) and first(env):
                    out.append((rec, env, None))
            cursor = page.next_cursor
            if cursor is None:
                break
        return self._found(out[op.offset:want], op.refresh_ttl)

    def _found(self, hits: list[tuple[Any, dict[str, Any], float | None]], refresh: bool) -> list[SearchItem]:
        """The search items of ``hits`` (record, envelope, score), each item's ttl re-armed when ``refresh``."""
        out: list[SearchItem] = []
        for rec, env, score in hits:
            item = self._item(self._refresh(rec, env) if refresh else rec, env, score=score, search=True)
            assert isinstance(item, SearchItem)
            out.append(item)
        return out

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        _check_window(op.limit, op.offset)
        if op.max_depth is not None and (isinstance(op.max_depth, bool) or not isinstance(op.max_depth, int)
                                         or op.max_depth < 1):
            raise ValueError(f"max_depth must be an integer of at least 1 (got {op.max_depth!r})")
        conditions = tuple(op.match_conditions or ())
        if self.identity_segment is None:
            identity = self.identity
        else:
            prefix = next((tuple(c.path) for c in conditions if c.match_type == "prefix"), ())
            if len(prefix) <= self.identity_segment or prefix[self.identity_segment] == "*":
                raise ValueError("with identity_segment, list_namespaces needs a prefix that names the identity")
            identity = identity_label(prefix[self.identity_segment])
        seen: set[tuple[str, ...]] = set()
        cursor: str | None = None
        while True:
            page = self._page(identity, [ITEM_TAG], cursor)
            for rec in page.records:
                env = self._envelope(rec)
                if env is None:
                    continue
                ns = tuple(env["namespace"])
                if all(_condition_holds(ns, c) for c in conditions):
                    seen.add(ns[: op.max_depth] if op.max_depth is not None else ns)
            cursor = page.next_cursor
            if cursor is None:
                break
        return sorted(seen)[op.offset: op.offset + op.limit]
