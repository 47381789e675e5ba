"""Authentication and access control: who is calling and what it may do.

* :mod:`.config` — the ``[access]`` config section, :func:`hash_token`;
* :mod:`.principal` — :class:`Principal`, :func:`authenticate` (bearer tokens);
* :mod:`.resources` — :class:`Resource`, realm-qualified identities and the roster;
* :mod:`.policy` — :class:`AccessPolicy` (grants, denies, deny wins);
* :mod:`.requirements` — the requirements a method declares, :func:`authorize`;
* :mod:`.cli` — ``meta-memory token hash``.
"""

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
