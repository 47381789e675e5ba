"""The access decision: grants, denies, deny wins.

Seed: "Reviewing quarantined records" (access part) and "Console Memory panel".

How a rule applies to ``(principal, action, resource)``:

* its ``action`` is the action asked about;
* its ``who`` matches the principal: ``anyone`` matches every caller
  (anonymous included); ``principal``/``role``/``label`` match a named
  principal's name/roles/labels and never an anonymous caller;
* its ``on`` matches the resource: no ``on`` (unscoped) matches every
  resource; otherwise the rule's realm must cover the resource's realm and
  ``on.identity`` matches that identity, ``on.mob`` that mob,
  ``on.role``/``on.label`` an identity whose roster attributes hold that
  role/label, and ``on.realm`` alone every identity, mob, operator and realm
  row of the realm. Unscoped resources (realm-spanning reads, status) are
  matched by unscoped rules only.
* realm coverage (every identity resource is judged as ``<realm>/<identity>``):
  ``on.realm = "*"`` covers every realm, ``on.realm = "<name>"`` that realm;
  a rule without ``on.realm`` covers, when it is a *grant*, only the gateway's
  default realm, and when it is a *deny*, every realm — the narrower reading
  of a grant and the wider reading of a deny, so an omitted realm never opens
  more than it says.

The decision: access control off => allowed. Otherwise a deny that applies
refuses; else a grant that applies allows; else refused.

An identity the roster (``[[access.roster]]``) does not list in its realm has
unknown attributes: it is withheld from *every* action on it (read, view,
write, delete, erase, session management, ledger, review) while a deny for
that action that applies to the caller, and covers the realm, is scoped by a
role, a label or another identity — the unknown name could hold that role or
label, so the decision fails closed. The seed states this for
``agent.memory.read`` and ``agent.view``; applying it to every action is
stricter than that minimum.

The ``anywhere`` resource is an entry gate: allowed when some grant of the
action applies to the caller on any scope and no *unscoped* deny does.

Creating a realm (the first write into a realm that holds no database yet) needs more than reaching it:
a grant of the write's action that covers the realm *itself* — unscoped, or whose ``on`` names that realm
(``realm = "hr"``, with or without an identity, mob, role or label) — unless the realm is the gateway's
default realm or one the ``[agent_memory] realms`` allow-list names (the operator created those by
configuring them). A grant that reaches the realm only through ``realm = "*"`` writes into realms that
exist and creates none (:meth:`AccessPolicy.may_create_realm`, refused with :class:`RealmCreationDenied`):
otherwise one identity's wildcard grant could fill ``max_realms`` for everyone and multiply every per
(realm, identity) bound by the realms it invents.

The ``every`` resource (:meth:`~meta_memory.access.resources.Resource.every`) is a
copy of every scope of a realm, or of all realms (a whole export, a state-directory
backup): allowed by an unscoped grant only, and refused by every deny that applies to
the caller and could match one of the copied scopes — unscoped, or scoped and covering
the realm (any realm when the copy spans them). A copy of one identity across realms is
refused by such denies except mob-scoped ones.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from ..errors import AccessControlNotConfigured, AccessDenied
from ..identity import DEFAULT_REALM
from .config import ACTIONS, ANY_REALM, AccessConfig, AccessRule, RuleScope, RuleSubject
from .principal import Principal
from .resources import Resource

__all__ = ["AccessPolicy", "CopyDenied", "ReadOnlyConsole", "READ_ACTIONS", "RealmCreationDenied"]

#: Actions that reveal memory; holding any of them anywhere lights the panel's nav entry.
READ_ACTIONS: frozenset[str] = frozenset(
    {"agent.memory.read", "mob.memory.read", "operator.memory.read", "memory.quarantine.review"}
)


class ReadOnlyConsole(AccessDenied):
    """-32030 for a mutation on a read-only console: ``access denied: console is read-only``.

    ``data``: ``{kind: "access_denied", action, resource, read_only: true}``.
    """

    def __init__(self, action: str, resource: str | None = None) -> None:
        super().__init__(action, resource)
        self.message = "access denied: console is read-only"
        self.args = (self.message,)
        self.data["read_only"] = True


class CopyDenied(AccessDenied):
    """-32030 for a copy of every scope (:meth:`~meta_memory.access.resources.Resource.every`: a whole
    export, a state-directory backup) refused to a caller under a deny of the action: ``access denied:
    <action>: ...`` saying what to name instead. ``data``: ``{kind: "access_denied", action, resource,
    scoped_deny: true}``."""

    def __init__(self, action: str, resource: Resource) -> None:
        super().__init__(action, resource.label)
        if resource.name:
            what, hint = f"identity '{resource.name}' in every realm", "name its realm too"
        elif resource.realm is not None:
            what, hint = f"every identity of realm '{resource.realm}'", "export one identity: name it as well"
        else:
            what, hint = "every identity", "export one identity: name its realm and identity"
        self.message = (f"access denied: {action}: a deny of {action} that applies to you covers some scopes, "
                        f"and this copy of {what} would include them; {hint}")
        self.args = (self.message,)
        self.data["scoped_deny"] = True


class RealmCreationDenied(AccessDenied):
    """-32030 for a write that would create realm ``realm`` by a caller whose grants reach the realm but do
    not name it (:meth:`AccessPolicy.may_create_realm`): ``access denied: <action>: ...`` saying what
    creating it needs. ``data``: ``{kind: "access_denied", action, resource: "realm:<realm>"}``, the write's
    action on the realm, as every other refusal of a missing grant."""

    def __init__(self, action: str, realm: str) -> None:
        super().__init__(action, Resource("realm", "", None, realm).label)
        self.message = (f"access denied: {action}: realm '{realm}' does not exist, and creating it needs a "
                        f"grant of {action} that names the realm (or no realm scope at all)")
        self.args = (self.message,)


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


def _realm_covers(on: RuleScope, realm: str | None, deny: bool, default_realm: str) -> bool:
    """Whether a scoped rule reaches ``realm``: ``"*"`` every realm; a named realm itself;
    no realm => a deny every realm, a grant the default realm only (the safe reading of each)."""
    if on.realm == ANY_REALM:
        return True
    if on.realm is None:
        return deny or realm == default_realm
    return on.realm == realm


def _on_matches(rule: AccessRule, resource: Resource, deny: bool, default_realm: str) -> bool:
    on = rule.on
    if on is None:
        return True
    if resource.kind == "every":
        # A copy of every scope: a scoped grant never opens it; a scoped deny closes it when it could
        # match one of the copied scopes (fail closed: an unlisted identity may hold any role or label).
        if not deny or (resource.name and on.kind == "mob"):
            return False
        return resource.realm is None or _realm_covers(on, resource.realm, True, default_realm)
    if resource.kind in ("unscoped", "anywhere"):
        return False
    realm = resource.realm if resource.realm is not None else default_realm
    if not _realm_covers(on, realm, deny, default_realm):
        return False
    kind = on.kind
    if kind == "realm":
        return True
    if resource.kind == "identity":
        if kind == "identity":
            return on.identity == resource.name
        attrs = resource.attributes
        if attrs is None or kind == "mob":
            return False
        if kind == "role":
            return on.role in attrs.roles
        return on.label in attrs.labels
    if resource.kind == "mob":
        return kind == "mob" and on.mob == resource.name
    return False


def _withholds_unknown(rule: AccessRule, resource: Resource, default_realm: str) -> bool:
    """A deny scoped by a role, a label or another identity withholds an identity of unknown
    attributes in the realms the deny covers, whatever the deny's action (fail closed)."""
    on = rule.on
    if on is None or resource.kind != "identity" or resource.attributes is not None:
        return False
    if on.role is None and on.label is None and on.identity is None:
        return False
    return _realm_covers(on, resource.realm if resource.realm is not None else default_realm, True, default_realm)


class AccessPolicy:
    """Decides ``(principal, action, resource)`` from an :class:`AccessConfig`.

    ``check`` answers; ``require`` raises :class:`~meta_memory.errors.AccessDenied`
    (``-32030``, ``access denied: <action>``, ``data {action, resource}``).
    Unknown action names raise ``ValueError`` (a programming error: config
    already refuses them).
    """

    def __init__(self, config: AccessConfig | None = None, default_realm: str = DEFAULT_REALM) -> None:
        self.config = config if config is not None else AccessConfig()
        self.default_realm = default_realm
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
        d = self.default_realm
        for rule in denies:
            if _on_matches(rule, resource, True, d) or _withholds_unknown(rule, resource, d):
                return False
        return any(_on_matches(rule, resource, False, d) for rule in grants)

    def reaches_realm(self, principal: Principal, action: str, realm: str) -> bool:
        """``True`` when some grant of ``action`` for ``principal`` can apply inside ``realm``
        (unscoped, or scoped to a realm that covers it) and no unscoped deny refuses it.
        Decides whether a realm's *name* is shown to the caller (panel ``realms`` lists)."""
        if not self.config.enabled:
            return True
        if any(r.on is None and _who_matches(r.who, principal) for r in self._denies[action]):
            return False
        return any(
            _who_matches(r.who, principal) and (r.on is None or _realm_covers(r.on, realm, False, self.default_realm))
            for r in self._grants[action]
        )

    def may_create_realm(self, principal: Principal, action: str, realm: str,
                         listed: Collection[str] | None = None) -> bool:
        """``True`` when ``principal``'s write of ``action`` may create ``realm`` (a realm that does not
        exist yet; see the module doc): access control off; ``realm`` is the default realm or named by the
        allow-list ``listed`` (``[agent_memory] realms``; ``None`` = no list); or a grant of ``action`` for
        ``principal`` is unscoped or names ``realm`` itself. A ``realm = "*"`` grant never does. Denies are
        judged by the write's own check on the identity (this only withholds, it never opens)."""
        if not self.config.enabled or realm == self.default_realm:
            return True
        if listed is not None and realm in listed:
            return True
        return any(_who_matches(r.who, principal) and (r.on is None or r.on.realm == realm)
                   for r in self._grants[action])

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
            if resource.kind == "every" and resource_name is None and self.check(principal, action, Resource.unscoped()):
                raise CopyDenied(action, resource)
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
