"""The console Memory panel's read models: the :class:`MemoryPanelStore` protocol, its SQL adapter and
the panel's JSON shapes of the store's rows.

Seed: "Console Memory panel" (ten ``meta/memory/panel/*`` methods, the
``MemoryPanelStore`` an embedder may wire, its conservative defaults);
reference §2B (tables), §7 (shapes, constants), §9 (dreams from audit rows).

A panel store only *reads*; it never judges access. Every row it returns
carries what :mod:`meta_memory.panel.visibility` needs to judge it
(its scope, status and quarantine history; a scope; an identity), and :mod:`meta_memory.panel.service`
filters. All times are UTC epoch ms.

The rows are the agent-memory store's own row types, one per table
(:mod:`meta_memory.agent_memory.store.tables`, and the record read models of
:mod:`meta_memory.agent_memory.store.panel_reads`); this module gives the panel's
JSON shape of each. :class:`SqlPanelStore` serves both bundled stores (SQLite and
PostgreSQL): every method reads one snapshot of one realm
(:meth:`~meta_memory.agent_memory.store.base.AgentMemoryStore.snapshot`: no write
lock, nothing created), and the store's SQL returns the same rows in the same
order on both backends. The record listing pages by the keyset
``(updated_at_ms DESC, memory_id DESC)``; cursors are plain
``<updated_at_ms>:<memory_id>`` keys, so a cursor issued by one gateway pages on
any other gateway of the same database.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..agent_memory.realm_list import is_served
from ..agent_memory.store.base import AgentMemoryStore
from ..agent_memory.store.panel_reads import (
    SEARCHED_COLUMNS,
    InjectionLedgerRow,
    ReadableScopes,
    RecordFilters,
    RecordRow,
    ScopeOverviewRow,
)
from ..agent_memory.store.tables import (
    AuditRow,
    DreamRunRow,
    HarvestRow,
    HeldForgetRow,
    PromotionRow,
    ProposalRow,
    VerdictRow,
)
from ..errors import AgentMemoryError
from ..limits import RETENTION_FLOOR_BYTES, RETENTION_FLOOR_RECORDS
from ..storage.layout import RealmPathError
from . import kept_summaries
from .cursor import Cursor
from .paging import RealmHead, SourcePage
from .realm_memo import RealmMemo

if TYPE_CHECKING:  # pragma: no cover
    from ..agent_memory.store.sqlite import SqliteAgentMemoryStore

__all__ = [
    "DEFAULT_FLOOR_BYTES",
    "DEFAULT_FLOOR_RECORDS",
    "DREAM_AUDIT_ROWS",
    "DreamRunRow",
    "DreamSummary",
    "HarvestRow",
    "HeldForgetRow",
    "KEPT_SCOPES",
    "InjectionLedgerRow",
    "MemoryPanelStore",
    "NEWEST_LISTINGS",
    "PanelStoreDefaults",
    "PostgresPanelStore",
    "PromotionRow",
    "ProposalRow",
    "ReadableScopes",
    "RecordFilters",
    "RecordRow",
    "SEARCHED_COLUMNS",
    "ScopeOverviewRow",
    "SqlPanelStore",
    "SqlitePanelStore",
    "StoreFloors",
    "VerdictRow",
    "dream_run_json",
    "held_forget_json",
    "promotion_json",
    "proposal_json",
    "summarise_dreams",
]

#: Retention floors (reference §2B): counted over non-tombstoned rows; they only warn.
DEFAULT_FLOOR_RECORDS = RETENTION_FLOOR_RECORDS
DEFAULT_FLOOR_BYTES = RETENTION_FLOOR_BYTES
#: Dream summaries are rebuilt from at most this many newest steward audit rows per realm (reference §7).
DREAM_AUDIT_ROWS = 5000
#: A dream summary samples at most this many record ids and rationales (reference §7).
DREAM_SAMPLE_IDS = 12
DREAM_SAMPLE_RATIONALES = 6


# --------------------------------------------------------------------------- the panel's shapes


def promotion_json(row: PromotionRow) -> dict[str, Any]:
    """``{realm, pending_id, record_id, scope_kind, scope_key, rationale, status, created_at_ms}`` (a pending
    promotion: no resolution time; the stage token is never surfaced)."""
    out = row.to_json()
    del out["resolved_at_ms"]
    return out


def held_forget_json(row: HeldForgetRow) -> dict[str, Any]:
    """``{realm, forget_id, memory_id, scope_kind, scope_key, title, record_status, content_hash,
    requested_by, reason, created_at_ms}`` of a held forget whose record still stands."""
    return {
        "realm": row.realm,
        "forget_id": row.forget_id,
        "memory_id": row.memory_id,
        "scope_kind": row.scope_kind,
        "scope_key": row.scope_key,
        "title": row.title,
        "record_status": row.record_status,
        "content_hash": row.content_hash,
        "requested_by": row.author,
        "reason": row.reason,
        "created_at_ms": row.created_at_ms,
    }


def dream_run_json(row: DreamRunRow) -> dict[str, Any]:
    """``{realm, run_id, partition, started_at_ms, completed_at_ms, ops_committed, detail}``."""
    return {
        "realm": row.realm,
        "run_id": row.run_id,
        "partition": row.partition,
        "started_at_ms": row.started_at_ms,
        "completed_at_ms": row.completed_at_ms,
        "ops_committed": row.ops_committed,
        "detail": row.detail,
    }


def proposal_json(row: ProposalRow) -> dict[str, Any]:
    """Metadata only, the body withheld: ``{realm, proposal_id, scope_kind, scope_key, status, created_at_ms,
    author, kind, title, body_bytes, tainted}`` (``body_bytes``: UTF-8 length of the proposed body;
    ``tainted``: whether the gate gave a reason at propose time)."""
    kind, title, body = (row.record.get(k) for k in ("kind", "title", "body"))
    return {
        "realm": row.realm,
        "proposal_id": row.proposal_id,
        "scope_kind": row.scope_kind,
        "scope_key": row.scope_key,
        "status": row.status,
        "created_at_ms": row.created_at_ms,
        "author": dict(row.author),
        "kind": kind if isinstance(kind, str) else None,
        "title": title if isinstance(title, str) else None,
        "body_bytes": len(body.encode("utf-8", "surrogatepass")) if isinstance(body, str) else 0,
        "tainted": row.taint is not None,
    }


# --------------------------------------------------------------------------- rows the panel builds


@dataclass(frozen=True)
class DreamSummary:
    """A steward dream run reconstructed from its audit rows (reference §7 ``dreams``):
    op count, op kinds, quarantined ops, up to 12 sampled record ids and 6 rationales."""

    realm: str
    run_id: str
    first_op_at_ms: int
    last_op_at_ms: int
    ops: int
    op_kinds: Mapping[str, int]
    quarantined_ops: int
    memory_ids: Sequence[str]
    rationales: Sequence[str]

    def to_json(self) -> dict[str, Any]:
        return {
            "realm": self.realm,
            "run_id": self.run_id,
            "first_op_at_ms": self.first_op_at_ms,
            "last_op_at_ms": self.last_op_at_ms,
            "ops": self.ops,
            "op_kinds": dict(self.op_kinds),
            "quarantined_ops": self.quarantined_ops,
            "memory_ids": list(self.memory_ids),
            "rationales": list(self.rationales),
        }


@dataclass(frozen=True)
class StoreFloors:
    """Retention floors of a scope: ``records`` (count) and ``bytes``. Crossing them only warns.
    ``identity_records``: the hard limit on an identity scope's rows, every status
    (``[agent_memory] identity_record_limit``; a write past it is refused), ``None`` when the store has none."""

    records: int = DEFAULT_FLOOR_RECORDS
    bytes: int = DEFAULT_FLOOR_BYTES
    identity_records: int | None = None

    def to_json(self) -> dict[str, int]:
        return {"records": self.records, "bytes": self.bytes}


# --------------------------------------------------------------------------- the protocol


@runtime_checkable
class MemoryPanelStore(Protocol):
    """What the Memory panel reads. An embedder may wire any object that has these methods
    (``runtime.set_memory_panel_store(store)``).

    Ordering contracts: listings are newest first as documented per method;
    ``limit`` bounds what the store returns (the panel filters afterwards).
    Store failures raise :class:`~meta_memory.errors.AgentMemoryError`.

    Three methods have conservative defaults in :class:`PanelStoreDefaults`
    (inherit from it to get them): :meth:`holds_quarantine_evidence`,
    :meth:`realm_scopes` and :meth:`proposal_scopes`.
    """

    def list_realms(self) -> list[str]:
        """Every realm the store holds, sorted."""
        ...

    def records_page(
        self, realm: str, filters: RecordFilters, after: Cursor | None, limit: int
    ) -> SourcePage[RecordRow]:
        """Up to ``limit`` body-free rows of ``realm`` matching ``filters``, strictly after ``after``
        (``None`` = from the newest), ordered ``(updated_at_ms DESC, memory_id DESC)``, and a
        ``next_cursor`` past ``after`` (the last row's key) when more rows follow, else ``None``."""
        ...

    def record(self, realm: str, memory_id: str) -> RecordRow | None:
        """One record with ``body`` and ``content_hash``, or ``None``."""
        ...

    def records_by_ids(self, realm: str, ids: Iterable[str]) -> dict[str, RecordRow]:
        """Body-free rows of the given ids that exist in ``realm`` (missing ids are absent)."""
        ...

    def claimants(self, realm: str, memory_id: str, limit: int) -> list[RecordRow]:
        """Rows whose ``supersedes`` names ``memory_id`` (uncommitted claimants included), oldest created first."""
        ...

    def record_injections(self, realm: str, memory_id: str, limit: int) -> list[InjectionLedgerRow]:
        """Injection-ledger rows of one record, newest first."""
        ...

    def quarantined(self, realm: str, limit: int, after: Cursor | None = None,
                    readable: ReadableScopes | None = None) -> list[RecordRow]:
        """Up to ``limit`` quarantined records (body-free, with ``content_hash`` set: the queue lists it,
        ``null`` when a store leaves it unset), newest created first (``(created_at_ms DESC,
        memory_id DESC)``), strictly after ``after`` (a :class:`Cursor` read as ``(created_at_ms,
        memory_id)``; ``None`` = from the newest). ``readable`` (under access control): the caller's
        readable scopes; a store should return only the rows it admits
        (:meth:`~meta_memory.agent_memory.store.panel_reads.ReadableScopes.admits`), before ``limit``, so
        unreadable rows are never read; the panel judges every row again either way. A store whose
        method takes no ``after`` still works: the queue then lists its first page only; one that takes
        no ``readable`` is given none, and its unreadable rows are read and left out."""
        ...

    def pending_promotions(self, realm: str, limit: int) -> list[PromotionRow]:
        """Unresolved gated promotions, newest first."""
        ...

    def held_forgets(self, realm: str, limit: int) -> list[HeldForgetRow]:
        """Forgets held for review whose record still stands, newest first."""
        ...

    def held_forget(self, realm: str, memory_id: str) -> HeldForgetRow | None:
        """The waiting held forget of one standing record, or ``None``."""
        ...

    def dream_summaries(self, realm: str, limit: int) -> list[DreamSummary]:
        """Steward dream runs reconstructed from the audit rows, newest last op first."""
        ...

    def dream_runs(self, realm: str, limit: int) -> list[DreamRunRow]:
        """Durable dream-run rows, newest completed first."""
        ...

    def audit_verdicts(self, realm: str, limit: int) -> list[VerdictRow]:
        """Open (unresolved) usage-audit verdicts, newest first."""
        ...

    def scope_overview(self, realm: str) -> list[ScopeOverviewRow]:
        """One row per scope of the realm's records."""
        ...

    def floors(self) -> StoreFloors:
        """The retention floors the store warns at."""
        ...

    def proposals(self, realm: str, limit: int) -> list[ProposalRow]:
        """Pending and held proposals, newest first."""
        ...

    def injections(self, realm: str, limit: int) -> list[InjectionLedgerRow]:
        """Injection-ledger rows, newest first."""
        ...

    def harvests(self, realm: str, limit: int) -> list[HarvestRow]:
        """Pending exit-interview harvests, newest retirement first."""
        ...

    def holds_quarantine_evidence(self, realm: str) -> bool:
        """Whether the realm holds quarantined content (gates its dream history on review)."""
        ...

    def realm_scopes(self, realm: str) -> frozenset[tuple[str, str]]:
        """Every memory scope ``(scope_kind, scope_key)`` the realm names."""
        ...

    def proposal_scopes(self, realm: str, proposal_ids: Iterable[str]) -> dict[str, tuple[str, str]]:
        """The scope of each known proposal id (sources of promotions made from proposals)."""
        ...


class PanelStoreDefaults:
    """Conservative defaults for the three optional methods (seed: "Console Memory panel").

    * :meth:`holds_quarantine_evidence` answers ``True`` for every realm, so under
      access control a realm's dream history goes only to ``memory.quarantine.review``
      holders;
    * :meth:`realm_scopes` lists only the scopes of the realm's records, from
      :meth:`scope_overview` (which reads every record);
    * :meth:`proposal_scopes` resolves none, so under access control a gated promotion
      made from a proposal is listed to no one.
    """

    def holds_quarantine_evidence(self, realm: str) -> bool:
        """Default: assume the realm holds quarantined content."""
        return True

    def held_forgets(self, realm: str, limit: int) -> list[HeldForgetRow]:
        """Default: a store that cannot hold forgets lists none."""
        return []

    def held_forget(self, realm: str, memory_id: str) -> HeldForgetRow | None:
        """Default: no held forget."""
        return None

    def realm_scopes(self, realm: str) -> frozenset[tuple[str, str]]:
        """Default: the scopes of the realm's records, via ``scope_overview``."""
        rows = self.scope_overview(realm)  # type: ignore[attr-defined]
        return frozenset((r.scope_kind, r.scope_key) for r in rows)

    def proposal_scopes(self, realm: str, proposal_ids: Iterable[str]) -> dict[str, tuple[str, str]]:
        """Default: resolve no proposal."""
        return {}

    def realm_problem(self, realm: str) -> AgentMemoryError | None:
        """Default: every listed realm can be read."""
        return None


# --------------------------------------------------------------------------- dreams from audit rows


def summarise_dreams(realm: str, rows: Iterable[tuple[str, str, str | None, Mapping[str, Any], int]]) -> list[DreamSummary]:
    """Group steward audit rows into dream summaries (reference §7, §9).

    ``rows`` are ``(run_id, op_kind, memory_id, detail, applied_at_ms)`` in any order;
    ``detail`` is the audit detail JSON (``quarantined`` non-null counts a quarantined op,
    ``rationale`` is sampled). Returns summaries sorted by ``last_op_at_ms`` descending
    (ties by ``run_id`` descending); samples keep the order of the rows.
    """
    runs: dict[str, dict[str, Any]] = {}
    for run_id, op_kind, memory_id, detail, at_ms in rows:
        run = runs.setdefault(
            run_id,
            {"first": at_ms, "last": at_ms, "ops": 0, "kinds": {}, "q": 0, "ids": [], "why": []},
        )
        run["first"] = min(run["first"], at_ms)
        run["last"] = max(run["last"], at_ms)
        run["ops"] += 1
        run["kinds"][op_kind] = run["kinds"].get(op_kind, 0) + 1
        if detail.get("quarantined") is not None:
            run["q"] += 1
        if memory_id and memory_id not in run["ids"] and len(run["ids"]) < DREAM_SAMPLE_IDS:
            run["ids"].append(memory_id)
        why = detail.get("rationale")
        if isinstance(why, str) and why and why not in run["why"] and len(run["why"]) < DREAM_SAMPLE_RATIONALES:
            run["why"].append(why)
    out = [
        DreamSummary(realm, run_id, r["first"], r["last"], r["ops"], dict(r["kinds"]), r["q"], tuple(r["ids"]), tuple(r["why"]))
        for run_id, r in runs.items()
    ]
    out.sort(key=lambda s: (s.last_op_at_ms, s.run_id), reverse=True)
    return out


def _dream_rows(rows: Iterable[AuditRow]) -> list[tuple[str, str, str | None, Mapping[str, Any], int]]:
    """``(run_id, op_kind, memory_id, detail, applied_at_ms)`` of the audit rows a dream's author wrote."""
    out: list[tuple[str, str, str | None, Mapping[str, Any], int]] = []
    for row in rows:
        author = row.detail.get("author")
        run_id = author.get("run_id") if isinstance(author, dict) else None
        if isinstance(run_id, str):
            out.append((run_id, row.op_kind, row.memory_id, row.detail, row.applied_at_ms))
    return out


class SqlPanelStore(PanelStoreDefaults):
    """:class:`MemoryPanelStore` over a bundled agent-memory store (SQLite or PostgreSQL).

    Every method reads one snapshot of one realm (``store.snapshot(realm)``): no write lock, a
    realm without data reads as empty and is never created. ``floors`` are the retention floors
    shown by the overview. Store failures raise :class:`~meta_memory.errors.AgentMemoryError`.
    """

    def __init__(self, store: AgentMemoryStore, floors: StoreFloors | None = None) -> None:
        self.store = store
        self._floors = floors or StoreFloors()

    def list_realms(self) -> list[str]:
        return list(self.store.list_realms())

    def realm_problem(self, realm: str) -> AgentMemoryError | None:
        """Why ``realm`` cannot be read now (``None``: it can): see
        :meth:`~meta_memory.agent_memory.store.base.AgentMemoryStore.realm_problem`."""
        return self.store.realm_problem(realm)

    def records_page(
        self, realm: str, filters: RecordFilters, after: Cursor | None, limit: int
    ) -> SourcePage[RecordRow]:
        """See :meth:`MemoryPanelStore.records_page`."""
        key = (after.updated_at_ms, after.memory_id) if after is not None else None
        with self.store.snapshot(realm) as tx:
            rows, more = tx.panel.records_page(filters, key, limit)
        nxt = Cursor(rows[-1].updated_at_ms, rows[-1].memory_id) if more and rows else None
        return SourcePage(rows, nxt)

    def record(self, realm: str, memory_id: str) -> RecordRow | None:
        with self.store.snapshot(realm) as tx:
            return tx.panel.record(memory_id)

    def records_by_ids(self, realm: str, ids: Iterable[str]) -> dict[str, RecordRow]:
        wanted = list(ids)
        if not wanted:
            return {}
        with self.store.snapshot(realm) as tx:
            return tx.panel.records_by_ids(wanted)

    def claimants(self, realm: str, memory_id: str, limit: int) -> list[RecordRow]:
        with self.store.snapshot(realm) as tx:
            return tx.panel.claimants(memory_id, limit)

    def record_injections(self, realm: str, memory_id: str, limit: int) -> list[InjectionLedgerRow]:
        with self.store.snapshot(realm) as tx:
            return tx.panel.record_injections(memory_id, limit)

    def quarantined(self, realm: str, limit: int, after: Cursor | None = None,
                    readable: ReadableScopes | None = None) -> list[RecordRow]:
        """See :meth:`MemoryPanelStore.quarantined`: the ``readable`` filter runs in the statement."""
        key = (after.updated_at_ms, after.memory_id) if after is not None else None
        with self.store.snapshot(realm) as tx:
            return tx.panel.quarantined(limit, key, readable)

    def pending_promotions(self, realm: str, limit: int) -> list[PromotionRow]:
        with self.store.snapshot(realm) as tx:
            return tx.promotions.pending(limit)

    def held_forgets(self, realm: str, limit: int) -> list[HeldForgetRow]:
        with self.store.snapshot(realm) as tx:
            return tx.forgets.standing(limit)

    def held_forget(self, realm: str, memory_id: str) -> HeldForgetRow | None:
        with self.store.snapshot(realm) as tx:
            return tx.forgets.standing_for(memory_id)

    def dream_summaries(self, realm: str, limit: int) -> list[DreamSummary]:
        with self.store.snapshot(realm) as tx:
            rows = tx.audit.steward_rows(DREAM_AUDIT_ROWS)
        return summarise_dreams(realm, _dream_rows(rows))[:limit]

    def dream_runs(self, realm: str, limit: int) -> list[DreamRunRow]:
        with self.store.snapshot(realm) as tx:
            return tx.dream_runs.recent(limit)

    def audit_verdicts(self, realm: str, limit: int) -> list[VerdictRow]:
        with self.store.snapshot(realm) as tx:
            return tx.verdicts.open(limit)

    def proposals(self, realm: str, limit: int) -> list[ProposalRow]:
        with self.store.snapshot(realm) as tx:
            return tx.proposals.listing(("pending", "held"), limit, newest_first=True)

    def injections(self, realm: str, limit: int) -> list[InjectionLedgerRow]:
        with self.store.snapshot(realm) as tx:
            return tx.panel.injections(limit)

    def harvests(self, realm: str, limit: int) -> list[HarvestRow]:
        with self.store.snapshot(realm) as tx:
            return tx.harvests.pending(limit, newest_first=True)

    def scope_overview(self, realm: str) -> list[ScopeOverviewRow]:
        with self.store.snapshot(realm) as tx:
            return tx.panel.scope_overview()

    def floors(self) -> StoreFloors:
        limit = getattr(self.store, "identity_record_limit", None)
        return replace(self._floors, identity_records=limit if isinstance(limit, int) else None)

    def holds_quarantine_evidence(self, realm: str) -> bool:
        """Whether any record holds quarantined content (quarantined, or tombstoned and ever quarantined)."""
        with self.store.snapshot(realm) as tx:
            return tx.panel.holds_quarantine_evidence()

    def realm_scopes(self, realm: str) -> frozenset[tuple[str, str]]:
        """Scopes of the realm's records, proposals and gated promotions, and its harvested identities."""
        with self.store.snapshot(realm) as tx:
            return tx.panel.realm_scopes()

    def proposal_scopes(self, realm: str, proposal_ids: Iterable[str]) -> dict[str, tuple[str, str]]:
        wanted = list(proposal_ids)
        if not wanted:
            return {}
        with self.store.snapshot(realm) as tx:
            return tx.proposals.scopes(wanted)


#: How many newest record keys of each realm the every-realm listing keeps (so its first pages, and a realm
#: with no more records than this, are cut without reading the realms that cannot hold their rows); the
#: quarantine queue keeps as many of its newest keys.
HEAD_KEYS = 16

#: A realm's scope rows and scopes are kept between calls only when it names at most this many scopes (so
#: what is kept stays small per realm; a realm with more is read on each call).
KEPT_SCOPES = 1000
#: The listings whose newest row :meth:`SqlitePanelStore.newest` keeps, each read with ``limit = 1``.
NEWEST_LISTINGS = ("audit_verdicts", "dream_runs", "dream_summaries", "harvests", "held_forgets", "injections",
                   "pending_promotions", "proposals")


class SqlitePanelStore(SqlPanelStore):
    """:class:`SqlPanelStore` as wired for the bundled SQLite store (one WAL snapshot per read; realms
    without a database file are never opened).

    What the every-realm reads need of each realm is kept in memory (a
    :class:`~meta_memory.panel.realm_memo.RealmMemo`) with the
    :class:`~meta_memory.storage.integrity.FileSignature` of its database files (size, modification time,
    inode, change time and device of the file and its ``-wal``) when it was read, and read again once either changes (never kept
    within :data:`~meta_memory.panel.realm_memo.QUIET_NS` of a write): :meth:`realm_heads`, the quarantine
    queue's :meth:`quarantine_head`, the newest row of a listing (:meth:`newest`), and the answers of
    :meth:`scope_overview`, :meth:`realm_scopes`, :meth:`holds_quarantine_evidence` and a
    :meth:`realm_problem` that found none. So a read of every realm costs a ``stat`` of each idle realm.

    With ``summaries_file`` (``<state>/panel-summaries.json``, :mod:`meta_memory.panel.kept_summaries`), what
    a previous process kept of the served realms is read from it at construction (the file is then removed)
    and used for each realm whose files have not changed since; :meth:`close` writes what this process keeps
    there. So the first read of every realm after a restart, too, opens only the realms written meanwhile.
    """

    def __init__(self, store: SqliteAgentMemoryStore, floors: StoreFloors | None = None, *,
                 summaries_file: Path | None = None) -> None:
        super().__init__(store, floors)
        self._sqlite = store
        self._memo = RealmMemo(self._db_path, store.telemetry_queued)
        self._summaries_file = summaries_file
        if summaries_file is not None:
            self._memo.restore(kept_summaries.load(summaries_file, store.paths.root, frozenset(NEWEST_LISTINGS),
                                                   self._served))

    def _served(self, realm: str) -> bool:
        return is_served(self._sqlite.allowed_realms, realm) and self._db_path(realm) is not None

    @property
    def realm_reads(self) -> dict[str, int]:
        """``{"read": n, "restored": m}``: the per-realm summaries read from a realm's files since start, and
        the realms whose summaries were taken from the previous process's (their files unchanged)."""
        return {"read": self._memo.loads, "restored": self._memo.restored}

    def close(self) -> None:
        """Write what is kept of the served realms to ``summaries_file`` (when given) for the next start."""
        if self._summaries_file is not None:
            entries = {r: e for r, e in self._memo.entries().items() if self._served(r)}
            if entries:  # a process that read no realm for the panel leaves no file
                kept_summaries.save(self._summaries_file, self._sqlite.paths.root, entries)

    def _db_path(self, realm: str) -> Path | None:
        try:
            return self._sqlite.paths.realm_db_path(realm)
        except RealmPathError:
            return None

    def realm_problem(self, realm: str) -> AgentMemoryError | None:
        """See :meth:`SqlPanelStore.realm_problem`; a realm found readable is not opened again while its
        files keep their signature."""
        return self._memo.read(realm, "problem", lambda: self.store.realm_problem(realm),
                               keep=lambda problem: problem is None)

    def scope_overview(self, realm: str) -> list[ScopeOverviewRow]:
        """See :meth:`SqlPanelStore.scope_overview`; kept when the realm has at most :data:`KEPT_SCOPES` scopes."""
        def load() -> tuple[tuple[ScopeOverviewRow, ...], int | None]:
            with self.store.snapshot(realm) as tx:
                return tuple(tx.panel.scope_overview()), tx.panel.next_expiry()

        # counts move from "active" to "expired" with time alone, no write: kept only until the soonest expiry
        rows, until = self._memo.read(realm, "scope_overview", load, keep=lambda kept: len(kept[0]) <= KEPT_SCOPES,
                                      fresh=lambda kept: kept[1] is None or self.store.clock.now_ms() < kept[1])
        return list(rows)

    def realm_scopes(self, realm: str) -> frozenset[tuple[str, str]]:
        """See :meth:`SqlPanelStore.realm_scopes`; kept when they are at most :data:`KEPT_SCOPES`."""
        return self._memo.read(realm, "realm_scopes", lambda: super(SqlitePanelStore, self).realm_scopes(realm),
                               keep=lambda scopes: len(scopes) <= KEPT_SCOPES)

    def holds_quarantine_evidence(self, realm: str) -> bool:
        return self._memo.read(realm, "quarantine_evidence",
                               lambda: super(SqlitePanelStore, self).holds_quarantine_evidence(realm))

    def newest(self, realm: str, listing: str) -> Any | None:
        """The newest row of ``realm``'s ``listing`` (one of :data:`NEWEST_LISTINGS`: the method read with
        ``limit = 1``), or ``None`` when it lists none. Raises ``ValueError`` for another listing name."""
        if listing not in NEWEST_LISTINGS:
            raise ValueError(f"no newest row is kept of '{listing}'")
        fetch = getattr(self, listing)

        def load() -> Any | None:
            rows = fetch(realm, 1)
            return rows[0] if rows else None

        return self._memo.read(realm, ("newest", listing), load)

    def quarantine_head(self, realm: str) -> RealmHead:
        """The :class:`~meta_memory.panel.paging.RealmHead` of ``realm``'s quarantine queue: the keys
        ``(created_at_ms, memory_id)`` of its :data:`HEAD_KEYS` newest quarantined records (every scope)."""

        def load() -> RealmHead:
            rows = self.quarantined(realm, HEAD_KEYS + 1)
            return RealmHead(tuple(Cursor(r.created_at_ms, r.memory_id) for r in rows[:HEAD_KEYS]),
                             len(rows) <= HEAD_KEYS)

        return self._memo.read(realm, "quarantine_head", load)

    def realm_heads(self, realms: Sequence[str]) -> tuple[dict[str, RealmHead], dict[str, AgentMemoryError]]:
        """``(heads, problems)``: each realm's :class:`~meta_memory.panel.paging.RealmHead` (the keys
        ``(updated_at_ms, memory_id)`` of its :data:`HEAD_KEYS` newest records, any status), and, for a realm
        that cannot be read now, the refusal a read of it gets instead (``realm_problem``: a damaged
        database, a file that cannot be opened, a name that breaks the realm-name rule). A realm whose files
        did not change since its keys were read costs a ``stat`` of them; any other is opened and its newest
        keys read (one index range)."""
        heads: dict[str, RealmHead] = {}
        problems: dict[str, AgentMemoryError] = {}
        for realm in realms:
            found = self._memo.read(realm, "records_head", partial(self._records_head, realm),
                                    keep=lambda x: isinstance(x, RealmHead))
            if isinstance(found, RealmHead):
                heads[realm] = found
            else:
                problems[realm] = found
        return heads, problems

    def _records_head(self, realm: str) -> RealmHead | AgentMemoryError:
        problem = self.store.realm_problem(realm)
        if problem is not None:
            return problem
        try:
            with self.store.snapshot(realm) as tx:
                rows, more = tx.panel.records_page(RecordFilters(), None, HEAD_KEYS)
        except AgentMemoryError as exc:
            if exc.reason != "corrupt":
                raise
            return exc
        return RealmHead(tuple(Cursor(r.updated_at_ms, r.memory_id) for r in rows), not more)


class PostgresPanelStore(SqlPanelStore):
    """:class:`SqlPanelStore` as wired for the PostgreSQL store (one ``REPEATABLE READ READ ONLY``
    snapshot per read, without the realm's advisory lock)."""
