"""The console Memory panel's read models: the :class:`MemoryPanelStore` protocol and its SQL implementations.

Seed: "Console Memory panel" (ten ``meta/memory/panel/*`` methods, the
``MemoryPanelStore`` an embedder may wire, its conservative defaults);
reference §2B (tables), §7 (shapes, constants), §9 (dreams from audit rows).

A panel store only *reads*; it never judges access. Every row it returns
carries what :mod:`meta_memory.panel.visibility` needs to judge it
(:class:`~meta_memory.panel.visibility.RecordFacts`, a scope, an identity),
and :mod:`meta_memory.panel.service` filters. All times are UTC epoch ms.

:class:`SqlitePanelStore` serves the bundled store
(:class:`~meta_memory.agent_memory.store.sqlite.SqliteAgentMemoryStore`) and
:class:`PostgresPanelStore` the PostgreSQL one
(:class:`~meta_memory.agent_memory.store.postgres.PostgresAgentMemoryStore`).
Both are :class:`SqlPanelStore`: the same queries, run inside
``store.read(realm)`` (one read-only snapshot of one realm), filtering in SQL,
paging the record listing by the keyset ``(updated_at_ms DESC, memory_id
DESC)``; the store's SQL dialect
(:class:`~meta_memory.agent_memory.store.dialect.Dialect`) supplies the few
spellings that differ, so both return the same rows in the same order.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..agent_memory.model import Scope, Status, UsageStats
from ..agent_memory.store.dialect import POSTGRES, SQLITE, Dialect
from .cursor import Cursor
from .paging import SourcePage
from .visibility import RecordFacts

__all__ = [
    "AuditVerdictRow",
    "DEFAULT_FLOOR_BYTES",
    "DEFAULT_FLOOR_RECORDS",
    "DREAM_AUDIT_ROWS",
    "DreamRunRow",
    "DreamSummary",
    "HarvestRow",
    "InjectionLedgerRow",
    "MemoryPanelStore",
    "PanelStoreDefaults",
    "PostgresPanelStore",
    "PromotionRow",
    "ProposalRow",
    "RecordFilters",
    "RecordRow",
    "SEARCHED_COLUMNS",
    "ScopeOverviewRow",
    "SqlPanelStore",
    "SqlitePanelStore",
    "StoreFloors",
    "summarise_dreams",
]

#: Retention floors (reference §2B): counted over non-tombstoned rows; they only warn.
DEFAULT_FLOOR_RECORDS = 4000
DEFAULT_FLOOR_BYTES = 32 * 1024 * 1024
#: Dream summaries are rebuilt from at most this many newest steward audit rows per realm (reference §7).
DREAM_AUDIT_ROWS = 5000
#: A dream summary samples at most this many record ids and rationales (reference §7).
DREAM_SAMPLE_IDS = 12
DREAM_SAMPLE_RATIONALES = 6


# --------------------------------------------------------------------------- row types


@dataclass(frozen=True)
class RecordFilters:
    """The record listing's filters (``None`` = any): ``scope_kind`` (identity|mob|operator|realm),
    ``scope_key`` (identity / mob / operator name, ``""`` for realm), ``status``
    (active|superseded|quarantined|tombstoned) and ``terms``: text search terms, each of which
    must occur, lowercased, as a substring of the lowercased title, description, body or tags
    (empty = no text filter; see :data:`SEARCHED_COLUMNS`)."""

    scope_kind: str | None = None
    scope_key: str | None = None
    status: str | None = None
    terms: tuple[str, ...] = ()


@dataclass(frozen=True)
class RecordRow:
    """One record as the panel shows it.

    ``data`` is the record JSON (the serde shape of a stored record: ``id``,
    ``scope{scope, realm, <kind>}``, ``kind``, ``title``, ``description``,
    ``tags``, ``provenance``, ``trust``, ``status{status, by?|reason?}``,
    ``supersedes?``, ``derived_from``, ``working_set_rank?``,
    ``created_at_ms``, ``updated_at_ms``, ``usage``, ``ever_quarantined``)
    WITHOUT ``body``, plus ``body_bytes`` (UTF-8 length of the body).
    ``body`` and ``content_hash`` are set only by
    :meth:`MemoryPanelStore.record` (the detail view).
    """

    realm: str
    memory_id: str
    updated_at_ms: int
    created_at_ms: int
    scope_kind: str
    scope_key: str
    status: str
    status_detail: str | None
    ever_quarantined: bool
    supersedes: str | None
    body_bytes: int
    data: Mapping[str, Any]
    body: str | None = None
    content_hash: str | None = None

    @property
    def facts(self) -> RecordFacts:
        """What visibility needs of this record."""
        return RecordFacts(self.scope_kind, self.scope_key, self.status, self.ever_quarantined)

    @property
    def superseded_by(self) -> str | None:
        """The committed successor's id when the status is ``superseded``."""
        return self.status_detail if self.status == "superseded" else None

    def listing_json(self) -> dict[str, Any]:
        """Body-free JSON: ``data`` (it already carries ``body_bytes``)."""
        return dict(self.data)

    def detail_json(self) -> dict[str, Any]:
        """JSON with ``body`` and ``content_hash`` (lowercase hex SHA-256, see ``agent_memory.hashing``)."""
        out = dict(self.data)
        out["body"] = self.body
        out["content_hash"] = self.content_hash
        return out


@dataclass(frozen=True)
class InjectionLedgerRow:
    """One injection-ledger row: ``record_id`` went into ``identity``'s context at ``at_ms``
    via ``surface`` (``build`` | ``turn``); ``session_key`` is ``None`` for the build surface."""

    realm: str
    injection_id: int
    record_id: str
    identity: str
    session_key: str | None
    surface: str
    at_ms: int

    def to_json(self) -> dict[str, Any]:
        return {
            "realm": self.realm,
            "injection_id": self.injection_id,
            "record_id": self.record_id,
            "identity": self.identity,
            "session_key": self.session_key,
            "surface": self.surface,
            "at_ms": self.at_ms,
        }


@dataclass(frozen=True)
class PromotionRow:
    """A pending gated promotion (the stage token is never surfaced). ``record_id`` is the promoted
    record's id, or a ``prop-...`` proposal id when the promotion was made from a proposal."""

    realm: str
    pending_id: str
    record_id: str
    scope_kind: str
    scope_key: str
    rationale: str | None
    status: str
    created_at_ms: int

    @property
    def from_proposal(self) -> bool:
        return self.record_id.startswith("prop-")

    def to_json(self) -> dict[str, Any]:
        return {
            "realm": self.realm,
            "pending_id": self.pending_id,
            "record_id": self.record_id,
            "scope_kind": self.scope_kind,
            "scope_key": self.scope_key,
            "rationale": self.rationale,
            "status": self.status,
            "created_at_ms": self.created_at_ms,
        }


@dataclass(frozen=True)
class HeldForgetRow:
    """A forget held for review whose record still stands (``pending_forgets``, status ``pending``).

    ``record_status`` is the record's status now (``active`` or ``superseded``); ``title`` its title.
    ``requested_by`` is the requesting author (``{"author": "agent", "identity": ...}``)."""

    realm: str
    forget_id: str
    memory_id: str
    scope_kind: str
    scope_key: str
    content_hash: str
    requested_by: dict[str, Any]
    reason: str
    created_at_ms: int
    title: str
    record_status: str

    def to_json(self) -> dict[str, Any]:
        return {
            "realm": self.realm,
            "forget_id": self.forget_id,
            "memory_id": self.memory_id,
            "scope_kind": self.scope_kind,
            "scope_key": self.scope_key,
            "title": self.title,
            "record_status": self.record_status,
            "content_hash": self.content_hash,
            "requested_by": self.requested_by,
            "reason": self.reason,
            "created_at_ms": self.created_at_ms,
        }


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
class DreamRunRow:
    """A durable ``dream_runs`` row: partition, timestamps, committed-op count and saved detail (JSON)."""

    realm: str
    run_id: str
    partition: str
    started_at_ms: int
    completed_at_ms: int
    ops_committed: int
    detail: Any

    def to_json(self) -> dict[str, Any]:
        return {
            "realm": self.realm,
            "run_id": self.run_id,
            "partition": self.partition,
            "started_at_ms": self.started_at_ms,
            "completed_at_ms": self.completed_at_ms,
            "ops_committed": self.ops_committed,
            "detail": self.detail,
        }


@dataclass(frozen=True)
class AuditVerdictRow:
    """An open usage-audit verdict (``load_bearing`` | ``dead_weight`` | ``unknown``) awaiting an operator."""

    realm: str
    run_id: str
    record_id: str
    verdict: str
    rationale: str | None
    created_at_ms: int

    def to_json(self) -> dict[str, Any]:
        return {
            "realm": self.realm,
            "run_id": self.run_id,
            "record_id": self.record_id,
            "verdict": self.verdict,
            "rationale": self.rationale,
            "created_at_ms": self.created_at_ms,
        }


@dataclass(frozen=True)
class ScopeOverviewRow:
    """One scope of a realm: record counts by status and body bytes.

    ``counts`` maps status -> number of records; ``body_bytes`` is the UTF-8 size
    of their bodies; ``floor_records``/``floor_bytes`` are what the retention floors
    count (non-tombstoned rows; bytes of title + description + body).
    ``quarantined_*`` are the parts of those figures that come from records holding
    quarantined content (quarantined, or tombstoned and ever quarantined), so a
    caller without ``memory.quarantine.review`` can be shown the rest only.
    ``trust_counts`` maps trust tier -> number of records (the same records as
    ``counts``), ``quarantined_trust_counts`` its quarantined-content part; a store
    that leaves them empty shows no trust figures.
    """

    realm: str
    scope_kind: str
    scope_key: str
    counts: Mapping[str, int]
    body_bytes: int
    floor_records: int
    floor_bytes: int
    quarantined_counts: Mapping[str, int] = field(default_factory=dict)
    quarantined_body_bytes: int = 0
    quarantined_floor_records: int = 0
    quarantined_floor_bytes: int = 0
    trust_counts: Mapping[str, int] = field(default_factory=dict)
    quarantined_trust_counts: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class StoreFloors:
    """Retention floors of a scope: ``records`` (count) and ``bytes``. Crossing them only warns."""

    records: int = DEFAULT_FLOOR_RECORDS
    bytes: int = DEFAULT_FLOOR_BYTES

    def to_json(self) -> dict[str, int]:
        return {"records": self.records, "bytes": self.bytes}


@dataclass(frozen=True)
class ProposalRow:
    """A pending (or held) mob/operator proposal: metadata only, the body withheld
    (``body_bytes`` stands in). ``tainted`` is the propose-time taint flag."""

    realm: str
    proposal_id: str
    scope_kind: str
    scope_key: str
    status: str
    created_at_ms: int
    author: Mapping[str, Any]
    kind: str | None
    title: str | None
    body_bytes: int
    tainted: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "realm": self.realm,
            "proposal_id": self.proposal_id,
            "scope_kind": self.scope_kind,
            "scope_key": self.scope_key,
            "status": self.status,
            "created_at_ms": self.created_at_ms,
            "author": dict(self.author),
            "kind": self.kind,
            "title": self.title,
            "body_bytes": self.body_bytes,
            "tainted": self.tainted,
        }


@dataclass(frozen=True)
class HarvestRow:
    """A pending exit-interview harvest: the identity, session key, cause and retirement time."""

    realm: str
    identity: str
    session_key: str | None
    cause: str
    retired_at_ms: int
    status: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


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

    def quarantined(self, realm: str, limit: int) -> list[RecordRow]:
        """Quarantined records (body-free), newest created first."""
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

    def audit_verdicts(self, realm: str, limit: int) -> list[AuditVerdictRow]:
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


_LIST_BASE = (
    "memory_id, scope_kind, scope_key, kind, title, description, tags, provenance, trust, status_kind, "
    "status_detail, supersedes, derived_from, working_set_rank, created_at_ms, updated_at_ms, usage_stats, "
    "ever_quarantined"
)
#: The largest time a store can hold (SQLite INTEGER / PostgreSQL BIGINT).
_MAX_STORED_MS = 2**63 - 1
#: The columns a text search looks in (a term matches when it occurs in any of them).
SEARCHED_COLUMNS = ("title", "description", "body", "tags")
_QCONTENT = "(status_kind = 'quarantined' OR (status_kind = 'tombstoned' AND ever_quarantined = 1))"


def _loads(text: Any, default: Any) -> Any:
    if text is None:
        return default
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return default


def _row(realm: str, row: Any, *, detail: bool = False) -> RecordRow:
    scope = Scope.from_storage(realm, row["scope_kind"], row["scope_key"])
    status = Status.from_storage(row["status_kind"], row["status_detail"])
    data: dict[str, Any] = {
        "id": row["memory_id"],
        "scope": scope.to_json(),
        "kind": row["kind"],
        "title": row["title"],
        "description": row["description"],
        "tags": _loads(row["tags"], []),
        "provenance": _loads(row["provenance"], {}),
        "trust": row["trust"],
        "status": status.to_json(),
    }
    if row["supersedes"] is not None:
        data["supersedes"] = row["supersedes"]
    data["derived_from"] = _loads(row["derived_from"], [])
    if row["working_set_rank"] is not None:
        data["working_set_rank"] = row["working_set_rank"]
    data["created_at_ms"] = row["created_at_ms"]
    data["updated_at_ms"] = row["updated_at_ms"]
    data["usage"] = UsageStats.from_json(_loads(row["usage_stats"], {})).to_json()
    data["ever_quarantined"] = bool(row["ever_quarantined"])
    data["body_bytes"] = int(row["body_bytes"] or 0)
    return RecordRow(
        realm=realm,
        memory_id=row["memory_id"],
        updated_at_ms=row["updated_at_ms"],
        created_at_ms=row["created_at_ms"],
        scope_kind=scope.kind.value,
        scope_key=scope.key,
        status=status.kind.value,
        status_detail=status.detail,
        ever_quarantined=bool(row["ever_quarantined"]),
        supersedes=row["supersedes"],
        body_bytes=int(row["body_bytes"] or 0),
        data=data,
        body=row["body"] if detail else None,
        content_hash=row["content_hash"] if detail else None,
    )


def _injection(realm: str, row: Sequence[Any]) -> InjectionLedgerRow:
    return InjectionLedgerRow(realm, row[0], row[1], row[2], row[3], row[4], row[5])


_INJ_COLS = "injection_id, record_id, identity, session_key, surface, at_ms"


class SqlPanelStore(PanelStoreDefaults):
    """:class:`MemoryPanelStore` over an agent-memory store that serves SQL read snapshots.

    ``store`` needs ``list_realms()`` and ``read(realm)``: a context manager yielding a
    read-only connection of one realm (plain table names see only that realm; rows
    readable by index and by column name), one snapshot per block. The queries are
    the same on every backend; :attr:`dialect` supplies the few spellings that differ.
    Use :class:`SqlitePanelStore` or :class:`PostgresPanelStore`.
    """

    dialect: Dialect = SQLITE

    def __init__(self, store: Any, floors: StoreFloors | None = None) -> None:
        self.store = store
        self._floors = floors or StoreFloors()
        d = self.dialect
        self._list_cols = f"{_LIST_BASE}, {d.octets.format('body')} AS body_bytes"
        self._detail_cols = self._list_cols + ", body, content_hash"

    # ---------------------------------------------------------------- realms

    def list_realms(self) -> list[str]:
        return list(self.store.list_realms())

    def _query(self, realm: str, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self.store.read(realm) as conn:
            self._prepare(conn)
            return self.dialect.execute(conn, sql, params).fetchall()

    def _prepare(self, conn: Any) -> None:
        """Hook run on each read connection before a query (SQLite registers its lowercase function)."""

    def _lower(self, column: str) -> str:
        """A SQL expression lowercasing ``column`` (Unicode letters included)."""
        return f"lower({column})"

    def _term_clause(self, term: str) -> tuple[str, list[Any]]:
        """SQL true when ``term`` (already lowercased) occurs in one of :data:`SEARCHED_COLUMNS`."""
        parts = [f"instr({self._lower(col)}, ?) > 0" for col in SEARCHED_COLUMNS]
        return "(" + " OR ".join(parts) + ")", [term] * len(SEARCHED_COLUMNS)

    # ---------------------------------------------------------------- records

    def _after_clause(self, after: Cursor) -> tuple[str, list[Any]]:
        """The keyset condition "strictly after ``after``" in listing order."""
        c = self.dialect.collate
        return (
            f"(updated_at_ms < ? OR (updated_at_ms = ? AND memory_id{c} < ?))",
            [after.updated_at_ms, after.updated_at_ms, after.memory_id],
        )

    def records_page(
        self, realm: str, filters: RecordFilters, after: Cursor | None, limit: int
    ) -> SourcePage[RecordRow]:
        """See :meth:`MemoryPanelStore.records_page`. Fetches ``limit + 1`` rows to know whether more follow."""
        c = self.dialect.collate
        where: list[str] = []
        params: list[Any] = []
        if filters.scope_kind is not None:
            where.append("scope_kind = ?")
            params.append(filters.scope_kind)
        if filters.scope_key is not None:
            where.append("scope_key = ?")
            params.append(filters.scope_key)
        if filters.status is not None:
            where.append("status_kind = ?")
            params.append(filters.status)
        for term in filters.terms:
            clause, values = self._term_clause(term)
            where.append(clause)
            params += values
        # A stored time fits a signed 64-bit integer, so a cursor beyond it is before every row.
        if after is not None and after.updated_at_ms <= _MAX_STORED_MS:
            clause, values = self._after_clause(after)
            where.append(clause)
            params += values
        sql = f"SELECT {self._list_cols} FROM records"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += f" ORDER BY updated_at_ms DESC, memory_id{c} DESC LIMIT ?"
        params.append(limit + 1)
        rows = [_row(realm, r) for r in self._query(realm, sql, params)]
        more = len(rows) > limit
        rows = rows[:limit]
        nxt = Cursor(rows[-1].updated_at_ms, rows[-1].memory_id) if more and rows else None
        return SourcePage(rows, nxt)

    def record(self, realm: str, memory_id: str) -> RecordRow | None:
        rows = self._query(realm, f"SELECT {self._detail_cols} FROM records WHERE memory_id = ?", (memory_id,))
        return _row(realm, rows[0], detail=True) if rows else None

    def records_by_ids(self, realm: str, ids: Iterable[str]) -> dict[str, RecordRow]:
        wanted = sorted(set(ids))
        out: dict[str, RecordRow] = {}
        if not wanted:
            return out
        with self.store.read(realm) as conn:
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                marks = ", ".join("?" for _ in chunk)
                sql = self.dialect.sql(f"SELECT {self._list_cols} FROM records WHERE memory_id IN ({marks})")
                for r in conn.execute(sql, tuple(chunk)).fetchall():
                    row = _row(realm, r)
                    out[row.memory_id] = row
        return out

    def claimants(self, realm: str, memory_id: str, limit: int) -> list[RecordRow]:
        c = self.dialect.collate
        rows = self._query(
            realm,
            f"SELECT {self._list_cols} FROM records WHERE supersedes = ? ORDER BY created_at_ms, memory_id{c} LIMIT ?",
            (memory_id, limit),
        )
        return [_row(realm, r) for r in rows]

    def record_injections(self, realm: str, memory_id: str, limit: int) -> list[InjectionLedgerRow]:
        rows = self._query(
            realm,
            f"SELECT {_INJ_COLS} FROM injections WHERE record_id = ? ORDER BY at_ms DESC, injection_id DESC LIMIT ?",
            (memory_id, limit),
        )
        return [_injection(realm, r) for r in rows]

    def quarantined(self, realm: str, limit: int) -> list[RecordRow]:
        c = self.dialect.collate
        rows = self._query(
            realm,
            f"SELECT {self._list_cols} FROM records WHERE status_kind = 'quarantined' "
            f"ORDER BY created_at_ms DESC, memory_id{c} DESC LIMIT ?",
            (limit,),
        )
        return [_row(realm, r) for r in rows]

    # ---------------------------------------------------------------- review side tables

    def pending_promotions(self, realm: str, limit: int) -> list[PromotionRow]:
        c = self.dialect.collate
        rows = self._query(
            realm,
            "SELECT pending_id, record_id, scope_kind, scope_key, rationale, status, created_at_ms "
            f"FROM pending_promotions WHERE status = 'pending' ORDER BY created_at_ms DESC, pending_id{c} DESC LIMIT ?",
            (limit,),
        )
        return [PromotionRow(realm, *tuple(r)) for r in rows]

    _HELD_SELECT = (
        "SELECT f.forget_id, f.memory_id, f.scope_kind, f.scope_key, f.content_hash, f.author, f.reason, "
        "f.created_at_ms, r.title, r.status_kind FROM pending_forgets f JOIN records r ON r.memory_id = f.memory_id "
        "WHERE f.status = 'pending' AND r.status_kind <> 'tombstoned' "
    )

    def held_forgets(self, realm: str, limit: int) -> list[HeldForgetRow]:
        c = self.dialect.collate
        rows = self._query(
            realm, self._HELD_SELECT + f"ORDER BY f.created_at_ms DESC, f.forget_id{c} DESC LIMIT ?", (limit,)
        )
        return [self._held(realm, r) for r in rows]

    def held_forget(self, realm: str, memory_id: str) -> HeldForgetRow | None:
        if self.dialect.refuses_nul and "\x00" in memory_id:
            return None
        rows = self._query(
            realm, self._HELD_SELECT + "AND f.memory_id = ? ORDER BY f.created_at_ms, f.forget_id LIMIT 1", (memory_id,)
        )
        return self._held(realm, rows[0]) if rows else None

    @staticmethod
    def _held(realm: str, r: Any) -> HeldForgetRow:
        return HeldForgetRow(realm, r[0], r[1], r[2], r[3], r[4], _loads(r[5], {}), r[6], r[7], r[8], r[9])

    def dream_summaries(self, realm: str, limit: int) -> list[DreamSummary]:
        rows = self._query(
            realm,
            "SELECT op_kind, memory_id, detail, applied_at_ms FROM audit "
            f"WHERE {self.dialect.steward_audit} ORDER BY audit_id DESC LIMIT ?",
            (DREAM_AUDIT_ROWS,),
        )
        parsed = []
        for op_kind, memory_id, detail_text, at_ms in rows:
            detail = _loads(detail_text, {})
            author = detail.get("author") if isinstance(detail, dict) else None
            run_id = author.get("run_id") if isinstance(author, dict) else None
            if not isinstance(run_id, str):
                continue
            parsed.append((run_id, op_kind, memory_id, detail, at_ms))
        return summarise_dreams(realm, parsed)[:limit]

    def dream_runs(self, realm: str, limit: int) -> list[DreamRunRow]:
        c = self.dialect.collate
        rows = self._query(
            realm,
            "SELECT run_id, partition_label, started_at_ms, completed_at_ms, ops_committed, detail FROM dream_runs "
            f"ORDER BY completed_at_ms DESC, run_id{c} DESC LIMIT ?",
            (limit,),
        )
        return [DreamRunRow(realm, r[0], r[1], r[2], r[3], r[4], _loads(r[5], r[5])) for r in rows]

    def audit_verdicts(self, realm: str, limit: int) -> list[AuditVerdictRow]:
        c = self.dialect.collate
        rows = self._query(
            realm,
            "SELECT run_id, record_id, verdict, rationale, created_at_ms FROM dream_audit_verdicts "
            f"WHERE resolved_at_ms IS NULL ORDER BY created_at_ms DESC, run_id{c} DESC, record_id{c} DESC LIMIT ?",
            (limit,),
        )
        return [AuditVerdictRow(realm, *tuple(r)) for r in rows]

    def proposals(self, realm: str, limit: int) -> list[ProposalRow]:
        c = self.dialect.collate
        rows = self._query(
            realm,
            "SELECT proposal_id, scope_kind, scope_key, status, created_at_ms, author, record, taint FROM proposals "
            f"WHERE status IN ('pending', 'held') ORDER BY created_at_ms DESC, proposal_id{c} DESC LIMIT ?",
            (limit,),
        )
        out = []
        for r in rows:
            record = _loads(r[6], {})
            record = record if isinstance(record, dict) else {}
            body = record.get("body")
            author = _loads(r[5], {})
            out.append(
                ProposalRow(
                    realm=realm,
                    proposal_id=r[0],
                    scope_kind=r[1],
                    scope_key=r[2],
                    status=r[3],
                    created_at_ms=r[4],
                    author=author if isinstance(author, dict) else {},
                    kind=record.get("kind") if isinstance(record.get("kind"), str) else None,
                    title=record.get("title") if isinstance(record.get("title"), str) else None,
                    body_bytes=len(body.encode("utf-8", "surrogatepass")) if isinstance(body, str) else 0,
                    tainted=r[7] is not None,
                )
            )
        return out

    def injections(self, realm: str, limit: int) -> list[InjectionLedgerRow]:
        rows = self._query(
            realm, f"SELECT {_INJ_COLS} FROM injections ORDER BY at_ms DESC, injection_id DESC LIMIT ?", (limit,)
        )
        return [_injection(realm, r) for r in rows]

    def harvests(self, realm: str, limit: int) -> list[HarvestRow]:
        c = self.dialect.collate
        rows = self._query(
            realm,
            "SELECT identity, session_key, cause, retired_at_ms, status FROM pending_harvests "
            f"WHERE status = 'pending' ORDER BY retired_at_ms DESC, identity{c} DESC LIMIT ?",
            (limit,),
        )
        return [HarvestRow(realm, *tuple(r)) for r in rows]

    # ---------------------------------------------------------------- overview

    def scope_overview(self, realm: str) -> list[ScopeOverviewRow]:
        c, octets = self.dialect.collate, self.dialect.octets
        all_bytes = " + ".join(octets.format(col) for col in ("title", "description", "body"))
        rows = self._query(
            realm,
            f"SELECT scope_kind, scope_key, status_kind, trust, {_QCONTENT} AS q, COUNT(*), "
            f"COALESCE(SUM({octets.format('body')}), 0), COALESCE(SUM({all_bytes}), 0) "
            f"FROM records GROUP BY scope_kind, scope_key, status_kind, trust, q ORDER BY scope_kind{c}, scope_key{c}",
        )
        acc: dict[tuple[str, str], dict[str, Any]] = {}
        for kind, key, status, trust, q, count, body_bytes, all_bytes_sum in rows:
            a = acc.setdefault(
                (kind, key),
                {"counts": {}, "trust": {}, "body": 0, "fr": 0, "fb": 0,
                 "qcounts": {}, "qtrust": {}, "qbody": 0, "qfr": 0, "qfb": 0},
            )
            count, body_bytes, all_bytes_sum = int(count), int(body_bytes), int(all_bytes_sum)
            a["counts"][status] = a["counts"].get(status, 0) + count
            a["trust"][trust] = a["trust"].get(trust, 0) + count
            a["body"] += body_bytes
            live = status != "tombstoned"
            if live:
                a["fr"] += count
                a["fb"] += all_bytes_sum
            if q:
                a["qcounts"][status] = a["qcounts"].get(status, 0) + count
                a["qtrust"][trust] = a["qtrust"].get(trust, 0) + count
                a["qbody"] += body_bytes
                if live:
                    a["qfr"] += count
                    a["qfb"] += all_bytes_sum
        return [
            ScopeOverviewRow(
                realm, kind, key, a["counts"], a["body"], a["fr"], a["fb"], a["qcounts"], a["qbody"], a["qfr"], a["qfb"],
                a["trust"], a["qtrust"],
            )
            for (kind, key), a in acc.items()
        ]

    def floors(self) -> StoreFloors:
        return self._floors

    # ---------------------------------------------------------------- dream-history facts

    def holds_quarantine_evidence(self, realm: str) -> bool:
        """Whether any record holds quarantined content (quarantined, or tombstoned and ever quarantined)."""
        return bool(self._query(realm, f"SELECT 1 FROM records WHERE {_QCONTENT} LIMIT 1"))

    def realm_scopes(self, realm: str) -> frozenset[tuple[str, str]]:
        """Scopes of the realm's records, proposals and gated promotions, and its harvested identities."""
        rows = self._query(
            realm,
            "SELECT scope_kind, scope_key FROM records "
            "UNION SELECT scope_kind, scope_key FROM proposals "
            "UNION SELECT scope_kind, scope_key FROM pending_promotions "
            "UNION SELECT 'identity', identity FROM pending_harvests",
        )
        return frozenset((r[0], "" if r[0] == "realm" else r[1]) for r in rows)

    def proposal_scopes(self, realm: str, proposal_ids: Iterable[str]) -> dict[str, tuple[str, str]]:
        wanted = sorted(set(proposal_ids))
        if not wanted:
            return {}
        marks = ", ".join("?" for _ in wanted)
        rows = self._query(
            realm, f"SELECT proposal_id, scope_kind, scope_key FROM proposals WHERE proposal_id IN ({marks})", wanted
        )
        return {r[0]: (r[1], r[2]) for r in rows}


class SqlitePanelStore(SqlPanelStore):
    """:class:`MemoryPanelStore` over the bundled SQLite agent-memory store
    (:class:`~meta_memory.agent_memory.store.sqlite.SqliteAgentMemoryStore`).

    ``store.read(realm)`` yields a read-only ``sqlite3.Connection`` with ``Row`` rows
    (one WAL snapshot per block). Realms that have no database file are never opened
    (opening would create one). The record listing pages by the keyset
    ``(updated_at_ms DESC, memory_id DESC)`` (``BINARY`` collation: code point order).
    """

    dialect = SQLITE

    def _prepare(self, conn: Any) -> None:
        # SQLite's own lower() folds ASCII letters only; search lowercases like Python (and PostgreSQL).
        conn.create_function("mm_lower", 1, _lower_text, deterministic=True)

    def _lower(self, column: str) -> str:
        return f"mm_lower({column})"


def _lower_text(value: Any) -> str | None:
    return value.lower() if isinstance(value, str) else None


class PostgresPanelStore(SqlPanelStore):
    """:class:`MemoryPanelStore` over the PostgreSQL agent-memory store
    (:class:`~meta_memory.agent_memory.store.postgres.PostgresAgentMemoryStore`).

    ``store.read(realm)`` yields a pooled connection inside one ``REPEATABLE READ
    READ ONLY`` transaction whose plain table names are that realm's views, so
    every query filters on the realm in SQL. Results equal :class:`SqlitePanelStore`'s
    for the same rows: text keys sort and compare with ``COLLATE "C"`` (code point
    order, the cursor's order) whatever the server locale, and byte sizes are
    ``octet_length``. Cursors are plain ``<updated_at_ms>:<memory_id>`` keys, so a
    cursor issued by one gateway pages on any other gateway of the same database.

    PostgreSQL text cannot hold NUL; no stored id contains one, so an id with a NUL
    matches nothing, and a cursor id ``p + "\\x00" + ...`` is answered as "ids
    ``<= p``" (the same rows SQLite's code point comparison selects).
    """

    dialect = POSTGRES

    def _after_clause(self, after: Cursor) -> tuple[str, list[Any]]:
        head, nul, _ = after.memory_id.partition("\x00")
        if not nul:
            return super()._after_clause(after)
        c = self.dialect.collate
        return (
            f"(updated_at_ms < ? OR (updated_at_ms = ? AND memory_id{c} <= ?))",
            [after.updated_at_ms, after.updated_at_ms, head],
        )

    def _term_clause(self, term: str) -> tuple[str, list[Any]]:
        parts = [f"strpos({self._lower(col)}, ?) > 0" for col in SEARCHED_COLUMNS]
        return "(" + " OR ".join(parts) + ")", [term] * len(SEARCHED_COLUMNS)

    def record(self, realm: str, memory_id: str) -> RecordRow | None:
        return None if "\x00" in memory_id else super().record(realm, memory_id)

    def records_by_ids(self, realm: str, ids: Iterable[str]) -> dict[str, RecordRow]:
        return super().records_by_ids(realm, [i for i in ids if "\x00" not in i])

    def claimants(self, realm: str, memory_id: str, limit: int) -> list[RecordRow]:
        return [] if "\x00" in memory_id else super().claimants(realm, memory_id, limit)

    def record_injections(self, realm: str, memory_id: str, limit: int) -> list[InjectionLedgerRow]:
        return [] if "\x00" in memory_id else super().record_injections(realm, memory_id, limit)

    def proposal_scopes(self, realm: str, proposal_ids: Iterable[str]) -> dict[str, tuple[str, str]]:
        return super().proposal_scopes(realm, [i for i in proposal_ids if "\x00" not in i])
