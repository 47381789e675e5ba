"""The agent-memory store interface: one contract, several backends (SQLite now, PostgreSQL later).

Every write is a :class:`~meta_memory.agent_memory.batch.StagedBatch` checked
by the one validator (:func:`~meta_memory.agent_memory.validator.plan_batch`)
and applied in one transaction with one audit row per op. The convenience
writers (``remember``, ``supersede``, ``forget``...) only build batches.

Write gate: any object with
``quarantine_reason(author: Author, batch_kind: str, evidence: list) -> str | None``
(the firewall supplies it). A non-``None`` reason makes every create/supersede
of the batch land ``quarantined{reason}``; a quarantined supersede leaves its
prior active. A store may be given a default gate; a per-call ``gate``
overrides it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal, Protocol

from meta_memory.agent_memory.batch import BatchReceipt, StagedBatch
from meta_memory.agent_memory.model import (
    AgentMemoryRecord,
    Author,
    MemoryRecord,
    NewMemoryRecord,
    RecordMeta,
    RecordView,
    Scope,
    UsageEvent,
)

__all__ = [
    "WriteGate",
    "InjectionRow",
    "ManifestTier",
    "DEFAULT_MANIFEST_K",
    "MAX_MANIFEST_K",
    "AgentMemoryStore",
]

DEFAULT_MANIFEST_K = 32
MAX_MANIFEST_K = 512


class WriteGate(Protocol):
    """The LLM write gate (reference §5). ``None`` result = not quarantined."""

    def quarantine_reason(self, author: Author, batch_kind: str, evidence: list[Any]) -> str | None: ...


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
    """

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

    # ----------------------------------------------------------------- reads

    @abstractmethod
    def get(self, realm: str, memory_id: str) -> MemoryRecord | None:
        """The record with this id in ``realm`` (any status), or ``None``."""

    @abstractmethod
    def active_records(self, realm: str, scope: Scope) -> list[MemoryRecord]:
        """Every active record of ``scope``, newest updated first."""

    @abstractmethod
    def recent(self, realm: str, scope: Scope, limit: int) -> list[MemoryRecord]:
        """The newest active records of ``scope``: ``updated_at_ms`` desc, ``created_at_ms`` desc, at most ``limit``
        (an index range scan, not a full read: the ``always`` selection of recall)."""

    @abstractmethod
    def neighbours(
        self, realm: str, scope: Scope, anchors: Sequence[MemoryRecord], span: int, window_ms: int
    ) -> dict[str, list[RecordView]]:
        """Write-order neighbours for context-aware recall: for each anchor id, the active records of
        ``scope`` written just before and after it — at most ``span`` on each side in write order
        (``created_at_ms``, then insertion order), each created within ``window_ms`` (ms) of the
        anchor — nearest in write order first (before-side first on ties)."""

    @abstractmethod
    def search(self, realm: str, scope: Scope, match_expression: str, limit: int) -> list[tuple[RecordView, float]]:
        """Full-text candidates among the active records of ``scope``, as light :class:`RecordView` rows.

        ``match_expression`` is an FTS5 MATCH string from
        :func:`meta_memory.recall.fts.match_expression`. Returns
        ``(record, bm25)`` best first; ``bm25`` is SQLite's raw score (lower,
        i.e. more negative, is better).
        """

    @abstractmethod
    def manifest(
        self, realm: str, scope: Scope, tier: ManifestTier | str = ManifestTier.WORKING_SET, k: int = DEFAULT_MANIFEST_K
    ) -> list[RecordMeta]:
        """Body-free rows of ``scope`` (reference §2B "Recall / manifest")."""

    @abstractmethod
    def list_realms(self) -> list[str]:
        """Every realm the backend holds, sorted."""

    # ----------------------------------------------------------------- writes

    @abstractmethod
    def remember(
        self, realm: str, identity: str, title: str, body: str, tags: Iterable[str] = ()
    ) -> tuple[AgentMemoryRecord, bool]:
        """Application write into ``identity``'s scope: ``(record, created)``.

        Exact-content dedup: when an active record of that scope has the same
        content hash, it is returned with ``created=False`` and nothing is written.
        """

    @abstractmethod
    def remember_authored(
        self, realm: str, scope: Scope, record: NewMemoryRecord, author: Author, *, gate: WriteGate | None = None
    ) -> tuple[MemoryRecord, bool]:
        """Write with a given author (recorder tool, distiller): same dedup as :meth:`remember`.

        Returns the stored (possibly quarantined) record and whether it was created.
        """

    @abstractmethod
    def supersede(
        self,
        realm: str,
        scope: Scope,
        prior_id: str,
        record: NewMemoryRecord,
        author: Author,
        *,
        gate: WriteGate | None = None,
    ) -> MemoryRecord:
        """Write a new version of ``prior_id`` (which must be in ``scope``); returns the new record."""

    @abstractmethod
    def update(
        self, realm: str, identity: str, memory_id: str, title: str, body: str, tags: Iterable[str] = ()
    ) -> tuple[AgentMemoryRecord, str]:
        """Application update of an identity record: ``(new record, superseded id)``."""

    @abstractmethod
    def forget(self, realm: str, scope: Scope, memory_id: str, author: Author) -> bool:
        """Tombstone ``memory_id`` if it exists in ``scope`` and is not already tombstoned; else ``False``."""

    @abstractmethod
    def propose(
        self, realm: str, scope: Scope, record: NewMemoryRecord, author: Author, taint: str | None = None
    ) -> str:
        """Queue a proposal for a shared (mob/operator) scope; returns ``prop-...``. Secrets are refused."""

    @abstractmethod
    def mark_usage(self, realm: str, ids: Sequence[str], event: UsageEvent | str) -> None:
        """Count a usage event on each record id (unknown ids ignored)."""

    @abstractmethod
    def log_injections(self, realm: str, rows: Sequence[InjectionRow]) -> None:
        """Append injection-ledger rows (no audit, no validation)."""

    @abstractmethod
    def close(self) -> None:
        """Release connections. The store must not be used afterwards."""
