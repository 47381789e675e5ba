"""The store's transaction handles: :class:`WriteTx` (one write transaction) and :class:`ReadTx` (one snapshot).

They are what :meth:`~meta_memory.agent_memory.store.base.AgentMemoryStore.transaction` and
:meth:`~meta_memory.agent_memory.store.base.AgentMemoryStore.snapshot` yield (reference §2B
tables and write paths). Callers never see a connection or SQL: a handle offers the live
records (:meth:`ReadTx.get`, :meth:`ReadTx.active_duplicate`), the side-table repositories
of :mod:`.tables` and the panel's read models (:attr:`ReadTx.panel`); a write handle adds
:meth:`WriteTx.apply` and :meth:`WriteTx.stage`, both inside the one open transaction, so
a review step can read, check, stage or apply and update side tables atomically without
taking the realm's write lock twice, and :meth:`WriteTx.savepoint`, a nested transaction that
rolls back only its own part. Every record write is planned by
:mod:`meta_memory.agent_memory.writes` and applied through a write handle.

A snapshot never takes the write lock (SQLite: a deferred read transaction on a pooled WAL
reader; PostgreSQL: ``REPEATABLE READ READ ONLY`` without the advisory lock), so listings
run while a write transaction is open.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Collection, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from meta_memory.agent_memory.batch import BatchReceipt, GateVerdict, StagedBatch
from meta_memory.agent_memory.erase import ErasedText, Erasure
from meta_memory.agent_memory.hashing import mint_token
from meta_memory.agent_memory.model import MemoryRecord, Scope
from meta_memory.agent_memory.store.base import WriteGate, dumps
from meta_memory.agent_memory.store.panel_reads import PanelReads
from meta_memory.agent_memory.store.tables import (
    AuditLog,
    AuditReads,
    DreamRunReads,
    DreamRuns,
    HarvestReads,
    Harvests,
    HeldForgetReads,
    HeldForgets,
    PromotionReads,
    Promotions,
    ProposalReads,
    Proposals,
    ReviewQueues,
    Sql,
    VerdictReads,
    Verdicts,
)
from meta_memory.agent_memory.validator import RecordReader, plan_batch
from meta_memory.errors import AgentMemoryError

if TYPE_CHECKING:
    from meta_memory.agent_memory.store.common import SqlAgentMemoryStore

__all__ = ["ReadTx", "WriteTx"]


class ReadTx:
    """One consistent read of one realm (a snapshot, or the reads of an open write transaction).

    ``realm`` is the realm name. Repositories (reads only): ``promotions``, ``proposals``,
    ``harvests``, ``dream_runs``, ``verdicts``, ``forgets`` (held forgets), ``audit``, ``queues``
    (review's record queues) and ``panel`` (the console panel's read models). Use it only inside
    its ``with`` block.
    """

    def __init__(self, store: SqlAgentMemoryStore[Any], sql: Sql, realm: str) -> None:
        self._store = store
        self._sql = sql
        self.realm = realm
        self._reader: RecordReader | None = None

    @property
    def reader(self) -> RecordReader:
        """The validator's record reader over this transaction."""
        if self._reader is None:
            self._reader = self._store._reader(self._sql.conn, self.realm)
        return self._reader

    def get(self, memory_id: str) -> MemoryRecord | None:
        """The record ``memory_id`` (any status), or ``None``."""
        return self.reader.get_record(memory_id)

    def get_many(self, ids: Collection[str]) -> dict[str, MemoryRecord]:
        """The records of ``ids`` that exist (any status), by id; missing ids are absent."""
        return self._store._reader(self._sql.conn, self.realm).get_records(ids)

    def erased(self, ids: Collection[str], content_hashes: Collection[str]) -> list[Erasure]:
        """The erasure-register rows naming any of ``ids`` or holding any of ``content_hashes`` (as content
        or folded hash)."""
        return self.reader.erased(ids, content_hashes)

    def erased_texts(self, hashes: Collection[str]) -> list[ErasedText]:
        """The field-level erasure-register rows holding any of ``hashes``
        (:func:`~meta_memory.agent_memory.erase.field_hashes` of a write's text fields)."""
        return self.reader.erased_texts(hashes)

    def active_duplicate(self, scope: Scope, content_hash: str) -> MemoryRecord | None:
        """The oldest active record of ``scope`` whose content hash is ``content_hash``, or ``None``."""
        return self._store._find_active_duplicate(self._sql.conn, scope, content_hash)

    def active_duplicates(self, scope: Scope, content_hashes: Sequence[str]) -> dict[str, MemoryRecord]:
        """For each of ``content_hashes`` an active record of ``scope`` holds, the oldest such record (by
        hash): the exact-content dedup of a write (one seek for one hash, a few ``IN`` lists for many)."""
        if len(content_hashes) == 1:
            found = self.active_duplicate(scope, content_hashes[0])
            return {} if found is None else {content_hashes[0]: found}
        return self._store._find_active_duplicates(self._sql.conn, scope, content_hashes)

    def quarantined_duplicates(self, scope: Scope, content_hashes: Sequence[str]) -> dict[str, MemoryRecord]:
        """For each of ``content_hashes`` a quarantined record of ``scope`` holds, the oldest such record (by
        hash): the dedup of a write that would itself land quarantined
        (:func:`~meta_memory.agent_memory.writes.plan_remember`)."""
        return self._store._find_quarantined_duplicates(self._sql.conn, scope, content_hashes)

    @property
    def promotions(self) -> PromotionReads:
        return PromotionReads(self._sql, self.realm)

    @property
    def proposals(self) -> ProposalReads:
        return ProposalReads(self._sql, self.realm)

    @property
    def harvests(self) -> HarvestReads:
        return HarvestReads(self._sql, self.realm)

    @property
    def dream_runs(self) -> DreamRunReads:
        return DreamRunReads(self._sql, self.realm)

    @property
    def verdicts(self) -> VerdictReads:
        return VerdictReads(self._sql, self.realm)

    @property
    def forgets(self) -> HeldForgetReads:
        return HeldForgetReads(self._sql, self.realm)

    @property
    def audit(self) -> AuditReads:
        return AuditReads(self._sql, self.realm)

    @property
    def queues(self) -> ReviewQueues:
        return ReviewQueues(self._sql, self.realm)

    @property
    def panel(self) -> PanelReads:
        return PanelReads(self._sql, self.realm, self._store.clock.now_ms())


class WriteTx(ReadTx):
    """One open write transaction on one realm, holding the realm's write lock.

    ``now_ms`` is the transaction's clock reading (epoch ms). Everything done through it commits
    together when the ``with`` block ends, or rolls back when it raises. The repositories are the
    read-write ones of :mod:`.tables`.
    """

    def __init__(self, store: SqlAgentMemoryStore[Any], sql: Sql, realm: str) -> None:
        super().__init__(store, sql, realm)
        self.now_ms = store.clock.now_ms()
        self._savepoints = 0

    @contextlib.contextmanager
    def savepoint(self) -> Iterator[None]:
        """A nested transaction inside this one (a SQL ``SAVEPOINT``; nests to any depth): when the block
        raises, only what was done inside it rolls back and the exception propagates; otherwise its
        work stays part of the enclosing transaction, committed with it."""
        name = f"tx_savepoint_{self._savepoints}"
        self._savepoints += 1
        try:
            self._sql.run(f"SAVEPOINT {name}")
            try:
                yield
            except BaseException:
                # a driver error may already have ended the transaction: the enclosing block rolls it back
                with contextlib.suppress(Exception):
                    self._sql.run(f"ROLLBACK TO SAVEPOINT {name}")
                    self._sql.run(f"RELEASE SAVEPOINT {name}")
                raise
            self._sql.run(f"RELEASE SAVEPOINT {name}")
        finally:
            self._savepoints -= 1

    @property
    def refuses_nul(self) -> bool:
        """Whether the backend's text cannot hold NUL (text holding one is refused by name)."""
        return self._sql.dialect.refuses_nul

    def check_floor(self, scope: Scope) -> None:
        """After a write that created records in ``scope``: log when the scope is above the retention
        floor (reference §2B; a bounded read, run now and then, never an eviction)."""
        self._store._warn_floor(self, scope)

    def scope_footprint(self, scope: Scope, limit: int) -> tuple[int, int]:
        """``(records, UTF-8 bytes of title + description + body)`` over at most ``limit`` non-tombstoned
        records of ``scope`` (the count stops at ``limit``)."""
        return self._store._scope_footprint(self._sql.conn, scope, limit)

    def refuse_past_record_limit(self, identity: str, added: int = 1) -> None:
        """After a write in this transaction that added ``added`` rows counted against ``identity``'s scope
        (an open proposal it made): ``AgentMemoryError`` reason ``limit``, naming
        ``agent_memory.identity_record_limit``, when the scope now holds more than the limit allows."""
        self._store._refuse_past_record_limit(self._sql.conn, self.realm, identity, added, "proposal")

    def _check_realm(self, batch: StagedBatch) -> None:
        if batch.realm != self.realm:
            raise AgentMemoryError(
                "scope_not_writable", f"batch realm '{batch.realm}' does not match transaction realm '{self.realm}'"
            )

    def expired(self, limit: int) -> list[MemoryRecord]:
        """Up to ``limit`` active records of the realm whose expiry is at or before :attr:`now_ms`, the
        earliest expiry first (an index range of due rows only: ``records_expiry_idx``)."""
        return self._store._expired_records(self._sql.conn, self.realm, self.now_ms, limit)

    def apply(self, batch: StagedBatch, *, gate: WriteGate | None = None, token: str | None = None,
              vetted: Collection[int] = (), verdict: GateVerdict | None = None) -> BatchReceipt:
        """Validate and apply ``batch`` in this transaction (no default gate: pass one explicitly);
        audit token ``token`` (default a new ``direct-...``). ``vetted``: the create ops whose payloads
        :func:`~meta_memory.agent_memory.writes.prepare_items` (or a single remember's
        :func:`~meta_memory.agent_memory.writes.app_record`) built, by index (see
        :func:`~meta_memory.agent_memory.validator.plan_batch`). ``verdict``: ``gate``'s answer for this
        very batch when the caller already asked it (:func:`~meta_memory.agent_memory.writes.plan_remember`);
        ``None`` asks the gate here.

        A batch of another realm -> ``AgentMemoryError("scope_not_writable", ...)``; the validator's
        refusals as :func:`~meta_memory.agent_memory.record_writes.apply_batch`.
        """
        self._check_realm(batch)
        return self._store._apply_in_tx(self._sql.conn, batch, gate, token or mint_token("direct"), vetted, verdict)

    def stage(self, batch: StagedBatch) -> str:
        """Validate ``batch`` (without a gate) and keep it uncommitted in ``stage``; returns its
        ``stage-...`` token. Records are unchanged. Same refusals as :meth:`apply`, and
        ``invalid_record`` for a batch holding NUL on a backend that cannot store it."""
        self._check_realm(batch)
        now = self._store.clock.now_ms()
        plan_batch(batch, self.reader, now_ms=now)
        payload = dumps(batch.to_json())
        if self._sql.dialect.refuses_nul and "\x00" in payload:
            raise AgentMemoryError("invalid_record", "staged batch contains a NUL character")
        token = mint_token("stage")
        self._sql.run("INSERT INTO stage(token, batch, created_at_ms) VALUES (?, ?, ?)", (token, payload, now))
        return token

    def staged(self, token: str) -> StagedBatch | None:
        """The batch staged under ``token``, or ``None`` when it is gone."""
        if self._sql.unstorable(token):
            return None
        row = self._sql.one("SELECT batch FROM stage WHERE token = ?", (token,))
        if row is None:
            return None
        value = json.loads(row[0])
        if not isinstance(value, dict):
            raise AgentMemoryError("io", f"staged batch '{token}' is not a JSON object")
        return StagedBatch.from_json(value)

    def unstage(self, token: str) -> bool:
        """Drop a staged batch without applying it; ``False`` when it was already gone."""
        return self._sql.changed("DELETE FROM stage WHERE token = ?", (token,))

    @property
    def promotions(self) -> Promotions:
        return Promotions(self._sql, self.realm)

    @property
    def proposals(self) -> Proposals:
        return Proposals(self._sql, self.realm)

    @property
    def harvests(self) -> Harvests:
        return Harvests(self._sql, self.realm)

    @property
    def dream_runs(self) -> DreamRuns:
        return DreamRuns(self._sql, self.realm)

    @property
    def verdicts(self) -> Verdicts:
        return Verdicts(self._sql, self.realm)

    @property
    def forgets(self) -> HeldForgets:
        return HeldForgets(self._sql, self.realm)

    @property
    def audit(self) -> AuditLog:
        return AuditLog(self._sql, self.realm)

