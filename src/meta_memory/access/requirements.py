"""What a method requires: the declarative requirements a registration names, and :func:`authorize`.

Seed: "Agent memory injection" (RPCs), "Reviewing quarantined records" (the
decision's grants, read-only consoles), "Console Memory panel"; reference §7.

Every method of the table declares, in its own registration
(:meth:`meta_memory.rpc.registry.MethodTable.method`), a :class:`Requires`
evaluated on its **parsed** params, and whether it changes state. There is no
second table keyed by name: a method without a declaration cannot be
registered. The helpers here build the common shapes:

* :func:`on_identity` — actions on the ``<realm>/<identity>`` the params name;
* :func:`unscoped` — actions that need an unscoped grant (realm-spanning reads,
  the ledger, operator status);
* :func:`anywhere` — "holds the action on at least one scope" (an entry gate
  for methods whose rows are judged one by one);
* :data:`PUBLIC` — no grant at all (only ``meta/capabilities``, which the
  console needs before it has a token);
* :func:`requires` — a custom rule (e.g. the memory tool, by its action).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from .policy import AccessPolicy, ReadOnlyConsole
from .principal import Principal
from .resources import Resource, Resources

__all__ = [
    "PUBLIC",
    "Requirement",
    "Requires",
    "anywhere",
    "authorize",
    "on_identity",
    "requires",
    "rows_judged",
    "unscoped",
]

READ = "agent.memory.read"
VIEW = "agent.view"
WRITE = "agent.memory.write"
DELETE = "agent.memory.delete"
REVIEW = "memory.quarantine.review"


class Requirement(NamedTuple):
    """One entry gate: the caller needs ``action`` on ``resource``."""

    action: str
    resource: Resource


Evaluate = Callable[[Any, Resources], list[Requirement]]


@dataclass(frozen=True)
class Requires:
    """A method's declared requirement.

    ``evaluate(parsed, resources)`` returns the requirements in checking order
    (the first refused one is raised); ``describe`` is the one-line summary the
    docs and ``meta/capabilities`` show; ``public`` marks the deliberate
    "no grant needed" declaration.
    """

    evaluate: Evaluate
    describe: str
    public: bool = False

    def __call__(self, parsed: Any, resources: Resources) -> list[Requirement]:
        return self.evaluate(parsed, resources)


def _realm_of(parsed: Any) -> str | None:
    realm = getattr(parsed, "realm", None)
    return realm if isinstance(realm, str) else None


def identity_resource(parsed: Any, resources: Resources) -> Resource:
    """The ``<realm>/<identity>`` resource of parsed params with ``identity`` and optional ``realm``
    (absent => the gateway's default realm)."""
    return resources.identity(_realm_of(parsed), parsed.identity)


def on_identity(*actions: str) -> Requires:
    """Each of ``actions`` on the identity the params name, in its realm."""

    def evaluate(parsed: Any, resources: Resources) -> list[Requirement]:
        res = identity_resource(parsed, resources)
        return [Requirement(a, res) for a in actions]

    return Requires(evaluate, " + ".join(actions) + " on the identity")


def unscoped(*actions: str) -> Requires:
    """Each of ``actions`` held unscoped (a rule without ``on``)."""
    needs = [Requirement(a, Resource.unscoped()) for a in actions]
    return Requires(lambda parsed, resources: list(needs), " + ".join(actions) + " (unscoped)")


def anywhere(*actions: str) -> Requires:
    """Each of ``actions`` held on at least one scope (rows are then judged one by one)."""
    needs = [Requirement(a, Resource.anywhere()) for a in actions]
    return Requires(lambda parsed, resources: list(needs), " + ".join(actions) + " on some scope")


def requires(describe: str) -> Callable[[Evaluate], Requires]:
    """Decorator turning ``evaluate(parsed, resources)`` into a :class:`Requires` described by ``describe``."""

    def wrap(fn: Evaluate) -> Requires:
        return Requires(fn, describe)

    return wrap


def rows_judged(describe: str = "none at entry; every row is judged") -> Requires:
    """No entry gate: the handler judges every row or record it returns (panel listings, record
    detail). A caller with no grant gets empty listings and ``not_found``, never a row."""
    return Requires(lambda parsed, resources: [], describe)


#: No grant needed. Reserved for ``meta/capabilities`` (a test pins the set of public methods).
PUBLIC = Requires(lambda parsed, resources: [], "none", public=True)


def authorize(
    policy: AccessPolicy,
    principal: Principal,
    spec: Any,
    parsed: Any,
    resources: Resources,
) -> None:
    """Enforce a method's declaration for ``principal``; return ``None`` when allowed.

    ``spec`` is a :class:`~meta_memory.rpc.registry.MethodSpec` (``name``,
    ``requires``, ``is_mutating(parsed)``). A read-only gateway refuses every
    state-changing call first with
    :class:`~meta_memory.access.policy.ReadOnlyConsole` (-32030, ``action`` =
    the first required action, or the method name). Otherwise raises
    :class:`~meta_memory.errors.AccessDenied` for the first refused requirement.
    """
    needs = spec.requires(parsed, resources) if policy.enabled or policy.read_only else []
    if policy.read_only and spec.is_mutating(parsed):
        first = needs[0] if needs else None
        raise ReadOnlyConsole(first.action if first else spec.name, first.resource.label if first else None)
    policy.require_all(principal, needs)
