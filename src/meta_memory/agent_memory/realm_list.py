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

**Who may create a realm** is the access layer's rule (:meth:`meta_memory.access.policy.AccessPolicy.
may_create_realm`); the store only asks it. A call running under access control sets the judge of its
caller (:func:`realm_creation_judged_by`), and every store's realm creation calls
:func:`refuse_realm_creation` at the one point where it creates a realm, under the lock that serialises
creating that realm: two writes creating the same realm at once are each judged before the realm
exists, and a refused one creates nothing (a write arriving after another created the realm writes into
a realm that exists). Without a judge (no access control, offline import, background sweeps) a store
creates realms as before. The judge also decides whether the ``max_realms`` refusal tells its caller how
many realms exist (:func:`realm_cap_refusal`); the figure is logged either way.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Collection, Iterable, Iterator
from contextvars import ContextVar
from typing import Protocol

from meta_memory.errors import AgentMemoryError, InvalidParams

__all__ = ["NAMED_REALMS", "RealmCreationJudge", "is_served", "no_such_realm", "realm_cap_refusal", "realm_creation_judged_by",
           "refuse_realm_creation", "unlisted_realm_rule", "refuse_unlisted_realm", "served_realms"]

log = logging.getLogger(__name__)


class RealmCreationJudge(Protocol):
    """The caller's judge of realm creation (built by the access layer for one call)."""

    def judge(self, realm: str) -> None:
        """Return when the caller may create ``realm`` (a validated name); raise the refusal otherwise."""

    def shows_realm_count(self) -> bool:
        """Whether the ``max_realms`` refusal may tell this caller how many realms exist."""


_JUDGE: ContextVar[RealmCreationJudge | None] = ContextVar("agent_memory_realm_creation_judge", default=None)


@contextlib.contextmanager
def realm_creation_judged_by(judge: RealmCreationJudge | None) -> Iterator[None]:
    """Every realm a store creates in this context (this call) is first judged by ``judge``
    (``None``: none is judged)."""
    token = _JUDGE.set(judge)
    try:
        yield
    finally:
        _JUDGE.reset(token)


def refuse_realm_creation(realms: Collection[str] | None, realm: str) -> None:
    """What a store asks before it creates realm ``realm`` (a validated name that holds nothing yet):
    the allow-list ``realms`` (:func:`refuse_unlisted_realm`), then the current call's judge, if any
    (raises its refusal, ``-32030``)."""
    refuse_unlisted_realm(realms, realm)
    judge = _JUDGE.get()
    if judge is not None:
        judge.judge(realm)


def realm_cap_refusal(realm: str, count: int, what: str, max_realms: int) -> AgentMemoryError:
    """The refusal of creating ``realm`` when ``count`` realms (``what``: ``"realm databases"`` or
    ``"realms"``) already reach ``max_realms``: ``-32040`` reason ``limit`` naming the key. The figures
    are shown only to a caller without a judge (no access control) or whose judge says so (an unscoped
    grant); the others learn the key alone, and the server log keeps the figures."""
    full = f"cannot create realm '{realm}': {count} {what} exist"
    judge = _JUDGE.get()
    if judge is None or judge.shows_realm_count():
        return AgentMemoryError.over_limit(full, "max_realms", max_realms)
    log.warning("%s and agent_memory.max_realms = %d (the caller was not told the figures)", full, max_realms)
    return AgentMemoryError("limit", f"cannot create realm '{realm}': the {what} reach agent_memory.max_realms")


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


#: How many realm names :func:`no_such_realm` lists before "and N more" (an installation may hold thousands).
NAMED_REALMS = 20


def no_such_realm(realm: str, held: list[str]) -> str:
    """What an operator is told when ``realm`` holds nothing here: the realm and the first
    :data:`NAMED_REALMS` of the realms ``held``, then how many more. Told by an export naming the realm
    (offline, or ``meta/storage/export``: an ``operator.backup`` grant, which copies every realm anyway)
    and by ``list``/``recall`` on a ``--state-dir`` (whoever reads the directory sees its files). Never by
    a memory read over RPC: there an empty answer tells a caller nothing of which realms exist."""
    named = ", ".join(held[:NAMED_REALMS]) or "none"
    if len(held) > NAMED_REALMS:
        named += f" and {len(held) - NAMED_REALMS} more"
    return f"realm '{realm}' holds no agent memory here (realms: {named})"
