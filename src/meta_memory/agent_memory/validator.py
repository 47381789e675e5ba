"""THE one validator every agent-memory write passes (reference §2D).

:func:`plan_batch` checks a :class:`~meta_memory.agent_memory.batch.StagedBatch`
op by op against an *overlay*: the live store (through the small
:class:`RecordReader` interface, so any backend can serve it) plus the effect
of the batch's earlier ops. It returns a :class:`BatchPlan` — the final state
of every record the batch touches and one audit entry per op — which a store
writes in one transaction. Nothing is written when validation fails.

Refusals raise :class:`~meta_memory.errors.AgentMemoryError` with ``reason``
``invalid_record`` | ``secret_detected`` (+ ``secret_class``) |
``scope_not_writable`` | ``erased`` (the erasure register holds the id, or the
content, up to whitespace, for that scope: :func:`refuse_erased`) and the detail ``op {i}: ...`` (``op_index=i``).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Protocol

from meta_memory.agent_memory.batch import (
    TOMBSTONE_RECREATE_WINDOW_MS,
    BatchKind,
    CreateOp,
    Op,
    OpResult,
    RestoreOp,
    RetierOp,
    SetRankOp,
    StagedBatch,
    SupersedeOp,
    TombstoneOp,
)
from meta_memory.agent_memory.erase import ErasedText, Erasure, ErasureCheck, erased_writes, shown_texts
from meta_memory.agent_memory.fields import (
    MAX_MEMORY_ID_CHARS,
    FieldError,
    compact_whitespace,
    normalize_metadata,
    normalize_tags,
    validate_record_fields,
)
from meta_memory.agent_memory.hashing import content_hash, new_memory_id, new_memory_ids
from meta_memory.agent_memory.model import (
    Author,
    AuthorKind,
    MemoryRecord,
    NewMemoryRecord,
    Scope,
    ScopeKind,
    Status,
    StatusKind,
    TrustTier,
    UsageStats,
    is_expired,
)
from meta_memory.agent_memory.secrets import scan_record, secret_field
from meta_memory.errors import AgentMemoryError
from meta_memory.limits import MAX_BATCH_OPS

__all__ = [
    "RecordReader",
    "AuditEntry",
    "BatchPlan",
    "normalize_record",
    "validate_record_fields",
    "normalize_tags",
    "plan_batch",
    "refuse_erased",
    "erasure_scopes",
    "ErasureCheck",
    "secret_refusal_detail",
    "MAX_CHAIN_WALK",
]

MAX_CHAIN_WALK = 4096
"""Upper bound on records visited by the transitive taint walk."""

LLM_TIER_CEILING = TrustTier.AGENT_OBSERVED
#: The usage of a record that lands: no counts (a frozen value, shared).
_NO_USAGE = UsageStats()


class RecordReader(Protocol):
    """The read side the validator needs from a store (inside the write transaction)."""

    def get_record(self, memory_id: str) -> MemoryRecord | None:
        """The live record with this id in the batch's realm, or ``None``."""
        ...

    def tombstoned_since(self, scope: Scope, content_hash: str, since_ms: int) -> bool:
        """Whether a record in ``scope`` with ``content_hash`` was tombstoned at or after ``since_ms``."""
        ...

    def erased(self, ids: Collection[str], content_hashes: Collection[str]) -> list[Erasure]:
        """The erasure-register rows of the batch's realm naming any of ``ids`` or holding any of
        ``content_hashes`` by their finest hash (see :mod:`meta_memory.agent_memory.erase`)."""
        ...

    def erasures_held(self) -> bool:
        """Whether the erasure register of the batch's realm holds any row, read in the same transaction as
        :meth:`erased` (``False``: :meth:`erased` and :meth:`erased_texts` find nothing, whatever they are asked)."""
        ...

    def erased_texts(self, hashes: Collection[str]) -> list[ErasedText]:
        """The field-level erasure-register rows of the batch's realm holding any of ``hashes``
        (:func:`~meta_memory.agent_memory.erase.field_hashes`)."""
        ...


def erasure_scopes(scope: Scope, *authors: Author) -> tuple[Scope, ...]:
    """The scopes erased content may not come back into through a write into ``scope``: ``scope``
    itself and the identity scopes of the agent authors among ``authors`` (content an identity erased
    may not return through its own proposal or promotion into a shared scope either)."""
    agents = (Scope.identity(scope.realm, a.identity) for a in authors if a.kind is AuthorKind.AGENT and a.identity)
    return tuple(dict.fromkeys((scope, *agents)))


def refuse_erased(reader: RecordReader, checks: Sequence[ErasureCheck]) -> None:
    """Raise ``AgentMemoryError("erased", op_index=...)`` for the first check the erasure register
    forbids (:func:`~meta_memory.agent_memory.erase.erased_writes`): an erased id written again, or erased
    content written into a scope it was erased from.

    One lookup for all checks; the message names the scope, never the content."""
    hits = erased_writes(reader, checks)
    if not hits:
        return
    c, scope = hits[0].check, hits[0].scope
    if scope is None:
        raise AgentMemoryError(
            "erased", f"op {c.op_index}: record '{c.memory_id}' was erased; an erased record is never written again",
            op_index=c.op_index)
    raise AgentMemoryError(
        "erased", f"op {c.op_index}: this content was erased from {scope.describe()}; erased content "
                  "is never written there again", op_index=c.op_index)


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One audit row: ``op_index``, ``op_kind``, ``memory_id`` and the ``detail`` JSON object (read-only:
    entries of one plan with equal details share the object)."""

    op_index: int
    op_kind: str
    memory_id: str | None
    detail: dict[str, Any]


@dataclass(slots=True)
class BatchPlan:
    """The validated effect of a batch.

    ``records``: final state of every touched record, in first-touch order.
    ``before``: each touched record's live state before the batch (None = new).
    """

    records: dict[str, MemoryRecord] = field(default_factory=dict)
    before: dict[str, MemoryRecord | None] = field(default_factory=dict)
    audit: list[AuditEntry] = field(default_factory=list)
    results: list[OpResult] = field(default_factory=list)


def secret_refusal_detail(op_index: int, secret_class: str, field: str | None = None) -> str:
    """The reference's refusal text for a secret-bearing write: names the class and the part of the record
    that held it (``field``, :func:`~meta_memory.agent_memory.secrets.secret_field`), never the text."""
    where = f" (in {field})" if field else ""
    return (
        f"op {op_index}: write refused: content matches the '{secret_class}' secret pattern class{where}. "
        "Durable memory must never hold credentials — store a reference to where the credential lives "
        "instead. Do not retry with the secret paraphrased or split."
    )


def refuse_secrets(record: NewMemoryRecord | MemoryRecord, op_index: int = 0, *more: str) -> None:
    """Raise ``AgentMemoryError("secret_detected")`` when any string ``record`` stores matches a secret
    class (:func:`~meta_memory.agent_memory.secrets.scan_record`: its fields, its provenance, and for a
    stored record its id, scope key, status detail and links; ``more``: an explicit id a write gives it),
    its ``field`` the part that held it (:func:`~meta_memory.agent_memory.secrets.secret_field`).

    The batch validator runs the same scan; stores also call this before an exact-content dedup
    short-circuit, so a secret carried only in the tags of a duplicate is refused, never dropped silently.
    """
    found = scan_record(record, *more)
    if found is not None:
        where = secret_field(record, *more)
        raise AgentMemoryError("secret_detected", secret_refusal_detail(op_index, found, where), op_index=op_index,
                               secret_class=found, field=where)


def normalize_record(record: NewMemoryRecord, *, stored: bool = False) -> NewMemoryRecord:
    """Canonical fields: title and description whitespace-compacted, body trimmed, tags normalised,
    ``metadata`` checked (:func:`~meta_memory.agent_memory.fields.normalize_metadata`: caps, key rule, JSON only),
    but kept as stored with ``stored`` (a row this store wrote, read back to compare its text, never written
    from here: :meth:`NewMemoryRecord.from_json` with ``stored``).

    Raises :class:`~meta_memory.agent_memory.fields.FieldError` for tag caps. A record already in
    canonical form (every application write: its fields were normalised on the way in) is returned as is.
    """
    title = compact_whitespace(record.title)
    description = compact_whitespace(record.description)
    body = record.body.strip()
    tags = normalize_tags(record.tags)
    metadata = record.metadata if stored else normalize_metadata(record.metadata)
    if (title == record.title and description == record.description and body == record.body and tags == record.tags
            and metadata == record.metadata):
        return record
    return replace(record, title=title, description=description, body=body, tags=tags, metadata=metadata)


def _invalid(i: int, message: str) -> AgentMemoryError:
    return AgentMemoryError("invalid_record", f"op {i}: {message}", op_index=i)


class _Overlay:
    """Live reads with the batch's earlier effects layered on top."""

    def __init__(self, reader: RecordReader, plan: BatchPlan) -> None:
        self.reader = reader
        self.plan = plan
        #: op index -> id minted ahead for ops that mint an id (see :func:`_mint_ids`)
        self.minted: dict[int, str] = {}
        #: memory id -> content hash of each record a create or supersede of this batch lands
        self.hashes: dict[str, str] = {}

    def get(self, memory_id: str) -> MemoryRecord | None:
        if memory_id in self.plan.records:
            return self.plan.records[memory_id]
        return self.reader.get_record(memory_id)

    def put(self, record: MemoryRecord) -> None:
        if record.id not in self.plan.before:
            self.plan.before[record.id] = None
        self.plan.records[record.id] = record

    def touch(self, record: MemoryRecord) -> None:
        """Record the pre-batch state of an existing record before it is changed."""
        if record.id not in self.plan.before:
            self.plan.before[record.id] = record

    def tombstoned_recently(self, scope: Scope, chash: str, since_ms: int) -> bool:
        for rec in self.plan.records.values():
            if rec.status.kind is StatusKind.TOMBSTONED and rec.scope == scope and rec.content_hash == chash:
                if (rec.tombstoned_at_ms or 0) >= since_ms:
                    return True
        return self.reader.tombstoned_since(scope, chash, since_ms)


def _check_scope_writable(i: int, batch: StagedBatch, scope: Scope) -> None:
    if scope.realm != batch.realm:
        raise AgentMemoryError(
            "scope_not_writable",
            f"op {i}: scope realm '{scope.realm}' does not match batch realm '{batch.realm}'",
            op_index=i,
        )
    author = batch.author
    if author.kind is AuthorKind.AGENT:
        if scope.kind is not ScopeKind.IDENTITY or scope.key != author.identity:
            raise AgentMemoryError(
                "scope_not_writable",
                f"op {i}: scope not writable: agent '{author.identity}' may only write its own identity scope, "
                f"not {scope.kind.value} scope (mob/operator writes go through proposals)",
                op_index=i,
            )


def _chain_reaches_taint(overlay: _Overlay, start: Iterable[str]) -> bool:
    """Walk supersedes + derived_from edges from ``start``: any untrusted, quarantined or ever-quarantined record?"""
    seen: set[str] = set()
    todo = list(start)
    while todo and len(seen) < MAX_CHAIN_WALK:
        rid = todo.pop()
        if rid in seen:
            continue
        seen.add(rid)
        rec = overlay.get(rid)
        if rec is None:
            continue
        if rec.trust is TrustTier.UNTRUSTED or rec.ever_quarantined or rec.status.kind is StatusKind.QUARANTINED:
            return True
        if rec.supersedes:
            todo.append(rec.supersedes)
        todo.extend(rec.derived_from)
    return False


def _check_tier(
    i: int,
    batch: StagedBatch,
    overlay: _Overlay,
    trust: TrustTier,
    chain_start: list[str],
    *,
    retier_target: MemoryRecord | None = None,
    tainted_source: bool = False,
) -> None:
    if trust in (TrustTier.APPLICATION, TrustTier.OPERATOR):
        raise _invalid(i, f"trust tier '{trust.value}' is never assignable via a staged batch")
    author = batch.author
    if author.is_llm and trust > LLM_TIER_CEILING:
        steward_verified = (
            retier_target is not None
            and trust is TrustTier.AGENT_VERIFIED
            and author.kind is AuthorKind.STEWARD
            and retier_target.provenance.verification is not None
        )
        if retier_target is not None and trust is TrustTier.AGENT_VERIFIED and not steward_verified:
            raise _invalid(i, "retier to agent_verified requires a steward author and a verification claim on the record")
        if not steward_verified:
            raise _invalid(i, f"trust tier '{trust.value}' exceeds the author's ceiling '{LLM_TIER_CEILING.value}'")
    if trust > LLM_TIER_CEILING and (tainted_source or _chain_reaches_taint(overlay, chain_start)):
        raise _invalid(
            i,
            f"trust tier '{trust.value}' rejected: provenance chain reaches untrusted/quarantined content "
            f"(capped at {LLM_TIER_CEILING.value})",
        )


def _checked_payload(i: int, record: NewMemoryRecord, stored: MemoryRecord | None = None,
                     memory_id: str | None = None) -> NewMemoryRecord:
    """``record`` normalised, its field caps checked and every string it stores scanned for secrets:
    the payload's (or, for a restore, the whole ``stored`` record's) and an explicit ``memory_id``."""
    try:
        norm = normalize_record(record)
        validate_record_fields(norm.title, norm.description, norm.body)
    except FieldError as exc:
        raise _invalid(i, f"invalid record: {exc.rule}") from None
    if stored is not None:
        norm_stored = replace(stored, title=norm.title, description=norm.description, body=norm.body, tags=norm.tags,
                              metadata=norm.metadata)
        refuse_secrets(norm_stored, i)
    else:
        refuse_secrets(norm, i, *(memory_id,) if memory_id else ())
    return norm


def _require(i: int, overlay: _Overlay, memory_id: str) -> MemoryRecord:
    rec = overlay.get(memory_id)
    if rec is None:
        raise _invalid(i, f"record '{memory_id}' does not exist")
    return rec


def _check_recreation(
    i: int, batch: StagedBatch, overlay: _Overlay, scope: Scope, chash: str, now_ms: int, window_ms: int
) -> None:
    if not batch.author.is_llm:
        return
    if overlay.tombstoned_recently(scope, chash, now_ms - window_ms):
        raise _invalid(i, f"content (hash {chash}) was tombstoned within the recreation window and cannot be re-created")


def _mint_ids(ops: tuple[Op, ...]) -> dict[int, str]:
    """The ids of every create and supersede without an explicit id, minted together (their random
    nonces drawn at once, :func:`~meta_memory.agent_memory.hashing.new_memory_ids`)."""
    wanted = [i for i, op in enumerate(ops) if isinstance(op, (CreateOp, SupersedeOp)) and op.id is None]
    if len(wanted) < 2:
        return {}
    return dict(zip(wanted, new_memory_ids(len(wanted)), strict=True))


def _new_id(i: int, overlay: _Overlay, explicit: str | None) -> str:
    if explicit is None:
        minted = overlay.minted.get(i)
        return minted if minted is not None else new_memory_id()
    if not explicit.strip():
        raise _invalid(i, "record id must not be empty")
    if overlay.get(explicit) is not None:
        raise _invalid(i, f"record '{explicit}' already exists")
    return explicit


def _ancestor_quarantined(overlay: _Overlay, ids: Iterable[str]) -> bool:
    for rid in ids:
        rec = overlay.get(rid)
        if rec is not None and (rec.ever_quarantined or rec.status.kind is StatusKind.QUARANTINED):
            return True
    return False


def _detail(
    batch: StagedBatch, op: Op, quarantined: str | None, shared: dict[tuple[Any, ...], dict[str, Any]]
) -> dict[str, Any]:
    """The audit detail of ``op``. Ops of one batch with the same kind, rationale and quarantine share
    one detail object (``shared``, per batch): a bulk write's thousand creates build and encode it once."""
    key = (op.op, getattr(op, "rationale", None), quarantined)
    found = shared.get(key)
    if found is not None:
        return found
    detail: dict[str, Any] = {
        "op": op.op,
        "author": batch.author.to_json(),
        "rationale": getattr(op, "rationale", None),
        "quarantined": quarantined,
    }
    if batch.review is not None:
        detail["review"] = batch.review
    shared[key] = detail
    return detail


def plan_batch(
    batch: StagedBatch,
    reader: RecordReader,
    *,
    now_ms: int,
    quarantine_reason: str | None = None,
    recreate_window_ms: int = TOMBSTONE_RECREATE_WINDOW_MS,
    vetted: Collection[int] = (),
) -> BatchPlan:
    """Validate ``batch`` against ``reader`` + its own earlier ops and compute its effect.

    ``quarantine_reason`` is the write gate's verdict for the whole batch: when
    set, every create/supersede lands ``quarantined{reason}`` (a quarantined
    supersede leaves its prior active). Raises ``AgentMemoryError`` (see module
    doc); batch-level refusals (empty, over 1024 ops) carry no ``op_index``.

    ``vetted``: indexes of create ops without an explicit id whose payload the caller built with
    :func:`~meta_memory.agent_memory.writes.prepare_items` in this call, or a single remember's with
    :func:`~meta_memory.agent_memory.writes.app_record` and scanned (already canonical, held to the
    field rules and scanned for secrets there): that payload check, which would find the same, is not
    run twice. Every other rule still applies to those ops. A dict also gives each such op's content
    hash as the caller computed it over that very payload (:func:`~meta_memory.agent_memory.hashing.content_hash`
    of its title and body), which is then not computed again.
    """
    n = len(batch.ops)
    if n == 0:
        raise AgentMemoryError("invalid_record", "staged batch must contain at least one op")
    if n > MAX_BATCH_OPS:
        raise AgentMemoryError("invalid_record", f"staged batch has {n} ops; the cap is {MAX_BATCH_OPS}")

    plan = BatchPlan()
    overlay = _Overlay(reader, plan)
    overlay.minted = _mint_ids(batch.ops)
    details: dict[tuple[Any, ...], dict[str, Any]] = {}
    for i, op in enumerate(batch.ops):
        if isinstance(op, CreateOp):
            checked = op.id is None and i in vetted
            rec = _plan_create(i, batch, overlay, op, now_ms, quarantine_reason, recreate_window_ms, vetted=checked,
                               chash=vetted[i] if checked and isinstance(vetted, dict) else None)
            q = quarantine_reason
        elif isinstance(op, SupersedeOp):
            rec = _plan_supersede(i, batch, overlay, op, now_ms, quarantine_reason, recreate_window_ms)
            q = quarantine_reason
        elif isinstance(op, (TombstoneOp, RetierOp, SetRankOp)):
            rec = _plan_mutation(i, batch, overlay, op, now_ms)
            q = None
        elif isinstance(op, RestoreOp):
            rec = _plan_restore(i, batch, overlay, op, now_ms)
            q = rec.status.detail if rec.status.kind is StatusKind.QUARANTINED else None
            displaced = _displace_restored_prior(batch, overlay, rec, now_ms)
            if displaced is not None:
                plan.audit.append(AuditEntry(i, op.op, rec.id, _detail(batch, op, q, details)))
                plan.audit.append(AuditEntry(i, op.op, displaced.id, {
                    **_detail(batch, op, None, details),
                    "rationale": f"{op.rationale or 'restore'}: superseded by the restored '{rec.id}'"}))
                plan.results.append(OpResult(i, op.op, rec.id, rec.status))
                continue
        else:  # pragma: no cover - the Op union is closed
            raise _invalid(i, f"unknown op {op!r}")
        plan.audit.append(AuditEntry(i, op.op, rec.id, _detail(batch, op, q, details)))
        plan.results.append(OpResult(i, op.op, rec.id, rec.status))
    _check_restored_links(batch, overlay)
    if reader.erasures_held():  # an empty register refuses nothing: no folded hashes to compute, no lookup
        refuse_erased(reader, _erasure_checks(batch, plan, overlay.hashes))
    return plan


def _erasure_checks(batch: StagedBatch, plan: BatchPlan, hashes: dict[str, str]) -> list[ErasureCheck]:
    """What the erasure register must allow: every record the batch creates (create, supersede,
    restore), with its id when the op named it. ``hashes``: the content hashes planning computed, by id."""
    checks: list[ErasureCheck] = []
    for result in plan.results:
        if result.op not in ("create", "supersede", "restore") or plan.before.get(result.memory_id) is not None:
            continue
        op = batch.ops[result.op_index]
        rec = plan.records[result.memory_id]
        named = isinstance(op, RestoreOp) or getattr(op, "id", None) is not None
        scopes = erasure_scopes(rec.scope, rec.provenance.author, batch.author)
        chash = hashes.get(rec.id) or rec.content_hash
        checks.append(ErasureCheck.of(result.op_index, scopes, rec.title, rec.body, chash, rec.id if named else None,
                                      shown_texts(rec)))
    return checks


def _plan_create(
    i: int,
    batch: StagedBatch,
    overlay: _Overlay,
    op: CreateOp,
    now_ms: int,
    quarantine_reason: str | None,
    window_ms: int,
    *,
    vetted: bool = False,
    chash: str | None = None,
) -> MemoryRecord:
    record = op.record if vetted else _checked_payload(i, op.record, memory_id=op.id)
    _check_scope_writable(i, batch, op.scope)
    for rid in op.derived_from:
        _require(i, overlay, rid)
    _check_tier(i, batch, overlay, op.trust, list(op.derived_from), tainted_source=op.tainted_source)
    memory_id = _new_id(i, overlay, op.id)
    if chash is None:  # the recreation rule's and, by id, the erasure checks'
        chash = content_hash(record.title, record.body)
    _check_recreation(i, batch, overlay, op.scope, chash, now_ms, window_ms)
    created = op.created_at_ms if op.created_at_ms is not None else now_ms
    updated = op.updated_at_ms if op.updated_at_ms is not None else created
    _check_stamps(i, now_ms, created, updated)
    new = _landing_record(
        memory_id, op.scope, record, op.trust, quarantine_reason,
        ever_quarantined=(quarantine_reason is not None or op.tainted_source
                          or _ancestor_quarantined(overlay, op.derived_from)),
        derived_from=tuple(op.derived_from), created_at_ms=created, updated_at_ms=updated,
    )
    overlay.put(new)
    overlay.hashes[memory_id] = chash
    return new


def _landing_record(
    memory_id: str,
    scope: Scope,
    record: NewMemoryRecord,
    trust: TrustTier,
    quarantine_reason: str | None,
    *,
    ever_quarantined: bool,
    derived_from: tuple[str, ...],
    created_at_ms: int,
    updated_at_ms: int,
    supersedes: str | None = None,
    working_set_rank: int | None = None,
) -> MemoryRecord:
    """The record a create or supersede op lands: active, or quarantined with the gate's reason."""
    return MemoryRecord(
        id=memory_id,
        scope=scope,
        kind=record.kind,
        title=record.title,
        description=record.description,
        body=record.body,
        tags=record.tags,
        provenance=record.provenance,
        trust=trust,
        status=Status.quarantined(quarantine_reason) if quarantine_reason is not None else Status.active(),
        supersedes=supersedes,
        derived_from=derived_from,
        working_set_rank=working_set_rank,
        rank_set_at_ms=None,
        created_at_ms=created_at_ms,
        updated_at_ms=updated_at_ms,
        usage=_NO_USAGE,
        ever_quarantined=ever_quarantined,
        expires_at_ms=record.expires_at_ms,
        metadata=record.metadata,
    )


def _why_inactive(status: Status) -> str:
    """What an update of a record that is not active should know: where its content went, or who must act."""
    if status.kind is StatusKind.SUPERSEDED:
        return f"superseded by '{status.detail}'; update that record instead"
    if status.kind is StatusKind.QUARANTINED:
        return "quarantined pending review; it can be updated once a steward or operator releases it"
    return "forgotten"


def _plan_supersede(
    i: int,
    batch: StagedBatch,
    overlay: _Overlay,
    op: SupersedeOp,
    now_ms: int,
    quarantine_reason: str | None,
    window_ms: int,
) -> MemoryRecord:
    record = _checked_payload(i, op.record, memory_id=op.id)
    prior = _require(i, overlay, op.prior)
    _check_scope_writable(i, batch, prior.scope)
    if not prior.status.is_active:
        raise _invalid(i, f"record '{op.prior}' is not active ({_why_inactive(prior.status)})")
    if prior.expires_at_ms is not None and is_expired(prior.expires_at_ms, now_ms):
        when = datetime.fromtimestamp(prior.expires_at_ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        raise _invalid(i, f"record '{op.prior}' is not active (expired at {when}, {prior.expires_at_ms} ms)")
    for rid in op.derived_from:
        _require(i, overlay, rid)
    _check_tier(i, batch, overlay, op.trust, [op.prior, *op.derived_from])
    memory_id = _new_id(i, overlay, op.id)
    if op.id is not None:
        _check_cycle(i, overlay, prior, memory_id)
    chash = content_hash(record.title, record.body)
    _check_recreation(i, batch, overlay, prior.scope, chash, now_ms, window_ms)
    new = _landing_record(
        memory_id, prior.scope, record, op.trust, quarantine_reason,
        ever_quarantined=quarantine_reason is not None
        or _ancestor_quarantined(overlay, [prior.id, *op.derived_from]),
        derived_from=tuple(op.derived_from), created_at_ms=now_ms, updated_at_ms=now_ms,
        supersedes=prior.id, working_set_rank=prior.working_set_rank,
    )
    overlay.put(new)
    overlay.hashes[memory_id] = chash
    if quarantine_reason is None:
        overlay.touch(prior)
        overlay.put(replace(prior, status=Status.superseded(memory_id), updated_at_ms=now_ms))
    return new


def _check_cycle(i: int, overlay: _Overlay, prior: MemoryRecord, new_id: str) -> None:
    seen: set[str] = set()
    cur: MemoryRecord | None = prior
    while cur is not None and cur.supersedes and len(seen) < MAX_CHAIN_WALK:
        if cur.supersedes == new_id:
            raise _invalid(i, f"supersede chain through '{new_id}' would form a cycle")
        if cur.supersedes in seen:
            break
        seen.add(cur.supersedes)
        cur = overlay.get(cur.supersedes)


def _plan_mutation(
    i: int, batch: StagedBatch, overlay: _Overlay, op: TombstoneOp | RetierOp | SetRankOp, now_ms: int
) -> MemoryRecord:
    target = _require(i, overlay, op.id)
    _check_scope_writable(i, batch, target.scope)
    if target.status.kind is StatusKind.TOMBSTONED:
        raise _invalid(i, f"record '{op.id}' is already tombstoned")
    overlay.touch(target)
    if isinstance(op, TombstoneOp):
        # A quarantine decision's original keeps its timestamps (seed: "the original keeps its body,
        # provenance and timestamps"); the decision time is its tombstoned_at_ms.
        reviewed = batch.kind is BatchKind.REVIEW_VERDICT and target.status.kind is StatusKind.QUARANTINED
        updated = target.updated_at_ms if reviewed else now_ms
        new = replace(target, status=Status.tombstoned(), tombstoned_at_ms=now_ms, updated_at_ms=updated)
    elif isinstance(op, RetierOp):
        _check_tier(i, batch, overlay, op.trust, [target.id], retier_target=target)
        new = replace(target, trust=op.trust, updated_at_ms=now_ms)
    else:
        new = replace(
            target, working_set_rank=op.rank, rank_set_at_ms=now_ms if op.rank is not None else None
        )
    overlay.put(new)
    return new



#: How far in the future (ms) a restored record's timestamps may lie: clocks of two hosts disagree.
RESTORE_CLOCK_SKEW_MS = 24 * 60 * 60 * 1000


#: The rule of :func:`stamps_problem`, as a refusal names it.
STAMPS_RULE = "timestamps must be epoch ms between 0 and now (+24 h), with updated_at_ms >= created_at_ms"


def stamps_problem(now_ms: int, created: int, updated: int, *others: int | None) -> str | None:
    """:data:`STAMPS_RULE` when times a write brings itself (a restore, an import from another system or a
    legacy markdown file) break it, else ``None``: they land only within ``0 .. now + RESTORE_CLOCK_SKEW_MS``
    with ``updated >= created``, as a record dated in the far future would stay the newest in every recency
    order and one before the epoch breaks them."""
    stamps = [t for t in (created, updated, *others) if t is not None]
    if any(t < 0 or t > now_ms + RESTORE_CLOCK_SKEW_MS for t in stamps) or updated < created:
        return STAMPS_RULE
    return None


def _check_stamps(i: int, now_ms: int, created: int, updated: int, *others: int | None) -> None:
    problem = stamps_problem(now_ms, created, updated, *others)
    if problem is not None:
        raise _invalid(i, problem)


def _plan_restore(i: int, batch: StagedBatch, overlay: _Overlay, op: RestoreOp, now_ms: int) -> MemoryRecord:
    """A restore lands the exported record as it was, after the checks a create gets; trust only goes down."""
    rec = op.record
    if not rec.id or len(rec.id) > MAX_MEMORY_ID_CHARS or any(c.isspace() or not c.isprintable() for c in rec.id):
        raise _invalid(i, f"record id must be 1..{MAX_MEMORY_ID_CHARS} printable characters without spaces")
    payload = _checked_payload(i, NewMemoryRecord(
        title=rec.title, body=rec.body, description=rec.description, tags=rec.tags, kind=rec.kind,
        provenance=rec.provenance, metadata=rec.metadata,
    ), stored=rec)
    _check_scope_writable(i, batch, rec.scope)
    if overlay.get(rec.id) is not None:
        raise _invalid(i, f"record '{rec.id}' already exists")
    _check_stamps(i, now_ms, rec.created_at_ms, rec.updated_at_ms, rec.tombstoned_at_ms, rec.rank_set_at_ms)
    if (rec.status.kind is StatusKind.TOMBSTONED) != (rec.tombstoned_at_ms is not None):
        raise _invalid(i, "tombstoned_at_ms is set exactly when the status is tombstoned")
    if rec.expires_at_ms is not None and rec.expires_at_ms < 0:
        raise _invalid(i, "expires_at_ms must be epoch ms >= 0")
    # A record that expired since it was exported lands as the tombstone the sweep makes of it, never
    # active again.
    rec = rec.settled(now_ms)
    links_unknown = False
    if rec.supersedes is not None:
        prior = overlay.get(rec.supersedes)
        if prior is None:
            raise _invalid(i, f"supersedes '{rec.supersedes}', which is neither stored nor earlier in the batch")
        if prior.scope != rec.scope:
            raise _invalid(i, f"supersedes '{rec.supersedes}' of another scope")
    for rid in rec.derived_from:
        links_unknown = links_unknown or overlay.get(rid) is None
    tainted = (
        rec.ever_quarantined
        or rec.status.kind is StatusKind.QUARANTINED
        or links_unknown
        or _chain_reaches_taint(overlay, [r for r in (rec.supersedes, *rec.derived_from) if r is not None])
    )
    ceiling = LLM_TIER_CEILING if tainted else TrustTier.AGENT_VERIFIED
    trust = rec.trust if rec.trust <= ceiling else ceiling
    ever_quarantined = rec.ever_quarantined or _ancestor_quarantined(
        overlay, [r for r in (rec.supersedes, *rec.derived_from) if r is not None]
    )
    new = replace(
        rec, title=payload.title, description=payload.description, body=payload.body, tags=payload.tags,
        metadata=payload.metadata, trust=trust, ever_quarantined=ever_quarantined,
    )
    overlay.put(new)
    return new


def _displace_restored_prior(batch: StagedBatch, overlay: _Overlay, rec: MemoryRecord,
                             now_ms: int) -> MemoryRecord | None:
    """After :func:`_plan_restore` landed ``rec``: one active head per supersede chain. When ``rec`` names
    an active record in ``supersedes`` (stored, or restored earlier in the batch) and lands anything but
    quarantined, that record becomes ``superseded{by: rec}`` (``updated_at_ms`` now), as a supersede would
    leave it; a quarantined ``rec`` leaves it active, as a quarantined supersede does (its release
    supersedes it then). Returns the record as it was before, or ``None`` when nothing changed."""
    if rec.supersedes is None or rec.status.kind is StatusKind.QUARANTINED:
        return None
    prior = overlay.get(rec.supersedes)
    if prior is None or not prior.status.is_active:
        return None
    overlay.touch(prior)
    overlay.put(replace(prior, status=Status.superseded(rec.id), updated_at_ms=max(prior.updated_at_ms, now_ms)))
    return prior


def _check_restored_links(batch: StagedBatch, overlay: _Overlay) -> None:
    """After a batch: a restored ``superseded{by}`` names a successor that exists and supersedes it."""
    for i, op in enumerate(batch.ops):
        if not isinstance(op, RestoreOp) or op.record.status.kind is not StatusKind.SUPERSEDED:
            continue
        successor = overlay.get(op.record.status.detail or "")
        if successor is None or successor.supersedes != op.record.id:
            raise _invalid(i, f"superseded by '{op.record.status.detail}', which is not in the batch or the store "
                              "as its successor (export and import whole supersede chains)")
