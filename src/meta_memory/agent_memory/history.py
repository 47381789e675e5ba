"""A record's history (``meta/agent_memory/history``): its versions and why each changed.

The versions of a record are the records of **its scope** linked to it, directly or through one
another, by ``supersedes`` (an update, a tag merge, a released or promoted quarantined update) or
``derived_from`` (a record released from quarantine, a copy promoted into the same scope), walked
both ways from the record asked for, at most :data:`MAX_HISTORY_VERSIONS` of them. A record of
another scope is never a version (a promoted copy in a mob's scope belongs to that scope's history).
Versions come oldest first (``created_at_ms``, then the order the store wrote them).

Everything is read from what the store already records, in one snapshot: the record rows (status,
trust, author, links, times) and the audit rows (one per op; :mod:`.batch`). A change's kind
(:data:`CHANGES`) comes from the op and its audit detail:

- ``created`` a create; ``import`` a ``restore`` op, the markdown import's create or an import from another
  system's (``imported_from`` in its provenance);
- ``release`` the create/supersede a quarantine release wrote, and the origin's tombstone in the
  same decision (the audit detail's ``review.verdict``); ``promotion`` the create/supersede of a gated
  promotion and the quarantined source's tombstone (the promotion's rationale);
- ``update`` and ``tag_merge`` are both a supersede op: the audit row does not record which call made
  it, so ``tag_merge`` is derived: a supersede whose content hash (normalised title and body) equals
  its prior's and whose tags add to the prior's without dropping any. An ``update`` that only adds
  tags reads as ``tag_merge`` too;
- ``forget`` a tombstone written without a review verdict (``forget``, the recorder tool's forget) or a
  held forget a reviewer approved; ``forget_released`` a held forget a reviewer released (the record
  stays active); ``tombstone`` any other (a reviewer's quarantine tombstone, a harvest, a dream);
- ``retier`` a trust change; ``rank`` a working-set rank set or cleared; ``erase`` the erase.

Content: a version holding quarantined content (quarantined, or tombstoned and ever quarantined:
the panel's rule) is listed with its status, links and changes but without ``title``, ``body``, ``tags``
and ``metadata``
(``withheld: "quarantined"``): recall and listing never hand quarantined text to an agent, and
history does not either. An erased version keeps only its id, its status before the erase and
the kinds and times of its changes (``withheld: "erased"``; its author and trust went with it).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .model import MemoryRecord, Scope, StatusKind, is_expired

if TYPE_CHECKING:  # pragma: no cover
    from .store.tables import AuditRow
    from .store.tx import ReadTx

__all__ = ["CHANGES", "MAX_HISTORY_VERSIONS", "record_history"]

#: The most versions one history lists (``truncated`` tells when more are linked).
MAX_HISTORY_VERSIONS = 200

#: Every change kind a history reports (see the module docstring).
CHANGES = ("created", "import", "update", "tag_merge", "release", "promotion", "forget", "forget_released",
           "tombstone", "retier", "rank", "erase")

_PROMOTION = "gated promotion"
_SUPERSEDED_BY_PROMOTION = "superseded by gated promotion"
_MARKDOWN_IMPORT = "markdown import"
_PLAIN = {"create": "created", "supersede": "update", "restore": "import", "tombstone": "tombstone",
          "retier": "retier", "set_rank": "rank", "erase": "erase", "forget_released": "forget_released"}


@dataclass(frozen=True, slots=True)
class _Found:
    """The versions found, oldest first, and whether the walk stopped at the cap."""

    versions: list[dict[str, Any]]
    truncated: bool


def _author(value: Any) -> dict[str, Any] | None:
    """An author's JSON as a history shows it: its kind and the agent's identity or the steward's run;
    an operator's principal is left out (it names a reviewer's credential, not the record's author)."""
    if not isinstance(value, dict) or not isinstance(value.get("author"), str):
        return None
    return {k: v for k, v in value.items() if k in ("author", "identity", "run_id") and isinstance(v, str)}


def _quarantined_content(rec: MemoryRecord) -> bool:
    return rec.status.kind is StatusKind.QUARANTINED or (
        rec.status.kind is StatusKind.TOMBSTONED and rec.ever_quarantined)


def _change(row: "AuditRow", rec: MemoryRecord | None, prior: MemoryRecord | None) -> str:
    """The change kind of audit ``row`` of record ``rec`` (``prior`` = the record it supersedes)."""
    detail = row.detail
    if detail.get("erased") is True or rec is None:  # an erased record's details are gone
        return _PLAIN.get(row.op_kind, row.op_kind)
    review = detail.get("review")
    given = detail.get("rationale")
    rationale = given if isinstance(given, str) else ""
    if row.op_kind in ("create", "supersede", "tombstone"):
        if isinstance(review, dict) and review.get("verdict") == "release":
            return "release"
        if rationale.startswith(_PROMOTION) or rationale == _SUPERSEDED_BY_PROMOTION:
            return "promotion"
    if row.op_kind == "create":
        imported = rationale == _MARKDOWN_IMPORT or rec.provenance.imported_from is not None
        return "import" if imported else "created"
    if row.op_kind == "supersede":
        if prior is not None and prior.content_hash == rec.content_hash and set(prior.tags) < set(rec.tags):
            return "tag_merge"
        return "update"
    if row.op_kind == "tombstone":
        return "forget" if "approved held forget" in rationale or (review is None and not rationale) else "tombstone"
    return _PLAIN.get(row.op_kind, row.op_kind)


def _changes(rows: list["AuditRow"], rec: MemoryRecord | None, prior: MemoryRecord | None) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        out.append({"change": _change(row, rec, prior), "at_ms": row.applied_at_ms,
                    "by": _author(row.detail.get("author")) if rec is not None else None})
    return out


def _status(rec: MemoryRecord, now_ms: int) -> str:
    """The version's status: its status kind, except ``expired`` for an active record past its expiry that
    the sweep has not tombstoned yet (it is active nowhere else: the panel counts it as expired too)."""
    if rec.status.kind is StatusKind.ACTIVE and is_expired(rec.expires_at_ms, now_ms):
        return "expired"
    return rec.status.kind.value


def _version(rec: MemoryRecord, rows: list["AuditRow"], prior: MemoryRecord | None, now_ms: int) -> dict[str, Any]:
    changes = _changes(rows, rec, prior)
    withheld = "quarantined" if _quarantined_content(rec) else None
    return {
        "memory_id": rec.id,
        "status": _status(rec, now_ms),
        "status_before_erase": None,
        "superseded_by": rec.status.detail if rec.status.kind is StatusKind.SUPERSEDED else None,
        "supersedes": rec.supersedes,
        "derived_from": list(rec.derived_from),
        "author": _author(rec.provenance.author.to_json()),
        "trust": rec.trust.value,
        "created_at_ms": rec.created_at_ms,
        "updated_at_ms": rec.updated_at_ms,
        "reason": changes[0]["change"] if changes else "created",
        "withheld": withheld,
        "title": None if withheld else rec.title,
        "body": None if withheld else rec.body,
        "tags": None if withheld else list(rec.tags),
        "metadata": None if withheld else dict(rec.metadata),
        "expires_at_ms": rec.expires_at_ms,
        "changes": changes,
    }


def _walk(edges: dict[str, list[str]], start: str, outside: set[str]) -> tuple[list[str], bool]:
    """Ids reached from ``start`` over ``edges`` breadth first, not through ``outside``, at most
    :data:`MAX_HISTORY_VERSIONS`; and whether more were reachable."""
    order = [start]
    seen = {start} | outside
    queue = deque([start])
    while queue:
        for other in edges.get(queue.popleft(), []):
            if other in seen:
                continue
            if len(order) >= MAX_HISTORY_VERSIONS:
                return order, True
            seen.add(other)
            order.append(other)
            queue.append(other)
    return order, False


def _live(tx: "ReadTx", scope: Scope, start: MemoryRecord, now_ms: int) -> _Found:
    """The versions linked to ``start`` within ``scope``, walked breadth first from ``start`` (capped) over
    the scope's links, read in one pass; then the versions' rows in a few batched lookups."""
    edges: dict[str, list[str]] = {}  # id -> the ids it is linked to, both ways
    for child, parents in tx.queues.links(scope):
        for parent in parents:
            edges.setdefault(child, []).append(parent)
            edges.setdefault(parent, []).append(child)
    outside: set[str] = set()  # linked ids that are no record of the scope: never versions, never walked
    while True:
        order, truncated = _walk(edges, start.id, outside)
        records = tx.get_many(order)
        gone = {rid for rid in order if rid != start.id and (rid not in records or records[rid].scope != scope)}
        if not gone:
            break
        outside |= gone
    found = {rid: records[rid] for rid in order if rid != start.id}
    found[start.id] = start
    rows = tx.audit.of_records(list(found))
    by_id: dict[str, list[AuditRow]] = {}
    for row in rows:
        if row.memory_id is not None:
            by_id.setdefault(row.memory_id, []).append(row)
    first = {rid: r[0].audit_id for rid, r in by_id.items()}
    oldest_first = sorted(found.values(), key=lambda r: (r.created_at_ms, first.get(r.id, 0), r.id))
    versions = []
    for rec in oldest_first:
        prior = found.get(rec.supersedes) if rec.supersedes else None
        versions.append(_version(rec, by_id.get(rec.id, []), prior, now_ms))
    return _Found(versions, truncated)


def _erased(tx: "ReadTx", scope: Scope, memory_id: str) -> _Found | None:
    """The erased versions of the erase that removed ``memory_id`` from ``scope``, or ``None``."""
    wanted = scope.to_json()
    rows = [r for r in tx.audit.erasure_of(memory_id)
            if r.memory_id is not None and r.detail.get("scope") == wanted and not r.detail.get("proposal")]
    if memory_id not in {r.memory_id for r in rows}:
        return None
    truncated = len(rows) > MAX_HISTORY_VERSIONS
    rows = rows[:MAX_HISTORY_VERSIONS]
    ids = [r.memory_id for r in rows if r.memory_id is not None]
    by_id: dict[str, list[AuditRow]] = {}
    for row in tx.audit.of_records(ids):
        if row.memory_id is not None:
            by_id.setdefault(row.memory_id, []).append(row)
    versions = []
    for erase in rows:
        mid = erase.memory_id or ""
        history = by_id.get(mid, [])
        before = [r for r in history if r.op_kind != "erase"]
        status = erase.detail.get("status")
        versions.append({
            "memory_id": mid,
            "status": "erased",
            "status_before_erase": status if isinstance(status, str) else None,
            "superseded_by": None, "supersedes": None, "derived_from": [],
            "author": None, "trust": None,
            "created_at_ms": before[0].applied_at_ms if before else None,
            "updated_at_ms": erase.applied_at_ms,
            "reason": _PLAIN.get(before[0].op_kind, before[0].op_kind) if before else "created",
            "withheld": "erased", "title": None, "body": None, "tags": None, "metadata": None,
            "expires_at_ms": None,
            "changes": _changes(history, None, None),
        })
    versions.sort(key=lambda v: (v["created_at_ms"] is None, v["created_at_ms"] or 0, v["memory_id"]))
    return _Found(versions, truncated)


def record_history(tx: "ReadTx", scope: Scope, memory_id: str, now_ms: int) -> dict[str, Any] | None:
    """The history of record ``memory_id`` of ``scope`` read in ``tx``:
    ``{memory_id, order: "oldest_first", versions: [version...], truncated}``, or ``None`` when no record
    of ``scope`` has that id now or had it before an erase (another scope's record, an unknown id).
    ``now_ms`` (epoch ms) tells an active version past its expiry (``expired``).

    A version: ``{memory_id, status (active|expired|superseded|quarantined|tombstoned|erased), superseded_by,
    supersedes, derived_from, author (``{author, identity?, run_id?}``: the provenance's), trust, created_at_ms, updated_at_ms (UTC
    epoch ms), reason (the change that wrote it), withheld (null|"quarantined"|"erased"), title, body, tags
    (null when withheld), changes: [{change, at_ms, by (who wrote the change, shaped as ``author``; null when erased)}]}``;
    an erased version adds ``status_before_erase``. See the module docstring for the change kinds."""
    rec = tx.get(memory_id)
    if rec is not None:
        if rec.scope != scope:
            return None
        found = _live(tx, scope, rec, now_ms)
    else:
        erased = _erased(tx, scope, memory_id)
        if erased is None:
            return None
        found = erased
    return {"memory_id": memory_id, "order": "oldest_first", "versions": found.versions,
            "truncated": found.truncated}
