"""Authentication and access control: who is calling and what it may do.

* :mod:`.config` — the ``[access]`` config section, :func:`hash_token`;
* :mod:`.principal` — :class:`Principal`, :func:`authenticate` (bearer tokens);
* :mod:`.resources` — :class:`Resource`, realm-qualified identities and the roster;
* :mod:`.policy` — :class:`AccessPolicy` (grants, denies, deny wins);
* :mod:`.requirements` — the requirements a method declares, :func:`authorize`;
* :mod:`.cli` — ``meta-memory token hash``.
"""

from typing import TYPE_CHECKING

from ..lazy_names import lazy_names

if TYPE_CHECKING:  # pragma: no cover
    from .config import ACTIONS, AccessConfig, hash_token, parse_access_section
    from .policy import AccessPolicy, ReadOnlyConsole
    from .principal import ANONYMOUS, AuthenticationFailed, Principal, authenticate
    from .requirements import PUBLIC, Requirement, Requires, anywhere, authorize, on_identity, requires, unscoped
    from .resources import IdentityAttributes, Resource, Resources, roster_directory

__all__ = [
    "ACTIONS",
    "ANONYMOUS",
    "PUBLIC",
    "AccessConfig",
    "AccessPolicy",
    "AuthenticationFailed",
    "IdentityAttributes",
    "Principal",
    "ReadOnlyConsole",
    "Requirement",
    "Requires",
    "Resource",
    "Resources",
    "authenticate",
    "anywhere",
    "authorize",
    "hash_token",
    "on_identity",
    "parse_access_section",
    "requires",
    "roster_directory",
    "unscoped",
]

#: Where each public name is defined (a module of this package): a name is imported on first use, so a
#: module that needs only the method requirements (the method table a ``--url`` command reads) does not load
#: the ``[access]`` configuration models.
_HOMES = {
    "ACTIONS": "config",
    "ANONYMOUS": "principal",
    "AccessConfig": "config",
    "AccessPolicy": "policy",
    "AuthenticationFailed": "principal",
    "IdentityAttributes": "resources",
    "PUBLIC": "requirements",
    "Principal": "principal",
    "ReadOnlyConsole": "policy",
    "Requirement": "requirements",
    "Requires": "requirements",
    "Resource": "resources",
    "Resources": "resources",
    "anywhere": "requirements",
    "authenticate": "principal",
    "authorize": "requirements",
    "hash_token": "config",
    "on_identity": "requirements",
    "parse_access_section": "config",
    "requires": "requirements",
    "roster_directory": "resources",
    "unscoped": "requirements",
}


__getattr__, __dir__ = lazy_names(__name__, _HOMES)
