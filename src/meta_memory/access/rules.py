"""What each RPC method requires: the one table of entry gates.

Seed: "Agent memory injection" (RPCs), "Reviewing quarantined records" (the
decision's grants, read-only consoles) and "Console Memory panel"; reference §7.

==========================================  ================================================
method                                      required (in order of checking)
==========================================  ================================================
``meta/agent_memory/remember``, ``update``, ``agent.memory.write`` on the identity
``remember_batch``
``meta/agent_memory/forget``                ``agent.memory.delete`` on the identity
``meta/agent_memory/recall``, ``manifest``  ``agent.memory.read`` + ``agent.view`` on the identity
``meta/turn/inject``                        as recall (it reads the identity's memory)
``meta/agent_memory/tool``                  by ``arguments.action``: remember/update/propose_to_mob
                                            => write; forget => delete; recall => read + view
                                            (unknown actions => write); on the identity
``meta/memory/quarantine/decide``           ``memory.quarantine.review`` + ``agent.view`` +
                                            ``agent.memory.read`` on the identity, then
                                            ``agent.memory.write`` (release) or
                                            ``agent.memory.delete`` (tombstone); refused on a
                                            read-only console
``meta/memory/panel/records``               ``scope=identity`` or ``identity`` given: read + view
                                            on it; ``scope=mob`` + ``scope_key``: ``mob.memory.read``
                                            on it; ``scope=operator``: ``operator.memory.read``;
                                            ``scope=realm``: unscoped ``agent.memory.read``; else
                                            none (rows are filtered). A gate that needs the realm
                                            to name the target is skipped when ``realm`` is absent
                                            on a shared console (rows are filtered anyway).
``meta/memory/panel/record``                none here: the handler judges the record it finds
                                            (:func:`meta_memory.panel.visibility.Visibility.record_denial`)
``meta/memory/panel/quarantine``            ``memory.quarantine.review`` held on some scope
``meta/memory/panel/dreams``, ``dream_runs``, ``audit_verdicts``, ``overview``, ``proposals``,
``injections``, ``harvests``                unscoped ``agent.memory.read``
==========================================  ================================================

Mutations (refused on a read-only console whatever the grants):
:data:`MUTATING_METHODS`. Ungated methods: :data:`UNGATED_METHODS`. A method
in neither table raises ``KeyError`` — fail closed, so a new method cannot be
served without a decision here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from ..errors import InvalidParams
from ..identity import DEFAULT_REALM, parse_identity, parse_realm
from .policy import AccessPolicy, ReadOnlyConsole
from .principal import Principal
from .resources import Resource, Resources

__all__ = [
    "MUTATING_METHODS",
    "PANEL_METHODS",
    "Requirement",
    "UNGATED_METHODS",
    "authorize",
    "required_actions",
]


class Requirement(NamedTuple):
    """One entry gate: the caller needs ``action`` on ``resource``."""

    action: str
    resource: Resource


PANEL = "meta/memory/panel/"
PANEL_METHODS: tuple[str, ...] = tuple(
    PANEL + m
    for m in (
        "records",
        "record",
        "quarantine",
        "dreams",
        "dream_runs",
        "audit_verdicts",
        "overview",
        "proposals",
        "injections",
        "harvests",
    )
)

#: Methods that change memory; a read-only console refuses them.
MUTATING_METHODS: frozenset[str] = frozenset(
    {
        "meta/agent_memory/remember",
        "meta/agent_memory/remember_batch",
        "meta/agent_memory/update",
        "meta/agent_memory/forget",
        "meta/agent_memory/erase",
        "meta/agent_memory/erase_identity",
        "meta/agent_memory/tool",
        "meta/memory/quarantine/decide",
        "meta/gating/decide",
        "meta/memory/steward/dream",
        "meta/memory/proposals/decide",
    }
)

#: Methods with no memory-access gate (the assertion ledger, status, diagnostics, session plumbing).
UNGATED_METHODS: frozenset[str] = frozenset(
    {
        "meta/memory/index",
        "meta/memory/query",
        "meta/memory/stores",
        "meta/status",
        "meta/storage/doctor",
        "meta/session/note",
        "meta/session/reset",
        "meta/session/compacted",
        "meta/turn/tool_result",
        "meta/turn/defang",
        "meta/agent_memory/tool_schema",
        "meta/capabilities",
        "meta/events/list",
        "meta/session/retire",
        "meta/gating/check",
    }
)

READ = "agent.memory.read"
VIEW = "agent.view"
WRITE = "agent.memory.write"
DELETE = "agent.memory.delete"
ERASE = "agent.memory.erase"
REVIEW = "memory.quarantine.review"


def _params(params: Any) -> Mapping[str, Any]:
    if params is None:
        return {}
    if not isinstance(params, Mapping):
        raise InvalidParams("params must be an object", "params")
    return params


def _identity(params: Mapping[str, Any]) -> str:
    try:
        return parse_identity(params.get("identity"))
    except ValueError as exc:
        raise InvalidParams(str(exc), "identity") from None


def _realm(params: Mapping[str, Any]) -> str:
    try:
        return parse_realm(params.get("realm"))
    except ValueError as exc:
        raise InvalidParams(str(exc), "realm") from None


def _identity_resource(params: Mapping[str, Any], resources: Resources) -> Resource:
    return resources.identity(_realm(params), _identity(params))


def _write(p: Mapping[str, Any], r: Resources) -> list[Requirement]:
    return [Requirement(WRITE, _identity_resource(p, r))]


def _delete(p: Mapping[str, Any], r: Resources) -> list[Requirement]:
    return [Requirement(DELETE, _identity_resource(p, r))]


def _erase(p: Mapping[str, Any], r: Resources) -> list[Requirement]:
    return [Requirement(ERASE, _identity_resource(p, r))]


def _read(p: Mapping[str, Any], r: Resources) -> list[Requirement]:
    res = _identity_resource(p, r)
    return [Requirement(READ, res), Requirement(VIEW, res)]


def _tool(p: Mapping[str, Any], r: Resources) -> list[Requirement]:
    args = p.get("arguments")
    action = args.get("action") if isinstance(args, Mapping) else None
    action = action.strip().lower() if isinstance(action, str) else None
    if action == "recall":
        return _read(p, r)
    if action == "forget":
        return _delete(p, r)
    return _write(p, r)


def _decide(p: Mapping[str, Any], r: Resources) -> list[Requirement]:
    verdict = p.get("verdict")
    if not isinstance(verdict, str):
        raise InvalidParams("verdict must be 'release' or 'tombstone'", "verdict")
    verdict = verdict.strip()
    if verdict not in ("release", "tombstone"):
        raise InvalidParams(f"verdict must be 'release' or 'tombstone' (got '{verdict}')", "verdict")
    res = _identity_resource(p, r)
    last = WRITE if verdict == "release" else DELETE
    return [Requirement(REVIEW, res), Requirement(VIEW, res), Requirement(READ, res), Requirement(last, res)]


def _optional_str(p: Mapping[str, Any], key: str) -> str | None:
    value = p.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InvalidParams(f"{key} must be a non-empty string when provided", key)
    return value.strip()


def _records(p: Mapping[str, Any], r: Resources) -> list[Requirement]:
    scope = _optional_str(p, "scope")
    identity = p.get("identity")
    scope_key = _optional_str(p, "scope_key")
    realm_given = p.get("realm") is not None
    realm = _realm(p) if realm_given else DEFAULT_REALM
    if identity is not None:
        scope = scope or "identity"
        if scope_key is None:
            scope_key = _identity(p)
    if scope is None:
        return []
    if scope not in ("identity", "mob", "operator", "realm"):
        raise InvalidParams(f"unknown scope '{scope}'", "scope")
    if scope == "operator":
        return [Requirement("operator.memory.read", r.operator(realm, scope_key or ""))]
    if scope == "realm":
        return [Requirement(READ, r.realm(realm))]
    if scope_key is None or (r.names_need_realm and not realm_given):
        return []
    if scope == "mob":
        return [Requirement("mob.memory.read", r.mob(realm, scope_key))]
    try:
        key = parse_identity(scope_key)
    except ValueError as exc:
        raise InvalidParams(str(exc), "identity") from None
    res = r.identity(realm, key)
    return [Requirement(READ, res), Requirement(VIEW, res)]


def _none(p: Mapping[str, Any], r: Resources) -> list[Requirement]:
    return []


def _unscoped_read(p: Mapping[str, Any], r: Resources) -> list[Requirement]:
    return [Requirement(READ, Resource.unscoped())]


def _review_anywhere(p: Mapping[str, Any], r: Resources) -> list[Requirement]:
    return [Requirement(REVIEW, Resource.anywhere())]


def _commit_anywhere(p: Mapping[str, Any], r: Resources) -> list[Requirement]:
    return [Requirement("mob.memory.commit", Resource.anywhere())]


_Rule = Callable[[Mapping[str, Any], Resources], list[Requirement]]

RULES: dict[str, _Rule] = {
    "meta/agent_memory/remember": _write,
    "meta/agent_memory/remember_batch": _write,
    "meta/agent_memory/update": _write,
    "meta/agent_memory/forget": _delete,
    "meta/agent_memory/erase": _erase,
    "meta/agent_memory/erase_identity": _erase,
    "meta/agent_memory/recall": _read,
    "meta/agent_memory/manifest": _read,
    "meta/agent_memory/list": _read,
    "meta/turn/inject": _read,
    "meta/agent_memory/tool": _tool,
    "meta/memory/quarantine/decide": _decide,
    "meta/gating/decide": _review_anywhere,
    "meta/memory/steward/dream": _review_anywhere,
    "meta/memory/proposals/list": _unscoped_read,
    "meta/memory/proposals/decide": _commit_anywhere,
    PANEL + "records": _records,
    PANEL + "record": _none,
    PANEL + "quarantine": _review_anywhere,
    **{
        PANEL + m: _unscoped_read
        for m in ("dreams", "dream_runs", "audit_verdicts", "overview", "proposals", "injections", "harvests")
    },
}


def required_actions(method: str, params: Any, resources: Resources | None = None) -> list[Requirement]:
    """The entry gates of ``method`` called with raw ``params`` (a JSON object or ``None``).

    ``resources`` names identities the console's way (default: bare names,
    attributes unknown). Returns ``[]`` for ungated methods. Raises
    ``KeyError(method)`` for a method this table does not know, and
    :class:`~meta_memory.errors.InvalidParams` when a param the gate needs is
    invalid (same rules as the methods' own parsers: identity, realm, verdict,
    scope).
    """
    if method in UNGATED_METHODS:
        return []
    rule = RULES[method]
    return rule(_params(params), resources or Resources())


def authorize(
    policy: AccessPolicy,
    principal: Principal,
    method: str,
    params: Any,
    resources: Resources | None = None,
) -> None:
    """Enforce ``method``'s gates for ``principal``; return ``None`` when allowed.

    A read-only console refuses :data:`MUTATING_METHODS` first, with
    :class:`~meta_memory.access.policy.ReadOnlyConsole` (-32030, action = the
    method's first required action). Otherwise raises
    :class:`~meta_memory.errors.AccessDenied` for the first refused requirement,
    ``KeyError`` for an unknown method, ``InvalidParams`` as :func:`required_actions`.
    """
    needs = required_actions(method, params, resources)
    if policy.read_only and method in MUTATING_METHODS:
        first = needs[0] if needs else None
        raise ReadOnlyConsole(first.action if first else method, first.resource.label if first else None)
    policy.require_all(principal, needs)
