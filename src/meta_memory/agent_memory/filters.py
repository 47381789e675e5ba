"""Filters over a record's ``metadata``: one parsed model, its SQL for each backend, and
the pure evaluator that defines the semantics (and is the oracle the tests compare both backends with).

Wire shape (the operators of mem0 and LangGraph):

- ``{"key": value}``: equality; ``{"a.b": value}`` and ``{"a": {"b": value}}`` both address the nested
  key ``b`` of object ``a`` (dotted segments are object keys, never array positions);
- ``{"key": {"$eq"|"$ne"|"$gt"|"$gte"|"$lt"|"$lte": value, "$in"|"$nin": [values], "$not": {...}}}``
  (several operators on one key must all hold);
- ``{"$and": [filter, ...]}``, ``{"$or": [filter, ...]}``, ``{"$not": filter}``; the entries of one
  object must all hold.

Semantics (the same on SQLite, PostgreSQL and :func:`matches`):

- a missing key, or a path through a non-object, reads as ``null``: ``{"k": null}`` and ``$ne``/``$nin``
  of anything else match a record without ``k`` (as in LangGraph's stores and MongoDB);
- numbers compare as numbers (``1 == 1.0``), strings as strings (by code point); a number never equals
  or orders against a string, booleans are not numbers, ``null`` never orders;
- ``$gt``/``$gte``/``$lt``/``$lte`` take a number or a string; ``$in``/``$nin`` a list of scalars;
- equality with an array or object operand compares canonical JSON (sorted keys, same number spelling);
  a scalar operand never matches an array value (no "contains").

Every key path and value reaches SQL as a bound parameter; operator names are matched against a closed
set and refused by name (:class:`FilterError`), and so is an empty object inside a filter (only the whole
filter may be ``{}``: no filter).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from meta_memory.agent_memory.fields import (
    MAX_METADATA_DEPTH,
    MAX_METADATA_INT,
    METADATA_KEY_RULE,
    FieldError,
    canonical_metadata,
    metadata_key_problem,
    shown_key,
)

__all__ = [
    "MAX_FILTER_CONDITIONS",
    "MAX_FILTER_DEPTH",
    "MAX_FILTER_IN",
    "OPERATORS",
    "All",
    "AnyOf",
    "Compare",
    "FilterError",
    "FilterNode",
    "Not",
    "compile_filter",
    "matches",
    "parse_filter",
]

#: ``$and``/``$or``/``$not`` and nested keys nest at most this deep.
MAX_FILTER_DEPTH = 8
#: At most this many comparisons in one filter.
MAX_FILTER_CONDITIONS = 64
#: At most this many values in one ``$in`` / ``$nin`` list.
MAX_FILTER_IN = 256

#: Every operator a filter may name.
OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$and", "$or", "$not"})
#: The supported operators as the refusal of any other lists them.
SUPPORTED_OPERATORS = ("supported: $eq, $ne, $gt, $gte, $lt, $lte, $in, $nin and $not on a key; "
                       "$and, $or and $not combining filters")
_ORDERING = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}


class FilterError(FieldError):
    """A filter broke a rule; ``field`` is ``filter`` and the rule names the operator or key."""

    def __init__(self, rule: str) -> None:
        super().__init__(rule, "filter")


@dataclass(frozen=True, slots=True)
class Compare:
    """``path`` (object keys) ``op`` (``eq`` | ``in`` | ``gt`` | ``gte`` | ``lt`` | ``lte``) ``value``
    (for ``in``: a tuple of scalars)."""

    path: tuple[str, ...]
    op: str
    value: Any


@dataclass(frozen=True, slots=True)
class All:
    parts: tuple[FilterNode, ...]


@dataclass(frozen=True, slots=True)
class AnyOf:
    parts: tuple[FilterNode, ...]


@dataclass(frozen=True, slots=True)
class Not:
    part: FilterNode


FilterNode = Compare | All | AnyOf | Not


# --------------------------------------------------------------------------- parsing


def _scalar(value: object) -> bool:
    return value is None or isinstance(value, (str, bool, int, float))


def _operand(value: object, op: str) -> Any:
    """A JSON operand, checked like stored metadata values (finite numbers, safe integers, no NUL)."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        if abs(value) > MAX_METADATA_INT:
            raise FilterError(f"filter {op} integers must be within +-{MAX_METADATA_INT}")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise FilterError(f"filter {op} numbers must be finite")
        return value
    if isinstance(value, str):
        if "\x00" in value:
            raise FilterError(f"filter {op} strings must not contain NUL characters")
        return value
    if isinstance(value, (Mapping, list, tuple)):
        from meta_memory.agent_memory.fields import normalize_metadata

        try:
            if isinstance(value, Mapping):
                return normalize_metadata(value, "filter")
            return normalize_metadata({"v": list(value)}, "filter")["v"]
        except FieldError as exc:
            raise FilterError(f"filter {op} operand: {exc.rule}") from None
    raise FilterError(f"filter {op} operand must be JSON")


class _Parser:
    def __init__(self) -> None:
        self.conditions = 0

    def count(self, n: int = 1) -> None:
        self.conditions += n
        if self.conditions > MAX_FILTER_CONDITIONS:
            raise FilterError(f"filter must hold at most {MAX_FILTER_CONDITIONS} conditions")

    def node(self, value: object, depth: int, prefix: tuple[str, ...] = ()) -> FilterNode:
        """A filter object (entries ANDed); ``prefix`` is the key path of an enclosing nested object."""
        if depth > MAX_FILTER_DEPTH:
            raise FilterError(f"filter must nest at most {MAX_FILTER_DEPTH} levels deep")
        if not isinstance(value, Mapping):
            raise FilterError("filter must be an object")
        if not value:  # only the whole filter may be {} (no filter: parse_filter); inside one it holds nothing
            raise FilterError("filter objects must not be empty (use {\"$eq\": {}} to match an empty object)")
        parts: list[FilterNode] = []
        for key, item in value.items():
            if not isinstance(key, str):
                raise FilterError("filter keys must be strings")
            if key.startswith("$"):
                parts.append(self.logical(key, item, depth, prefix))
            else:
                parts.append(self.field(prefix + self.path(key), item, depth))
        return parts[0] if len(parts) == 1 else All(tuple(parts))

    def logical(self, op: str, item: object, depth: int, prefix: tuple[str, ...]) -> FilterNode:
        if op in ("$and", "$or"):
            if not isinstance(item, list) or not item:
                raise FilterError(f"filter {op} takes a non-empty array of filters")
            parts = tuple(self.node(sub, depth + 1, prefix) for sub in item)
            return All(parts) if op == "$and" else AnyOf(parts)
        if op == "$not":
            return Not(self.node(item, depth + 1, prefix))
        if op in OPERATORS:
            raise FilterError(f"filter operator {op} needs a key (write {{\"key\": {{\"{op}\": ...}}}})")
        raise FilterError(f"filter operator {shown_key(op)} is not supported ({SUPPORTED_OPERATORS})")

    @staticmethod
    def path(key: str) -> tuple[str, ...]:
        segments = tuple(key.split("."))
        if len(segments) > MAX_METADATA_DEPTH or any(metadata_key_problem(s) for s in segments):
            raise FilterError(f"filter key {shown_key(key)} is not a key path: {METADATA_KEY_RULE}, "
                              f"at most {MAX_METADATA_DEPTH} segments joined by '.'")
        return segments

    def field(self, path: tuple[str, ...], item: object, depth: int) -> FilterNode:
        # a key's conditions nest too (``{"k": {"$not": {"$not": ...}}}``): the same cap as filters
        if depth > MAX_FILTER_DEPTH:
            raise FilterError(f"filter must nest at most {MAX_FILTER_DEPTH} levels deep")
        if len(path) > MAX_METADATA_DEPTH:
            raise FilterError(f"filter key paths have at most {MAX_METADATA_DEPTH} segments")
        if not isinstance(item, Mapping):
            self.count()
            return Compare(path, "eq", _operand(item, "$eq"))
        ops = [k for k in item if isinstance(k, str) and k.startswith("$")]
        if not ops:  # a nested object of conditions on the keys below ``path`` (never empty: node refuses it)
            return self.node(item, depth + 1, path)
        if len(ops) != len(item):
            raise FilterError("filter objects must hold either operators or keys, not both")
        parts = [self.operator(path, op, item[op], depth) for op in ops]
        return parts[0] if len(parts) == 1 else All(tuple(parts))

    def operator(self, path: tuple[str, ...], op: str, value: object, depth: int) -> FilterNode:
        if op == "$not":
            if not isinstance(value, Mapping) or not value:
                raise FilterError("filter $not on a key takes an object of operators")
            return Not(self.field(path, value, depth + 1))
        if op in ("$eq", "$ne"):
            self.count()
            node: FilterNode = Compare(path, "eq", _operand(value, op))
            return node if op == "$eq" else Not(node)
        if op in _ORDERING:
            self.count()
            if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                raise FilterError(f"filter {op} takes a number or a string")
            return Compare(path, op[1:], _operand(value, op))
        if op in ("$in", "$nin"):
            if not isinstance(value, list):
                raise FilterError(f"filter {op} takes an array")
            if len(value) > MAX_FILTER_IN:
                raise FilterError(f"filter {op} takes at most {MAX_FILTER_IN} values")
            if not all(_scalar(v) for v in value):
                raise FilterError(f"filter {op} values must be strings, numbers, booleans or null")
            self.count()
            node = Compare(path, "in", tuple(_operand(v, op) for v in value))
            return node if op == "$in" else Not(node)
        if op in ("$and", "$or"):
            raise FilterError(f"filter operator {op} takes filters, not a key's value")
        raise FilterError(f"filter operator {shown_key(op)} is not supported ({SUPPORTED_OPERATORS})")


def parse_filter(value: object) -> FilterNode | None:
    """The filter model of a request's ``filter`` (``None`` or ``{}``: no filter). Raises
    :class:`FilterError` (``-32602`` naming ``filter``) for an unknown operator (named), a key path
    breaking the metadata key rule, a bad operand, more than :data:`MAX_FILTER_CONDITIONS` comparisons,
    more than :data:`MAX_FILTER_IN` values in a list, or nesting deeper than :data:`MAX_FILTER_DEPTH`."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise FilterError("filter must be an object")
    if not value:
        return None
    return _Parser().node(value, 1)


# --------------------------------------------------------------------------- the evaluator (the semantics)

_MISSING = object()


def _lookup(metadata: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    cur: Any = metadata
    for key in path:
        if not isinstance(cur, Mapping) or key not in cur:
            return None
        cur = cur[key]
    return cur


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "json"


def _equal(stored: Any, operand: Any) -> bool:
    kind = _kind(operand)
    if kind != _kind(stored):
        return False
    if kind == "json":
        return canonical_metadata({"v": stored}) == canonical_metadata({"v": operand})
    return bool(stored == operand)


def matches(node: FilterNode | None, metadata: Mapping[str, Any]) -> bool:
    """Whether a record with ``metadata`` passes ``node`` (``None``: every record)."""
    if node is None:
        return True
    if isinstance(node, All):
        return all(matches(p, metadata) for p in node.parts)
    if isinstance(node, AnyOf):
        return any(matches(p, metadata) for p in node.parts)
    if isinstance(node, Not):
        return not matches(node.part, metadata)
    stored = _lookup(metadata, node.path)
    if node.op == "eq":
        return _equal(stored, node.value)
    if node.op == "in":
        return any(_equal(stored, v) for v in node.value)
    kind = _kind(node.value)
    if kind not in ("number", "string") or _kind(stored) != kind:
        return False
    return bool({"gt": stored > node.value, "gte": stored >= node.value,
                 "lt": stored < node.value, "lte": stored <= node.value}[node.op])


# --------------------------------------------------------------------------- SQL


def _sqlite_path(path: tuple[str, ...]) -> str:
    # every segment passed the key rule: no '"', '\\', '.' or control character can end the quoting
    return "$" + "".join(f'."{k}"' for k in path)


class _Sql:
    """Builds a boolean SQL expression over ``records.metadata`` with ``?`` placeholders; every leaf is
    wrapped so it is never SQL ``NULL`` (``NOT`` and ``OR`` stay two-valued, a missing key included)."""

    def __init__(self, pg: bool, column: str) -> None:
        self.pg = pg
        self.column = column
        self.params: list[Any] = []

    def node(self, node: FilterNode) -> str:
        if isinstance(node, All):
            return "(" + " AND ".join(self.node(p) for p in node.parts) + ")"
        if isinstance(node, AnyOf):
            return "(" + " OR ".join(self.node(p) for p in node.parts) + ")"
        if isinstance(node, Not):
            return f"(NOT {self.node(node.part)})"
        return f"COALESCE(({self.leaf(node)}), {'false' if self.pg else '0'})"

    # the value at a path, its JSON type and its text, per backend
    def _type(self, path: tuple[str, ...]) -> str:
        if self.pg:
            return f"json_typeof({self._pg_value(path)})"
        self.params.append(_sqlite_path(path))
        return f"json_type({self.column}, ?)"

    def _pg_value(self, path: tuple[str, ...]) -> str:
        # ``json -> text`` is an object key lookup only (never an array position), NULL when absent
        self.params.extend(path)
        return f"(CAST({self.column} AS json)" + "".join(" -> CAST(? AS text)" for _ in path) + ")"

    def _scalar(self, path: tuple[str, ...]) -> str:
        if self.pg:
            return f"({self._pg_value(path)} #>> '{{}}')"
        self.params.append(_sqlite_path(path))
        return f"json_extract({self.column}, ?)"

    def _json_text(self, path: tuple[str, ...]) -> str:
        if self.pg:
            return f"CAST({self._pg_value(path)} AS text)"
        self.params.append(_sqlite_path(path))
        return f"json_extract({self.column}, ?)"

    def _types(self, kind: str) -> tuple[str, ...]:
        if self.pg:
            return {"null": ("null",), "bool": ("boolean",), "number": ("number",), "string": ("string",),
                    "json": ("array", "object")}[kind]
        return {"null": ("null",), "bool": ("true", "false"), "number": ("integer", "real"), "string": ("text",),
                "json": ("array", "object")}[kind]

    def _type_in(self, path: tuple[str, ...], kind: str) -> str:
        types = self._types(kind)
        return f"{self._type(path)} IN ({', '.join(repr(t) for t in types)})"

    def _cast(self, kind: str) -> str:
        return "CAST(? AS numeric)" if kind == "number" and self.pg else "?"

    def _value_param(self, kind: str, value: Any) -> Any:
        if kind == "number" and self.pg:
            return json.dumps(value)  # exact decimal text: no float8 rounding on the way in
        if kind == "json":
            return canonical_metadata({"v": value})[5:-1]
        return value

    def _compare(self, path: tuple[str, ...], kind: str, op: str, values: Sequence[Any]) -> str:
        """The value at ``path`` is of ``kind`` and ``op`` (``=`` | ``IN`` | an ordering) ``values``."""
        if kind == "null":
            missing = f"{self._type(path)} IS NULL"
            return f"({missing} OR {self._type_in(path, 'null')})"
        if kind == "bool":
            if self.pg:  # parameters in the order their placeholders appear
                typed = self._type_in(path, "bool")
                text = self._scalar(path)
                wanted = ", ".join("?" for _ in values)
                self.params.extend("true" if v else "false" for v in values)
                return f"({typed} AND {text} IN ({wanted}))"
            self.params.append(_sqlite_path(path))
            wanted = ", ".join("?" for _ in values)
            self.params.extend("true" if v else "false" for v in values)
            return f"json_type({self.column}, ?) IN ({wanted})"
        typed = self._type_in(path, kind)
        if kind == "json":
            lhs = self._json_text(path)
        elif kind == "number" and self.pg:
            lhs = f"CAST({self._scalar(path)} AS numeric)"
        elif kind == "string" and self.pg:
            lhs = f'({self._scalar(path)} COLLATE "C")'
        else:
            lhs = self._scalar(path)
        rhs = ", ".join(self._cast(kind) for _ in values)
        self.params.extend(self._value_param(kind, v) for v in values)
        test = f"{lhs} IN ({rhs})" if op == "IN" else f"{lhs} {op} {rhs}"
        if kind == "number" and self.pg:  # AND's sides run in any order there: the cast must see numbers only
            return f"(CASE WHEN {typed} THEN {test} ELSE false END)"
        return f"({typed} AND {test})"

    def leaf(self, node: Compare) -> str:
        if node.op in ("eq", "in"):
            values = (node.value,) if node.op == "eq" else tuple(node.value)
            if not values:
                return "false" if self.pg else "0"
            by_kind: dict[str, list[Any]] = {}
            for v in values:
                by_kind.setdefault(_kind(v), []).append(v)
            parts = []
            for kind, vs in by_kind.items():
                if kind in ("null", "bool"):
                    parts.append(self._compare(node.path, kind, "IN", vs))
                else:
                    parts.append(self._compare(node.path, kind, "IN" if len(vs) > 1 else "=", vs))
            return " OR ".join(parts)
        return self._compare(node.path, _kind(node.value), _ORDERING["$" + node.op], (node.value,))


def compile_filter(node: FilterNode, *, pg: bool, column: str = "metadata") -> tuple[str, list[Any]]:
    """``(boolean SQL expression with ? placeholders, its parameters)`` of ``node`` over ``column`` (the
    record's canonical metadata JSON text): SQLite ``json_type``/``json_extract`` with a quoted ``$."key"``
    path bound as a parameter, PostgreSQL ``json`` ``->`` with each key bound as text,
    ``json_typeof`` and ``#>> '{}'`` (numbers compared as ``numeric``, strings with ``COLLATE "C"``)."""
    sql = _Sql(pg, column)
    return sql.node(node), sql.params
