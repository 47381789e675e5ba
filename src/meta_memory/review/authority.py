"""What one caller may review and commit, scope by scope (seed: "Reviewing quarantined records",
access part; docs/access.md "Review").

The entry gates of the review methods (``meta/memory/steward/dream``,
``meta/gating/decide``, ``meta/memory/proposals/decide``) only ask that the
caller holds the action *somewhere*. What a call then touches is judged here,
per scope, with the same :class:`~meta_memory.access.policy.AccessPolicy` and
resource naming as every other check:

- **identity** scope: ``agent.view``, ``agent.memory.read``,
  ``memory.quarantine.review``, ``agent.memory.write`` and
  ``agent.memory.delete`` on the identity (what deciding its quarantine needs);
- **mob** scope: ``mob.memory.read``, ``memory.quarantine.review`` and
  ``mob.memory.commit`` on the mob;
- **operator** and **realm** scopes: ``memory.quarantine.review``,
  ``agent.memory.write`` and ``agent.memory.delete`` held unscoped (these
  resources are matched by unscoped rules only).

A call naming a realm no grant of the caller reaches (:meth:`ReviewAuthority.reaches`) is answered as
in a realm holding nothing (an unknown id, an empty dream) before the realm is read.

A dream also writes the assertion ledger (conflict signals): that needs ``ledger.write`` held
unscoped, as ``meta/memory/index`` does (:meth:`ReviewAuthority.may_write_ledger`).

With access control off every scope is allowed (one reviewer, the host).
"""

from __future__ import annotations

from typing import Any

from meta_memory.access.policy import AccessPolicy
from meta_memory.access.principal import ANONYMOUS, Principal
from meta_memory.access.resources import Resource, Resources
from meta_memory.agent_memory.model import Scope
from meta_memory.errors import AccessDenied

__all__ = ["ReviewAuthority", "scope_needs"]

_IDENTITY = ("agent.view", "agent.memory.read", "memory.quarantine.review", "agent.memory.write", "agent.memory.delete")
_MOB = ("mob.memory.read", "memory.quarantine.review", "mob.memory.commit")
_SHARED = ("memory.quarantine.review", "agent.memory.write", "agent.memory.delete")


def scope_needs(scope_kind: str) -> tuple[str, ...]:
    """The actions acting on a scope of ``scope_kind`` needs, in checking order."""
    if scope_kind == "identity":
        return _IDENTITY
    if scope_kind == "mob":
        return _MOB
    return _SHARED


class ReviewAuthority:
    """Scope decisions for one caller of a review method.

    Args:
        policy: the runtime's access policy (``None`` = access control off).
        principal: the authenticated caller (``None`` = anonymous).
        resources: how the console names identities and mobs (default: bare names).
    """

    def __init__(
        self, policy: AccessPolicy | None = None, principal: Principal | None = None, resources: Resources | None = None
    ) -> None:
        self.policy = policy
        self.principal = principal or ANONYMOUS
        self.resources = resources or Resources()

    @classmethod
    def of(cls, access: Any, principal: Principal | None) -> ReviewAuthority:
        """From the runtime's :class:`~meta_memory.services.access.AccessService`."""
        if access is None:
            return cls()
        return cls(access.policy, principal, access.resources)

    @property
    def enforced(self) -> bool:
        return self.policy is not None and self.policy.enabled

    def denial(self, scope_kind: str, scope_key: str, realm: str) -> tuple[str, str] | None:
        """The first ``(action, resource label)`` the caller lacks on the scope, or ``None``."""
        if not self.enforced:
            return None
        assert self.policy is not None
        resource = self.resources.scope(realm, scope_kind, scope_key)
        for action in scope_needs(scope_kind):
            if not self.policy.check(self.principal, action, resource):
                return action, resource.label
        return None

    def may_act(self, scope: Scope) -> bool:
        """May the caller review and commit in ``scope``?"""
        kind, key = scope.storage()
        return self.denial(kind, key, scope.realm) is None

    def reaches(self, realm: str, action: str = "memory.quarantine.review") -> bool:
        """May the caller act on any scope of ``realm``: some grant of ``action`` (which every scope kind
        needs: :func:`scope_needs`) reaches the realm, unscoped or scoped to it (and no unscoped deny
        refuses it)? A review call in a realm it does not reach is answered as in a realm holding
        nothing, without reading the realm, so the answer never tells whether the realm exists."""
        if not self.enforced:
            return True
        assert self.policy is not None
        return self.policy.reaches_realm(self.principal, action, realm)

    def may_write_ledger(self) -> bool:
        """May the caller write the assertion ledger (unscoped ``ledger.write``, what ``meta/memory/index``
        needs)? A dream the caller asks for signals conflicts in the ledger only then."""
        if not self.enforced:
            return True
        assert self.policy is not None
        return self.policy.check(self.principal, "ledger.write", Resource.unscoped())

    def require(self, realm: str, scope_kind: str, scope_key: str) -> None:
        """Raise :class:`~meta_memory.errors.AccessDenied` (-32030, the first missing action) unless allowed."""
        missing = self.denial(scope_kind, scope_key, realm)
        if missing is not None:
            raise AccessDenied(*missing)
