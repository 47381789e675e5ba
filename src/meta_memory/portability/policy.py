"""What a record line of an unverified export may become: never more than a fresh write.

An export file that does not verify (:mod:`.signing`: unsigned, signed with another key, or changed
after export) is untrusted input: whoever handed it over may have edited any line. Its records land
as an agent's fresh write into that scope would:

- status: ``active`` stays active; ``quarantined``, ``superseded`` and anything ever quarantined land
  ``quarantined`` (a fixed reason: the file's own reason text is not kept); ``tombstoned`` stays tombstoned;
  a line whose MAC fails under a key the importer trusts (changed or added after export: the file says
  which installation wrote it, and this line is not what it wrote) lands ``quarantined`` whatever it claims;
- trust at most ``agent_observed``; the author is the one a fresh write into the scope by no special
  role could name (:func:`fresh_author`): the scope's own agent in an identity scope, and
  :data:`UNVERIFIED_AUTHOR` in any other; so an ``operator``, ``application``, ``steward`` or
  ``distiller`` author, or another identity's agent, is replaced;
- no evidence references, verification claim or calibration profile (each names sessions, checks or a
  pipeline stage of the installation that wrote the file, which this one cannot check), and no
  ``imported_from`` (only ``meta-memory import --from`` sets it; a fresh write cannot claim to be another
  system's record);
- no id in a foreign importer's id space (``mem0-<32 hex>``, ``langgraph-<32 hex>``,
  :func:`~meta_memory.agent_memory.import_plan.in_foreign_id_space`): such an id is re-issued
  (:func:`~meta_memory.agent_memory.import_plan.unverified_memory_id`), so a planted line cannot take
  the id a later ``import --from`` gives the genuine record and stand in for it; any other id is kept
  (the supersede and derived-from links naming ids are dropped anyway, so nothing in the file points at
  a re-issued id);
- no supersede or derived-from links (they cannot be checked), no working-set rank, usage counters at
  zero, no timestamp past now (one beyond the clock skew a restore tolerates is refused as damage);
  past timestamps are kept: a migrated history is old, ``import --from`` lands a source's past times
  too, and a backdated record ranks below newer ones in recall (ties go to the newest);
- realm, mob and operator scopes are refused unless the operator allows each by name
  (:class:`ScopeAllowance`: ``--allow-scope realm``, ``--allow-scope mob:NAME``, ``--allow-scope operator:NAME``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from ..agent_memory.import_plan import in_foreign_id_space, unverified_memory_id
from ..agent_memory.model import (
    Author,
    AuthorKind,
    MemoryRecord,
    Scope,
    ScopeKind,
    Status,
    StatusKind,
    TrustTier,
    UsageStats,
)
from ..agent_memory.validator import RESTORE_CLOCK_SKEW_MS
from ..identity import parse_mob, parse_operator

__all__ = ["UNVERIFIED_AUTHOR", "ScopeAllowance", "Downgrade", "downgrade", "fresh_author"]

#: The author of every unverified record outside identity scopes.
UNVERIFIED_AUTHOR = Author.agent("unverified-import")
_CEILING = TrustTier.AGENT_OBSERVED


@dataclass(frozen=True, slots=True)
class ScopeAllowance:
    """The shared scopes an operator lets an unverified file write into: ``realm`` (realm scope in every
    realm), and mobs and operators by name."""

    realm: bool = False
    mobs: frozenset[str] = frozenset()
    operators: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, values: Iterable[str]) -> ScopeAllowance:
        """``["realm", "mob:team", "operator:ops"]`` to an allowance. A NAME is held to the name rule
        (:func:`~meta_memory.identity.parse_mob`, :func:`~meta_memory.identity.parse_operator`), never
        trimmed. Raises ``ValueError`` naming the value and the rule."""
        realm = False
        mobs: set[str] = set()
        operators: set[str] = set()
        for value in values:
            kind, _, name = value.strip().partition(":")
            if kind == "realm" and not name:
                realm = True
            elif kind in ("mob", "operator") and name.strip():
                rule = parse_mob if kind == "mob" else parse_operator
                try:
                    (mobs if kind == "mob" else operators).add(rule(name, f"the {kind} name"))
                except ValueError as exc:
                    raise ValueError(f"--allow-scope {kind}:NAME: {exc}") from None
            else:
                raise ValueError(f"--allow-scope '{value}': expected realm, mob:NAME or operator:NAME")
        return cls(realm, frozenset(mobs), frozenset(operators))

    def allows(self, scope: Scope) -> bool:
        if scope.kind is ScopeKind.IDENTITY:
            return True
        if scope.kind is ScopeKind.REALM:
            return self.realm
        return scope.key in (self.mobs if scope.kind is ScopeKind.MOB else self.operators)


def _not_after(stamp: int, now_ms: int) -> int:
    """``stamp`` no later than now; one past the clock skew a restore tolerates is left for the
    validator to refuse as damage."""
    return now_ms if now_ms < stamp <= now_ms + RESTORE_CLOCK_SKEW_MS else stamp


def fresh_author(scope: Scope) -> Author:
    """The author an unverified record of ``scope`` lands with: what a fresh write into it could name
    without a special role (no operator, application, steward or distiller run, no other identity):
    ``agent{identity}`` of the scope's own identity, or :data:`UNVERIFIED_AUTHOR` outside identity
    scopes (an agent writes no shared scope directly)."""
    return Author.agent(scope.key) if scope.kind is ScopeKind.IDENTITY else UNVERIFIED_AUTHOR


def _label(author: Author) -> str:
    return f"agent '{author.identity}'" if author.kind is AuthorKind.AGENT else author.kind.value


def _flag(scope: Scope) -> str:
    return "realm" if scope.kind is ScopeKind.REALM else f"{scope.kind.value}:{scope.key}"


@dataclass(frozen=True, slots=True)
class Downgrade:
    """What became of one unverified record: the ``record`` to land and what was ``changed`` (empty when it
    claimed nothing a fresh write could not), or why it is ``refused`` (``record`` is then ``None``)."""

    record: MemoryRecord | None
    changed: tuple[str, ...] = ()
    refused: str | None = None


def downgrade(rec: MemoryRecord, allowed: ScopeAllowance, now_ms: int, *, tampered: bool = False) -> Downgrade:
    """``rec`` (a record line of an unverified file) as a fresh write would land it (see the module doc);
    ``tampered``: its line fails its MAC under a trusted key, so an active record lands quarantined.
    ``changed`` names each change (``author steward -> agent 'alice:main'``, ``evidence references
    dropped``, ``imported_from dropped``, ``id 'mem0-...' (in mem0's id space) re-issued as
    'unverified-...'``, ``trust operator -> agent_observed``); the import reports a line with any change
    as downgraded.
    ``record.id`` differs from ``rec.id`` only when the id was re-issued."""
    if not allowed.allows(rec.scope):
        return Downgrade(None, refused=f"{rec.scope.describe()} from an unverified file "
                                       f"(pass --allow-scope {_flag(rec.scope)} to import it)")
    changed: list[str] = []
    status = rec.status
    was = status.kind.value + (" (once quarantined)" if rec.ever_quarantined and status.is_active else "")
    if status.kind is StatusKind.SUPERSEDED or status.kind is StatusKind.QUARANTINED or (
            status.is_active and rec.ever_quarantined):
        status = Status.quarantined(f"unverified import: was {was}")
        changed.append(f"stays quarantined (reason now {status.detail!r})" if rec.status.kind is StatusKind.QUARANTINED
                       else f"status {was} -> quarantined")
    elif tampered and status.is_active:
        status = Status.quarantined("unverified import: the line was changed or added after export")
        changed.append("status active -> quarantined (the line fails its integrity check)")
    trust = rec.trust if rec.trust <= _CEILING else _CEILING
    if trust is not rec.trust:
        changed.append(f"trust {rec.trust.value} -> {trust.value}")
    provenance = rec.provenance
    author = fresh_author(rec.scope)
    if provenance.author != author:
        changed.append(f"author {_label(provenance.author)} -> {_label(author)}")
    dropped = [what for what, held in (("evidence references", provenance.evidence),
                                       ("verification claim", provenance.verification),
                                       ("calibration profile", provenance.profile),
                                       ("imported_from", provenance.imported_from)) if held]
    if dropped:
        changed.append(" and ".join(dropped) + " dropped")
    provenance = replace(provenance, author=author, evidence=(), verification=None, profile=None, imported_from=None)
    memory_id = rec.id
    if in_foreign_id_space(rec.id):
        memory_id = unverified_memory_id(rec.id)
        changed.append(f"id '{rec.id}' (in {rec.id.split('-', 1)[0]}'s id space) re-issued as '{memory_id}'")
    if rec.supersedes is not None or rec.derived_from:
        changed.append("supersede and derived-from links dropped")
    if rec.working_set_rank is not None:
        changed.append("working-set rank dropped")
    if rec.usage != UsageStats():
        changed.append("usage counters reset")
    created, updated = _not_after(rec.created_at_ms, now_ms), _not_after(rec.updated_at_ms, now_ms)
    tombstoned = None if rec.tombstoned_at_ms is None else _not_after(rec.tombstoned_at_ms, now_ms)
    if (created, updated, tombstoned) != (rec.created_at_ms, rec.updated_at_ms, rec.tombstoned_at_ms):
        changed.append("timestamps after now set to now")
    landed = replace(rec, id=memory_id, status=status, trust=trust, provenance=provenance, supersedes=None, derived_from=(),
                     working_set_rank=None, rank_set_at_ms=None, usage=UsageStats(), created_at_ms=created,
                     updated_at_ms=updated, tombstoned_at_ms=tombstoned)
    return Downgrade(landed, tuple(changed))
