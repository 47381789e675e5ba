"""The agent-memory store interface: one contract, two backends (SQLite and PostgreSQL).

The interface is the store's primitives: a write transaction
(:meth:`AgentMemoryStore.transaction`, a :class:`~meta_memory.agent_memory.store.tx.WriteTx` that nests
through savepoints), a snapshot, the record reads (``get``, ``search``, ``neighbours``, ``recent``),
telemetry, realm names (``realm_name``, ``has_realm``, ``list_realms``) and ``close``. The store plans
no write: every record write is a :class:`~meta_memory.agent_memory.batch.StagedBatch` planned by
:mod:`meta_memory.agent_memory.writes`, checked by the one validator
(:func:`~meta_memory.agent_memory.validator.plan_batch`) and applied through a ``WriteTx`` with one audit
row per op; :mod:`meta_memory.agent_memory.record_writes` runs a single write (open a transaction, plan,
apply) for its callers. What the SQL backends share lives in :mod:`.common`, their differing SQL
spellings in :mod:`.dialect`.

Retention floors (reference §2B): a scope above
:data:`DEFAULT_SCOPE_FLOOR_RECORDS` non-tombstoned records or
:data:`DEFAULT_SCOPE_FLOOR_BYTES` bytes of text logs a warning after a
write that created records there (:meth:`~meta_memory.agent_memory.store.tx.WriteTx.check_floor`);
records are never evicted.

Write gate: any object with
``quarantine_reason(author: Author, batch_kind: str, evidence: list, *, realm: str) -> str | None``
(the firewall supplies it). A non-``None`` reason makes every create/supersede
of the batch land ``quarantined{reason}``; a quarantined supersede leaves its
prior active. A store may be given a default gate (``gate``); a write's own
``gate`` overrides it.
"""

from __future__ import annotations

import json
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

from meta_memory.agent_memory.erase import EraseReport
from meta_memory.agent_memory.filters import FilterNode
from meta_memory.agent_memory.model import (
    Author,
    MemoryRecord,
    RecordMeta,
    RecordView,
    Scope,
    UsageEvent,
)
from meta_memory.agent_memory.realm_list import served_realms
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
    "ManifestTier",
    "DEFAULT_MANIFEST_K",
    "MAX_MANIFEST_K",
    "DEFAULT_SCOPE_FLOOR_RECORDS",
    "DEFAULT_SCOPE_FLOOR_BYTES",
    "AgentMemoryStore",
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
    #: The realm allow-list (``[agent_memory] realms``): the only realms served; ``None`` serves any realm.
    allowed_realms: frozenset[str] | None = None
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

        name = self.realm_name(realm, scope)
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
        ``AgentMemoryError`` ``review_pending`` (a pending gated promotion waits on a record or proposal of
        the closure; quarantined records are erased, their review closed as erased), ``scope_not_writable`` (``may_erase`` refused a scope) or ``unsupported``.
        """
        raise AgentMemoryError("unsupported", f"{type(self).__name__} cannot erase")

    def tombstoned_closures_before(self, realm: str, cutoff_ms: int, limit: int = 1000) -> list[str]:
        """Tombstoned records (before ``cutoff_ms``) whose whole content closure is out of use: what the
        tombstone-retention sweep erases."""
        return []

    def list_active(
        self, realm: str, scope: Scope, *, tags: Sequence[str] = (), limit: int = 100,
        before: tuple[int, str] | None = None, where: FilterNode | None = None,
    ) -> list[tuple[tuple[int, str], MemoryRecord]]:
        """Active records of ``scope`` holding every tag of ``tags`` (exact, normalised tags) and, with
        ``where``, whose metadata passes that filter, newest updated first, ties by ``memory_id``
        descending (bytewise): ``[(cursor, record)]``, at most ``limit``, a cursor being the record's
        ``(updated_at_ms, memory_id)``; pass the last cursor as ``before`` to continue (the records after
        it in that order). Backs ``meta/agent_memory/list``.
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

    def list_realms(self) -> list[str]:
        """The realms this store serves, sorted: every realm the backend holds (:meth:`held_realms`) that the
        allow-list (``[agent_memory] realms``, :attr:`allowed_realms`) lists, all of them without one. What
        every read and sweep of every realm reads (:mod:`meta_memory.agent_memory.realm_list`)."""
        return served_realms(self.allowed_realms, self.held_realms())

    @abstractmethod
    def held_realms(self) -> list[str]:
        """Every realm the backend holds, sorted, served or not: only the erasure checks of an import read
        them all (content erased from any realm of the installation stays refused)."""

    @property
    def _log(self) -> logging.Logger:
        """The backend module's logger."""
        return logging.getLogger(type(self).__module__)

    # ----------------------------------------------------------------- realm names

    def realm_name(self, realm: str, scope: Scope | None = None) -> str:
        """The validated name of ``realm`` (reads nothing, creates nothing): what a write checks before it
        opens its transaction. Refusals: ``AgentMemoryError("invalid_record", ...)`` for a malformed name;
        with ``scope``, ``scope_not_writable`` when ``scope`` is of another realm."""
        name = self._realm_name(realm)
        if scope is not None and scope.realm != name:
            raise AgentMemoryError(
                "scope_not_writable", f"scope realm '{scope.realm}' does not match batch realm '{name}'"
            )
        return name

    def has_realm(self, name: str) -> bool:
        """Whether realm ``name`` (a validated name) may hold records: a backend without a database for it
        says no, so an update or forget of a record there is answered without creating the realm."""
        return self._has_realm(name)

    @abstractmethod
    def _realm_name(self, realm: str) -> str:
        """The validated realm name; refusals raise ``AgentMemoryError("invalid_record", ...)``."""

    def _has_realm(self, name: str) -> bool:
        """See :meth:`has_realm` (backends override this)."""
        return True

    def realm_problem(self, realm: str) -> AgentMemoryError | None:
        """Why realm ``realm`` (a name from :meth:`list_realms`) cannot be read now, or ``None``: what a
        read of every realm asks first, so that one realm that cannot be opened leaves the others served.

        The refusal a read naming the realm would get: ``invalid_record`` (a name that breaks the realm-name
        rule, e.g. a file left by an older version), ``corrupt`` (damaged or not a database), ``io`` (cannot
        be opened). A backend without per-realm files (PostgreSQL) has none: ``None``."""
        return None

    # ----------------------------------------------------------------- telemetry

    @abstractmethod
    def mark_usage(self, realm: str, ids: Sequence[str], event: UsageEvent | str) -> None:
        """Count a usage event on each record id (unknown ids ignored). Best effort: a mark that cannot be
        written (a full disk) is dropped and counted (:mod:`.telemetry`), never raised to the read."""

    @abstractmethod
    def log_injections(self, realm: str, rows: Sequence[InjectionRow]) -> None:
        """Append injection-ledger rows (no audit, no validation). Best effort, as :meth:`mark_usage`."""

    def telemetry_stats(self) -> dict[str, int]:
        """``{dropped}``: usage marks and injection-ledger writes dropped since the store opened, the queued
        telemetry written first (``meta/status``), so the count includes every write that failed before the
        call. The default: none dropped."""
        return {"dropped": 0}

    def telemetry_snapshot(self) -> dict[str, int]:
        """``{dropped}`` as :meth:`telemetry_stats`, but as it stands: nothing queued is written first, so
        the call never waits on a realm's writer (``/metrics``: a scrape never waits). The default answers
        :meth:`telemetry_stats`, so a store that overrides only that is scraped with its own count; a store
        that queues telemetry (SQLite, PostgreSQL) overrides both."""
        return self.telemetry_stats()

    def ranking_stats(self) -> dict[str, int]:
        """Candidate rankings answered without proof that they hold the best rows, per ``degraded_reason``
        label, since the store opened (for the operator's metrics; a store says so in a recall's result only
        where that tells the caller nothing about other scopes). The default: none."""
        return {}

    def recall_reads(self) -> AbstractContextManager[None]:
        """A block whose reads are a recall's (candidates, neighbours, the runtime's re-check): a store
        that queues usage marks (SQLite and PostgreSQL, :class:`~.telemetry.PendingTelemetry`) does not
        write them before these reads, as it does before any other read, so a recall never writes. SQLite
        also answers the block's reads of a realm on its thread from one read transaction (one snapshot
        a recall). The default does nothing."""
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
