"""Record writes as planned batches: the one planner of every record write (reference §2B write paths).

Every record write is a :class:`~meta_memory.agent_memory.batch.StagedBatch` applied through an open
:class:`~meta_memory.agent_memory.store.tx.WriteTx`; a single call is a batch of one. A caller opens a
transaction (:meth:`~meta_memory.agent_memory.store.base.AgentMemoryStore.transaction`), plans here and
applies through the handle; :mod:`meta_memory.agent_memory.record_writes` does exactly that for a single
write (the store plans no write). The application's rules live here and nowhere else:

- exact-content dedup and tag merge (:class:`RememberPlan`), shared by a single remember
  (:func:`remember`) and a bulk one (:func:`remember_many`): an item whose content an active record (or an
  earlier item of the call) holds returns that record, and when it brings tags the record lacks, the
  record is superseded by a version carrying both tag lists; a write that would land quarantined also
  returns, as it is, a quarantined record of its scope holding the content (:func:`plan_remember`);
- an application write's field rules (:func:`app_record`) and an update's revision of its prior
  (:func:`revision`);
- supersede, forget, propose;
- the one-shot legacy markdown import (:func:`import_markdown`).

This module reads and writes only through the transaction handle: it runs no SQL and imports no store
module at run time.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from meta_memory.agent_memory.batch import BatchKind, CreateOp, GateVerdict, StagedBatch, SupersedeOp, TombstoneOp
from meta_memory.agent_memory.erase import erased_writes, shown_texts
from meta_memory.agent_memory.fields import (
    FieldError,
    check_given_tags,
    check_text_field,
    compact_whitespace,
    normalize_metadata,
    normalize_tags,
    validate_record_fields,
)
from meta_memory.agent_memory.hashing import content_hash, erasure_hashes, mint_token, new_memory_id
from meta_memory.agent_memory.markdown import (
    IMPORTED_SUFFIX,
    LegacyFileRefused,
    ParseResult,
    parse_markdown,
    read_legacy_file,
)
from meta_memory.agent_memory.model import (
    Author,
    AuthorKind,
    EvidenceRef,
    MemoryRecord,
    NewMemoryRecord,
    Provenance,
    Scope,
    StatusKind,
    TrustTier,
    is_expired,
)
from meta_memory.agent_memory.secrets import scan, scan_record
from meta_memory.agent_memory.validator import (
    ErasureCheck,
    erasure_scopes,
    normalize_record,
    refuse_erased,
    refuse_secrets,
    secret_refusal_detail,
    stamps_problem,
)
from meta_memory.errors import AgentMemoryError, ValueRuleBroken
from meta_memory.identity import parse_identity
from meta_memory.limits import MAX_BATCH_OPS
from meta_memory.storage.layout import AgentMemoryPaths

if TYPE_CHECKING:
    from meta_memory.agent_memory.store.base import WriteGate
    from meta_memory.agent_memory.store.tx import WriteTx

__all__ = [
    "KEEP_EXPIRY",
    "KeepExpiry",
    "MAX_IMPORT_SKIP_REASONS",
    "Proposal",
    "RememberItem",
    "RememberOutcome",
    "RememberPlan",
    "plan_remember",
    "PriorNotFound",
    "RecordFieldRefused",
    "TagMerge",
    "app_record",
    "authored_record",
    "check_update",
    "forget",
    "import_markdown",
    "import_markdown_folder",
    "import_summary",
    "keeping_expiry",
    "prepare_items",
    "proposal",
    "propose",
    "remember",
    "remember_many",
    "revision",
    "supersede",
]

log = logging.getLogger(__name__)
P = ParamSpec("P")
T = TypeVar("T")

#: Skip reasons a markdown import's summary audit row keeps (the rest are logged only).
MAX_IMPORT_SKIP_REASONS = 8

#: The provenance of every application write (a frozen value, shared: its JSON is encoded once).
_APPLICATION_PROVENANCE = Provenance(Author.application())


class KeepExpiry:
    """The type of :data:`KEEP_EXPIRY`: an update that leaves the prior version's expiry as it was."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "KEEP_EXPIRY"


#: An update's default ``expiry``: the new version keeps the prior's ``expires_at_ms``.
KEEP_EXPIRY = KeepExpiry()


@dataclass(frozen=True, slots=True)
class RememberItem:
    """One application write of a bulk remember: raw ``title``, ``body``, ``tags`` and ``metadata``
    (normalised and checked by :func:`prepare_items`, like a single remember's)."""

    title: str
    body: str
    tags: tuple[str, ...] = ()
    metadata: Mapping[str, Any] | None = field(default=None, hash=False)
    #: When the record stops being active (epoch ms; ``None`` = never).
    expires_at_ms: int | None = None


@dataclass(frozen=True, slots=True)
class TagMerge:
    """What a duplicate ``remember`` merged: the superseded record and the tags it added."""

    supersedes: str
    tags_added: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RememberOutcome:
    """What became of item ``op_index`` of a bulk remember: ``record`` and ``created`` (``False`` when an
    active record with the same content, stored earlier or earlier in the same call, was returned;
    ``merge`` then names what the item's new tags superseded, as a single remember does), or ``error``,
    the refusal of that item alone (nothing of it was written)."""

    op_index: int
    record: MemoryRecord | None = None
    created: bool = False
    error: AgentMemoryError | None = None
    merge: TagMerge | None = None


def _dumps(value: Any) -> str:
    """Compact JSON text as the stores write it (UTF-8 kept, no spaces)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


_OP_PREFIX = re.compile(r"^op \d+: ")
#: What the validator puts before a field rule (``op N: invalid record: <rule>``); the ``invalid_record``
#: message prefix says it already, so a single call's refusal drops it.
_FIELD_RULE_PREFIX = "invalid record: "


def _item_field_error(exc: RecordFieldRefused, index: int) -> RecordFieldRefused:
    """A field refusal of item ``index`` of a bulk write, naming the field by its path in the call
    (``records.<index>.title``) in ``field`` and ``rule``, as the call's own shape refusals do; the RPC
    surface answers it as a single remember's (``-32602``) with ``data.op_index``."""
    field = exc.field or "record"
    path = f"records.{index}.{field}"
    rule = path + exc.rule[len(field):] if exc.rule.startswith(field) else f"{path}: {exc.rule}"
    refused = RecordFieldRefused(rule, path)
    refused.op_index = index
    return refused


def single_write(write: Callable[P, T]) -> Callable[P, T]:
    """``write``, a call that writes one record (a remember, update, supersede, forget or proposal, not a
    batch), with its refusals in single-call wording: the validator speaks of the batch every write is
    planned as (``op 0: record '<id>' is not active (...)``, ``op_index`` 0), which a caller that sent one
    record never made; such a refusal is raised again as the same ``reason`` and ``secret_class`` without
    the ``op N:`` prefix (its ``op_index``, 0, is kept in the data: clients read it). A field rule's
    refusal then says what the message's prefix already says only once: ``invalid agent memory record:
    body must be at most 65536 bytes``, not ``... record: invalid record: body ...``. A bulk write
    (``remember_batch``, even of one item) keeps the batch wording (``op N: invalid record: <rule>``)."""

    @functools.wraps(write)
    def single(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return write(*args, **kwargs)
        except AgentMemoryError as exc:
            if type(exc) is not AgentMemoryError or exc.op_index is None or not _OP_PREFIX.match(exc.detail):
                raise
            detail = _OP_PREFIX.sub("", exc.detail)
            if exc.reason == "invalid_record":
                detail = detail.removeprefix(_FIELD_RULE_PREFIX)
            raise AgentMemoryError(exc.reason, detail, op_index=exc.op_index,
                                   secret_class=exc.secret_class, field=exc.field) from None

    return single


def _item_error(exc: AgentMemoryError, index: int) -> AgentMemoryError:
    """``exc`` restated for item ``index`` of a bulk write (its ``op N:`` prefix and ``op_index``; the
    ``field`` it names as the item's, ``records.<i>.<field>``, as a field rule's refusal names it)."""
    detail = f"op {index}: " + _OP_PREFIX.sub("", exc.detail)
    field = exc.field
    if field and not field.startswith("records."):
        field = f"records.{index}.{field}"
    return AgentMemoryError(exc.reason, detail, op_index=index, secret_class=exc.secret_class, field=field)


def tags_as_given(exc: AgentMemoryError, given: Iterable[object] | None) -> AgentMemoryError:
    """``exc`` with a secret refusal's tag named as the caller gave it: the scan reads the stored tags
    (trimmed, lowercased, sorted, each once), so its ``tags.<n>`` is restated as the index in ``given`` (the
    tags as the call listed them) of the first tag stored as tag ``n``, in ``field`` and in the message.
    Any other refusal, or no ``given``, is ``exc`` as it is."""
    field = exc.field or ""
    head, _, tail = field.rpartition("tags.")
    if exc.reason != "secret_detected" or given is None or not tail.isdigit() or head not in ("", f"records.{exc.op_index}."):
        return exc
    listed = list(given)
    if not all(isinstance(tag, str) for tag in listed):
        return exc
    stored = normalize_tags(str(tag) for tag in listed)
    n = int(tail)
    if n >= len(stored):
        return exc
    for index, tag in enumerate(listed):
        if normalize_tags([str(tag)]) == (stored[n],):
            if index == n:
                return exc
            detail = exc.detail.replace(f"(in tags.{n})", f"(in tags.{index})")
            return AgentMemoryError(exc.reason, detail, op_index=exc.op_index, secret_class=exc.secret_class,
                                    field=f"{head}tags.{index}")
    return exc


@contextlib.contextmanager
def naming_given_tags(given: Iterable[object] | None) -> Iterator[None]:
    """Run the block with a secret refusal's tag restated as the caller gave it (:func:`tags_as_given`);
    every other exception passes as raised. Each tag is first scanned as given, before it is stored
    lowercased (:func:`~meta_memory.agent_memory.fields.normalize_tags`): a key whose rule asks for mixed case
    (a bare ``sk-`` key) would pass the scan of its stored form, which still holds all but its case. Raises
    ``AgentMemoryError("secret_detected")`` naming ``tags.<i>`` (op 0: a bulk write restates it per item)."""
    for index, tag in enumerate(given or ()):
        found = scan("", "", "", (), (tag,)) if isinstance(tag, str) else None
        if found is not None:
            where = f"tags.{index}"
            raise AgentMemoryError("secret_detected", secret_refusal_detail(0, found, where), op_index=0,
                                   secret_class=found, field=where)
    try:
        yield
    except AgentMemoryError as exc:
        restated = tags_as_given(exc, given)
        if restated is exc:
            raise
        raise restated from None


# --------------------------------------------------------------------------- record fields


class RecordFieldRefused(AgentMemoryError, ValueRuleBroken):
    """A field an application write brought broke its rule: ``invalid_record`` (``-32040``) to the store's
    callers, and a value rule naming the field (``title``, ``body``, ``tags``, ``metadata``) that the RPC
    surface answers ``-32602``, as it does a malformed request (reference §10 "agent_memory param rules").
    A ``remember_batch`` item's refusal names the field by its path (``records.<i>.title``) and answers
    ``-32602`` too, with ``data.op_index``."""

    def __init__(self, rule: str, field: str) -> None:
        AgentMemoryError.__init__(self, "invalid_record", rule)
        self.rule = rule
        self.field = field


class PriorNotFound(AgentMemoryError):
    """A supersede or update named a prior that is not a record of the write's scope: an unknown id, or
    the id of another identity's, mob's or realm's record (the same refusal, so it tells nothing of the
    other scope). ``invalid_record`` (``-32040``), ``record '<id>' does not exist``; ``memory_id`` is
    the id as given. The ``memory`` tool answers it as it answers a ``forget`` of such an id."""

    def __init__(self, memory_id: str) -> None:
        super().__init__("invalid_record", f"record '{memory_id}' does not exist")
        self.memory_id = memory_id


def _app_title(title: str) -> str:
    title = compact_whitespace(title)
    check_text_field("title", title)
    return title


def _app_body(body: str) -> str:
    body = body.strip()
    check_text_field("body", body)
    return body


@dataclass(frozen=True, slots=True)
class _AppFields:
    """The given fields of an application write, normalised and checked once (``None``: not given)."""

    title: str | None = None
    body: str | None = None
    tags: tuple[str, ...] | None = None
    metadata: dict[str, Any] | None = None


def _app_fields(title: str | None, body: str | None, tags: Iterable[str] | None,
                metadata: Mapping[str, Any] | None) -> _AppFields:
    """The given fields normalised (title whitespace compacted, body trimmed, tags normalised, metadata
    checked) and held to their rules in the wire's order: title, body, tags, metadata. Raises
    :class:`RecordFieldRefused` naming the first field at fault."""
    try:
        return _AppFields(None if title is None else _app_title(title), None if body is None else _app_body(body),
                          None if tags is None else normalize_tags(tags),
                          None if metadata is None else normalize_metadata(metadata))
    except FieldError as exc:
        raise RecordFieldRefused(exc.rule, exc.field) from None


def app_record(title: str, body: str, tags: Iterable[str], evidence: Sequence[EvidenceRef] = (),
               metadata: Mapping[str, Any] | None = None, expires_at_ms: int | None = None) -> NewMemoryRecord:
    """An application write's record: title whitespace compacted, body trimmed, tags normalised, metadata
    checked, each held to its rule once, here; ``evidence`` (sessions it was derived from) in its
    provenance; ``expires_at_ms`` its expiry (epoch ms, ``None`` = never). Refusals:
    :class:`RecordFieldRefused` (``invalid_record``) naming the field and the rule."""
    f = _app_fields(title, body, tags, {} if metadata is None else metadata)
    assert f.title is not None and f.body is not None and f.tags is not None and f.metadata is not None
    provenance = Provenance(Author.application(), evidence=tuple(evidence)) if evidence else _APPLICATION_PROVENANCE
    return NewMemoryRecord(title=f.title, body=f.body, tags=f.tags, provenance=provenance, metadata=f.metadata,
                           expires_at_ms=expires_at_ms)


def authored_record(record: NewMemoryRecord, author: Author, *, check_fields: bool = False) -> NewMemoryRecord:
    """``record`` in canonical form with ``author`` in its provenance (a tool's or the distiller's write, a
    proposal). ``check_fields`` also holds title, description and body to the field rules. Refusals:
    ``invalid_record`` (``op 0: invalid record: <rule>``, ``op_index`` 0)."""
    try:
        norm = normalize_record(record)
        if check_fields:
            validate_record_fields(norm.title, norm.description, norm.body)
    except FieldError as exc:
        raise AgentMemoryError("invalid_record", f"op 0: invalid record: {exc.rule}", op_index=0) from None
    return replace(norm, provenance=replace(norm.provenance, author=author))


def prepare_items(items: Sequence[RememberItem], evidence: Sequence[EvidenceRef], *,
                  refuses_nul: bool) -> list[NewMemoryRecord | AgentMemoryError]:
    """Each item of a bulk remember as its record (:func:`app_record`, scanned for secrets) or its refusal
    (``op N: ...``). ``refuses_nul``: the backend cannot store NUL, so text holding one is refused here.
    No items raise ``invalid_record`` (the whole call). The batch cap is the validator's: the items' ops
    are one staged batch, and more than :data:`~meta_memory.limits.MAX_BATCH_OPS` of them refuse the
    whole call (``staged batch has N ops; the cap is ...``)."""
    if not items:
        raise AgentMemoryError("invalid_record", "records must contain at least one record")
    prepared: list[NewMemoryRecord | AgentMemoryError] = []
    for i, item in enumerate(items):
        try:
            try:
                check_given_tags(item.tags)  # as a single remember's params hold them
            except FieldError as exc:
                raise RecordFieldRefused(exc.rule, exc.field) from None
            record = app_record(item.title, item.body, item.tags, evidence, item.metadata, item.expires_at_ms)
            with naming_given_tags(item.tags):
                refuse_secrets(record, i)
            if refuses_nul and any("\x00" in t for t in (record.title, record.body, *record.tags)):
                raise AgentMemoryError("invalid_record", "text must not contain NUL")
            prepared.append(record)
        except RecordFieldRefused as exc:
            prepared.append(_item_field_error(exc, i))
        except AgentMemoryError as exc:
            prepared.append(_item_error(exc, i))
    return prepared


# --------------------------------------------------------------------------- remember: dedup and tag merge


@dataclass(slots=True)
class _Head:
    """The newest version of one content hash that an earlier item of the call writes: the op writing it
    (its position) and the fields a later tag merge copies."""

    op: int
    record: NewMemoryRecord


class RememberPlan:
    """The ops of one remember (one item or many), built item by item as single remembers would write them.

    ``heads`` maps a content hash to its current version: a stored record (active, or quarantined when
    the write itself would land quarantined: :func:`plan_remember`), or the :class:`_Head` of an op of
    this call. ``items[i]`` is ``(op position or stored record, created, tag merge)``; ``op_items[k]`` the
    item op ``k`` writes for. ``merge_tags=False`` (a tool's or the distiller's write) returns a
    duplicate as it is, whatever tags the item brings; a quarantined duplicate is always returned as it
    is (it awaits review: nothing is written over it).
    """

    def __init__(self, scope: Scope, author: Author, *, merge_tags: bool = True) -> None:
        self.scope = scope
        self.author = author
        self.merge_tags = merge_tags
        self.heads: dict[str, MemoryRecord | _Head] = {}
        self.ops: list[CreateOp | SupersedeOp] = []
        self.op_items: list[int] = []
        self.items: dict[int, tuple[int | MemoryRecord, bool, TagMerge | None]] = {}
        #: The write gate's answer for :meth:`batch` when planning asked it (``None``: not asked).
        self.verdict: GateVerdict | None = None

    def _append(self, item: int, op: CreateOp | SupersedeOp) -> int:
        self.ops.append(op)
        self.op_items.append(item)
        return len(self.ops) - 1

    def _head_id(self, head: MemoryRecord | _Head) -> str:
        """The id of ``head``: an op of this call gets its id minted here, so a later op can name it."""
        if isinstance(head, MemoryRecord):
            return head.id
        op = self.ops[head.op]
        if op.id is None:
            op = replace(op, id=new_memory_id())
            self.ops[head.op] = op
        assert op.id is not None
        return op.id

    def add(self, item: int, chash: str, record: NewMemoryRecord) -> None:
        """Plan item ``item`` (normalised, scanned). Raises ``invalid_record`` (``merged tags: ...``)
        when merging its tags would break the tag cap; nothing is planned for it then."""
        head = self.heads.get(chash)
        if head is None:
            at = self._append(item, CreateOp(scope=self.scope, record=record))
            self.heads[chash] = _Head(at, record)
            self.items[item] = (at, True, None)
            return
        have = head.tags if isinstance(head, MemoryRecord) else head.record.tags
        current: int | MemoryRecord = head if isinstance(head, MemoryRecord) else head.op
        missing = [t for t in record.tags if t not in have]
        held = isinstance(head, MemoryRecord) and head.status.kind is StatusKind.QUARANTINED
        if held or not (self.merge_tags and missing):
            self.items[item] = (current, False, None)
            return
        try:
            tags = normalize_tags([*have, *missing])
        except FieldError as exc:
            raise AgentMemoryError("invalid_record", f"merged tags: {exc.rule}") from None
        source = head if isinstance(head, MemoryRecord) else head.record
        merged = NewMemoryRecord(title=source.title, body=source.body, kind=source.kind,
                                 description=source.description, tags=tags, provenance=Provenance(self.author),
                                 expires_at_ms=source.expires_at_ms, metadata=source.metadata)
        prior = self._head_id(head)
        at = self._append(item, SupersedeOp(prior=prior, record=merged))
        self.heads[chash] = _Head(at, merged)
        self.items[item] = (at, False, TagMerge(supersedes=prior, tags_added=tuple(missing)))

    def batch(self) -> StagedBatch:
        """The planned ops as one batch of the scope's realm."""
        return StagedBatch(realm=self.scope.realm, author=self.author, ops=tuple(self.ops))


def plan_remember(
    tx: WriteTx, scope: Scope, author: Author, gate: WriteGate | None,
    items: Sequence[tuple[int, str, NewMemoryRecord]], *, merge_tags: bool = True,
) -> tuple[RememberPlan, dict[int, AgentMemoryError]]:
    """The exact-content dedup of a remember: the plan of ``items`` (``(item, content hash, normalised
    record)`` each, in order) and the items the planner refused (a tag merge past the cap, by item).

    An item whose content an **active** record of ``scope`` holds answers that record (the oldest). When
    the write would land **quarantined** (``gate`` gives the planned batch a quarantine reason, as it will
    when the batch is applied), an item whose content no active record of ``scope`` holds but a
    quarantined one does answers that quarantined record instead of queueing a second copy of it for
    review: a repeated remember from a tainted session writes nothing. Only ``scope``'s own records are
    read, so the answer never reveals another identity's records; a write that would land active is never
    answered with a quarantined record (that content is not in memory until review releases it).

    The plan's :attr:`RememberPlan.verdict` holds the gate's answer for its batch when planning asked it
    (a plan with ops and a hash no active record holds), so applying that batch does not ask again."""

    def planned(heads: Mapping[str, MemoryRecord]) -> tuple[RememberPlan, dict[int, AgentMemoryError]]:
        plan = RememberPlan(scope, author, merge_tags=merge_tags)
        plan.heads.update(heads)
        refused: dict[int, AgentMemoryError] = {}
        for item, chash, record in items:
            try:
                plan.add(item, chash, record)
            except AgentMemoryError as exc:
                refused[item] = exc
        return plan, refused

    hashes = list(dict.fromkeys(chash for _, chash, _ in items))
    active = tx.active_duplicates(scope, hashes)
    plan, refused = planned(active)
    fresh = [h for h in hashes if h not in active]
    # the gate's question first: it answers an application write without a read, so a remember that lands
    # active (the hot path) pays no lookup of quarantined records
    if fresh and plan.ops:
        verdict = GateVerdict(plan.batch().quarantine_reason(gate))
        held = tx.quarantined_duplicates(scope, fresh) if verdict.reason is not None else None
        if held:
            plan, refused = planned({**active, **held})  # fewer ops: its batch is judged when applied
        else:
            plan.verdict = verdict
    return plan, refused


def remember(tx: WriteTx, scope: Scope, record: NewMemoryRecord, author: Author, gate: WriteGate | None, *,
             merge_tags: bool = True, app_built: bool = False) -> tuple[MemoryRecord, bool, TagMerge | None]:
    """A remember of one record, in ``tx``: ``(record, created, tag merge)`` (a batch of one through
    :class:`RememberPlan`, the planner of :func:`remember_many`). ``record`` is normalised; it is scanned
    for secrets here, before the dedup, so a secret carried only by a duplicate is refused, never dropped.

    ``app_built``: ``record`` is :func:`app_record`'s output of this call (canonical and held to the field
    rules there). With the scan here, that is what :func:`prepare_items` does for a bulk item, so the
    create op carrying this very object is passed to the validator as vetted, as a bulk item's is (its
    payload check would find the same); a tag merge's new version is checked in full.

    Refusals raise (nothing of the call is written): ``secret_detected``, ``invalid_record`` (``merged
    tags: ...`` past the tag cap), then the validator's."""
    refuse_secrets(record)
    chash = content_hash(record.title, record.body)
    plan, refused = plan_remember(tx, scope, author, gate, [(0, chash, record)], merge_tags=merge_tags)
    if refused:
        raise refused[0]
    receipt = None
    if plan.ops:
        first = plan.ops[0]
        # the create carrying this very record: vetted, with the content hash computed above
        vetted = {0: chash} if app_built and isinstance(first, CreateOp) and first.record is record else {}
        receipt = tx.apply(plan.batch(), gate=gate, vetted=vetted, verdict=plan.verdict)
    target, created, merge = plan.items[0]
    if isinstance(target, int):
        assert receipt is not None
        target = receipt.records[receipt.results[target].memory_id]
    if created:
        tx.check_floor(scope)
    return target, created, merge


def remember_many(tx: WriteTx, scope: Scope, prepared: Sequence[NewMemoryRecord | AgentMemoryError], author: Author,
                  gate: WriteGate | None) -> list[RememberOutcome]:
    """A bulk remember in ``tx``: one :class:`RememberOutcome` per item of ``prepared`` (from
    :func:`prepare_items`), in order, as if the items were remembered one after the other; all accepted
    items are applied as one batch. Refusals are per item: an item the validator refuses is dropped and
    the batch applied again without it (each attempt inside a savepoint of ``tx``).

    ``prepared`` must be :func:`prepare_items`'s own output: the validator takes each record it holds as
    already normalised, held to the field rules and scanned for secrets there, and does not run that
    payload check a second time (a tag merge's new version is checked in full)."""
    refused = {i: e for i, e in enumerate(prepared) if isinstance(e, AgentMemoryError)}
    while True:
        out, failed = _remember_attempt(tx, scope, author, gate, prepared, refused)
        if failed is None:
            break
        refused[failed[0]] = failed[1]  # refused at validation: plan again without that item
    if any(o.created for o in out):
        tx.check_floor(scope)
    return out


def _remember_attempt(
    tx: WriteTx,
    scope: Scope,
    author: Author,
    gate: WriteGate | None,
    prepared: Sequence[NewMemoryRecord | AgentMemoryError],
    refused: dict[int, AgentMemoryError],
) -> tuple[list[RememberOutcome], tuple[int, AgentMemoryError] | None]:
    """One pass of :func:`remember_many`. Returns the outcomes, or ``(item, error)`` when the validator
    refused one item (everything of this pass rolled back to its savepoint)."""
    items = [(i, content_hash(r.title, r.body), r) for i, r in enumerate(prepared)
             if isinstance(r, NewMemoryRecord) and i not in refused]
    plan, planner_refused = plan_remember(tx, scope, author, gate, items)
    for i, exc in planner_refused.items():
        refused[i] = _item_error(exc, i)
    # the creates whose payload is an item exactly as prepare_items built it (normalised, checked, scanned),
    # with the content hash computed above
    hashes = {i: chash for i, chash, _ in items}
    vetted = {k: hashes[plan.op_items[k]] for k, op in enumerate(plan.ops)
              if isinstance(op, CreateOp) and op.record is prepared[plan.op_items[k]]}
    receipt = None
    if plan.ops:
        try:
            with tx.savepoint():
                receipt = tx.apply(plan.batch(), gate=gate, vetted=vetted, verdict=plan.verdict)
        except AgentMemoryError as exc:
            if exc.op_index is None or not 0 <= exc.op_index < len(plan.op_items):
                raise
            item = plan.op_items[exc.op_index]
            return [], (item, _item_error(exc, item))
    outcomes: list[RememberOutcome] = []
    for i in range(len(prepared)):
        if i in refused:
            outcomes.append(RememberOutcome(i, error=refused[i]))
            continue
        target, created, merge = plan.items[i]
        if isinstance(target, int):
            assert receipt is not None
            target = receipt.records[receipt.results[target].memory_id]
        outcomes.append(RememberOutcome(i, record=target, created=created, merge=merge))
    return outcomes, None


# --------------------------------------------------------------------------- supersede, update, forget


def supersede(tx: WriteTx, scope: Scope, prior_id: str, make_record: Callable[[MemoryRecord], NewMemoryRecord],
              author: Author, gate: WriteGate | None) -> MemoryRecord:
    """In ``tx``: read ``prior_id``, check its scope, build the new version from it (``make_record``) with
    ``author`` in its provenance, apply; returns the new version. A new version that would change nothing
    (:func:`unchanged`) is not written: the prior is returned as it is, and no version, audit or history
    row is added (a caller tells it by the returned id, the prior's own). Refusals: :class:`PriorNotFound`
    (``record '<id>' does not exist``, also for a record of another scope: the refusal does not reveal that the id exists elsewhere), then
    the validator's (an expired prior is not active)."""
    prior = tx.get(prior_id)
    if prior is None or prior.scope != scope:
        raise PriorNotFound(prior_id)
    record = make_record(prior)
    record = replace(record, provenance=replace(record.provenance, author=author))
    op = SupersedeOp(prior=prior_id, record=record)
    if unchanged(prior, record, op.trust, tx.now_ms):
        return prior
    receipt = tx.apply(StagedBatch(realm=tx.realm, author=author, ops=(op,)), gate=gate)
    return receipt.records[receipt.results[0].memory_id]


def wrote_nothing(prior_id: str, answered_id: str) -> bool:
    """Whether a supersede of ``prior_id`` (as its caller gave it: whitespace at either end is not part of an
    id) that answered ``answered_id`` wrote nothing: :func:`supersede` answers the prior itself when the new
    version would change nothing (:func:`unchanged`), a written version always has an id of its own."""
    return answered_id == prior_id.strip()


def unchanged(prior: MemoryRecord, record: NewMemoryRecord, trust: TrustTier, now_ms: int) -> bool:
    """Whether superseding ``prior`` with ``record`` at ``trust`` changes nothing: ``prior`` is active and
    unexpired at ``now_ms``, and ``record`` in canonical form (:func:`normalize_record`) has its title,
    body, tags, kind, description and ``expires_at_ms``, the same ``trust`` tier, and metadata that is
    the same JSON (``1`` and ``true`` differ). Provenance (author, evidence) is not compared: a version
    that differs only there would hold and show the same content. A record whose fields break a rule is
    never unchanged (the write refuses it)."""
    if not prior.status.is_active or is_expired(prior.expires_at_ms, now_ms) or trust != prior.trust:
        return False
    try:
        norm = normalize_record(record)
    except FieldError:
        return False
    return ((norm.title, norm.body, norm.tags, norm.kind, norm.description, norm.expires_at_ms)
            == (prior.title, prior.body, prior.tags, prior.kind, prior.description, prior.expires_at_ms)
            and _canonical_json(norm.metadata) == _canonical_json(prior.metadata or {}))


def _canonical_json(value: Any) -> str:
    """``value`` as JSON text with sorted keys: two values with the same text are the same JSON."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def keeping_expiry(record: NewMemoryRecord, expiry: int | None | KeepExpiry) -> Callable[[MemoryRecord], NewMemoryRecord]:
    """A supersede's new version: ``record`` with ``expiry`` (:data:`KEEP_EXPIRY`: the prior's)."""

    def revise(prior: MemoryRecord) -> NewMemoryRecord:
        return replace(record, expires_at_ms=prior.expires_at_ms if isinstance(expiry, KeepExpiry) else expiry)

    return revise


def check_update(memory_id: str, title: str | None, body: str | None, tags: Iterable[str] | None,
                 metadata: Mapping[str, Any] | None, expiry: int | None | KeepExpiry) -> str:
    """The stripped ``memory_id`` of an update. Raises ``memory_id must not be empty`` for a blank id,
    ``update needs at least one of title, body, tags, metadata`` when all four are ``None`` and the
    expiry is kept."""
    memory_id = memory_id.strip()
    if not memory_id:
        raise AgentMemoryError("invalid_record", "memory_id must not be empty")
    if title is None and body is None and tags is None and metadata is None and isinstance(expiry, KeepExpiry):
        raise AgentMemoryError("invalid_record", "update needs at least one of title, body, tags, metadata")
    return memory_id


def revision(title: str | None, body: str | None, tags: Iterable[str] | None, metadata: Mapping[str, Any] | None,
             expiry: int | None | KeepExpiry) -> Callable[[MemoryRecord], NewMemoryRecord]:
    """An application update's new version of its prior: fields that are ``None`` keep the prior's
    (``metadata`` replaces the prior's object whole), kind and description are the prior's, and
    ``expiry`` as :func:`keeping_expiry`'s; held to :func:`app_record`'s rules. The given fields are
    normalised and checked here, before the prior is read (:class:`RecordFieldRefused` naming the field);
    a prior's own field that breaks an application write's rule refuses the update as ``invalid_record``."""
    given = _app_fields(title, body, tags, metadata)

    def revise(prior: MemoryRecord) -> NewMemoryRecord:
        try:
            kept = _app_fields(prior.title if given.title is None else None,
                               prior.body if given.body is None else None,
                               prior.tags if given.tags is None else None,
                               (prior.metadata or {}) if given.metadata is None else None)
        except RecordFieldRefused as exc:  # not a field of the call: the store's refusal, not the caller's params
            raise AgentMemoryError("invalid_record", exc.rule) from None
        expires = prior.expires_at_ms if isinstance(expiry, KeepExpiry) else expiry
        return NewMemoryRecord(
            title=given.title if given.title is not None else kept.title or "",
            body=given.body if given.body is not None else kept.body or "",
            tags=given.tags if given.tags is not None else kept.tags or (),
            metadata=given.metadata if given.metadata is not None else kept.metadata or {},
            provenance=_APPLICATION_PROVENANCE, kind=prior.kind, description=prior.description,
            expires_at_ms=expires)

    return revise


def forget_target(tx: WriteTx, scope: Scope, memory_id: str) -> MemoryRecord | None:
    """The record a forget of ``memory_id`` in ``scope`` tombstones, read in ``tx``: ``None`` when there is
    none in ``scope`` (unknown, another scope's) or it is already tombstoned (a forget's ``not found``
    answer). A superseded version is refused as an update of it is, ``invalid_record`` (-32040)
    ``record '<id>' is not active (superseded by '<current id>'; forget that record instead)``: tombstoning
    it would leave its current version active and recalled while the answer said the record was forgotten."""
    rec = tx.get(memory_id)
    if rec is None or rec.scope != scope or rec.status.kind is StatusKind.TOMBSTONED:
        return None
    if rec.status.kind is StatusKind.SUPERSEDED:
        raise AgentMemoryError("invalid_record", f"record '{memory_id}' is not active (superseded by "
                                                 f"'{rec.status.detail}'; forget that record instead)")
    return rec


def forget(tx: WriteTx, scope: Scope, memory_id: str, author: Author) -> bool:
    """Tombstone ``memory_id`` in ``tx`` if it is in ``scope`` and not already tombstoned; else ``False``.
    A superseded version is refused (:func:`forget_target`)."""
    if forget_target(tx, scope, memory_id) is None:
        return False
    tx.apply(StagedBatch(realm=tx.realm, author=author, ops=(TombstoneOp(id=memory_id),)), gate=None)
    return True


# --------------------------------------------------------------------------- propose


@dataclass(frozen=True, slots=True)
class Proposal:
    """A checked proposal for a shared (mob/operator) scope, ready to queue (:func:`propose`)."""

    scope: Scope
    record_json: str
    author_json: str
    taint: str | None
    erasure: ErasureCheck
    proposer: str | None = None


def proposal(scope: Scope, record: NewMemoryRecord, author: Author, taint: str | None, *,
             refuses_nul: bool) -> Proposal:
    """``record`` proposed by ``author`` for ``scope``, checked: canonical fields held to the field rules,
    no secret (``invalid_record`` / ``secret_detected``), and on a backend that cannot store NUL
    (``refuses_nul``) none in what the row holds. ``taint`` is the gate's reason at propose time."""
    norm = authored_record(record, author, check_fields=True)
    with naming_given_tags(record.tags):
        refuse_secrets(norm)
    record_json, author_json = _dumps(norm.to_json()), _dumps(author.to_json())
    if refuses_nul and ("\x00" in record_json or "\x00" in author_json or (taint and "\x00" in taint)):
        raise AgentMemoryError("invalid_record", "op 0: invalid record: text must not contain NUL", op_index=0)
    check = ErasureCheck.of(0, erasure_scopes(scope, author), norm.title, norm.body, content_hash(norm.title, norm.body),
                            texts=shown_texts(norm))
    proposer = author.identity if author.kind is AuthorKind.AGENT else None
    return Proposal(scope, record_json, author_json, taint, check, proposer)


def propose(tx: WriteTx, p: Proposal) -> str:
    """Queue ``p`` in ``tx``; returns its ``prop-...`` id. Content erased from the target scope or from the
    proposing agent's own is refused (``erased``). An open proposal counts as a row of its proposer's identity
    scope until it is decided: one that would leave that scope past ``[agent_memory] identity_record_limit``
    is refused (``limit``) and nothing is queued."""
    if tx.reader.erasures_held():  # an empty register refuses nothing: no field hashes, no lookup
        refuse_erased(tx.reader, [p.erasure])
    proposal_id = mint_token("prop")
    tx.proposals.insert(proposal_id, p.scope, p.record_json, p.author_json, tx.now_ms, p.taint)
    if p.proposer is not None:
        tx.refuse_past_record_limit(p.proposer)
    return proposal_id


# --------------------------------------------------------------------------- legacy markdown import


def import_markdown(tx: WriteTx, parsed: ParseResult, identity: str, file_name: str) -> tuple[int, list[str]]:
    """Import one parsed legacy markdown file of ``identity`` in ``tx`` (reference §2C): each record is held
    to the validator's rules one by one (a record already stored, a duplicate id in the file, times a write
    may not bring, a field rule, a secret or an erased id or content is skipped with a reason) and the rest
    applied as ``fresh_write`` batches authored by the identity's agent, trust ``agent_observed``. With
    skips, a summary audit row (``import_summary``) names the file and up to
    :data:`MAX_IMPORT_SKIP_REASONS` reasons. Returns ``(imported, skip reasons)``."""
    scope = Scope.identity(tx.realm, identity)
    author = Author.agent(identity)
    skips = list(parsed.warnings)
    seen: set[str] = set()
    ops: list[CreateOp] = []
    for rec in parsed.records:
        if rec.memory_id in seen:
            skips.append(f"duplicate memory id '{rec.memory_id}' in file")
            continue
        seen.add(rec.memory_id)
        if tx.get(rec.memory_id) is not None:
            skips.append(f"memory id '{rec.memory_id}' already exists")
            continue
        stamps = stamps_problem(tx.now_ms, rec.created_at_ms, rec.updated_at_ms)
        if stamps is not None:  # the validator's rule, judged per record so the others still land
            skips.append(f"record '{rec.memory_id}': {stamps}")
            continue
        title = compact_whitespace(rec.title)
        try:
            validate_record_fields(title, "", rec.body)
            tags = normalize_tags(rec.tags)
        except FieldError as exc:
            skips.append(f"record '{rec.memory_id}': {exc.rule}")
            continue
        record = NewMemoryRecord(title=title, body=rec.body, tags=tags, provenance=Provenance(author))
        secret_class = scan_record(record, rec.memory_id)
        if secret_class is not None:
            skips.append(f"record '{rec.memory_id}' matches the '{secret_class}' secret pattern class")
            continue
        ops.append(CreateOp(id=rec.memory_id, scope=scope, record=record, trust=TrustTier.AGENT_OBSERVED,
                            rationale="markdown import", created_at_ms=rec.created_at_ms,
                            updated_at_ms=rec.updated_at_ms))
    ops = _without_erased(tx, scope, ops, skips)
    for start in range(0, len(ops), MAX_BATCH_OPS):
        batch = StagedBatch(realm=tx.realm, author=author, kind=BatchKind.FRESH_WRITE,
                            ops=tuple(ops[start:start + MAX_BATCH_OPS]))
        tx.apply(batch, gate=None, token=mint_token("import"))
    if skips:
        import_summary(tx, file_name, len(ops), skips)
    return len(ops), skips


def import_summary(tx: WriteTx, file_name: str, imported: int, skips: Sequence[str]) -> None:
    """The ``import_summary`` audit row of a markdown import of ``file_name`` (``imported`` records; the
    skip reasons, at most :data:`MAX_IMPORT_SKIP_REASONS` of them kept)."""
    detail = {"op": "markdown_import", "file": file_name, "imported": imported, "skipped": len(skips),
              "skip_reasons": list(skips[:MAX_IMPORT_SKIP_REASONS])}
    tx.audit.append(mint_token("import-audit"), 0, "import_summary", None, detail, tx.now_ms)


def _without_erased(tx: WriteTx, scope: Scope, ops: list[CreateOp], skips: list[str]) -> list[CreateOp]:
    """``ops`` without the records the erasure register keeps out (an erased id, or content erased
    from ``scope``: the (title, body) pair, or any text field matching an erased body or description on its
    own: :func:`~meta_memory.agent_memory.erase.erased_writes`), each noted in ``skips`` by id only."""
    checks = [ErasureCheck(i, (scope,), erasure_hashes(op.record.title, op.record.body.strip()), op.id,
                           tuple(shown_texts(op.record))) for i, op in enumerate(ops)]
    gone = {hit.check.op_index for hit in erased_writes(tx, checks)}
    if not gone:
        return ops
    kept: list[CreateOp] = []
    for i, op in enumerate(ops):
        if i in gone:
            skips.append(f"record '{op.id}' was erased; it is not imported again")
        else:
            kept.append(op)
    return kept


def import_markdown_folder(folder: Path, transaction: Callable[[], AbstractContextManager[WriteTx]]) -> None:
    """The one-shot legacy markdown import of a realm's folder (reference §2C), at the realm's first open:
    each ``<encode(identity)>.md`` of ``folder`` is imported in one transaction (``transaction()`` opens
    one on the realm) and renamed ``*.md.imported``; a file refused whole (a name that decodes to no
    identity, a symbolic link, not a regular file, over the size cap, not UTF-8, or a refusal of its
    batch) is renamed ``*.md.import-failed`` and its reason kept in a summary audit row. Backend
    failures (``io``) propagate and leave the file in place."""
    if folder.is_symlink():
        log.warning("agent memory import: %s is a symbolic link; not followed", folder.name)
        return
    if not folder.is_dir():
        return
    for path in sorted(folder.glob("*.md")):
        try:
            _import_file(path, transaction)
        except FileNotFoundError:
            continue  # another process imported it first


def _import_file(path: Path, transaction: Callable[[], AbstractContextManager[WriteTx]]) -> None:
    try:
        identity = parse_identity(AgentMemoryPaths.markdown_identity(path))
    except ValueError:
        _import_failed(path, transaction, "file name does not decode to a valid agent identity")
        return
    try:
        text = read_legacy_file(path)
    except LegacyFileRefused as exc:
        _import_failed(path, transaction, exc.reason)
        return
    parsed = parse_markdown(text)
    try:
        with transaction() as tx:
            imported, skips = import_markdown(tx, parsed, identity, path.name)
    except AgentMemoryError as exc:
        if exc.reason == "io":
            raise
        _import_failed(path, transaction, exc.detail)
        return
    for reason in skips:
        log.warning("agent memory import %s: %s", path.name, reason)
    _rename(path, IMPORTED_SUFFIX)
    log.info("agent memory import %s: %d imported, %d skipped", path.name, imported, len(skips))


def _import_failed(path: Path, transaction: Callable[[], AbstractContextManager[WriteTx]], reason: str) -> None:
    log.warning("agent memory import %s failed: %s", path.name, reason)
    with transaction() as tx:
        import_summary(tx, path.name, 0, [reason])
    _rename(path, ".import-failed")


def _rename(path: Path, suffix: str) -> None:  # IMPORTED_SUFFIX or ".import-failed"
    try:
        path.rename(path.with_name(path.name + suffix))
    except FileNotFoundError:
        pass  # another process renamed it first
    except OSError as exc:
        log.warning("agent memory import: cannot rename %s to *%s: %s", path.name, suffix, exc)
