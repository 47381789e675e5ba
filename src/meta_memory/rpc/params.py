"""Params validation shared by every method: pydantic models to ``InvalidParams``.

Every params model derives from :class:`Params` (``extra="forbid"``, strict
types, so ``"1"`` is not an integer and an unknown field is refused). A
``ValidationError`` becomes ``-32602`` with ``message = "Invalid params: <rule>"``
and ``data.field`` naming the first offending field.
"""

from __future__ import annotations

import functools
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..errors import InvalidParams, ValueRuleBroken, echo
from ..identity import parse_identity, parse_realm
from .deferred import DEFER_BUILD

__all__ = ["PARAMS_OBJECT_RULE", "Params", "RealmDefaulted", "IdentityParams", "MembersRule", "parse_params", "validation_to_invalid_params",
           "check_json_value", "MAX_PARAMS_DEPTH"]

#: Deepest nesting accepted in params (objects and arrays), so nothing stored can later exhaust
#: the interpreter's recursion limit when it is copied or serialised.
MAX_PARAMS_DEPTH = 64


def check_json_value(value: Any, path: str = "params") -> None:
    """Refuse, before any method sees them, params that no store can hold faithfully:

    - a string (key or value) with a lone surrogate (``"\\ud800"``): not valid Unicode text;
    - nesting deeper than :data:`MAX_PARAMS_DEPTH`.

    Raises :class:`InvalidParams` naming the field path (``tags.0``, ``metadata.a.b``).
    """
    # each entry: (value, its path as a chain (parent chain, key), depth); the dotted path is spelled
    # out only for a refusal, so a large params object costs no string building
    stack: list[tuple[Any, Any, int]] = [(value, path, 0)]
    while stack:
        item, chain, depth = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                where = _spell(chain)
                raise InvalidParams(f"{_leaf(where)} must be valid Unicode text (lone surrogate)", _leaf(where)) from None
        elif isinstance(item, (dict, list)):
            if depth >= MAX_PARAMS_DEPTH:
                where = _spell(chain)
                raise InvalidParams(f"{_leaf(where)} nests deeper than {MAX_PARAMS_DEPTH} levels", _leaf(where))
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            for key, child in pairs:
                if isinstance(key, str) and not key.isascii():
                    try:
                        key.encode("utf-8")
                    except UnicodeEncodeError:
                        where = _spell(chain)
                        raise InvalidParams(f"{_leaf(where)} has a key that is not valid Unicode text",
                                            _leaf(where)) from None
                # an ASCII string (a flag of the string, no scan) holds no lone surrogate: not visited
                if isinstance(child, (dict, list)) or (isinstance(child, str) and not child.isascii()):
                    stack.append((child, (chain, key), depth + 1))


def _spell(chain: Any) -> str:
    """The dotted path of a chain ``((..(root, k1), k2)..)``."""
    keys: list[str] = []
    while isinstance(chain, tuple):
        chain, key = chain
        keys.append(str(key))
    return ".".join([chain, *reversed(keys)])


def _leaf(where: str) -> str:
    return where[len("params."):] if where.startswith("params.") else where

P = TypeVar("P", bound=BaseModel)


class Params(BaseModel):
    """Base class of every RPC params model: unknown fields refused, no type coercion."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, defer_build=DEFER_BUILD)


class RealmDefaulted(Params):
    """Params whose absent ``realm`` means the gateway's own (``[agent_memory] realm``).

    The parser leaves ``realm`` ``None`` when absent; :meth:`MethodTable.call
    <meta_memory.rpc.registry.MethodTable.call>` fills it in once, before access is judged, so the
    grant checked, the realm allow-list and the handler all see the realm the call acts in. A realm given
    is checked as given, never trimmed (:func:`~meta_memory.identity.parse_realm`)."""

    realm: Any = Field(default=None, json_schema_extra={"type": "string"},
                       description="the realm (default: the gateway's [agent_memory] realm)")

    @field_validator("realm", mode="before")
    @classmethod
    def _realm(cls, value: Any) -> str | None:
        return None if value is None else parse_realm(value)

    def in_realm(self, default_realm: str) -> "RealmDefaulted":
        """These params with ``realm`` set (``default_realm`` when they named none)."""
        return self if self.realm is not None else self.model_copy(update={"realm": default_realm})


class NoParams(Params):
    """A method without params: absent, or an empty object."""


#: JSON-schema marker of a member that is required although its Python default is ``None``
#: (a validator refuses it missing, naming the rule); the OpenRPC document lists it as required.
REQUIRED_MARK = "x-required"


def required_text(*, missing: str | None = None, **extra: Any) -> Any:
    """A string member checked by a ``mode="before"`` validator. Absent, it is refused by
    :func:`parse_params` as ``<field> is required``, as pydantic's own required members are; ``missing``
    is another wording where the spec's reference gives one (``verdict must be 'release' or 'tombstone'``)."""
    return Field(default=None, validate_default=True,
                 json_schema_extra={"type": "string", REQUIRED_MARK: missing or True, **extra})


def optional_count(value: Any, name: str, maximum: int) -> int | None:
    """A ``mode="before"`` check of a count member: absent (``None``) or an integer 1..``maximum``
    (a bool is no integer). Returns the value; raises ``ValueError`` naming the rule, which
    :func:`parse_params` reports as ``-32602`` on that member."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer when provided (1 to {maximum})")
    if value > maximum:
        raise ValueError(f"{name} must be between 1 and {maximum}")
    return value


_TYPE_RULES = {
    "string_type": "must be a string",
    "int_type": "must be an integer",
    "int_from_float": "must be an integer",
    "bool_type": "must be a boolean",
    "list_type": "must be an array",
    "dict_type": "must be a JSON object",
    "model_type": "must be a JSON object",
    "model_attributes_type": "must be a JSON object",
    "float_type": "must be a number",
    "none_required": "must be null",
    "string_unicode": "must be valid Unicode text",
}


class MembersRule(ValueError):
    """A rule over several members, raised by a model validator, with the field the refusal names:
    the member the rule is about (``k is only valid with tier 'working_set'``: ``k``; of two exclusive
    members, the second), or ``params`` when the rule is that one of several must be given and none is
    (no single member is at fault: the params object lacks them all)."""

    def __init__(self, rule: str, field: str) -> None:
        super().__init__(rule)
        self.field = field


def _field_name(loc: tuple[Any, ...]) -> str | None:
    parts = [echo(str(p)) for p in loc if not (isinstance(p, str) and p.startswith("function-"))]
    return ".".join(parts) if parts else None


def validation_to_invalid_params(exc: ValidationError) -> InvalidParams:
    """Translate the first pydantic error into an :class:`InvalidParams` naming the field."""
    err = exc.errors(include_url=False)[0]
    field = _field_name(tuple(err.get("loc", ())))
    etype = err.get("type", "")
    label = field or "params"
    if etype == "missing":
        rule = f"{label} is required"
    elif etype == "extra_forbidden":
        rule = f"unknown field '{label}'"
    elif etype in _TYPE_RULES:
        rule = f"{label} {_TYPE_RULES[etype]}"
    elif etype == "literal_error":
        expected = (err.get("ctx") or {}).get("expected", "")
        rule = f"{label} must be one of {expected}"
    elif etype in ("value_error", "assertion_error"):
        cause = (err.get("ctx") or {}).get("error")
        if field is None and isinstance(cause, MembersRule):
            field = cause.field
        msg = str(err.get("msg", ""))
        for prefix in ("Value error, ", "Assertion failed, "):
            if msg.startswith(prefix):
                msg = msg[len(prefix):]
        rule = _qualified(msg, field)
        within = getattr(cause, "field", None)
        if field and isinstance(within, str) and not isinstance(cause, MembersRule):
            # a rule about one element of the member (``tags.0 must be ...``) names that element's path
            leaf = field.rsplit(".", 1)[-1]
            if within.startswith(leaf + ".") and msg.startswith(within + " "):
                field = field[:len(field) - len(leaf)] + within
                rule = field + msg[len(within):]
    else:
        rule = f"{label}: {err.get('msg', 'invalid value')}"
    return InvalidParams(rule, field)


def _qualified(rule: str, field: str | None) -> str:
    """``rule`` naming its field by the full path: a field validator speaks of its own leaf name
    (``ttl_s must be ...``), which inside a list item becomes ``records.1.ttl_s must be ...``."""
    if not field or "." not in field:
        return rule
    leaf = field.rsplit(".", 1)[1]
    if rule.startswith(leaf + " "):
        return field + rule[len(leaf):]
    return rule


def rule_to_invalid_params(exc: ValueRuleBroken) -> InvalidParams:
    """A domain rule refusal as the client sees it: ``-32602 Invalid params: <rule>``, ``data.field``."""
    return InvalidParams(exc.rule, exc.field)


#: The rule every refusal of a call's ``params`` as a whole states (docs/rpc.md: params are always a JSON
#: object): an array (``-32602``) and a value that is not structured (``null``, a string: ``-32600``) alike.
PARAMS_OBJECT_RULE = "params must be a JSON object"


@functools.cache
def _required_members(model: type[BaseModel]) -> tuple[tuple[str, str], ...]:
    """``(name, rule when absent)`` of the members of ``model`` marked required although their Python
    default is ``None`` (:func:`required_text`; pydantic does not know them required), in declaration order.
    Read from the model's fields once per model, not at every call."""
    known = _REQUIRED.get(model)
    if known is None:
        known = _REQUIRED[model] = _read_required_members(model)
    return known


#: :func:`_required_members` by model (a model's fields are fixed once its class is built).
_REQUIRED: dict[type[BaseModel], tuple[tuple[str, str], ...]] = {}


def _read_required_members(model: type[BaseModel]) -> tuple[tuple[str, str], ...]:
    out = []
    for name, info in model.model_fields.items():
        mark = info.json_schema_extra.get(REQUIRED_MARK) if isinstance(info.json_schema_extra, dict) else None
        if mark:
            out.append((name, mark if isinstance(mark, str) else f"{name} is required"))
    return tuple(out)


def parse_params(model: type[P], raw: Any) -> P:
    """Validate raw JSON-RPC ``params`` (object or absent) into ``model``.

    Raises :class:`InvalidParams` for positional (array) params, a non-object, a missing required
    member (``<field> is required``, whether pydantic or :func:`required_text` declares it), or any rule
    the model enforces.
    """
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise InvalidParams(PARAMS_OBJECT_RULE, "params")
    for name, rule in _required_members(model):
        if name not in raw:  # as pydantic's own required members are refused: one wording for a missing member
            raise InvalidParams(rule, name)
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise validation_to_invalid_params(exc) from None


class IdentityParams(RealmDefaulted):
    """``identity`` (required, logical, never trimmed) and ``realm`` (optional: ``[agent_memory] realm``
    when absent, filled in before access is judged; see :class:`RealmDefaulted`). The base of every
    method acting for one identity: its records (``meta/agent_memory/*``) and its sessions
    (:class:`~meta_memory.rpc.session_params.SessionParams`)."""

    identity: Any = required_text(description="the identity (no whitespace at either end; rt:<id>:<generation> names <id>)")

    @field_validator("identity", mode="before")
    @classmethod
    def _identity(cls, value: Any) -> str:
        return parse_identity(value)
