"""Authentication and access control: who is calling and what it may do.

* :mod:`.config` — the ``[access]`` config section, :func:`hash_token`;
* :mod:`.principal` — :class:`Principal`, :func:`authenticate` (bearer tokens);
* :mod:`.resources` — :class:`Resource` and the console's naming of identities;
* :mod:`.policy` — :class:`AccessPolicy` (grants, denies, deny wins);
* :mod:`.rules` — the per-RPC requirement table, :func:`authorize`;
* :mod:`.cli` — ``meta-memory token hash``.
"""

from .config import ACTIONS, AccessConfig, hash_token, parse_access_section
from .policy import AccessPolicy, ReadOnlyConsole
from .principal import ANONYMOUS, AuthenticationFailed, Principal, authenticate
from .resources import IdentityAttributes, Resource, Resources, bare_naming, shared_naming
from .rules import Requirement, authorize, required_actions

__all__ = [
    "ACTIONS",
    "ANONYMOUS",
    "AccessConfig",
    "AccessPolicy",
    "AuthenticationFailed",
    "IdentityAttributes",
    "Principal",
    "ReadOnlyConsole",
    "Requirement",
    "Resource",
    "Resources",
    "authenticate",
    "authorize",
    "bare_naming",
    "hash_token",
    "parse_access_section",
    "required_actions",
    "shared_naming",
]
