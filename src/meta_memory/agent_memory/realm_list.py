"""The optional realm allow-list, ``[agent_memory] realms``: the one rule.

Without the key any realm is served and a realm's first write creates it (a typo in ``realm`` then
creates a new, empty realm). With it, a gateway serves exactly the listed realms:

* every call whose params name an unlisted ``realm`` is refused before it runs, read or write
  (:meth:`meta_memory.rpc.registry.MethodTable.call`);
* no store creates an unlisted realm, whatever the path (import, review, a custom host): the SQLite
  store's and the PostgreSQL store's realm creation check the same list;
* no read or sweep of every realm reaches an unlisted realm a backend holds (another gateway's realm in a
  shared PostgreSQL database, a realm file left in the state directory): a store's ``list_realms`` is
  :func:`served_realms` of what it holds (the console's every-realm reads, export, ``/metrics``, status,
  expiry and retention sweeps, dreams, the vector indexer). Only the erasure checks of an import read
  every realm held: content erased anywhere in the installation stays refused.

The refusal is ``-32602`` (:class:`~meta_memory.errors.InvalidParams`) with ``data.field = "realm"``;
its message names the realm the caller gave and the rule, never the listed realms (a caller learns
nothing about the realms it did not name).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from meta_memory.errors import InvalidParams

__all__ = ["is_served", "unlisted_realm_rule", "refuse_unlisted_realm", "served_realms"]


def is_served(realms: Collection[str] | None, realm: str) -> bool:
    """Whether the allow-list ``realms`` (``None``: any realm) lists ``realm``."""
    return realms is None or realm in realms


def unlisted_realm_rule(realms: Collection[str] | None, realm: str) -> str | None:
    """The rule ``realm`` breaks when ``realms`` (the allow-list; ``None`` = any realm) does not list it,
    else ``None``."""
    if is_served(realms, realm):
        return None
    return (f"realm '{realm}' is not served here: [agent_memory] realms lists the realms this gateway "
            "serves, and a call never creates another")


def refuse_unlisted_realm(realms: Collection[str] | None, realm: str) -> None:
    """Raise :class:`~meta_memory.errors.InvalidParams` (``-32602``, field ``realm``) when ``realm`` is
    not in the allow-list ``realms`` (``None``: every realm is allowed)."""
    rule = unlisted_realm_rule(realms, realm)
    if rule is not None:
        raise InvalidParams(rule, "realm")


def served_realms(realms: Collection[str] | None, held: Iterable[str]) -> list[str]:
    """The realms of ``held`` (a backend's, in its order) that the allow-list ``realms`` lists (``None``: all)."""
    return list(held) if realms is None else [r for r in held if is_served(realms, r)]
