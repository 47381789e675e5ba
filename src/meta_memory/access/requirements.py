"""What a method requires: the declarative requirements a registration names, and :func:`authorize`.

Seed: "Agent memory injection" (RPCs), "Reviewing quarantined records" (the
decision's grants, read-only consoles), "Console Memory panel"; reference §7.

Every method of the table declares, in its own registration
(:meth:`meta_memory.rpc.registry.MethodTable.method`), a :class:`Requires`
evaluated on its **parsed** params, and whether it changes state. There is no
second table keyed by name: a method without a declaration cannot be
registered. Each declaration also names its *entry gate* (``Requires.entry``): the actions every
call of the method needs on some scope whatever its params, judged by :func:`admit` before the params
are read, so a caller who could never be allowed (an anonymous caller without an ``anyone`` grant of
the action) is refused without learning how the params are checked. The helpers here build the
common shapes:

* :func:`on_identity` — actions on the ``<realm>/<identity>`` the params name;
* :func:`identity_write` — a write or delete on the identity, which also needs what reading the
  identity needs (:data:`SIGHT`), since its answer tells what the identity holds;
* :func:`unscoped` — actions that need an unscoped grant (realm-spanning reads,
  the ledger, operator status);
* :func:`anywhere` — "holds the action on at least one scope" (an entry gate
  for methods whose rows are judged one by one);
* :func:`copy_of` — an operator's copy of memory (export, backup): an unscoped grant, and the
  copied scopes judged so that every deny that could match one of them applies;
* :data:`PUBLIC` — no grant at all (only ``meta/capabilities``, which the
  console needs before it has a token);
* :func:`requires` — a custom rule (e.g. the memory tool, by its action).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import AccessDenied
from .resources import Resource, Resources

if TYPE_CHECKING:  # pragma: no cover
    from .policy import AccessPolicy
    from .principal import Principal

__all__ = [
    "PUBLIC",
    "SIGHT",
    "admit",
    "Requirement",
    "Requires",
    "anywhere",
    "authorize",
    "copy_of",
    "identity_needs",
    "identity_write",
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
#: What reading an identity's memory needs (recall, manifest, list, history).
SIGHT: tuple[str, ...] = (READ, VIEW)


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
    "no grant needed" declaration. ``entry`` is the gate judged before the params are read
    (:func:`admit`): for each group, the caller must hold at least one of its actions on some scope,
    whatever the params name (``()``: no gate, for :data:`PUBLIC` and methods whose rows are judged
    one by one).
    """

    evaluate: Evaluate
    describe: str
    public: bool = False
    entry: tuple[frozenset[str], ...] = ()

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

    return Requires(evaluate, " + ".join(actions) + " on the identity", entry=_each(actions))


def identity_needs(action: str) -> tuple[str, ...]:
    """The actions a write or delete of identity memory needs on the identity: ``action`` first, then
    :data:`SIGHT`. Every such call reads the identity in its answer or outcome: remember's exact-content
    dedup answers with the record already holding the content (its id, tags, metadata and expiry, and
    ``created: false``), update with the new version carrying the prior's kept fields, forget whether the
    id was a record of the identity, the ``memory`` tool's replies the same. A caller that may not read
    the identity is refused on its grants alone (``-32030`` naming the missing read action, whatever the
    identity holds), so no answer depends on content it may not see (docs/access.md, "No existence oracle")."""
    return (action, *SIGHT)


def identity_write(action: str) -> Requires:
    """:func:`on_identity` of :func:`identity_needs` (``action`` + ``agent.memory.read`` + ``agent.view``)."""
    return on_identity(*identity_needs(action))


def _each(actions: Iterable[str]) -> tuple[frozenset[str], ...]:
    """An entry gate needing every one of ``actions`` (each a group of its own)."""
    return tuple(frozenset({a}) for a in actions)


def unscoped(*actions: str) -> Requires:
    """Each of ``actions`` held unscoped (a rule without ``on``)."""
    needs = [Requirement(a, Resource.unscoped()) for a in actions]
    return Requires(lambda parsed, resources: list(needs), " + ".join(actions) + " (unscoped)", entry=_each(actions))


def anywhere(*actions: str) -> Requires:
    """Each of ``actions`` held on at least one scope (rows are then judged one by one)."""
    needs = [Requirement(a, Resource.anywhere()) for a in actions]
    return Requires(lambda parsed, resources: list(needs), " + ".join(actions) + " on some scope", entry=_each(actions))


def copy_of(action: str) -> Requires:
    """An operator's copy of memory (``meta/storage/export``, ``meta/storage/backup``): ``action`` held
    unscoped, then ``action`` on what the params copy, so a deny scoped by identity, role, label, mob or
    realm is never bypassed by a copy:

    * ``identity`` and ``realm`` named: the identity resource ``<realm>/<identity>`` (a label, role or
      identity deny that matches it refuses; an identity the roster does not list is refused under such
      a deny, as for every action on an identity);
    * ``identity`` alone (its scope in every realm) or ``realm`` alone (every scope of the realm), or
      neither (every scope of every realm; a backup always):
      :meth:`Resource.every <meta_memory.access.resources.Resource.every>`, refused by any deny of
      ``action`` applying to the caller that could match a copied scope
      (:class:`~meta_memory.access.policy.CopyDenied`, ``-32030`` saying what to name instead);
    * ``export_id`` (a page of an export already started): the unscoped grant alone, the copy having
      been judged when it started (a page is answered to the principal that started it only).

    Params without ``identity``/``realm``/``export_id`` attributes (a backup) copy everything."""

    def evaluate(parsed: Any, resources: Resources) -> list[Requirement]:
        needs = [Requirement(action, Resource.unscoped())]
        if getattr(parsed, "export_id", None) is not None:
            return needs
        realm, identity = _realm_of(parsed), getattr(parsed, "identity", None)
        if isinstance(identity, str) and realm is not None:
            needs.append(Requirement(action, resources.identity(realm, identity)))
        else:
            needs.append(Requirement(action, Resource.every(realm, identity if isinstance(identity, str) else None)))
        return needs

    return Requires(evaluate, f"{action} (unscoped) and on every scope copied", entry=_each((action,)))


def requires(describe: str, *, entry: Iterable[Iterable[str]]) -> Callable[[Evaluate], Requires]:
    """Decorator turning ``evaluate(parsed, resources)`` into a :class:`Requires` described by ``describe``.

    ``entry`` (mandatory, so a new rule cannot forget its gate): the groups of actions every call needs
    whatever its params, at least one action of each group (``[["agent.memory.read"], ["agent.view"]]``;
    ``[["agent.memory.write", "agent.memory.delete"]]`` when the params choose between them; ``[]`` when
    some params need no grant at entry). Each evaluation must require at least that much."""
    gate = tuple(frozenset(group) for group in entry)
    if any(not group for group in gate):
        raise ValueError("an entry group names at least one action")

    def wrap(fn: Evaluate) -> Requires:
        return Requires(fn, describe, entry=gate)

    return wrap


def rows_judged(describe: str = "none at entry; every row is judged") -> Requires:
    """No entry gate: the handler judges every row or record it returns (panel listings, record
    detail). A caller with no grant gets empty listings and ``not_found``, never a row: no caller is
    refused, so there is no refusal to judge before the params."""
    return Requires(lambda parsed, resources: [], describe)


#: No grant needed. Reserved for ``meta/capabilities`` (a test pins the set of public methods).
PUBLIC = Requires(lambda parsed, resources: [], "none", public=True)


def admit(policy: AccessPolicy, principal: Principal, spec: Any) -> None:
    """The entry gate of ``spec`` (a :class:`~meta_memory.rpc.registry.MethodSpec`), judged before its
    params are read: with access control on, a caller holding none of a group's actions on any scope
    can never be allowed, whatever the params, and is refused at once with
    :class:`~meta_memory.errors.AccessDenied` (-32030, the group's first action, resource ``*``), so a
    caller without a grant (an anonymous one above all) never learns how the params are checked.
    Without access control, and for a method with no entry gate, nothing is judged here; every caller
    let through is judged again on the parsed params by :func:`authorize`."""
    if not policy.enabled:
        return
    anywhere_ = Resource.anywhere()
    for group in spec.requires.entry:
        if not any(policy.check(principal, action, anywhere_) for action in sorted(group)):
            raise AccessDenied(min(group), anywhere_.label)


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
        from .policy import ReadOnlyConsole  # on use: the method table reads these requirements without the policy

        first = needs[0] if needs else None
        raise ReadOnlyConsole(first.action if first else spec.name, first.resource.label if first else None)
    policy.require_all(principal, needs)
