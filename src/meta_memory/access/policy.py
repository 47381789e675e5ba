"""The access decision: grants, denies, deny wins.

Seed: "Reviewing quarantined records" (access part) and "Console Memory panel".

How a rule applies to ``(principal, action, resource)``:

* its ``action`` is the action asked about;
* its ``who`` matches the principal: ``anyone`` matches every caller
  (anonymous included); ``principal``/``role``/``label`` match a named
  principal's name/roles/labels and never an anonymous caller;
* its ``on`` matches the resource: no ``on`` (unscoped) matches every
  resource; ``on.identity`` matches the identity of that judged name;
  ``on.mob`` the mob of that name; ``on.role``/``on.label`` an identity whose
  known attributes hold that role/label. Operator, realm and unscoped resources
  are matched by unscoped rules only — so realm rows and realm-level reads
  need an *unscoped* grant.

The decision: access control off => allowed. Otherwise a deny that applies
refuses; else a grant that applies allows; else refused.

An identity whose attributes the console does not know is withheld from
``agent.memory.read`` and ``agent.view`` while a deny for that action that
applies to the caller is scoped by a role, a label or another identity — the
unknown name could hold that role or label (seed).

The ``anywhere`` resource is an entry gate: allowed when some grant of the
action applies to the caller on any scope and no *unscoped* deny does.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import AccessControlNotConfigured, AccessDenied
from .config import ACTIONS, AccessConfig, AccessRule, RuleSubject
from .principal import Principal
from .resources import Resource

__all__ = ["AccessPolicy", "ReadOnlyConsole", "READ_ACTIONS", "UNKNOWN_IDENTITY_GUARDED"]

#: Actions that reveal memory; holding any of them anywhere lights the panel's nav entry.
READ_ACTIONS: frozenset[str] = frozenset(
    {"agent.memory.read", "mob.memory.read", "operator.memory.read", "memory.quarantine.review"}
)
#: Actions for which an identity with unknown attributes is withheld under scoped denies.
UNKNOWN_IDENTITY_GUARDED: frozenset[str] = frozenset({"agent.memory.read", "agent.view"})


class ReadOnlyConsole(AccessDenied):
    """-32030 for a mutation on a read-only console: ``access denied: console is read-only``.

    ``data``: ``{kind: "access_denied", action, resource, read_only: true}``.
    """

    def __init__(self, action: str, resource: str | None = None) -> None:
        super().__init__(action, resource)
        self.message = "access denied: console is read-only"
        self.args = (self.message,)
        self.data["read_only"] = True


def _who_matches(who: RuleSubject, principal: Principal) -> bool:
    if who.anyone:
        return True
    if principal.anonymous:
        return False
    if who.principal is not None:
        return principal.name == who.principal
    if who.role is not None:
        return who.role in principal.roles
    if who.label is not None:
        return who.label in principal.labels
    return False  # pragma: no cover - validated to hold one selector


def _on_matches(rule: AccessRule, resource: Resource) -> bool:
    on = rule.on
    if on is None:
        return True
    if resource.kind == "identity":
        if on.identity is not None:
            return on.identity == resource.name
        attrs = resource.attributes
        if attrs is None:
            return False
        if on.role is not None:
            return on.role in attrs.roles
        if on.label is not None:
            return on.label in attrs.labels
        return False
    if resource.kind == "mob":
        return on.mob is not None and on.mob == resource.name
    return False


def _withholds_unknown(rule: AccessRule, resource: Resource) -> bool:
    """A deny scoped by a role, a label or another identity withholds an identity of unknown attributes."""
    on = rule.on
    if on is None or resource.kind != "identity" or resource.attributes is not None:
        return False
    if rule.action not in UNKNOWN_IDENTITY_GUARDED:
        return False
    return on.role is not None or on.label is not None or on.identity is not None


class AccessPolicy:
    """Decides ``(principal, action, resource)`` from an :class:`AccessConfig`.

    ``check`` answers; ``require`` raises :class:`~meta_memory.errors.AccessDenied`
    (``-32030``, ``access denied: <action>``, ``data {action, resource}``).
    Unknown action names raise ``ValueError`` (a programming error: config
    already refuses them).
    """

    def __init__(self, config: AccessConfig | None = None) -> None:
        self.config = config if config is not None else AccessConfig()
        self._grants: dict[str, list[AccessRule]] = {a: [] for a in ACTIONS}
        self._denies: dict[str, list[AccessRule]] = {a: [] for a in ACTIONS}
        for rule in self.config.grants:
            self._grants[rule.action].append(rule)
        for rule in self.config.denies:
            self._denies[rule.action].append(rule)

    @property
    def enabled(self) -> bool:
        """Whether access control is on."""
        return self.config.enabled

    @property
    def read_only(self) -> bool:
        """Whether the console refuses mutations."""
        return self.config.read_only

    def check(self, principal: Principal, action: str, resource: Resource) -> bool:
        """``True`` when ``principal`` may perform ``action`` on ``resource`` (see module doc)."""
        if action not in ACTIONS:
            raise ValueError(f"unknown access action '{action}'")
        if not self.config.enabled:
            return True
        denies = [r for r in self._denies[action] if _who_matches(r.who, principal)]
        grants = [r for r in self._grants[action] if _who_matches(r.who, principal)]
        if resource.kind == "anywhere":
            if any(r.on is None for r in denies):
                return False
            return bool(grants)
        for rule in denies:
            if _on_matches(rule, resource) or _withholds_unknown(rule, resource):
                return False
        return any(_on_matches(rule, resource) for rule in grants)

    def check_all(self, principal: Principal, pairs: Iterable[tuple[str, Resource]]) -> bool:
        """``True`` when every ``(action, resource)`` pair is allowed."""
        return all(self.check(principal, action, resource) for action, resource in pairs)

    def first_denied(self, principal: Principal, pairs: Iterable[tuple[str, Resource]]) -> str | None:
        """The first refused action of ``pairs`` (in order), or ``None`` when all are allowed."""
        for action, resource in pairs:
            if not self.check(principal, action, resource):
                return action
        return None

    def require(
        self, principal: Principal, action: str, resource: Resource, resource_name: str | None = None
    ) -> None:
        """Raise ``AccessDenied(action, resource_name or resource.label)`` unless allowed."""
        if not self.check(principal, action, resource):
            raise AccessDenied(action, resource_name if resource_name is not None else resource.label)

    def require_all(self, principal: Principal, pairs: Iterable[tuple[str, Resource]]) -> None:
        """``require`` each pair in order; the first refusal is raised."""
        for action, resource in pairs:
            self.require(principal, action, resource)

    def requires_access_control(self) -> None:
        """For methods that only make sense under access control: raise
        :class:`~meta_memory.errors.AccessControlNotConfigured` (-32004) when it is off."""
        if not self.config.enabled:
            raise AccessControlNotConfigured()

    def can_read_memory(self, principal: Principal) -> bool:
        """The experience projection's ``memory.can_read``: access off, or the caller holds some
        read action (:data:`READ_ACTIONS`) on some scope. Drives the panel's nav entry."""
        return any(self.check(principal, action, Resource.anywhere()) for action in sorted(READ_ACTIONS))
