"""Which panel rows a caller may see: one decision per row kind.

Seed: "Console Memory panel" (visibility) and "Reviewing quarantined records"
(quarantined content stays reviewer-only after it is decided).

Rules (access control off => everything is visible):

* a **scope** (a record's, a proposal's, an overview row's): identity =>
  ``agent.memory.read`` + ``agent.view`` on the identity; mob =>
  ``mob.memory.read`` on the mob; operator => ``operator.memory.read``
  (unscoped grant); realm => an unscoped ``agent.memory.read`` grant;
* a **record**: its scope, and when it holds quarantined content
  (:func:`holds_quarantined_content`) also ``memory.quarantine.review`` on that
  scope. A released successor is ordinary memory;
* a **proposal** and an **overview scope row**: by its scope;
* a **harvest**: by its identity's scope;
* a **session key** in any row or event (injection-ledger rows, harvests, taint transitions): shown in
  clear only to a caller holding ``agent.session.manage`` on the identity, otherwise as its digest
  (:func:`~meta_memory.session_ref.session_key_digest`, ``key:<8 hex>``, keyed by the installation's
  session-digest secret); a record's provenance evidence ``session_id`` s are session keys of the
  record's identity (its scope's, else its agent author's; a record of neither is judged on the
  realm); a stored quarantine reason never shows a session key (:func:`~meta_memory.session_ref.keyless_reason`);
* an **agent author** in any row (a proposal's ``author``, a record's ``provenance.author``): its
  ``identity`` shown only to a caller holding ``agent.view`` on ``<realm>/<identity>``, otherwise
  ``null`` with ``withheld_by_access: true`` (:meth:`Visibility.author_json`); a proposal's propose-time
  ``tainted`` flag (its author's session taint) only to a caller who may also hold
  ``agent.session.manage`` on that identity, otherwise ``null`` (:meth:`Visibility.proposal_json`);
* an **audit verdict**: by its record (withheld when the record is unknown);
* an **injection-ledger row**: the record AND the identity it went into;
* a **gated promotion**: its target scope and every source scope (unresolved
  sources => withheld);
* a realm's **dream history**: unscoped ``agent.memory.read``, every memory
  scope the realm names, and — while the realm holds quarantined content —
  ``memory.quarantine.review`` held unscoped. ``withheld_by_access`` is true
  when that withholds at least one realm's history.

Identities are judged under their realm-qualified name ``<realm>/<identity>``
(:class:`~meta_memory.access.resources.Resources`), so a grant names the realms it
covers. A realm's name itself is shown only to a caller whose read grants can
apply inside it (:meth:`Visibility.realm_named`).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..access.policy import READ_ACTIONS, AccessPolicy
from ..access.principal import Principal
from ..access.resources import Resource, Resources
from ..agent_memory.store.panel_reads import ReadableScopes
from ..session_ref import keyless_reason, session_key_digest

__all__ = [
    "DreamAccess",
    "RealmFacts",
    "RecordFacts",
    "AUTHOR_WITHHELD",
    "SCOPE_READS",
    "Visibility",
    "holds_quarantined_content",
    "record_facts",
]

READ = "agent.memory.read"
VIEW = "agent.view"
REVIEW = "memory.quarantine.review"
#: What reading a stored scope's rows needs, by scope kind (the realm's scope: ``READ``). The one statement
#: of it: :meth:`Visibility.scope_denial` judges a scope by it, and the timeline shows the plain shared event
#: sequence only to a caller holding every action it names (``AccessService.event_cursor``).
SCOPE_READS: Mapping[str, tuple[str, ...]] = {
    "identity": (READ, VIEW),
    "mob": ("mob.memory.read",),
    "operator": ("operator.memory.read",),
    "realm": (READ,),
}
SESSION_MANAGE = "agent.session.manage"
#: The key an author object carries (``true``) when its identity is withheld from the caller.
AUTHOR_WITHHELD = "withheld_by_access"


@dataclass(frozen=True)
class RecordFacts:
    """What visibility needs of a record: ``scope_kind`` (identity|mob|operator|realm),
    ``scope_key`` (identity / mob / operator name, ``""`` for realm), ``status``
    (active|superseded|quarantined|tombstoned) and ``ever_quarantined``."""

    scope_kind: str
    scope_key: str
    status: str
    ever_quarantined: bool = False


def _get(obj: Any, name: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def record_facts(record: Any) -> RecordFacts:
    """Read :class:`RecordFacts` from a store record, a panel row dict or a ``RecordFacts``.

    Understands ``scope`` as an object with ``kind``/``key`` or a JSON object
    ``{"scope": kind, <kind>: key}``, or flat ``scope_kind``/``scope_key``; and
    ``status`` as a string, an object with ``kind`` or ``{"status": kind}``.
    Raises ``ValueError`` when the scope or status cannot be read.
    """
    if isinstance(record, RecordFacts):
        return record
    scope = _get(record, "scope")
    if isinstance(scope, Mapping):
        kind = scope.get("scope")
        key = scope.get(kind, "") if isinstance(kind, str) and kind != "realm" else ""
    elif scope is not None:
        kind, key = _get(scope, "kind"), _get(scope, "key")
    else:
        kind, key = _get(record, "scope_kind"), _get(record, "scope_key")
    status = _get(record, "status")
    if isinstance(status, Mapping):
        status = status.get("status")
    elif status is not None and not isinstance(status, str):
        status = _get(status, "kind")
    if kind is None or status is None:
        raise ValueError("record has no readable scope or status")
    kind = str(kind)
    return RecordFacts(kind, "" if kind == "realm" else str(key or ""), str(status), bool(_get(record, "ever_quarantined")))


def holds_quarantined_content(record: Any) -> bool:
    """Quarantined content: status ``quarantined``, or ``tombstoned`` with ``ever_quarantined``
    (a released or tombstoned original, a quarantined write removed by ``forget``)."""
    facts = record_facts(record)
    return facts.status == "quarantined" or (facts.status == "tombstoned" and facts.ever_quarantined)


@dataclass(frozen=True)
class RealmFacts:
    """What the dream-history check needs of one realm: the memory scopes it names
    (``(scope_kind, scope_key)`` of its records, proposals, gated promotions and
    harvested identities) and whether it holds quarantined content."""

    scopes: frozenset[tuple[str, str]]
    holds_quarantine: bool


@dataclass(frozen=True)
class DreamAccess:
    """Outcome of the dream-history check: ``realms`` whose runs may be listed, and
    ``withheld_by_access`` (true when at least one realm's history is withheld)."""

    realms: tuple[str, ...]
    withheld_by_access: bool


#: The digest key of a :class:`Visibility` given none (random per process: digests then change on restart).
_PROCESS_DIGEST_SECRET = secrets.token_bytes(32)


def _agent_identity(author: Any) -> str | None:
    """The identity of an agent author object (``{"author": "agent", "identity": ...}``), else ``None``."""
    if isinstance(author, Mapping) and author.get("author") == "agent" and isinstance(author.get("identity"), str):
        return str(author["identity"])
    return None


def _record_identity(row: Mapping[str, Any], provenance: Mapping[str, Any]) -> str | None:
    """The identity whose sessions a record's evidence names: its identity scope's, else its agent
    author's, else ``None``."""
    scope = row.get("scope")
    if isinstance(scope, Mapping) and scope.get("scope") == "identity" and isinstance(scope.get("identity"), str):
        return str(scope["identity"])
    return _agent_identity(provenance.get("author"))


class Visibility:
    """Row decisions for one caller. Pure: every fact arrives as an argument.

    ``policy`` decides, ``principal`` is the caller, ``resources`` names
    identities and mobs the console's way and knows their attributes.
    """

    def __init__(self, policy: AccessPolicy, principal: Principal, resources: Resources | None = None,
                 digest_secret: bytes | None = None) -> None:
        self.policy = policy
        self.principal = principal
        self.resources = resources or Resources()
        #: the key of session-key digests (the runtime's, ``AccessService.digest_secret``); without one,
        #: this process's random secret
        self.digest_secret = digest_secret if digest_secret is not None else _PROCESS_DIGEST_SECRET

    def _ok(self, action: str, resource: Resource) -> bool:
        return self.policy.check(self.principal, action, resource)

    # ------------------------------------------------------------------ scopes and records

    def scope_denial(self, realm: str, scope_kind: str, scope_key: str) -> str | None:
        """The first action the caller lacks to read the scope, or ``None``.

        Raises ``ValueError`` for an unknown scope kind.
        """
        resource = self.resources.scope(realm, scope_kind, scope_key)
        for action in SCOPE_READS.get(scope_kind, (READ,)):
            if not self._ok(action, resource):
                return action
        return None

    def scope(self, realm: str, scope_kind: str, scope_key: str) -> bool:
        """May the caller read memory of this scope (quarantine aside)?"""
        return self.scope_denial(realm, scope_kind, scope_key) is None

    def record_denial(self, realm: str, record: Any) -> str | None:
        """The first action the caller lacks to read ``record`` (for ``AccessDenied``), or ``None``."""
        facts = record_facts(record)
        missing = self.scope_denial(realm, facts.scope_kind, facts.scope_key)
        if missing is not None:
            return missing
        if holds_quarantined_content(facts):
            resource = self.resources.scope(realm, facts.scope_kind, facts.scope_key)
            if not self._ok(REVIEW, resource):
                return REVIEW
        return None

    def record(self, realm: str, record: Any) -> bool:
        """May the caller see ``record`` (list row, detail, chain row)?"""
        return self.record_denial(realm, record) is None

    def readable_scopes(self, realm: str, scopes: Iterable[tuple[str, str]]) -> ReadableScopes:
        """The :class:`~meta_memory.agent_memory.store.panel_reads.ReadableScopes` of ``scopes``
        (``(scope_kind, scope_key)`` pairs the realm names): each judged by :meth:`record`, once for a
        record without quarantined content and once for one holding it, so the listing's SQL keeps
        exactly the rows :meth:`record` admits of those scopes. Raises ``ValueError`` for an unknown
        scope kind."""
        plain: set[tuple[str, str]] = set()
        reviewed: set[tuple[str, str]] = set()
        for kind, key in scopes:
            scope = (kind, "" if kind == "realm" else key)
            if self.record(realm, RecordFacts(*scope, "active")):
                plain.add(scope)
                if self.record(realm, RecordFacts(*scope, "quarantined", True)):
                    reviewed.add(scope)
        return ReadableScopes(frozenset(plain), frozenset(reviewed))

    def realm_named(self, realm: str) -> bool:
        """May the caller learn that ``realm`` exists? Only when some read action of its grants
        can apply inside it (:data:`~meta_memory.access.policy.READ_ACTIONS`); otherwise the
        realm is left out of every ``realms`` list and searched for nothing."""
        return any(self.policy.reaches_realm(self.principal, a, realm) for a in sorted(READ_ACTIONS))

    # ------------------------------------------------------------------ realm-level rows

    def proposal(self, realm: str, scope_kind: str, scope_key: str) -> bool:
        """A pending proposal is judged by its target scope."""
        return self.scope(realm, scope_kind, scope_key)

    def overview_row(self, realm: str, scope_kind: str, scope_key: str) -> bool:
        """An overview (per-scope counts) row is judged by its scope."""
        return self.scope(realm, scope_kind, scope_key)

    def harvest(self, realm: str, identity: str) -> bool:
        """A pending exit-interview harvest is judged by its identity."""
        return self.scope(realm, "identity", identity)

    def session_key(self, realm: str, identity: str | None, session_key: str | None) -> str | None:
        """``session_key`` of ``identity``'s session as the caller may see it: in clear when it holds
        ``agent.session.manage`` on the identity (or access control is off), else its digest
        ``key:<8 hex>`` (:func:`~meta_memory.session_ref.session_key_digest`); ``None`` stays ``None``.
        A session of no known identity (``identity`` ``None``) needs the action on the realm (unscoped or
        realm-only).
        The one rule of every read surface that returns a session key (panel rows, record provenance,
        timeline events)."""
        if session_key is None or not self.policy.enabled:
            return session_key
        resource = self.resources.realm(realm) if identity is None else self.resources.identity(realm, identity)
        if self._ok(SESSION_MANAGE, resource):
            return session_key
        return session_key_digest(session_key, self.digest_secret)

    def author_json(self, realm: str, author: Any) -> Any:
        """An author object (``{author, identity?, run_id?, principal?}``) as the caller may see it: an agent
        author's ``identity`` only when the caller holds ``agent.view`` on ``<realm>/<identity>`` (or access
        control is off); otherwise ``{"author": "agent", "identity": null, "withheld_by_access": true}``, so a
        reader of a mob's rows does not learn the name of an identity it may not view. Any other author is
        returned as it is (a copy). The one rule of every read surface that shows who wrote a proposal or a
        record (proposal listings, panel record rows)."""
        identity = _agent_identity(author)
        if identity is None or not self.policy.enabled:
            return dict(author) if isinstance(author, Mapping) else author
        if self._ok(VIEW, self.resources.identity(realm, identity)):
            return dict(author)
        return {**author, "identity": None, AUTHOR_WITHHELD: True}

    def proposal_json(self, realm: str, data: Mapping[str, Any]) -> dict[str, Any]:
        """A proposal row (``meta/memory/proposals/list``, ``meta/memory/panel/proposals``) as the caller may
        see it: its ``author`` through :meth:`author_json`, and its ``tainted`` flag (the taint of the
        author's session at propose time) only to a caller who may view that identity and manage its
        sessions (``agent.session.manage``; an author of no identity: on the realm), otherwise ``null``.
        The row is not changed."""
        out = dict(data)
        if not self.policy.enabled:
            return out
        author = out.get("author")
        out["author"] = shown = self.author_json(realm, author)
        if "tainted" in out:
            identity = _agent_identity(author)
            resource = self.resources.realm(realm) if identity is None else self.resources.identity(realm, identity)
            if (isinstance(shown, Mapping) and shown.get(AUTHOR_WITHHELD)) or not self._ok(SESSION_MANAGE, resource):
                out["tainted"] = None
        return out

    def record_json(self, realm: str, data: Mapping[str, Any]) -> dict[str, Any]:
        """A panel record row (its JSON, listing or detail) as the caller may see it: each provenance
        evidence ``session_id`` (and each of its verification's) through :meth:`session_key`, judged on
        the record's identity (the scope's, else the agent author's, else none), the provenance
        ``author`` through :meth:`author_json`, and a quarantined status ``reason`` without a session key
        (:func:`~meta_memory.session_ref.keyless_reason`).
        The row is not changed; a row with nothing to hide is returned as a copy."""
        out = dict(data)
        status = out.get("status")
        if isinstance(status, Mapping) and isinstance(status.get("reason"), str):
            out["status"] = {**status, "reason": keyless_reason(status["reason"])}
        prov = out.get("provenance")
        if not isinstance(prov, Mapping):
            return out
        identity = _record_identity(out, prov)

        def shown(refs: Any) -> Any:
            if not isinstance(refs, list):
                return refs
            return [{**ref, "session_id": self.session_key(realm, identity, ref["session_id"])}
                    if isinstance(ref, Mapping) and isinstance(ref.get("session_id"), str) else ref for ref in refs]

        new_prov = {**prov, "evidence": shown(prov.get("evidence"))}
        if "author" in prov:
            new_prov["author"] = self.author_json(realm, prov["author"])
        verification = prov.get("verification")
        if isinstance(verification, Mapping):
            new_prov["verification"] = {**verification, "evidence": shown(verification.get("evidence"))}
        out["provenance"] = new_prov
        return out

    def audit_verdict(self, realm: str, record: Any | None) -> bool:
        """An open usage-audit verdict is judged by its record; an unknown record is
        withheld under access control."""
        if record is None:
            return not self.policy.enabled
        return self.record(realm, record)

    def injection(self, realm: str, record: Any | None, identity: str) -> bool:
        """An injection-ledger row: the caller may read both the record and the identity it went into.
        An unknown record is withheld under access control."""
        if record is None:
            return not self.policy.enabled
        return self.record(realm, record) and self.scope(realm, "identity", identity)

    def promotion(
        self,
        realm: str,
        scope_kind: str,
        scope_key: str,
        source_scopes: Iterable[tuple[str, str]] | None,
    ) -> bool:
        """A pending gated promotion: its target scope and every source scope (the scope of the
        promoted record, or of the proposal it was made from). ``source_scopes=None`` (unresolved)
        is withheld under access control."""
        if not self.policy.enabled:
            return True
        if source_scopes is None or not self.scope(realm, scope_kind, scope_key):
            return False
        return all(self.scope(realm, kind, key) for kind, key in source_scopes)

    # ------------------------------------------------------------------ dream history

    def dream_history(self, realm: str, facts: RealmFacts) -> bool:
        """May the caller see the realm's dream runs (``dreams``, ``dream_runs``)?"""
        if not self.policy.enabled:
            return True
        if not self._ok(READ, self.resources.realm(realm)):
            return False
        if not all(self.scope(realm, kind, key) for kind, key in facts.scopes):
            return False
        return not facts.holds_quarantine or self._ok(REVIEW, self.resources.realm(realm))

    def dream_listing(self, realms: Mapping[str, RealmFacts]) -> DreamAccess:
        """Judge every realm: the realms whose history is listed (in the given order) and
        ``withheld_by_access`` (true when at least one realm is withheld, whether or not it has runs)."""
        shown = tuple(realm for realm, facts in realms.items() if self.dream_history(realm, facts))
        return DreamAccess(realms=shown, withheld_by_access=len(shown) != len(realms))
