"""What an access decision is about: :class:`Resource`, and the roster of identity attributes.

Seed: "Console Memory panel" — rows are judged under the realm-qualified name of
an identity (``<realm>/<identity>``); an identity whose attributes the gateway
does not know is judged conservatively (see :mod:`meta_memory.access.policy`).

A :class:`Resources` factory binds the gateway's default realm (the realm a
method without a ``realm`` param acts in) and the attribute directory (the
``[[access.roster]]``), so every caller builds resources the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from ..errors import echo
from ..identity import DEFAULT_REALM

__all__ = [
    "IdentityAttributes",
    "Resource",
    "ResourceKind",
    "Resources",
    "roster_directory",
]

#: ``identity`` | ``mob`` | ``operator`` | ``realm`` | ``unscoped`` | ``anywhere`` | ``every``.
#: ``unscoped`` is matched only by unscoped rules; ``realm`` and ``operator`` by
#: unscoped rules and realm-only rules of their realm; ``anywhere`` is the entry
#: gate "holds this action on at least one scope"; ``every`` is a copy of every scope
#: (a whole export or backup): granted by unscoped rules only, refused by every deny that
#: could match one of the scopes it copies (see :meth:`Resource.every`).
ResourceKind = Literal["identity", "mob", "operator", "realm", "unscoped", "anywhere", "every"]


@dataclass(frozen=True)
class IdentityAttributes:
    """Roles and labels the gateway knows for an identity (matched by ``on.role``/``on.label``)."""

    roles: frozenset[str] = frozenset()
    labels: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Resource:
    """The target of an access check.

    ``name`` is the identity, mob or operator key (``""`` for a realm);
    ``realm`` the realm it lives in (``None`` for ``unscoped``/``anywhere``).
    ``attributes`` is set only for identities and is ``None`` when the gateway
    does not know them.
    """

    kind: ResourceKind
    name: str = ""
    attributes: IdentityAttributes | None = None
    realm: str | None = None

    @property
    def qualified(self) -> str:
        """The judged name: ``<realm>/<name>`` (the spec's realm-qualified identity)."""
        return f"{self.realm}/{self.name}" if self.realm is not None else self.name

    @property
    def label(self) -> str:
        """A display string for ``AccessDenied.resource``: ``identity:<realm>/<name>``,
        ``mob:<realm>/<name>``, ``operator:<realm>/<name>``, ``realm:<realm>``, ``*``
        (unscoped / anywhere / a copy of everything), ``identity:*/<name>`` (a copy of an identity in
        every realm)."""
        if self.kind in ("unscoped", "anywhere"):
            return "*"
        if self.kind == "every":  # a copy: of one identity in every realm, of a realm, or of everything
            if self.name:
                return f"identity:*/{self.name}"
            return f"realm:{self.realm}" if self.realm is not None else "*"
        if self.kind == "realm":
            return f"realm:{self.realm}"
        return f"{self.kind}:{self.qualified}"

    @staticmethod
    def unscoped() -> Resource:
        """A realm-spanning read or operation that needs an unscoped grant."""
        return Resource("unscoped")

    @staticmethod
    def anywhere() -> Resource:
        """An entry gate met by a grant of the action on any scope (an unscoped deny still refuses)."""
        return Resource("anywhere")

    @staticmethod
    def every(realm: str | None = None, identity: str | None = None) -> Resource:
        """A copy of every scope of ``realm`` (of every realm when ``None``), or of ``identity``'s scope in
        every realm when ``identity`` is given and ``realm`` is not: a whole export or a state-directory
        backup. Allowed by an unscoped grant only, and refused by an unscoped deny and by every scoped deny
        (identity, role, label, mob or realm; for ``identity``, every one but mob) that covers ``realm``
        (any realm when ``None``): the copy would hold scopes the deny withholds, and an identity the
        roster does not list could hold the denied role or label."""
        return Resource("every", identity or "", None, realm)


Directory = Callable[[str, str], IdentityAttributes | None]


def _unknown(realm: str, identity: str) -> IdentityAttributes | None:
    return None


def roster_directory(entries: Iterable[object]) -> Directory:
    """A directory over ``[[access.roster]]`` entries (objects with ``key``, ``roles``, ``labels``).

    ``directory(realm, identity)`` returns the entry's attributes, or ``None``
    for an identity the roster does not list in that realm.
    """
    table: dict[tuple[str, str], IdentityAttributes] = {}
    for entry in entries:
        key = getattr(entry, "key")
        table[key] = IdentityAttributes(frozenset(getattr(entry, "roles")), frozenset(getattr(entry, "labels")))
    return lambda realm, identity: table.get((realm, identity))


class Resources:
    """Builds :class:`Resource` values the gateway's way.

    ``default_realm`` is the realm used when a method names none (the
    configured ``[agent_memory] realm``); ``directory(realm, identity)`` gives
    the roles/labels of a known identity (the roster), ``None`` when unknown.
    """

    def __init__(self, directory: Directory = _unknown, default_realm: str = DEFAULT_REALM) -> None:
        self.directory = directory
        self.default_realm = default_realm

    def _realm(self, realm: str | None) -> str:
        return realm if realm is not None else self.default_realm

    def identity(self, realm: str | None, identity: str) -> Resource:
        """The resource for an identity scope key in ``realm`` (``None`` = the default realm)."""
        r = self._realm(realm)
        return Resource("identity", identity, self.directory(r, identity), r)

    def mob(self, realm: str | None, mob: str) -> Resource:
        """The resource for a mob scope key in ``realm``."""
        return Resource("mob", mob, None, self._realm(realm))

    def operator(self, realm: str | None, operator: str) -> Resource:
        """The resource for an operator scope key."""
        return Resource("operator", operator, None, self._realm(realm))

    def realm(self, realm: str | None) -> Resource:
        """The resource for a realm-scoped row."""
        return Resource("realm", "", None, self._realm(realm))

    def scope(self, realm: str, scope_kind: str, scope_key: str) -> Resource:
        """The resource for a stored scope: ``scope_kind`` is ``identity|mob|operator|realm``.

        Raises ``ValueError`` for another kind.
        """
        if scope_kind == "identity":
            return self.identity(realm, scope_key)
        if scope_kind == "mob":
            return self.mob(realm, scope_key)
        if scope_kind == "operator":
            return self.operator(realm, scope_key)
        if scope_kind == "realm":
            return self.realm(realm)
        raise ValueError(f"unknown scope kind '{echo(str(scope_kind))}'")
