"""The agent-memory store interface: one contract, two backends (SQLite and PostgreSQL).

The interface is the store's primitives: a write transaction
(:meth:`AgentMemoryStore.transaction`, a :class:`~meta_memory.agent_memory.store.tx.WriteTx` that nests
through savepoints), a snapshot, the record reads (``get``, ``search``, ``neighbours``, ``recent``),
telemetry, ``list_realms`` and ``close``. Every record write is a
:class:`~meta_memory.agent_memory.batch.StagedBatch` checked by the one validator
(:func:`~meta_memory.agent_memory.validator.plan_batch`) and applied through a ``WriteTx`` with one audit
row per op; the planning of every write (dedup, tag merge, supersede, update, forget, propose, import)
lives in :mod:`meta_memory.agent_memory.writes`. The convenience writers here (``remember``,
``supersede``, ``forget``...) are batches of one: check what needs no transaction, open one, plan, apply.
What the SQL backends share lives in :mod:`.common`, their differing SQL spellings in :mod:`.dialect`.

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
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

from meta_memory.agent_memory import writes
from meta_memory.agent_memory.batch import BatchReceipt, StagedBatch
from meta_memory.agent_memory.erase import EraseReport
from meta_memory.agent_memory.filters import FilterNode
from meta_memory.agent_memory.model import (
    AgentMemoryRecord,
    Author,
    EvidenceRef,
    MemoryRecord,
    NewMemoryRecord,
    RecordMeta,
    RecordView,
    Scope,
    UsageEvent,
)
from meta_memory.agent_memory.writes import KEEP_EXPIRY, KeepExpiry, RememberItem, RememberOutcome, TagMerge
from meta_memory.clock import Clock
from meta_memory.errors import AgentMemoryError, RecordNotFound
from meta_memory.limits import MAX_MANIFEST_K
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
#: :meth:`AgentMemoryStore.recent`'s limit read as "every record" (the largest 64-bit integer both backends bind).
_NO_LIMIT = 2**63 - 1

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


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

    def active_records(self, realm: str, scope: Scope) -> list[MemoryRecord]:
        """Every active record of ``scope``, newest updated first (:meth:`recent` without a limit)."""
        return self.recent(realm, scope, _NO_LIMIT)

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

    def manifest(
        self, realm: str, scope: Scope, tier: ManifestTier | str = ManifestTier.WORKING_SET, k: int = DEFAULT_MANIFEST_K
    ) -> list[RecordMeta]:
        """Body-free rows of ``scope`` (reference §2B "Recall / manifest"). Backends that cannot rank raise
        ``AgentMemoryError("unsupported")``."""
        raise AgentMemoryError("unsupported", f"{type(self).__name__} cannot build a manifest")

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

    # ----------------------------------------------------------------- writes (batches of one, planned by writes.py)
    #
    # Each writer opens one transaction, plans with meta_memory.agent_memory.writes and applies through
    # the handle; what it refuses before opening it (field rules, a blank id) never creates a realm.

    def apply_batch(self, batch: StagedBatch, *, gate: WriteGate | None = None) -> BatchReceipt:
        """Validate and apply ``batch`` in one transaction (audit token ``direct-...``); nothing is written
        on refusal. ``gate`` overrides the store's default gate."""
        g = self._effective_gate(gate)
        with self.transaction(batch.realm) as tx:
            return tx.apply(batch, gate=g)

    def stage(self, batch: StagedBatch) -> str:
        """Persist ``batch`` uncommitted (``stage`` table), validated without a gate; returns its token.
        The records are unchanged."""
        with self.transaction(batch.realm) as tx:
            return tx.stage(batch)

    def commit_staged(self, realm: str, token: str, *, gate: WriteGate | None = None) -> BatchReceipt:
        """Validate and apply a staged batch (audit token ``token``) and drop its stage row, in one transaction.

        Unknown token -> ``AgentMemoryError("invalid_record", "unknown stage token '<t>'")``.
        """
        g = self._effective_gate(gate)
        name = self._realm_name(realm)
        if not self._has_realm(name):
            raise AgentMemoryError("invalid_record", f"unknown stage token '{token}'")
        with self.transaction(name) as tx:
            batch = tx.staged(token)
            if batch is None:
                raise AgentMemoryError("invalid_record", f"unknown stage token '{token}'")
            receipt = tx.apply(batch, gate=g, token=token)
            tx.unstage(token)
            return receipt

    def discard_staged(self, realm: str, token: str) -> bool:
        """Drop a staged batch without applying it; ``False`` when the token is unknown."""
        name = self._realm_name(realm)
        if not self._has_realm(name):
            return False
        with self.transaction(name) as tx:
            return tx.unstage(token)

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
        record = writes.app_record(title, body, tags, evidence, metadata, expires_at_ms)
        g = self._effective_gate(gate)
        with self.transaction(name) as tx:
            return writes.remember(tx, Scope.identity(name, identity), record, Author.application(), g)

    def remember_many(
        self, realm: str, identity: str, items: Sequence[RememberItem], *,
        evidence: Sequence[EvidenceRef] = (), gate: WriteGate | None = None,
    ) -> list[RememberOutcome]:
        """Bulk application write into ``identity``'s scope: one :class:`RememberOutcome` per item, in order.

        Every item is what :meth:`remember_merging` would write, in order, as if the items were
        remembered one after the other (author ``application``, same field rules, secret scan,
        exact-content dedup with tag merge, the one validator and the one planner,
        :class:`~meta_memory.agent_memory.writes.RememberPlan`), and all accepted items commit in
        **one** transaction with one audit row per op. An item whose content equals an active
        record's, or an earlier item's of the same call, returns that record with ``created=False``;
        when it brings tags that record lacks, the record is superseded by a version carrying both
        tag lists, as a single remember does (``merge`` names it). Refusals are **per item**: a
        refused item writes nothing and is reported with its ``op_index``; the others still commit.
        No items, or more than :data:`MAX_BATCH_OPS` ops planned for them (the validator's batch cap),
        raises ``AgentMemoryError("invalid_record")`` and writes nothing; a backend failure raises
        ``AgentMemoryError("io")`` and writes nothing. ``evidence`` and ``gate`` apply to every item, as
        in :meth:`remember_record` (one gate verdict for the whole batch).
        """
        name = self._realm_name(realm)
        prepared = writes.prepare_items(items, evidence, refuses_nul=self.refuses_nul)
        g = self._effective_gate(gate)
        with self.transaction(name) as tx:
            return writes.remember_many(tx, Scope.identity(name, identity), prepared, Author.application(), g)

    def remember_authored(
        self, realm: str, scope: Scope, record: NewMemoryRecord, author: Author, *, gate: WriteGate | None = None
    ) -> tuple[MemoryRecord, bool]:
        """Write with a given author (recorder tool, distiller): same dedup as :meth:`remember`, without
        the tag merge (a duplicate is returned as it is).

        The provenance author is set to ``author``. Returns the stored (possibly
        quarantined) record and whether it was created.
        """
        name = self._check_scope_realm(realm, scope)
        norm = writes.authored_record(record, author)
        g = self._effective_gate(gate)
        with self.transaction(name) as tx:
            rec, created, _merge = writes.remember(tx, scope, norm, author, g, merge_tags=False)
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
        return self._supersede(name, scope, prior_id, writes.keeping_expiry(record, expiry), author, gate)

    def _supersede(
        self,
        name: str,
        scope: Scope,
        prior_id: str,
        make_record: Callable[[MemoryRecord], NewMemoryRecord],
        author: Author,
        gate: WriteGate | None,
    ) -> MemoryRecord:
        if not self._has_realm(name):
            raise AgentMemoryError("invalid_record", f"record '{prior_id}' does not exist")
        g = self._effective_gate(gate)
        with self.transaction(name) as tx:
            return writes.supersede(tx, scope, prior_id, make_record, author, g)

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
        memory_id = writes.check_update(memory_id, title, body, tags, metadata, expiry)
        revise = writes.revision(title, body, tags, metadata, expiry)
        new = self._supersede(name, Scope.identity(name, identity), memory_id, revise, Author.application(), None)
        return new.project(), memory_id

    def forget(self, realm: str, scope: Scope, memory_id: str, author: Author) -> bool:
        """Tombstone ``memory_id`` if it exists in ``scope`` and is not already tombstoned; else ``False``.

        Raises ``memory_id must not be empty`` for a blank id.
        """
        name = self._check_scope_realm(realm, scope)
        memory_id = memory_id.strip()
        if not memory_id:
            raise AgentMemoryError("invalid_record", "memory_id must not be empty")
        if (self.refuses_nul and "\x00" in memory_id) or not self._has_realm(name):
            return False
        with self.transaction(name) as tx:
            return writes.forget(tx, scope, memory_id, author)

    def propose(
        self, realm: str, scope: Scope, record: NewMemoryRecord, author: Author, taint: str | None = None
    ) -> str:
        """Queue a proposal for a shared (mob/operator) scope; returns ``prop-...``. Secrets are refused, and
        so is content erased from that scope or from the proposing agent's own (``erased``).

        ``taint`` is the gate's reason at propose time (``None`` = clean).
        """
        name = self._check_scope_realm(realm, scope)
        prepared = writes.proposal(scope, record, author, taint, refuses_nul=self.refuses_nul)
        with self.transaction(name) as tx:
            return writes.propose(tx, prepared)

    #: The retention-floor check runs on the first write of a scope in this process and then every this
    #: many writes, never on every write (it only ever logs). It reads at most the floor's record count
    #: plus one row, and once a scope is found above the floor it is not checked again in this process,
    #: so its cost never grows with the scope.
    FLOOR_CHECK_EVERY = 256

    def _warn_floor(self, tx: WriteTx, scope: Scope) -> None:
        """See :meth:`~meta_memory.agent_memory.store.tx.WriteTx.check_floor`."""
        counters = self.__dict__.setdefault("_floor_writes", {})
        seen = counters.get(scope, 0)
        if seen < 0:
            return  # already reported above the floor
        counters[scope] = seen + 1
        if seen % self.FLOOR_CHECK_EVERY:
            return
        count, nbytes = tx.scope_footprint(scope, DEFAULT_SCOPE_FLOOR_RECORDS + 1)
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

    # ----------------------------------------------------------------- realm names

    @abstractmethod
    def _realm_name(self, realm: str) -> str:
        """The validated realm name; refusals raise ``AgentMemoryError("invalid_record", ...)``."""

    def _has_realm(self, name: str) -> bool:
        """Whether realm ``name`` may hold records (a backend without a database for it says no, so an
        update or forget of a record there is answered without creating the realm)."""
        return True

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
        that queues usage marks (SQLite and PostgreSQL, :class:`~.telemetry.PendingTelemetry`) does not
        write them before these reads, as it does before any other read, so a recall never writes. The
        default does nothing."""
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
