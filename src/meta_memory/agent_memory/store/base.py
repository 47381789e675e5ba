"""The agent-memory store interface: one contract, two backends (SQLite and PostgreSQL).

Every write is a :class:`~meta_memory.agent_memory.batch.StagedBatch` checked
by the one validator (:func:`~meta_memory.agent_memory.validator.plan_batch`)
and applied in one transaction with one audit row per op. The convenience
writers (``remember``, ``supersede``, ``forget``...) only build batches: they
are written once, here, over a few backend primitives (open a write
transaction, read a live record, find an active duplicate, apply a batch
inside the transaction, insert rows into a realm's table). What the SQL
backends share beyond that lives in :mod:`.common`, their differing SQL
spellings in :mod:`.dialect`.

Retention floors (reference §2B): a scope above
:data:`DEFAULT_SCOPE_FLOOR_RECORDS` non-tombstoned records or
:data:`DEFAULT_SCOPE_FLOOR_BYTES` bytes of text logs a warning at each
``remember``; records are never evicted.

Write gate: any object with
``quarantine_reason(author: Author, batch_kind: str, evidence: list, *, realm: str) -> str | None``
(the firewall supplies it). A non-``None`` reason makes every create/supersede
of the batch land ``quarantined{reason}``; a quarantined supersede leaves its
prior active. A store may be given a default gate; a per-call ``gate``
overrides it.
"""

from __future__ import annotations

import json
import logging
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, TypeVar

from meta_memory.agent_memory.batch import (
    BatchReceipt,
    CreateOp,
    StagedBatch,
    SupersedeOp,
    TombstoneOp,
)
from meta_memory.agent_memory.erase import EraseReport
from meta_memory.agent_memory.fields import (
    FieldError,
    compact_whitespace,
    normalize_metadata,
    normalize_tags,
    validate_record_fields,
)
from meta_memory.agent_memory.filters import FilterNode
from meta_memory.agent_memory.hashing import content_hash, mint_token, new_memory_id
from meta_memory.agent_memory.model import (
    AgentMemoryRecord,
    Author,
    EvidenceRef,
    MemoryRecord,
    NewMemoryRecord,
    Provenance,
    RecordMeta,
    RecordView,
    Scope,
    StatusKind,
    UsageEvent,
)
from meta_memory.agent_memory.validator import (
    ErasureCheck,
    RecordReader,
    erasure_scopes,
    normalize_record,
    refuse_erased,
    refuse_secrets,
)
from meta_memory.clock import Clock
from meta_memory.errors import AgentMemoryError, RecordNotFound
from meta_memory.limits import MAX_BATCH_OPS, MAX_MANIFEST_K
from meta_memory.limits import RETENTION_FLOOR_BYTES as DEFAULT_SCOPE_FLOOR_BYTES
from meta_memory.limits import RETENTION_FLOOR_RECORDS as DEFAULT_SCOPE_FLOOR_RECORDS

if TYPE_CHECKING:
    from meta_memory.agent_memory.store.tx import ReadTx, WriteTx

__all__ = [
    "WriteGate",
    "InjectionRow",
    "TagMerge",
    "ManifestTier",
    "DEFAULT_MANIFEST_K",
    "MAX_MANIFEST_K",
    "DEFAULT_SCOPE_FLOOR_RECORDS",
    "DEFAULT_SCOPE_FLOOR_BYTES",
    "AgentMemoryStore",
    "RememberItem",
    "RememberOutcome",
    "KEEP_EXPIRY",
    "KeepExpiry",
    "dumps",
]

DEFAULT_MANIFEST_K = 32

_T = TypeVar("_T")


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
#: The provenance of every application write (a frozen value, shared: its JSON is encoded once).
_APPLICATION_PROVENANCE = Provenance(Author.application())


def dumps(value: Any) -> str:
    """Compact JSON text as the stores write it to TEXT columns (UTF-8 kept, no spaces)."""
    return _ENCODER.encode(value)


class WriteGate(Protocol):
    """The LLM write gate (reference §5). ``None`` result = not quarantined. ``realm`` is the realm of
    the batch being applied: taint and evidence are judged there."""

    def quarantine_reason(self, author: Author, batch_kind: str, evidence: list[Any], *, realm: str) -> str | None: ...


@dataclass(frozen=True, slots=True)
class InjectionRow:
    """One injection-ledger row: which record went into which identity's context, when and where."""

    record_id: str
    identity: str
    surface: Literal["build", "turn"]
    at_ms: int
    session_key: str | None = None


class KeepExpiry:
    """The type of :data:`KEEP_EXPIRY`: an update that leaves the prior version's expiry as it was."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "KEEP_EXPIRY"


#: :meth:`AgentMemoryStore.update`'s default ``expiry``: the new version keeps the prior's ``expires_at_ms``.
KEEP_EXPIRY = KeepExpiry()


@dataclass(frozen=True, slots=True)
class RememberItem:
    """One application write of a bulk remember: raw ``title``, ``body``, ``tags`` and ``metadata``
    (normalised and checked by the store, like :meth:`AgentMemoryStore.remember`)."""

    title: str
    body: str
    tags: tuple[str, ...] = ()
    metadata: Mapping[str, Any] | None = field(default=None, hash=False)
    #: When the record stops being active (epoch ms; ``None`` = never).
    expires_at_ms: int | None = None


@dataclass(frozen=True, slots=True)
class RememberOutcome:
    """What became of item ``op_index`` of a bulk remember: ``record`` and ``created`` (``False`` when an
    active record with the same content, stored earlier or earlier in the same call, was returned;
    ``merge`` then names what the item's new tags superseded, as :meth:`AgentMemoryStore.remember_merging`
    does), or ``error``, the refusal of that item alone (nothing of it was written)."""

    op_index: int
    record: MemoryRecord | None = None
    created: bool = False
    error: AgentMemoryError | None = None
    merge: TagMerge | None = None


_OP_PREFIX = re.compile(r"^op \d+: ")


def _item_error(exc: AgentMemoryError, index: int) -> AgentMemoryError:
    """``exc`` restated for item ``index`` of a bulk write (its ``op N:`` prefix and ``op_index``)."""
    detail = f"op {index}: " + _OP_PREFIX.sub("", exc.detail)
    return AgentMemoryError(exc.reason, detail, op_index=index, secret_class=exc.secret_class)


@dataclass(frozen=True, slots=True)
class TagMerge:
    """What a duplicate ``remember`` merged: the superseded record and the tags it added."""

    supersedes: str
    tags_added: tuple[str, ...]


@dataclass(slots=True)
class _Head:
    """The newest version of one content hash that an earlier item of a bulk remember writes: the op
    writing it (its position) and the fields a later tag merge copies."""

    op: int
    record: NewMemoryRecord


class _RememberPlan:
    """The ops of one bulk remember, built item by item as single remembers would write them.

    ``heads`` maps a content hash to its current version: an active stored record, or the
    :class:`_Head` of an op of this call. ``items[i]`` is ``(op position or stored record, created,
    tag merge)``; ``op_items[k]`` the item op ``k`` writes for.
    """

    def __init__(self, scope: Scope, author: Author) -> None:
        self.scope = scope
        self.author = author
        self.heads: dict[str, MemoryRecord | _Head] = {}
        self.ops: list[CreateOp | SupersedeOp] = []
        self.op_items: list[int] = []
        self.items: dict[int, tuple[int | MemoryRecord, bool, TagMerge | None]] = {}

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
            op = replace(op, id=new_memory_id(op.record.title, op.record.body))
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
        if not missing:
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


class ManifestTier(StrEnum):
    """``working_set`` (ranked ∪ recent, capped at 2k) or ``full`` (every active record)."""

    WORKING_SET = "working_set"
    FULL = "full"


class AgentMemoryStore(ABC):
    """The store contract every backend implements.

    Realms are names (``"default"``); scopes carry their realm too and must
    match. All times are epoch ms from the store's injected clock. Refusals
    raise :class:`~meta_memory.errors.AgentMemoryError`; backend failures
    raise ``AgentMemoryError("io", ...)``.

    A backend sets ``clock`` (the time source), ``gate`` (its default write
    gate, per-call ``gate`` overrides) and ``refuses_nul`` (whether its text
    cannot hold NUL: ids with one then name no record, and text with one is
    refused by name rather than by a driver error).
    """

    clock: Clock
    gate: WriteGate | None
    refuses_nul: ClassVar[bool] = False
    #: Whether the backend keeps installation-wide secrets (:meth:`installation_secret`): PostgreSQL does
    #: (one database is one installation, whichever gateway reaches it); SQLite leaves them to the state directory.
    keeps_installation_secrets: ClassVar[bool] = False

    def installation_secret(self, name: str, create: str | None = None) -> str | None:
        """The installation secret ``name`` (e.g. the export key, as text); when there is none, ``create``
        (if given) is stored and returned — the first writer wins when two create at once — else ``None``.
        Raises ``AgentMemoryError("unsupported")`` when the backend keeps none, ``("io")`` on a backend error."""
        raise AgentMemoryError("unsupported", f"{type(self).__name__} keeps no installation secrets")

    # ----------------------------------------------------------------- batches

    @abstractmethod
    def apply_batch(self, batch: StagedBatch, *, gate: WriteGate | None = None) -> BatchReceipt:
        """Validate and apply ``batch`` in one transaction; nothing is written on refusal."""

    @abstractmethod
    def stage(self, batch: StagedBatch) -> str:
        """Persist ``batch`` uncommitted (``stage`` table); returns its token. The records are unchanged."""

    @abstractmethod
    def commit_staged(self, realm: str, token: str, *, gate: WriteGate | None = None) -> BatchReceipt:
        """Validate and apply a staged batch and drop its stage row, in one transaction.

        Unknown token -> ``AgentMemoryError("invalid_record", "unknown stage token '<t>'")``.
        """

    @abstractmethod
    def discard_staged(self, realm: str, token: str) -> bool:
        """Drop a staged batch without applying it; ``False`` when the token is unknown."""

    # ----------------------------------------------------------------- transactions

    @abstractmethod
    def transaction(self, realm: str) -> AbstractContextManager[WriteTx]:
        """One write transaction on ``realm`` holding its write lock, as a context manager yielding a
        :class:`~meta_memory.agent_memory.store.tx.WriteTx`: reads, batch application, staging and
        side-table writes inside it commit together when the block ends; anything raised rolls back
        (backend errors become ``AgentMemoryError("io", ...)``). A write: creates the realm when it
        has none (under the backend's realm cap). Do not open a second transaction of the same realm
        inside the block (use the handle).
        """

    @abstractmethod
    def snapshot(self, realm: str) -> AbstractContextManager[ReadTx]:
        """One consistent read-only view of ``realm`` (a :class:`~meta_memory.agent_memory.store.tx.ReadTx`)
        that never takes or waits for the write lock; a realm without data reads as empty and is not
        created. Raises ``AgentMemoryError("io")`` on a backend error, ``AgentMemoryError("timeout")``
        when the calling recall's time budget ran out.
        """

    # ----------------------------------------------------------------- reads

    @abstractmethod
    def get(self, realm: str, memory_id: str) -> MemoryRecord | None:
        """The record with this id in ``realm`` (any status), or ``None``."""

    def history(self, realm: str, scope: Scope, memory_id: str) -> dict[str, Any]:
        """The versions of record ``memory_id`` of ``scope`` and why each changed, read in one snapshot
        (:func:`meta_memory.agent_memory.history.record_history` gives the shape). Raises
        ``RecordNotFound`` when ``scope`` holds no such record and never held one before an erase (a record
        of another scope or realm and an unknown id are refused alike)."""
        from meta_memory.agent_memory.history import record_history

        name = self._check_scope_realm(realm, scope)
        with self.snapshot(name) as tx:
            found = record_history(tx, scope, memory_id, self.clock.now_ms())
        if found is None:
            raise RecordNotFound(memory_id)
        return found

    @abstractmethod
    def active_records(self, realm: str, scope: Scope) -> list[MemoryRecord]:
        """Every active record of ``scope``, newest updated first."""

    @abstractmethod
    def recent(self, realm: str, scope: Scope, limit: int, where: FilterNode | None = None) -> list[MemoryRecord]:
        """The newest active records of ``scope``: ``updated_at_ms`` desc, ``created_at_ms`` desc, at most ``limit``
        (an index range scan, not a full read: the ``always`` selection of recall); with ``where``, only
        records whose metadata passes that filter (:mod:`meta_memory.agent_memory.filters`)."""

    @abstractmethod
    def neighbours(
        self, realm: str, scope: Scope, anchors: Sequence[MemoryRecord], span: int, window_ms: int
    ) -> dict[str, list[RecordView]]:
        """Write-order neighbours for context-aware recall: for each anchor id, the active records of
        ``scope`` written just before and after it — at most ``span`` on each side in write order
        (``created_at_ms``, then insertion order), each created within ``window_ms`` (ms) of the
        anchor — nearest in write order first (before-side first on ties)."""

    @abstractmethod
    def search(self, realm: str, scope: Scope, match_expression: str, limit: int,
               only: Collection[int] | None = None, where: FilterNode | None = None) -> list[tuple[RecordView, float]]:
        """Full-text candidates among the active records of ``scope``, as light :class:`RecordView` rows;
        with ``only`` (row ids from :meth:`matching_rids`) or ``where`` (a metadata filter), the best
        ``limit`` among those rows alone (a filtered recall's candidates: the top among the matching
        records, never the top then filtered).

        ``match_expression`` is an FTS5 MATCH string from
        :func:`meta_memory.recall.fts.match_expression`. Returns
        ``(record, bm25)`` best first; ``bm25`` is computed over the statistics of ``scope`` alone
        (:mod:`meta_memory.recall.bm25`; lower, i.e. more negative, is better), so no record of another
        scope changes a score or the order. Raises ``AgentMemoryError("io")`` for a malformed expression.
        """

    @abstractmethod
    def manifest(
        self, realm: str, scope: Scope, tier: ManifestTier | str = ManifestTier.WORKING_SET, k: int = DEFAULT_MANIFEST_K
    ) -> list[RecordMeta]:
        """Body-free rows of ``scope`` (reference §2B "Recall / manifest")."""

    def erase(
        self, realm: str, scope: Scope, memory_id: str | None = None, *, erased_by: str,
        reason: str | None = None, dry_run: bool = False, may_erase: Callable[[Scope], bool] | None = None,
        keep_out_content: bool = True,
    ) -> EraseReport:
        """Erase ``memory_id`` (or, when ``None``, every record of ``scope``) with its content closure, in one
        transaction (see :mod:`meta_memory.agent_memory.erase`). ``dry_run`` reports what would go and
        changes nothing. ``may_erase(scope)`` judges every scope the closure reaches. The erasure register
        keeps every erased id out of later writes, and with ``keep_out_content`` (the default) the erased
        content out of the scopes it was erased from; the closure then also takes every record of the same
        scope holding the same content, and the proposals holding it. The tombstone-retention sweep passes
        ``False``: only the closure it found out of use goes, and its content may be written again.

        Raises :class:`~meta_memory.errors.RecordNotFound` (unknown id, or one outside ``scope``),
        ``AgentMemoryError`` ``review_pending`` (a quarantined record or a pending gated promotion in the
        closure), ``scope_not_writable`` (``may_erase`` refused a scope) or ``unsupported``.
        """
        raise AgentMemoryError("unsupported", f"{type(self).__name__} cannot erase")

    def tombstoned_closures_before(self, realm: str, cutoff_ms: int, limit: int = 1000) -> list[str]:
        """Tombstoned records (before ``cutoff_ms``) whose whole content closure is out of use: what the
        tombstone-retention sweep erases."""
        return []

    def list_active(
        self, realm: str, scope: Scope, *, tags: Sequence[str] = (), limit: int = 100,
        before: tuple[int, int] | None = None, where: FilterNode | None = None,
    ) -> list[tuple[tuple[int, int], MemoryRecord]]:
        """Active records of ``scope`` holding every tag of ``tags`` (exact, normalised tags) and, with
        ``where``, whose metadata passes that filter, newest updated first: ``[(cursor, record)]``, at
        most ``limit``; pass the last cursor as ``before`` to continue. Backs ``meta/agent_memory/list``.
        Backends that cannot list raise ``AgentMemoryError("unsupported")``.
        """
        raise AgentMemoryError("unsupported", f"{type(self).__name__} cannot list records by tag")

    def passing(self, realm: str, scope: Scope, where: FilterNode, memory_ids: Collection[str]) -> set[str]:
        """The ids among ``memory_ids`` of active records of ``scope`` whose metadata passes ``where``
        (read by id, never a scan of the scope). Backends that cannot filter raise ``AgentMemoryError("unsupported")``."""
        raise AgentMemoryError("unsupported", f"{type(self).__name__} cannot filter records by metadata")

    def matching_rids(self, realm: str, scope: Scope, where: FilterNode) -> list[tuple[int, str]]:
        """``(row id, memory_id)`` of every active record of ``scope`` whose metadata passes ``where``
        (one read; the row ids are what :meth:`search` takes as ``only``). Backends that cannot filter
        raise ``AgentMemoryError("unsupported")``."""
        raise AgentMemoryError("unsupported", f"{type(self).__name__} cannot filter records by metadata")

    def records_page(
        self, realm: str, *, after: int = 0, limit: int = 1000, scope: Scope | None = None
    ) -> list[tuple[int, MemoryRecord]]:
        """Every record of ``realm`` (any status, ``scope`` optional), in insertion order, one page:
        ``[(cursor, record)]`` with cursor values above ``after``; pass the last cursor to continue.

        For export (``meta-memory export``). Backends that cannot page raise
        ``AgentMemoryError("unsupported")``.
        """
        raise AgentMemoryError("unsupported", f"{type(self).__name__} cannot list every record")

    @abstractmethod
    def list_realms(self) -> list[str]:
        """Every realm the backend holds, sorted."""

    # ----------------------------------------------------------------- writes (batch builders)

    def remember(
        self, realm: str, identity: str, title: str, body: str, tags: Iterable[str] = ()
    ) -> tuple[AgentMemoryRecord, bool]:
        """Application write into ``identity``'s scope: ``(record, created)``; see :meth:`remember_merging`."""
        rec, created, _merge = self.remember_merging(realm, identity, title, body, tags)
        return rec, created

    def remember_merging(
        self, realm: str, identity: str, title: str, body: str, tags: Iterable[str] = (), *,
        evidence: Sequence[EvidenceRef] = (), gate: WriteGate | None = None, expires_at_ms: int | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> tuple[AgentMemoryRecord, bool, TagMerge | None]:
        """Application write into ``identity``'s scope: ``(record, created, tag merge)`` (author
        ``application``, kind ``fact``, tier ``agent_observed``).

        Exact-content dedup: when an active record of that scope has the same
        content hash, nothing new is created (``created=False``). If the call
        brings tags that record lacks, the tags are merged in the same
        transaction: the record is superseded by a version carrying the union
        of both tag lists (normalised like every tag list: lowercased, sorted), that version is returned and the third item
        names the superseded id and the added tags; otherwise the record itself
        is returned, nothing is written and the third item is ``None``.
        Refusals: ``invalid_record`` naming the field rule (including a merged
        tag list over the 32-tag cap), ``secret_detected``.

        ``evidence`` (the sessions a host summary was derived from) is kept in the record's provenance;
        ``gate`` overrides the store's gate for this write (a
        :class:`~meta_memory.firewall.gate.DerivedWriteGate`: the record lands quarantined when a named
        session is tainted). Use :meth:`remember_record` to read the stored status.

        ``expires_at_ms`` (epoch ms, ``None`` = never) is the new record's expiry (issue 28 §1); a
        duplicate found instead keeps its own expiry, and so does the version a tag merge writes.
        ``metadata`` is the new record's JSON object (issue 28 §2; not part of the content hash: a duplicate
        keeps the stored record's metadata).
        """
        rec, created, merge = self.remember_record(realm, identity, title, body, tags, evidence=evidence, gate=gate,
                                                   expires_at_ms=expires_at_ms, metadata=metadata)
        return rec.project(), created, merge

    def remember_record(
        self, realm: str, identity: str, title: str, body: str, tags: Iterable[str] = (), *,
        evidence: Sequence[EvidenceRef] = (), gate: WriteGate | None = None, expires_at_ms: int | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> tuple[MemoryRecord, bool, TagMerge | None]:
        """:meth:`remember_merging` returning the stored :class:`MemoryRecord` (its ``status`` says
        whether the gate quarantined it). ``metadata``: the new record's JSON object (not part of the
        content hash: a duplicate keeps the stored record's metadata)."""
        name = self._realm_name(realm)
        record = replace(self._app_record(title, body, tags, evidence, metadata), expires_at_ms=expires_at_ms)
        return self._remember(name, Scope.identity(name, identity), record, Author.application(), gate,
                              merge_tags=True)

    def remember_many(
        self, realm: str, identity: str, items: Sequence[RememberItem], *,
        evidence: Sequence[EvidenceRef] = (), gate: WriteGate | None = None,
    ) -> list[RememberOutcome]:
        """Bulk application write into ``identity``'s scope: one :class:`RememberOutcome` per item, in order.

        Every item is what :meth:`remember_merging` would write, in order, as if the items were
        remembered one after the other (author ``application``, same field rules, secret scan,
        exact-content dedup with tag merge, the one validator), and all accepted items commit in
        **one** transaction with one audit row per op. An item whose content equals an active
        record's, or an earlier item's of the same call, returns that record with ``created=False``;
        when it brings tags that record lacks, the record is superseded by a version carrying both
        tag lists, as a single remember does (``merge`` names it). Refusals are **per item**: a
        refused item writes nothing and is reported with its ``op_index``; the others still commit.
        Over :data:`MAX_BATCH_OPS` items, or none, raises
        ``AgentMemoryError("invalid_record")`` and writes nothing; a backend failure raises
        ``AgentMemoryError("io")`` and writes nothing. ``evidence`` and ``gate`` apply to every item, as
        in :meth:`remember_record` (one gate verdict for the whole batch).
        """
        name = self._realm_name(realm)
        if not items:
            raise AgentMemoryError("invalid_record", "records must contain at least one record")
        if len(items) > MAX_BATCH_OPS:
            raise AgentMemoryError(
                "invalid_record", f"records holds {len(items)} records; the cap is {MAX_BATCH_OPS}"
            )
        scope = Scope.identity(name, identity)
        author = Author.application()
        prepared: list[NewMemoryRecord | AgentMemoryError] = []
        for i, item in enumerate(items):
            try:
                record = replace(self._app_record(item.title, item.body, item.tags, evidence, item.metadata),
                                 expires_at_ms=item.expires_at_ms)
                refuse_secrets(record, i)
                if self.refuses_nul and any("\x00" in t for t in (record.title, record.body, *record.tags)):
                    raise AgentMemoryError("invalid_record", "text must not contain NUL")
                prepared.append(record)
            except AgentMemoryError as exc:
                prepared.append(_item_error(exc, i))
        g = self._effective_gate(gate)

        def fn(conn: Any) -> list[RememberOutcome]:
            refused = {i: e for i, e in enumerate(prepared) if isinstance(e, AgentMemoryError)}
            while True:
                out, receipt = self._remember_attempt(conn, scope, author, g, prepared, refused)
                if receipt is not None and receipt[0] is not None:
                    refused[receipt[0]] = receipt[1]  # refused at validation: retry without that item
                    continue
                break
            if any(o.created for o in out):
                self._warn_floor(conn, scope)
            return out

        return self._write(name, fn)

    def _remember_attempt(
        self,
        conn: Any,
        scope: Scope,
        author: Author,
        gate: WriteGate | None,
        prepared: Sequence[NewMemoryRecord | AgentMemoryError],
        refused: dict[int, AgentMemoryError],
    ) -> tuple[list[RememberOutcome], tuple[int | None, AgentMemoryError] | None]:
        """One pass of :meth:`remember_many` inside its transaction. Returns the outcomes, or
        ``(item, error)`` when the validator refused one item (everything of this pass rolled back)."""
        plan = _RememberPlan(scope, author)
        hashes = {i: content_hash(r.title, r.body) for i, r in enumerate(prepared)
                  if isinstance(r, NewMemoryRecord) and i not in refused}
        plan.heads.update(self._find_active_duplicates(conn, scope, list(hashes.values())))
        for i, rec in enumerate(prepared):
            if i in refused or isinstance(rec, AgentMemoryError):
                continue
            try:
                plan.add(i, hashes[i], rec)
            except AgentMemoryError as exc:
                refused[i] = _item_error(exc, i)
        receipt = None
        if plan.ops:
            conn.execute("SAVEPOINT remember_many")
            try:
                receipt = self._apply_in_tx(
                    conn, StagedBatch(realm=scope.realm, author=author, ops=tuple(plan.ops)), gate, mint_token("direct")
                )
            except AgentMemoryError as exc:
                conn.execute("ROLLBACK TO SAVEPOINT remember_many")
                conn.execute("RELEASE SAVEPOINT remember_many")
                if exc.op_index is None or not 0 <= exc.op_index < len(plan.op_items):
                    raise
                item = plan.op_items[exc.op_index]
                return [], (item, _item_error(exc, item))
            conn.execute("RELEASE SAVEPOINT remember_many")
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

    def remember_authored(
        self, realm: str, scope: Scope, record: NewMemoryRecord, author: Author, *, gate: WriteGate | None = None
    ) -> tuple[MemoryRecord, bool]:
        """Write with a given author (recorder tool, distiller): same dedup as :meth:`remember`.

        The provenance author is set to ``author``. Returns the stored (possibly
        quarantined) record and whether it was created.
        """
        name = self._check_scope_realm(realm, scope)
        try:
            norm = normalize_record(record)
        except FieldError as exc:
            raise AgentMemoryError("invalid_record", f"op 0: invalid record: {exc.rule}", op_index=0) from None
        norm = replace(norm, provenance=replace(norm.provenance, author=author))
        rec, created, _merge = self._remember(name, scope, norm, author, gate)
        return rec, created

    def supersede(
        self,
        realm: str,
        scope: Scope,
        prior_id: str,
        record: NewMemoryRecord,
        author: Author,
        *,
        gate: WriteGate | None = None,
        expiry: int | None | KeepExpiry = KEEP_EXPIRY,
    ) -> MemoryRecord:
        """Write a new version of ``prior_id`` (which must be in ``scope``); returns the new record.

        ``expiry`` as :meth:`update`'s: by default the new version keeps the prior's ``expires_at_ms``
        (``record.expires_at_ms`` is not read).

        Refusals: ``record '<id>' does not exist`` (also for a record of another
        scope: the refusal does not reveal that the id exists elsewhere), then
        the validator's (an expired prior is not active).
        """
        name = self._check_scope_realm(realm, scope)

        def revise(prior: MemoryRecord) -> NewMemoryRecord:
            return replace(record, expires_at_ms=prior.expires_at_ms if isinstance(expiry, KeepExpiry) else expiry)

        return self._supersede(name, scope, prior_id, revise, author, gate)

    def _supersede(
        self,
        name: str,
        scope: Scope,
        prior_id: str,
        make_record: Callable[[MemoryRecord], NewMemoryRecord],
        author: Author,
        gate: WriteGate | None,
    ) -> MemoryRecord:
        """One transaction: read ``prior_id``, check its scope, build the new version from it, apply."""
        g = self._effective_gate(gate)

        def fn(conn: Any) -> MemoryRecord:
            prior = self._reader(conn, name).get_record(prior_id)
            if prior is None or prior.scope != scope:
                raise AgentMemoryError("invalid_record", f"record '{prior_id}' does not exist")
            record = make_record(prior)
            record = replace(record, provenance=replace(record.provenance, author=author))
            batch = StagedBatch(realm=name, author=author, ops=(SupersedeOp(prior=prior_id, record=record),))
            receipt = self._apply_in_tx(conn, batch, g, mint_token("direct"))
            return receipt.records[receipt.results[0].memory_id]

        if not self._has_realm(name):
            raise AgentMemoryError("invalid_record", f"record '{prior_id}' does not exist")
        return self._write(name, fn)

    def update(
        self,
        realm: str,
        identity: str,
        memory_id: str,
        title: str | None = None,
        body: str | None = None,
        tags: Iterable[str] | None = None,
        *,
        expiry: int | None | KeepExpiry = KEEP_EXPIRY,
        metadata: Mapping[str, Any] | None = None,
    ) -> tuple[AgentMemoryRecord, str]:
        """Application update of an identity record (author ``application``): ``(new record, superseded id)``.

        ``title``, ``body``, ``tags`` and ``metadata`` that are ``None`` keep the prior's value (read inside
        the write transaction, so a concurrent update cannot be half-merged); a ``metadata`` given replaces
        the prior's object whole (``{}`` clears it; keys are not merged); the prior's kind and
        description are always kept. ``expiry``: :data:`KEEP_EXPIRY` (the default) keeps the prior's
        ``expires_at_ms``, an int (epoch ms) sets the new version's, ``None`` clears it (never
        expires). A prior past its expiry is not active and is refused like a tombstoned one.
        Raises ``memory_id must not be empty`` for a blank id, ``update needs at least one of
        title, body, tags, metadata`` when all four are ``None`` and the expiry is kept, then as
        :meth:`remember` and :meth:`supersede`.
        """
        name = self._realm_name(realm)
        memory_id = memory_id.strip()
        if not memory_id:
            raise AgentMemoryError("invalid_record", "memory_id must not be empty")
        if title is None and body is None and tags is None and metadata is None and isinstance(expiry, KeepExpiry):
            raise AgentMemoryError("invalid_record", "update needs at least one of title, body, tags, metadata")
        new_tags = None if tags is None else list(tags)

        def revise(prior: MemoryRecord) -> NewMemoryRecord:
            base = self._app_record(
                prior.title if title is None else title,
                prior.body if body is None else body,
                prior.tags if new_tags is None else new_tags,
                metadata=prior.metadata if metadata is None else metadata,
            )
            expires = prior.expires_at_ms if isinstance(expiry, KeepExpiry) else expiry
            return replace(base, kind=prior.kind, description=prior.description, expires_at_ms=expires)

        scope = Scope.identity(name, identity)
        new = self._supersede(name, scope, memory_id, revise, Author.application(), None)
        return new.project(), memory_id

    def forget(self, realm: str, scope: Scope, memory_id: str, author: Author) -> bool:
        """Tombstone ``memory_id`` if it exists in ``scope`` and is not already tombstoned; else ``False``.

        Raises ``memory_id must not be empty`` for a blank id.
        """
        name = self._check_scope_realm(realm, scope)
        memory_id = memory_id.strip()
        if not memory_id:
            raise AgentMemoryError("invalid_record", "memory_id must not be empty")
        if self.refuses_nul and "\x00" in memory_id:
            return False

        def fn(conn: Any) -> bool:
            rec = self._reader(conn, name).get_record(memory_id)
            if rec is None or rec.scope != scope or rec.status.kind is StatusKind.TOMBSTONED:
                return False
            batch = StagedBatch(realm=name, author=author, ops=(TombstoneOp(id=memory_id),))
            self._apply_in_tx(conn, batch, None, mint_token("direct"))
            return True

        if not self._has_realm(name):
            return False
        return self._write(name, fn)

    def propose(
        self, realm: str, scope: Scope, record: NewMemoryRecord, author: Author, taint: str | None = None
    ) -> str:
        """Queue a proposal for a shared (mob/operator) scope; returns ``prop-...``. Secrets are refused, and
        so is content erased from that scope or from the proposing agent's own (``erased``).

        ``taint`` is the gate's reason at propose time (``None`` = clean).
        """
        name = self._check_scope_realm(realm, scope)
        try:
            norm = normalize_record(record)
            validate_record_fields(norm.title, norm.description, norm.body)
        except FieldError as exc:
            raise AgentMemoryError("invalid_record", f"op 0: invalid record: {exc.rule}", op_index=0) from None
        norm = replace(norm, provenance=replace(norm.provenance, author=author))
        refuse_secrets(norm)
        record_json, author_json = dumps(norm.to_json()), dumps(author.to_json())
        if self.refuses_nul and ("\x00" in record_json or "\x00" in author_json or (taint and "\x00" in taint)):
            raise AgentMemoryError("invalid_record", "op 0: invalid record: text must not contain NUL", op_index=0)
        proposal_id = mint_token("prop")
        kind, key = scope.storage()
        check = ErasureCheck(0, erasure_scopes(scope, author), content_hash(norm.title, norm.body))

        def fn(conn: Any) -> None:
            refuse_erased(self._reader(conn, name), [check])
            self._insert_rows(
                conn,
                name,
                "proposals",
                "proposal_id, scope_kind, scope_key, record, author, status, created_at_ms, taint",
                [(proposal_id, kind, key, record_json, author_json, "pending", self.clock.now_ms(), taint)],
            )

        self._write(name, fn)
        return proposal_id

    def _remember(
        self, realm: str, scope: Scope, record: NewMemoryRecord, author: Author, gate: WriteGate | None,
        *, merge_tags: bool = False,
    ) -> tuple[MemoryRecord, bool, TagMerge | None]:
        g = self._effective_gate(gate)
        chash = content_hash(record.title, record.body)

        def fn(conn: Any) -> tuple[MemoryRecord, bool, TagMerge | None]:
            refuse_secrets(record)
            existing = self._find_active_duplicate(conn, scope, chash)
            if existing is not None:
                missing = [t for t in record.tags if t not in existing.tags]
                if not (merge_tags and missing):
                    return existing, False, None
                merged = self._merge_tags_in_tx(conn, realm, existing, missing, author, g)
                return merged, False, TagMerge(supersedes=existing.id, tags_added=tuple(missing))
            batch = StagedBatch(realm=realm, author=author, ops=(CreateOp(scope=scope, record=record),))
            receipt = self._apply_in_tx(conn, batch, g, mint_token("direct"))
            self._warn_floor(conn, scope)
            return receipt.records[receipt.results[0].memory_id], True, None

        return self._write(realm, fn)

    def _merge_tags_in_tx(
        self, conn: Any, realm: str, existing: MemoryRecord, missing: list[str], author: Author, gate: WriteGate | None
    ) -> MemoryRecord:
        """Supersede ``existing`` by a version whose tags are its own and ``missing`` (one transaction: the caller's)."""
        try:
            tags = normalize_tags([*existing.tags, *missing])
        except FieldError as exc:
            raise AgentMemoryError("invalid_record", f"merged tags: {exc.rule}") from None
        merged = NewMemoryRecord(
            title=existing.title, body=existing.body, kind=existing.kind, description=existing.description,
            tags=tags, provenance=Provenance(author), expires_at_ms=existing.expires_at_ms,
            metadata=existing.metadata,
        )
        batch = StagedBatch(realm=realm, author=author, ops=(SupersedeOp(prior=existing.id, record=merged),))
        receipt = self._apply_in_tx(conn, batch, gate, mint_token("direct"))
        return receipt.records[receipt.results[0].memory_id]

    #: The retention-floor check runs on the first write of a scope in this process and then every this
    #: many writes, never on every write (it only ever logs). It reads at most the floor's record count
    #: plus one row, and once a scope is found above the floor it is not checked again in this process,
    #: so its cost never grows with the scope.
    FLOOR_CHECK_EVERY = 256

    def _warn_floor(self, conn: Any, scope: Scope) -> None:
        counters = self.__dict__.setdefault("_floor_writes", {})
        seen = counters.get(scope, 0)
        if seen < 0:
            return  # already reported above the floor
        counters[scope] = seen + 1
        if seen % self.FLOOR_CHECK_EVERY:
            return
        count, nbytes = self._scope_footprint(conn, scope, DEFAULT_SCOPE_FLOOR_RECORDS + 1)
        if count > DEFAULT_SCOPE_FLOOR_RECORDS or nbytes > DEFAULT_SCOPE_FLOOR_BYTES:
            counters[scope] = -1
            self._log.warning(
                "agent memory %s holds %s records / %s bytes, above the retention floor (%d records / %d bytes); "
                "records are never evicted",
                scope.describe(),
                f"more than {DEFAULT_SCOPE_FLOOR_RECORDS}" if count > DEFAULT_SCOPE_FLOOR_RECORDS else count,
                f"at least {nbytes}" if count > DEFAULT_SCOPE_FLOOR_RECORDS else nbytes,
                DEFAULT_SCOPE_FLOOR_RECORDS,
                DEFAULT_SCOPE_FLOOR_BYTES,
            )

    @staticmethod
    def _app_record(title: str, body: str, tags: Iterable[str], evidence: Sequence[EvidenceRef] = (),
                    metadata: Mapping[str, Any] | None = None) -> NewMemoryRecord:
        """An application write's record: title whitespace compacted, body trimmed, fields checked, tags normalised,
        metadata checked; ``evidence`` (sessions it was derived from) in its provenance."""
        title = compact_whitespace(title)
        body = body.strip()
        try:
            validate_record_fields(title, "", body)
            norm_tags = normalize_tags(tags)
            norm_metadata = normalize_metadata(metadata)
        except FieldError as exc:
            raise AgentMemoryError("invalid_record", exc.rule) from None
        provenance = Provenance(Author.application(), evidence=tuple(evidence)) if evidence else _APPLICATION_PROVENANCE
        return NewMemoryRecord(title=title, body=body, tags=norm_tags, provenance=provenance, metadata=norm_metadata)

    def _check_scope_realm(self, realm: str, scope: Scope) -> str:
        name = self._realm_name(realm)
        if scope.realm != name:
            raise AgentMemoryError(
                "scope_not_writable", f"scope realm '{scope.realm}' does not match batch realm '{name}'"
            )
        return name

    def _effective_gate(self, gate: WriteGate | None) -> WriteGate | None:
        return gate if gate is not None else self.gate

    @property
    def _log(self) -> logging.Logger:
        """The backend module's logger."""
        return logging.getLogger(type(self).__module__)

    # ----------------------------------------------------------------- backend primitives (writes)

    @abstractmethod
    def _realm_name(self, realm: str) -> str:
        """The validated realm name; refusals raise ``AgentMemoryError("invalid_record", ...)``."""

    def _has_realm(self, name: str) -> bool:
        """Whether realm ``name`` may hold records (a backend without a database for it says no, so an
        update or forget of a record there is answered without creating the realm)."""
        return True

    @abstractmethod
    def _write(self, realm: str, fn: Callable[[Any], _T]) -> _T:
        """Run ``fn(conn)`` in one write transaction on ``realm`` holding the realm's write lock; anything
        raised rolls back, backend errors become ``AgentMemoryError("io", ...)``."""

    @abstractmethod
    def _reader(self, conn: Any, realm: str) -> RecordReader:
        """The validator's reader over ``conn`` (an open write transaction of ``realm``)."""

    @abstractmethod
    def _apply_in_tx(self, conn: Any, batch: StagedBatch, gate: WriteGate | None, token: str) -> BatchReceipt:
        """Validate and apply ``batch`` inside the open write transaction ``conn``; audit token ``token``."""

    @abstractmethod
    def _find_active_duplicate(self, conn: Any, scope: Scope, chash: str) -> MemoryRecord | None:
        """The oldest active record of ``scope`` with content hash ``chash``, or ``None``."""

    @abstractmethod
    def _find_active_duplicates(self, conn: Any, scope: Scope, hashes: Sequence[str]) -> dict[str, MemoryRecord]:
        """For each hash of ``hashes`` an active record of ``scope`` holds, the oldest such record."""

    @abstractmethod
    def _scope_footprint(self, conn: Any, scope: Scope, limit: int) -> tuple[int, int]:
        """``(records, UTF-8 bytes of title + description + body)`` over at most ``limit`` non-tombstoned
        records of ``scope`` (a bounded read: the count stops at ``limit``)."""

    @abstractmethod
    def _insert_rows(self, conn: Any, realm: str, table: str, columns: str, rows: Sequence[tuple[Any, ...]]) -> None:
        """Insert ``rows`` (values of ``columns``, a comma-separated list) into ``realm``'s ``table``."""

    # ----------------------------------------------------------------- telemetry

    @abstractmethod
    def mark_usage(self, realm: str, ids: Sequence[str], event: UsageEvent | str) -> None:
        """Count a usage event on each record id (unknown ids ignored). Best effort: a mark that cannot be
        written (a full disk) is dropped and counted (:mod:`.telemetry`), never raised to the read."""

    @abstractmethod
    def log_injections(self, realm: str, rows: Sequence[InjectionRow]) -> None:
        """Append injection-ledger rows (no audit, no validation). Best effort, as :meth:`mark_usage`."""

    def telemetry_stats(self) -> dict[str, int]:
        """``{dropped}``: usage marks and injection-ledger writes dropped since the store opened."""
        return {"dropped": 0}

    def recall_reads(self) -> AbstractContextManager[None]:
        """A block whose reads are a recall's (candidates, neighbours, the runtime's re-check): a store
        that queues usage marks (SQLite, :class:`~.telemetry.PendingTelemetry`) does not write them
        before these reads, as it does before any other read, so a recall never writes. The default
        does nothing."""
        return nullcontext()

    # ----------------------------------------------------------------- readiness

    def readiness_problems(self) -> dict[str, str]:
        """What keeps this store from serving, for ``GET /v1/ready``: ``{component: problem}``, empty
        when ready. Components: ``realm:<name>`` (a realm database that cannot be read), ``postgres``
        (the server does not answer), ``worker:<name>`` (a background thread that died). Cheap: no
        check here may read a whole database."""
        return {}

    @abstractmethod
    def close(self) -> None:
        """Release connections. The store must not be used afterwards."""
