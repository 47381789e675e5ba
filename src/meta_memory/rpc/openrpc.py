"""The OpenRPC document of the method table (``rpc.discover``, OpenRPC 1.3).

Built from each :class:`~meta_memory.rpc.registry.MethodSpec`: its params model
(one content descriptor per member, ``paramStructure: "by-name"``) and its result
model, both rendered as JSON Schema by pydantic. Shared models land once in
``components.schemas``. Only the methods advertised on the runtime are listed,
so the document says what this gateway answers, like ``meta/capabilities``.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, TypeAdapter

from .params import REQUIRED_MARK

if TYPE_CHECKING:  # pragma: no cover
    from ..runtime import Runtime
    from .registry import MethodSpec, MethodTable

__all__ = ["OPENRPC_VERSION", "build_openrpc", "method_entry"]

OPENRPC_VERSION = "1.3.2"
_REF = "#/components/schemas/{model}"


def _schema(annotation: Any, defs: dict[str, Any]) -> dict[str, Any]:
    """JSON Schema of a model or type; its ``$defs`` are merged into ``defs`` (a clash raises)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        schema = annotation.model_json_schema(ref_template=_REF)
    else:
        schema = TypeAdapter(annotation).json_schema(ref_template=_REF)
    for name, sub in schema.pop("$defs", {}).items():
        if name in defs and defs[name] != sub:
            raise ValueError(f"two different schemas are named {name!r}")
        defs[name] = sub
    return schema


def _inline(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """A top-level model schema kept as a component and referenced, so results stay small."""
    title = schema.get("title")
    if isinstance(title, str) and schema.get("type") == "object":
        if title in defs and defs[title] != schema:
            raise ValueError(f"two different schemas are named {title!r}")
        defs[title] = schema
        return {"$ref": _REF.format(model=title)}
    return schema


def method_entry(spec: "MethodSpec", defs: dict[str, Any]) -> dict[str, Any]:
    """One OpenRPC method object for ``spec`` (its schemas' definitions are added to ``defs``)."""
    params: list[dict[str, Any]] = []
    if spec.params_model is not None:
        schema = _schema(spec.params_model, defs)
        required = set(schema.get("required", []))
        for name, prop in schema.get("properties", {}).items():
            prop = dict(prop)
            if prop.pop(REQUIRED_MARK, False):
                required.add(name)
            if "default" in prop and prop["default"] is None:
                del prop["default"]  # "absent" is the default; null is not a value to send
            descriptor: dict[str, Any] = {"name": name, "required": name in required, "schema": prop}
            if "description" in prop:
                descriptor["description"] = prop["description"]
            params.append(descriptor)
    entry: dict[str, Any] = {
        "name": spec.name,
        "summary": spec.summary,
        "paramStructure": "by-name",
        "params": params,
    }
    if spec.result is not None:
        result_schema = _inline(_schema(spec.result, defs), defs)
        entry["result"] = {"name": "result", "schema": result_schema}
    else:
        entry["result"] = {"name": "result", "schema": {}}
    return entry


def build_openrpc(table: "MethodTable", runtime: "Runtime | None") -> dict[str, Any]:
    """``{openrpc, info, methods, components}`` for the methods ``table`` advertises on ``runtime``.

    The document depends only on which methods are advertised, so it is built once per set
    (schema generation is the expensive part) and served from the cache afterwards; callers
    get the cached object and must not mutate it (the dispatcher serialises it)."""
    names = tuple(table.names(runtime))
    key = (id(table), names)
    with _lock:
        doc = _cache.get(key)
        if doc is None:
            doc = _cache[key] = _build(table.specs(runtime))
    return doc


_cache: dict[tuple[int, tuple[str, ...]], dict[str, Any]] = {}
_lock = threading.Lock()


def _build(specs: "list[MethodSpec]") -> dict[str, Any]:
    from .. import __version__

    defs: dict[str, Any] = {}
    methods = [method_entry(spec, defs) for spec in specs]
    return {
        "openrpc": OPENRPC_VERSION,
        "info": {
            "title": "meta-memory",
            "version": __version__,
            "description": "Identity-first memory for multi-agent LLM runtimes: JSON-RPC 2.0 over HTTP "
                           "(POST /rpc) and stdio. Times are UTC epoch milliseconds; sizes are UTF-8 bytes.",
        },
        "methods": methods,
        "components": {"schemas": dict(sorted(defs.items()))},
    }
