"""What an import writes: the planning of every imported record, shared by a dry run and a real one.

:mod:`meta_memory.portability` reads and verifies a file's format (an export file, another memory
system's records) and reports; the decision of what each record becomes — created, skipped as present
or as a duplicate, kept out as a conflict, refused — and the writes that land it are planned here, in
the domain, over the store's primitives (snapshots, ``get``, one write transaction per batch: a restore's
batch read again and written in the one :meth:`~meta_memory.agent_memory.store.base.AgentMemoryStore.transaction`,
another system's creates through :mod:`~meta_memory.agent_memory.record_writes`), and checked by the one
validator when applied.

Two plans:

- **restore** (``meta-memory import`` of an export file): :class:`~meta_memory.agent_memory.batch.RestoreOp`
  batches under fixed ids (the exported ones), whole supersede chains together
  (:func:`restore_batches`), a file whose chain is broken refused (:func:`check_chains`), the erasure
  register keeping erased ids and content out, with every record of their chains
  (:func:`keep_out_erased`), records stored already skipped (same content) or kept as they are (a
  conflict), and an active record whose content its scope already holds active skipped, or, when other
  lines link to it, landed tombstoned (:class:`RestoreDuplicate`): :func:`plan_restore`, applied by
  :func:`apply_restore`, which reads the store again by the same rules inside the transaction writing each
  batch (a write made since the plan can neither be overwritten nor duplicated);
- **fresh creates** (``meta-memory import --from mem0|langgraph``): ``CreateOp`` writes under fixed ids
  derived from the source system and id (:func:`foreign_create`, :func:`foreign_memory_id`), each checked
  as the validator would (:func:`check_create`), then sorted against what the target
  holds (:func:`plan_creates`: present, conflict, duplicate, a key already stored) and applied as one
  batch where a refused op is reported and the rest applied again (:func:`apply_creates`). A dry run
  runs every check and the same :func:`plan_creates`, and applies nothing.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.batch import BatchReceipt, CreateOp, RestoreOp, StagedBatch
from meta_memory.agent_memory.erase import Erasure, field_hashes, shown_texts
from meta_memory.agent_memory.expiry import expiry_past_cap
from meta_memory.agent_memory.hashing import content_hash, erasure_hashes
from meta_memory.agent_memory.model import (
    Author,
    ImportedFrom,
    Kind,
    MemoryRecord,
    NewMemoryRecord,
    Provenance,
    Scope,
    Status,
    StatusKind,
    TrustTier,
)
from meta_memory.agent_memory.validator import (
    erasure_scopes,
    normalize_record,
    refuse_secrets,
    stamps_problem,
    validate_record_fields,
)
from meta_memory.errors import AgentMemoryError
from meta_memory.limits import MAX_BATCH_OPS

if TYPE_CHECKING:
    from meta_memory.agent_memory.store.base import AgentMemoryStore
    from meta_memory.agent_memory.store.tx import ReadTx

__all__ = [
    "FOREIGN_SYSTEMS",
    "IMPORT_AUTHOR",
    "CreatePlan",
    "LineRefused",
    "Landing",
    "RestoreDuplicate",
    "RestoreLanding",
    "RestorePlan",
    "StoredKeys",
    "apply_creates",
    "apply_restore",
    "check_chains",
    "check_create",
    "foreign_create",
    "foreign_memory_id",
    "in_foreign_id_space",
    "unverified_memory_id",
    "erased_reason",
    "installation_erasures",
    "record_hashes",
    "keep_out_erased",
    "past_expiry_cap",
    "plan_creates",
    "plan_restore",
    "restore_batches",
]

#: The author of every restore batch (the audit rows name it).
IMPORT_AUTHOR = Author.operator("meta-memory import")


class LineRefused(ValueError):
    """The file was refused at ``line`` (1-based) for ``rule``: nothing of that line, and before the
    first batch nothing of the file, was written."""

    def __init__(self, line: int, rule: str) -> None:
        super().__init__(f"line {line}: {rule}")
        self.line = line
        self.rule = rule


# --------------------------------------------------------------------------- restore (an export file)


def restore_batches(records: Sequence[tuple[int, MemoryRecord]]) -> Iterator[list[tuple[int, MemoryRecord]]]:
    """``(line, record)`` pairs cut into batches of at most ``MAX_BATCH_OPS``, never between a superseded
    record and its successor (the validator checks the link at the end of a batch). Raises
    :class:`LineRefused` for a supersede chain longer than a batch."""
    batch: list[tuple[int, MemoryRecord]] = []
    waiting: set[str] = set()  # successors named by superseded records of this batch, not yet seen
    for n, rec in records:
        batch.append((n, rec))
        waiting.discard(rec.id)
        if rec.status.kind is StatusKind.SUPERSEDED and rec.status.detail:
            waiting.add(rec.status.detail)
        if not waiting and len(batch) >= MAX_BATCH_OPS:
            yield batch
            batch = []
        elif len(batch) > MAX_BATCH_OPS:
            raise LineRefused(n, f"a supersede chain spans more than {MAX_BATCH_OPS} records; it cannot be "
                                 "imported in one transaction")
    if batch:
        yield batch


#: The statuses whose expiry still matters on import (a live record, or one a release may make live).
_LIVE = frozenset({StatusKind.ACTIVE, StatusKind.QUARANTINED})


def past_expiry_cap(rec: MemoryRecord, now_ms: int, max_ttl_s: int) -> str | None:
    """Why restoring ``rec`` is refused for its expiry, or ``None``: a live (active or quarantined) record
    lives no longer than a caller could ask for now (``now_ms`` + ``max_ttl_s`` seconds), as a longer
    ``ttl_s`` is refused; the expiry is never shortened, and a tombstone's is moot."""
    return expiry_past_cap(rec.expires_at_ms, now_ms, max_ttl_s) if rec.status.kind in _LIVE else None


def check_chains(store: AgentMemoryStore, records: Sequence[tuple[int, MemoryRecord]]) -> None:
    """Refuse (:class:`LineRefused`) a file whose superseded record names a successor that neither follows
    it in the file nor is stored as its successor: a damaged file (the links of an unverified file are
    dropped, so the validator would not see it)."""
    successors = {(rec.scope.realm, rec.supersedes) for _, rec in records if rec.supersedes is not None}
    for n, rec in records:
        by = rec.status.detail if rec.status.kind is StatusKind.SUPERSEDED else None
        if by is None or (rec.scope.realm, rec.id) in successors:
            continue
        stored = store.get(rec.scope.realm, by)
        if stored is None or stored.supersedes != rec.id:
            raise LineRefused(n, f"record '{rec.id}': superseded by '{by}', which is not in the file or the store "
                                 "as its successor (export and import whole supersede chains)")


def installation_erasures(store: AgentMemoryStore, realm: str, ids: Collection[str],
                          hashes: Collection[str]) -> list[tuple[str, Erasure]]:
    """``(realm, row)`` of every erasure-register row of every realm of the installation (``realm`` first)
    naming one of ``ids`` or matching one of ``hashes`` (exact or folded content hashes: ``erasure_hashes``;
    and the field-level register's rows, ``erasure_texts``, holding one of them: :func:`record_hashes`
    sends each record's field hashes too, and such a row is returned as an :class:`Erasure` whose content
    hash is the field's hash): one snapshot and a
    few ``IN`` lookups per realm. Raises ``AgentMemoryError`` (reason ``corrupt``) when another realm's
    database cannot be read, served or not: the import is refused whole, since content erased there could
    not be told apart; the message names that realm and why every register is read."""
    rows: list[tuple[str, Erasure]] = []
    for name in dict.fromkeys([realm, *store.held_realms()]):
        try:
            with store.snapshot(name) as tx:
                rows += [(name, row) for row in tx.erased(ids, hashes)]
                # the field-level register, read as rows holding the field's hash as their content hash
                rows += [(name, Erasure(t.memory_id, t.scope_kind, t.scope_key, t.hash)) for t in tx.erased_texts(hashes)]
        except AgentMemoryError as exc:
            if exc.reason != "corrupt" or name == realm:
                raise
            raise AgentMemoryError(
                "corrupt", f"the import reads the erasure register of every realm the state holds, so that content "
                f"erased anywhere is never imported again, and realm '{name}' cannot be read: its database is damaged "
                "or not a SQLite database. Nothing was imported. Run `meta-memory doctor --state-dir <state dir>`, "
                "then restore that file from a backup or move it out of the state directory") from exc
    return rows


def record_hashes(title: str, body: str, texts: Sequence[str], exact: str | None = None) -> tuple[str, ...]:
    """What an import matches a record against the erasure register with: the (title, body) pair's
    :func:`~meta_memory.agent_memory.hashing.erasure_hashes` (``exact``: its content hash, when held), then
    the field-level hashes of each of ``texts`` (:func:`~meta_memory.agent_memory.erase.field_hashes` of
    :func:`~meta_memory.agent_memory.erase.shown_texts`), sorted."""
    return (*erasure_hashes(title, body, exact), *sorted(field_hashes(texts)))


def erased_reason(rows: Sequence[tuple[str, Erasure]], realm: str, memory_id: str | None, hashes: tuple[str, ...],
                  scopes: Sequence[Scope] = ()) -> str | None:
    """Why an import refuses a record of ``realm`` (its id, its hashes,
    :func:`~meta_memory.agent_memory.hashing.erasure_hashes`, and the
    ``scopes`` it would be read in) given the installation's erasure ``rows``
    (:func:`installation_erasures`), or ``None``: its id was erased in any realm, its content erased from
    one of ``scopes`` of ``realm``, or from any other scope of any realm. Every reason begins ``erased``
    and names the id or the scope, never the content."""
    for name, r in rows:
        if memory_id is not None and r.memory_id == memory_id:
            where = "here" if name == realm else f"in realm '{name}'"
            return f"erased: this record was erased {where}; an erased record is never imported again"
    scope = next((s for s in scopes if any(name == realm and r.covers(s, *hashes) for name, r in rows)), None)
    if scope is not None:
        return f"erased: its content was erased from {scope.describe()}"
    for name, r in rows:
        if r.matches(*hashes):
            return (f"erased: its content was erased from {r.scope_kind} scope '{r.scope_key}' of realm '{name}'; "
                    "content erased anywhere in the installation is never imported again")
    return None


def keep_out_erased(store: AgentMemoryStore, realm: str, recs: Sequence[tuple[int, MemoryRecord]],
                    file_ids: Mapping[str, str] | None = None,
                    ) -> tuple[list[tuple[int, MemoryRecord]], list[tuple[int, str, str]]]:
    """``(kept, refused)``: ``recs`` without the records the erasure register of **any** realm of the
    installation refuses (:func:`erased_reason`: an id erased anywhere, or content erased from any scope of
    any realm, matched by the register's rule, the exact or a folded content hash), and without the
    records of their supersede chains in the file (which could not land without them); ``refused`` holds
    ``(line, id, reason)`` of each, in the order of ``recs``. ``file_ids`` maps a record landing under
    another id than its file gave (:func:`unverified_memory_id`) to the file's id: an erasure of either
    keeps it out.

    Wider than a live write's rule (content erased from a scope the record would be read in): an import is
    the operator's, offline, and an edited export (an erased record given another id and identity) must not
    bring erased text back anywhere; a live write of the same words into another identity's own scope is
    not refused, since that refusal would tell the writer what was erased elsewhere."""
    hashes = [record_hashes(rec.title, rec.body, shown_texts(rec), rec.content_hash) for _, rec in recs]
    given = file_ids or {}
    rows = installation_erasures(store, realm, [rec.id for _, rec in recs] + list(given.values()),
                                 {h for pair in hashes for h in pair})
    if not rows:
        return list(recs), []
    refused: dict[str, str] = {}
    for (_, rec), pair in zip(recs, hashes, strict=True):
        why = erased_reason(rows, realm, rec.id, pair, erasure_scopes(rec.scope, rec.author))
        if why is None and rec.id in given:
            why = erased_reason(rows, realm, given[rec.id], pair, erasure_scopes(rec.scope, rec.author))
        if why is not None:
            refused[rec.id] = why
    linked = True
    while linked:  # a superseded record and its successor land together or not at all
        linked = False
        for _, rec in recs:
            if rec.id in refused:
                continue
            successor = rec.status.detail if rec.status.kind is StatusKind.SUPERSEDED else None
            for other in (rec.supersedes, successor):
                if other is not None and other in refused:
                    refused[rec.id] = f"its supersede chain holds '{other}', which is refused"
                    linked = True
                    break
    return ([(n, rec) for n, rec in recs if rec.id not in refused],
            [(n, rec.id, refused[rec.id]) for n, rec in recs if rec.id in refused])


@dataclass(frozen=True, slots=True)
class RestoreDuplicate:
    """An active line of a restore whose content an active record of its scope already holds
    (``duplicate_of``: stored under another id, or landed by an earlier line of the file). ``landed``:
    ``False`` when the line was skipped (nothing links to it; counted present), ``True`` when it landed
    tombstoned because other lines of the file link to it (a supersede chain's head, a record others
    derive from), so the chain lands whole and the scope keeps one active copy."""

    line: int
    memory_id: str
    duplicate_of: str
    landed: bool

    @property
    def why(self) -> str:
        """One line for a report, naming the active record and what became of the line."""
        if self.landed:
            return (f"its content is active as '{self.duplicate_of}': landed tombstoned, not a second active copy "
                    "(other lines link to it)")
        return f"its content is active as '{self.duplicate_of}': skipped, counted present"


@dataclass
class RestorePlan:
    """What a restore of one realm writes: ``fresh`` ``(line, record)`` pairs absent from the store, landed
    a batch at a time (:meth:`batches`), and what it does not: ``refused`` ``(line, id, reason)`` (the
    erasure register), ``present`` (stored with the same content, or an unlinked active record whose
    content an active record of its scope already holds under another id: skipped), ``conflicts`` (ids
    stored with other content: kept as they are). ``duplicates`` names every active line whose content
    was active already (:class:`RestoreDuplicate`): skipped (counted in ``present``), or, linked to by
    other lines, in ``fresh`` as a tombstone. ``linked``: the ids other lines of the file link to;
    ``file_ids``: each re-issued id's id in the file (what :func:`apply_restore` checks again when it
    lands a batch)."""

    fresh: list[tuple[int, MemoryRecord]]
    refused: list[tuple[int, str, str]]
    present: int
    conflicts: list[str]
    duplicates: list[RestoreDuplicate] = field(default_factory=list)
    linked: frozenset[str] = frozenset()
    file_ids: Mapping[str, str] = field(default_factory=dict)

    def batches(self) -> Iterator[list[tuple[int, MemoryRecord]]]:
        """:func:`restore_batches` of ``fresh`` (cut as they are landed: a chain longer than a batch is
        refused when reached, after the batches before it)."""
        return restore_batches(self.fresh)


@dataclass
class RestoreLanding:
    """What :func:`apply_restore` did with one batch: ``landed`` ``(line, record)`` pairs as written (and
    ``receipt``, ``None`` when nothing was left to write), and the lines it found, reading in the
    transaction that lands the batch, to have changed since the plan: ``present`` (their id stored by
    now with the same content, or an unlinked active line whose content is active by now: skipped),
    ``conflicts`` (their id stored by now with other content) and ``duplicates`` (active lines whose
    content is active by now under another id: skipped, or landed tombstoned when linked)."""

    landed: list[tuple[int, MemoryRecord]]
    receipt: BatchReceipt | None
    present: int = 0
    conflicts: list[str] = field(default_factory=list)
    duplicates: list[RestoreDuplicate] = field(default_factory=list)


def _stored_by_id(get_many: Callable[[Collection[str]], Mapping[str, MemoryRecord]],
                  recs: Sequence[tuple[int, MemoryRecord]], given: Mapping[str, str],
                  ) -> tuple[list[tuple[int, MemoryRecord]], int, list[str]]:
    """``(fresh, present, conflicts)``: ``recs`` sorted by what ``get_many`` (one snapshot's or one write
    transaction's lookup by id) holds under each line's id (its file id first, for a re-issued one):
    nothing (fresh), the same content (present) or other content (a conflict, named by the id stored)."""
    stored = get_many(list(dict.fromkeys([i for _, rec in recs for i in (given.get(rec.id, rec.id), rec.id)])))
    fresh: list[tuple[int, MemoryRecord]] = []
    present, conflicts = 0, []
    for n, rec in recs:
        named = given.get(rec.id, rec.id)
        held = stored.get(named)
        if held is None and named != rec.id:
            named = rec.id
            held = stored.get(rec.id)
        if held is None:
            fresh.append((n, rec))
        elif held.content_hash == rec.content_hash:
            present += 1
        else:
            conflicts.append(named)
    return fresh, present, conflicts


def plan_restore(store: AgentMemoryStore, realm: str, recs: Sequence[tuple[int, MemoryRecord]],
                 file_ids: Mapping[str, str] | None = None) -> RestorePlan:
    """The restore of ``realm``'s records (line number, record): what the erasure register keeps out, what
    is stored already (by id: the same content is present, other content a conflict), which active lines
    duplicate content already active in their scope (:func:`_resolve_active_duplicates`) and the rest.
    ``file_ids`` maps a record landing under another id than its file gave (an unverified line's
    re-issued id, :func:`unverified_memory_id`) to the file's id: a record stored under the file's id
    makes the line present (same content) or a conflict (other content: the stored one is kept, and
    the conflict names the file's id), and an erasure of either id keeps it out.

    The plan is read from snapshots; :func:`apply_restore` reads the store again, by the same rules, in
    the transaction that lands each batch, so a write made meanwhile (a record remembered with the same
    content, another import) never leaves a second active copy or overwrites a stored id."""
    given = dict(file_ids or {})
    allowed, refused = keep_out_erased(store, realm, recs, given)
    with store.snapshot(realm) as tx:
        fresh, present, conflicts = _stored_by_id(tx.get_many, allowed, given)
    linked = _linked_ids(recs)
    fresh, duplicates = _resolve_active_duplicates(store, realm, fresh, linked)
    skipped = sum(1 for d in duplicates if not d.landed)
    return RestorePlan(fresh, refused, present + skipped, conflicts, duplicates, linked, given)


def _linked_ids(recs: Sequence[tuple[int, MemoryRecord]]) -> frozenset[str]:
    """The ids other lines of the file link to: a ``supersedes``, a ``derived_from``, a successor."""
    linked: set[str] = set()
    for _, rec in recs:
        linked.update(rec.derived_from)
        if rec.supersedes is not None:
            linked.add(rec.supersedes)
        if rec.status.kind is StatusKind.SUPERSEDED and rec.status.detail:
            linked.add(rec.status.detail)
    return frozenset(linked)


def _stored_holders(tx: ReadTx, active: Sequence[tuple[int, MemoryRecord]]) -> dict[tuple[Scope, str], str]:
    """``(scope, content hash) -> id`` of the stored active record holding the content of each of ``active``
    in its scope (a few ``IN``-list lookups per scope, in ``tx``)."""
    by_scope: dict[Scope, list[str]] = {}
    for _, rec in active:
        by_scope.setdefault(rec.scope, []).append(rec.content_hash)
    holder: dict[tuple[Scope, str], str] = {}
    for scope, hashes in by_scope.items():
        for chash, stored in tx.active_duplicates(scope, list(dict.fromkeys(hashes))).items():
            holder[(scope, chash)] = stored.id
    return holder


def _resolve_active_duplicates(store: AgentMemoryStore, realm: str, fresh: list[tuple[int, MemoryRecord]],
                               linked: frozenset[str],
                               ) -> tuple[list[tuple[int, MemoryRecord]], list[RestoreDuplicate]]:
    """Keep one active record per content and scope: ``fresh`` with each active record whose content an
    active record of its scope already holds (stored under another id, or landing earlier in this plan)
    resolved to that record, as ``remember``, a quarantine release and a gated promotion resolve theirs.

    A record nothing else of the file links to (no ``supersedes`` of its own, no record superseded by it
    or derived from it: ``linked``) is left out and counted present. A record other lines link to lands
    all the same, so no chain or lineage of the file is broken, but as a tombstone (tombstoned now, by the
    store's clock), never as a second active copy; its audit row names the active record
    (:func:`apply_restore`). A record that supersedes the stored active record holding its content (a tag
    merge's version) is no duplicate: it takes that record's place (the validator supersedes it). Linked
    records are resolved first, in file order, so a chain's head keeps the content active over an
    unlinked line of the file holding it too. A record the sweep would tombstone on landing (expired) is
    left as it is. Returns ``(fresh, duplicates)``, the duplicates in file order."""
    now_ms = store.clock.now_ms()
    active = [(n, rec) for n, rec in fresh if rec.settled(now_ms).status.is_active]
    if not active:
        return fresh, []
    with store.snapshot(realm) as tx:
        holder = _stored_holders(tx, active)
    return _without_duplicates(fresh, active, holder, linked, now_ms)


def _without_duplicates(fresh: list[tuple[int, MemoryRecord]], active: Sequence[tuple[int, MemoryRecord]],
                        holder: dict[tuple[Scope, str], str], linked: frozenset[str], now_ms: int,
                        ) -> tuple[list[tuple[int, MemoryRecord]], list[RestoreDuplicate]]:
    """``fresh`` with the ``active`` lines whose content ``holder`` (the stored holders of each scope and
    content) or an earlier line holds resolved (:func:`_resolve_active_duplicates`), and the duplicates."""

    def is_linked(rec: MemoryRecord) -> bool:
        return rec.supersedes is not None or rec.id in linked

    stored = dict(holder)
    for _, rec in active:  # a version superseding the stored holder of its own content takes its place
        key = (rec.scope, rec.content_hash)
        if rec.supersedes is not None and stored.get(key) == rec.supersedes and holder[key] == rec.supersedes:
            holder[key] = rec.id
    duplicates: dict[str, RestoreDuplicate] = {}
    for first in (True, False):
        for n, rec in active:
            if is_linked(rec) is not first:
                continue
            held = holder.setdefault((rec.scope, rec.content_hash), rec.id)
            if held != rec.id:
                duplicates[rec.id] = RestoreDuplicate(n, rec.id, held, landed=first)
    if not duplicates:
        return fresh, []
    out: list[tuple[int, MemoryRecord]] = []
    for n, rec in fresh:
        dup = duplicates.get(rec.id)
        if dup is None:
            out.append((n, rec))
        elif dup.landed:
            out.append((n, replace(rec, status=Status.tombstoned(), tombstoned_at_ms=now_ms,
                                   updated_at_ms=max(rec.updated_at_ms, now_ms))))
    return out, sorted(duplicates.values(), key=lambda d: d.line)


def apply_restore(store: AgentMemoryStore, realm: str, batch: Sequence[tuple[int, MemoryRecord]], *,
                  rationale: str, plan: RestorePlan | None = None) -> RestoreLanding:
    """Land one batch of :func:`plan_restore` as ``RestoreOp`` writes under their exported ids, authored by
    :data:`IMPORT_AUTHOR`, in one write transaction through the validator, after reading the store again
    in that transaction by the plan's rules: a line whose id is stored by now is present or a conflict,
    and an active line whose content its scope holds active by now under another id is a duplicate
    (skipped, or landed tombstoned when other lines link to it: ``plan.linked``). Nothing written between
    the read and the write, so no second active copy can land. The ``rationale`` of a record landed
    tombstoned as a duplicate names the active record. Raises :class:`LineRefused` naming the line of
    the op the store refused (nothing of the batch written)."""
    linked = plan.linked if plan is not None else _linked_ids(batch)
    given = plan.file_ids if plan is not None else {}
    merged = {d.memory_id: d.duplicate_of for d in plan.duplicates if d.landed} if plan is not None else {}
    fresh = list(batch)  # the lines the ops are made of, by op index
    try:
        with store.transaction(realm) as tx:
            fresh, present, conflicts = _stored_by_id(tx.get_many, batch, given)
            active = [(n, rec) for n, rec in fresh if rec.settled(tx.now_ms).status.is_active]
            holder = _stored_holders(tx, active) if active else {}
            fresh, duplicates = _without_duplicates(fresh, active, holder, linked, tx.now_ms)
            present += sum(1 for d in duplicates if not d.landed)
            merged.update((d.memory_id, d.duplicate_of) for d in duplicates if d.landed)
            ops = tuple(RestoreOp(record=rec, rationale=rationale if rec.id not in merged else
                                  f"{rationale}: tombstoned, its content is active as '{merged[rec.id]}'")
                        for _, rec in fresh)
            receipt = tx.apply(StagedBatch(realm=realm, author=IMPORT_AUTHOR, ops=ops), gate=store.gate) \
                if ops else None
    except AgentMemoryError as exc:
        index = exc.data.get("op_index")
        where = fresh[index][0] if isinstance(index, int) and index < len(fresh) else batch[0][0]
        raise LineRefused(where, f"refused by the store: {exc.message}") from None
    return RestoreLanding(fresh, receipt, present, conflicts, duplicates)


# --------------------------------------------------------------------------- fresh creates (another system)


#: The memory systems ``meta-memory import --from`` reads; each owns the id space ``<system>-<32 hex>``
#: (:func:`foreign_memory_id`), which an unverified export line may not claim (:func:`in_foreign_id_space`).
FOREIGN_SYSTEMS = frozenset({"mem0", "langgraph"})
_FOREIGN_ID = re.compile("(?:" + "|".join(sorted(FOREIGN_SYSTEMS)) + r")-[0-9a-f]{32}", re.ASCII)


def foreign_memory_id(system: str, source_id: str) -> str:
    """The memory id a record of another memory system (one of :data:`FOREIGN_SYSTEMS`) lands under:
    ``<system>-<32 hex of sha256(system, source_id)>`` (the same on every run, so an import is
    idempotent; the source's own id is kept in the provenance). Raises ``ValueError`` for a system not
    in :data:`FOREIGN_SYSTEMS` (its id space would not be reserved against unverified export lines)."""
    if system not in FOREIGN_SYSTEMS:
        raise ValueError(f"unknown foreign memory system {system!r}: expected one of {sorted(FOREIGN_SYSTEMS)}")
    digest = hashlib.sha256(f"{system}\x00{source_id}".encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"{system}-{digest}"


def in_foreign_id_space(memory_id: str) -> bool:
    """True when ``memory_id`` has the form :func:`foreign_memory_id` gives a record of one of
    :data:`FOREIGN_SYSTEMS` (``mem0-`` or ``langgraph-`` and 32 lowercase hex digits)."""
    return _FOREIGN_ID.fullmatch(memory_id) is not None


def unverified_memory_id(memory_id: str) -> str:
    """The id an unverified export line claiming ``memory_id`` in a foreign system's id space lands
    under: ``unverified-<32 hex of sha256("unverified-import", memory_id)>``, outside every foreign id
    space and the minted ``mem-...`` form, and the same on every run (an import stays idempotent). Only
    the claimed id goes in, never the content: the id tells nothing about the text."""
    digest = hashlib.sha256(f"unverified-import\x00{memory_id}".encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"unverified-{digest}"


def foreign_create(scope: Scope, system: str, source_id: str, *, title: str, body: str, tags: Sequence[str],
                   created_at_ms: int, updated_at_ms: int, expires_at_ms: int | None,
                   metadata: dict[str, Any]) -> CreateOp:
    """The write landing record ``source_id`` of ``system`` in ``scope``: an application write (author
    ``application``, kind ``fact``, tier ``agent_observed``) under :func:`foreign_memory_id`, with the
    source's times (``updated_at_ms`` never before ``created_at_ms``; epoch ms) and a provenance naming the
    system and the source id."""
    record = NewMemoryRecord(title=title, body=body, tags=tuple(tags), kind=Kind.FACT,
                             provenance=Provenance(author=Author.application(),
                                                   imported_from=ImportedFrom(system, source_id)),
                             expires_at_ms=expires_at_ms, metadata=metadata)
    return CreateOp(scope=scope, record=normalize_record(record), trust=TrustTier.AGENT_OBSERVED,
                    id=foreign_memory_id(system, source_id), rationale=f"import from {system}",
                    created_at_ms=created_at_ms, updated_at_ms=max(updated_at_ms, created_at_ms))


def check_create(op: CreateOp, now_ms: int, max_ttl_s: int) -> CreateOp:
    """``op`` after the checks the validator makes of one created record (fields, secrets, its times
    against ``now_ms``, epoch ms) and the expiry cap (``max_ttl_s``, seconds), so a dry run refuses what
    the write would. Raises ``AgentMemoryError`` or ``ValueError`` naming the rule, never the matched
    text of a secret."""
    stamps = stamps_problem(now_ms, op.created_at_ms or 0, op.updated_at_ms or 0)
    if stamps is not None:
        raise ValueError(stamps)
    too_late = expiry_past_cap(op.record.expires_at_ms, now_ms, max_ttl_s)
    if too_late is not None:
        raise ValueError(too_late)
    validate_record_fields(op.record.title, op.record.description, op.record.body)
    # the validator's scan of the same strings (its id too) is then answered by the scanner's clean memo
    refuse_secrets(op.record, 0, *(op.id,) if op.id else ())
    return op


class Landing(StrEnum):
    """What :func:`plan_creates` decided for one op."""

    #: Not held by the target: the op lands.
    FRESH = "fresh"
    #: Its id is stored with the same content in the same scope (imported before).
    PRESENT = "present"
    #: Its id is stored with other content or in another scope: kept as it was.
    CONFLICT = "conflict"
    #: Its content is active in its scope already (stored, or an earlier op of the call).
    DUPLICATE = "duplicate"
    #: Its key tag is held by an active record of its scope (or an earlier op of the import).
    KEY_CONFLICT = "key_conflict"


@dataclass(frozen=True, slots=True)
class CreatePlan:
    """One op's landing and, for a conflict or a stored duplicate, the record it met (``None`` otherwise)."""

    landing: Landing
    met: str | None = None


class StoredKeys:
    """The key tags of each scope's active records holding the tag ``family`` (e.g. ``lg:item``), read
    once per scope an import reaches (a page of 500 at a time), not once per record; the keys an import
    lands are added as :func:`plan_creates` lets them through."""

    def __init__(self, family: str) -> None:
        self.family = family
        self.prefix = family.split(":", 1)[0] + ":k:"
        self.scopes: dict[Scope, set[str]] = {}

    def of(self, store: AgentMemoryStore, realm: str, scope: Scope) -> set[str]:
        keys = self.scopes.get(scope)
        if keys is None:
            keys = set()
            before: tuple[int, str] | None = None
            while True:
                page = store.list_active(realm, scope, tags=[self.family], limit=500, before=before)
                keys.update(t for _, r in page for t in r.tags if t.startswith(self.prefix))
                if len(page) < 500:
                    break
                before = page[-1][0]
            self.scopes[scope] = keys
        return keys


def plan_creates(store: AgentMemoryStore, realm: str, ops: Sequence[CreateOp], key_tags: Sequence[str | None],
                 keys: StoredKeys) -> list[CreatePlan]:
    """One :class:`CreatePlan` per op of ``ops`` (each with a fixed id; ``key_tags[i]`` names op ``i``'s
    key in its source, or ``None``), read in one snapshot of ``realm``: the same id stored (present, or a
    conflict when its content or scope differs), the same content active in the scope or written by an
    earlier op (a duplicate), then, among the rest, the same key (a conflict, :class:`StoredKeys`)."""
    plans: list[CreatePlan] = []
    seen: set[tuple[Scope, str]] = set()
    with store.snapshot(realm) as tx:
        stored = tx.get_many([op.id for op in ops if op.id is not None])
        for op in ops:
            chash = content_hash(op.record.title, op.record.body)
            prior = stored.get(op.id or "")
            if prior is not None:
                same = prior.content_hash == chash and prior.scope == op.scope
                plans.append(CreatePlan(Landing.PRESENT) if same else CreatePlan(Landing.CONFLICT, prior.id))
                continue
            if (op.scope, chash) in seen:
                plans.append(CreatePlan(Landing.DUPLICATE))
                continue
            dup = tx.active_duplicate(op.scope, chash)
            if dup is not None:
                plans.append(CreatePlan(Landing.DUPLICATE, dup.id))
                continue
            seen.add((op.scope, chash))
            plans.append(CreatePlan(Landing.FRESH))
    for i, (op, key) in enumerate(zip(ops, key_tags, strict=True)):
        if plans[i].landing is not Landing.FRESH or key is None:
            continue
        held = keys.of(store, realm, op.scope)
        if key in held:
            plans[i] = CreatePlan(Landing.KEY_CONFLICT)
        else:
            held.add(key)
    return plans


def apply_creates(store: AgentMemoryStore, realm: str, ops: Sequence[CreateOp]) -> list[tuple[int, AgentMemoryError]]:
    """Apply ``ops`` (application writes) as one batch in one transaction; an op the validator refuses is
    left out and the rest applied again. Returns ``(position in ops, refusal)`` of each op left out, in the
    order refused; every other op landed. Raises what the store raises without naming an op (``io``)."""
    index_of = list(range(len(ops)))
    todo = list(ops)
    refused: list[tuple[int, AgentMemoryError]] = []
    while todo:
        try:
            record_writes.apply_batch(store, StagedBatch(realm=realm, author=Author.application(), ops=tuple(todo)))
        except AgentMemoryError as exc:
            index = exc.op_index
            if index is None or not 0 <= index < len(todo):
                raise
            refused.append((index_of[index], exc))
            del todo[index], index_of[index]
            continue
        return refused
    return refused

