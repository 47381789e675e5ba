"""What an access decision is about: :class:`Resource`, and how the console names identities.

Seed: "Console Memory panel" — rows are judged under the name the console gives
an identity: on a shared console that is ``<realm>/<identity>``; an identity
whose attributes the console does not know is judged conservatively (see
:mod:`meta_memory.access.policy`).

A :class:`Resources` factory binds the two console-specific choices (the naming
and the attribute directory) so every caller builds resources the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "IdentityAttributes",
    "Resource",
    "ResourceKind",
    "Resources",
    "bare_naming",
    "shared_naming",
]

#: ``identity`` | ``mob`` | ``operator`` | ``realm`` | ``unscoped`` | ``anywhere``.
#: ``unscoped`` and ``realm`` are matched only by unscoped rules; ``anywhere`` is
#: the entry gate "holds this action on at least one scope".
ResourceKind = Literal["identity", "mob", "operator", "realm", "unscoped", "anywhere"]


@dataclass(frozen=True)
class IdentityAttributes:
    """Roles and labels the console knows for an identity (matched by ``on.role``/``on.label``)."""

    roles: frozenset[str] = frozenset()
    labels: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Resource:
    """The target of an access check.

    ``name`` is the judged name: for ``identity`` the console's name for it, for
    ``mob`` the console's name for the mob, for ``operator`` the operator key,
    for ``realm`` the realm. ``attributes`` is set only for identities and is
    ``None`` when the console does not know them.
    """

    kind: ResourceKind
    name: str = ""
    attributes: IdentityAttributes | None = None

    @property
    def label(self) -> str:
        """A display string for ``AccessDenied.resource``: ``identity:<name>``, ``mob:<name>``,
        ``operator:<name>``, ``realm:<name>``, ``*`` (unscoped / anywhere)."""
        if self.kind in ("unscoped", "anywhere"):
            return "*"
        return f"{self.kind}:{self.name}"

    @staticmethod
    def unscoped() -> Resource:
        """A realm-level read that needs an unscoped grant."""
        return Resource("unscoped")

    @staticmethod
    def anywhere() -> Resource:
        """An entry gate met by a grant of the action on any scope (an unscoped deny still refuses)."""
        return Resource("anywhere")


Naming = Callable[[str, str], str]
Directory = Callable[[str, str], IdentityAttributes | None]


def bare_naming(realm: str, name: str) -> str:
    """Single-realm console: an identity (or mob) is judged under its own name."""
    return name


def shared_naming(realm: str, name: str) -> str:
    """Shared console: an identity (or mob) is judged as ``<realm>/<name>``."""
    return f"{realm}/{name}"


def _unknown(realm: str, identity: str) -> IdentityAttributes | None:
    return None


class Resources:
    """Builds :class:`Resource` values the console's way.

    ``naming(realm, name) -> str`` gives the judged name of an identity and of a
    mob (:func:`bare_naming` by default, :func:`shared_naming` on a shared
    console). ``directory(realm, identity) -> IdentityAttributes | None`` gives
    the roles/labels of a known identity (e.g. from the roster), ``None`` when
    the console does not know the identity (memory written for a name no member
    holds). The default directory knows nobody.
    """

    def __init__(self, naming: Naming = bare_naming, directory: Directory = _unknown) -> None:
        self.naming = naming
        self.directory = directory

    @property
    def names_need_realm(self) -> bool:
        """Whether judged names depend on the realm (any naming but :func:`bare_naming`)."""
        return self.naming is not bare_naming

    def identity(self, realm: str, identity: str) -> Resource:
        """The resource for an identity scope key in ``realm``."""
        return Resource("identity", self.naming(realm, identity), self.directory(realm, identity))

    def mob(self, realm: str, mob: str) -> Resource:
        """The resource for a mob scope key in ``realm``."""
        return Resource("mob", self.naming(realm, mob))

    def operator(self, realm: str, operator: str) -> Resource:
        """The resource for an operator scope key (matched by unscoped rules only)."""
        return Resource("operator", operator)

    def realm(self, realm: str) -> Resource:
        """The resource for a realm-scoped row (matched by unscoped rules only)."""
        return Resource("realm", realm)

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
        raise ValueError(f"unknown scope kind '{scope_kind}'")
