"""What the SQL store backends share: row encoding, batch application, staging and scope reads.

:class:`SqlAgentMemoryStore` implements the parts of
:class:`~meta_memory.agent_memory.store.base.AgentMemoryStore` that are the
same on SQLite and PostgreSQL apart from the SQL text (reference §2B tables
and write paths, §2D validator):

- applying a batch inside an open write transaction: validate against live
  rows with the one validator
  (:func:`~meta_memory.agent_memory.validator.plan_batch`), write the
  records, keep the full-text index in step (a record has an index row iff it
  is active), write one audit row per op;
- the active-record reads ``recent``, ``manifest``, ``list_active`` and the metadata filters;
- ``erase`` and the tombstone-retention reads.

A backend supplies the two transaction openers behind :meth:`transaction` and :meth:`snapshot`
(:mod:`.tx` handles over :mod:`.tables`) and a few row primitives (insert rows into a realm's table,
insert/update a record, index or unindex it, the SQL selecting one scope's active records), each
typed with its driver's connection (the class is generic over it, bound to
:class:`~meta_memory.agent_memory.store.tables.Connection`).
"""

from __future__ import annotations

import contextlib
import copy
import json
import threading
from abc import abstractmethod
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar, Generic, TypeVar, cast

from meta_memory.agent_memory.batch import BatchReceipt, GateVerdict, StagedBatch
from meta_memory.agent_memory.erase import (
    MAX_ERASE_RECORDS,
    ErasedRecord,
    ErasedText,
    EraseReport,
    Erasure,
    FieldIndex,
    content_closure,
    erased_texts,
    field_hashes,
    scrub_dream_detail,
    shown_texts,
)
from meta_memory.agent_memory.fields import canonical_metadata
from meta_memory.agent_memory.filters import FilterNode, compile_filter
from meta_memory.agent_memory.hashing import (
    ErasureHashes,
    erasure_hashes,
    fold_compat,
    fold_skeleton,
    mint_token,
)
from meta_memory.agent_memory.model import (
    Kind,
    MemoryRecord,
    NewMemoryRecord,
    Provenance,
    RecordMeta,
    RecordView,
    Scope,
    ScopeKind,
    Status,
    StatusKind,
    TrustTier,
    UsageStats,
)
from meta_memory.agent_memory.secrets import forget_keys
from meta_memory.agent_memory.store.base import (
    DEFAULT_MANIFEST_K,
    DEFAULT_SCOPE_FLOOR_BYTES,
    DEFAULT_SCOPE_FLOOR_RECORDS,
    MAX_MANIFEST_K,
    AgentMemoryStore,
    InjectionRow,
    ManifestTier,
    WriteGate,
    dumps,
)
from meta_memory.agent_memory.store.dialect import Dialect
from meta_memory.agent_memory.store.shared_ddl import ERASURE_LOOKUP_HASH, ERASURE_SKELETON_HASH
from meta_memory.agent_memory.store.tables import AUDIT_INSERT_COLUMNS, Connection, Sql
from meta_memory.agent_memory.store.tx import ReadTx, WriteTx
from meta_memory.agent_memory.validator import AuditEntry, normalize_record, plan_batch
from meta_memory.errors import AgentMemoryError, RecordNotFound
from meta_memory.identity import logical_identity
from meta_memory.limits import DEFAULT_IDENTITY_RECORD_LIMIT

__all__ = [
    "RECORD_COLUMNS",
    "VIEW_COLUMNS",
    "INSERT_COLUMNS",
    "INJECTION_COLUMNS",
    "STATE_ASSIGNMENTS",
    "STAGE_GC_MAX_AGE_MS",
    "SqlAgentMemoryStore",
    "SqlRecordReader",
    "dumps",
    "has_nul",
    "injection_values",
    "insert_values",
    "row_to_record",
    "row_to_view",
    "state_values",
]

#: The backend's driver connection type (``sqlite3.Connection``, psycopg's ``Connection``).
C = TypeVar("C", bound=Connection)

#: Staged batches older than this (24 h, ms) are collected at a realm's first use, unless a pending
#: promotion references them.
STAGE_GC_MAX_AGE_MS = 24 * 60 * 60 * 1000

#: The ``records`` columns a :class:`MemoryRecord` is read from (see :func:`row_to_record`).
RECORD_COLUMNS = (
    "rid, memory_id, scope_kind, scope_key, kind, title, description, body, tags, provenance, trust, "
    "status_kind, status_detail, supersedes, derived_from, working_set_rank, rank_set_at_ms, "
    "created_at_ms, updated_at_ms, usage_stats, tombstoned_at_ms, ever_quarantined, expires_at_ms, metadata"
)
#: The columns of a light :class:`RecordView` over ``records r`` (see :func:`row_to_view`).
VIEW_COLUMNS = "r.rid, r.memory_id, r.title, r.description, r.body, r.tags, r.created_at_ms, r.updated_at_ms"
#: The columns :func:`insert_values` fills, in order.
INSERT_COLUMNS = (
    "memory_id, scope_kind, scope_key, kind, title, description, body, tags, provenance, trust, status_kind, "
    "status_detail, supersedes, derived_from, working_set_rank, rank_set_at_ms, content_hash, created_at_ms, "
    "updated_at_ms, usage_stats, tombstoned_at_ms, ever_quarantined, expires_at_ms, metadata"
)
#: The ``SET`` list of a state update (``?`` placeholders), filled by :func:`state_values`.
STATE_ASSIGNMENTS = (
    "trust = ?, status_kind = ?, status_detail = ?, working_set_rank = ?, rank_set_at_ms = ?, "
    "updated_at_ms = ?, tombstoned_at_ms = ?, ever_quarantined = ?"
)

#: The ``injections`` columns :func:`injection_values` fills, in order.
INJECTION_COLUMNS = "record_id, identity, session_key, surface, at_ms"

# The tails of the active-record reads, after "<active records of the scope>" (``?`` placeholders).
_NEWEST_FIRST = "ORDER BY updated_at_ms DESC, created_at_ms DESC, rid DESC"
_FULL_MANIFEST = (
    "ORDER BY (working_set_rank IS NULL) ASC, working_set_rank ASC, updated_at_ms DESC, created_at_ms DESC, rid DESC"
)
_RANKED = "AND working_set_rank IS NOT NULL ORDER BY working_set_rank ASC, updated_at_ms DESC, rid DESC LIMIT ?"
_RECENT_UNRANKED = f"AND (working_set_rank IS NULL OR updated_at_ms > COALESCE(rank_set_at_ms, 0)) {_NEWEST_FIRST} LIMIT ?"
_OLDEST_DUPLICATE = "AND content_hash = ? ORDER BY created_at_ms ASC, rid ASC LIMIT 1"


def has_nul(*values: Any) -> bool:
    """Whether any string, or any string in a tuple/list, among ``values`` holds a NUL character."""
    for v in values:
        if isinstance(v, str) and "\x00" in v:
            return True
        if isinstance(v, (tuple, list)) and any(isinstance(x, str) and "\x00" in x for x in v):
            return True
    return False


def _json_list(value: Any) -> list[Any]:
    if isinstance(value, str):
        decoded = json.loads(value or "[]")
        return list(decoded) if isinstance(decoded, list) else []
    return list(value or ())


def row_to_record(realm: str, row: Any) -> MemoryRecord:
    """The :class:`MemoryRecord` of a row holding :data:`RECORD_COLUMNS` (readable by column name)."""
    return MemoryRecord(
        id=row["memory_id"],
        scope=_scope_of(realm, row["scope_kind"], row["scope_key"]),
        kind=Kind(row["kind"]),
        title=row["title"],
        description=row["description"],
        body=row["body"],
        tags=_tuple_of(row["tags"]),
        provenance=_provenance_of(row["provenance"]),
        trust=TrustTier(row["trust"]),
        status=_status_of(row["status_kind"], row["status_detail"]),
        supersedes=row["supersedes"],
        derived_from=_tuple_of(row["derived_from"]),
        working_set_rank=row["working_set_rank"],
        rank_set_at_ms=row["rank_set_at_ms"],
        created_at_ms=row["created_at_ms"],
        updated_at_ms=row["updated_at_ms"],
        usage=_usage_of(row["usage_stats"] or "{}"),
        tombstoned_at_ms=row["tombstoned_at_ms"],
        ever_quarantined=bool(row["ever_quarantined"]),
        expires_at_ms=row["expires_at_ms"],
        metadata=_metadata_of(row["metadata"]),
    )


# Decoded column values kept by their stored text: each is a frozen value (no list or dict inside), so
# records may share one, and a bulk read repeats the same few (one scope, one author, fresh counters).
@lru_cache(maxsize=256)
def _scope_of(realm: str, kind: str, key: str) -> Scope:
    return Scope.from_storage(realm, kind, key)


@lru_cache(maxsize=256)
def _status_of(kind: str, detail: str | None) -> Status:
    return Status.from_storage(kind, detail)


def _tuple_of(value: Any) -> tuple[Any, ...]:
    """A JSON list column (``tags``, ``derived_from``) as a tuple (its text decoded once: :func:`_tags_of`)."""
    return _tags_of(value) if isinstance(value, str) else tuple(_json_list(value))


@lru_cache(maxsize=1024)
def _provenance_of(text: str) -> Provenance:
    return Provenance.from_json(json.loads(text))


@lru_cache(maxsize=4096)
def _usage_of(text: str) -> UsageStats:
    return UsageStats.from_json(json.loads(text))


@lru_cache(maxsize=1024)
def _metadata_json(text: str) -> dict[str, Any]:
    return dict(json.loads(text)) if text and text != "{}" else {}


def _metadata_of(text: str) -> dict[str, Any]:
    """The ``metadata`` column's object (a copy: records share the decoded text, never the dict)."""
    return copy.deepcopy(_metadata_json(text)) if text and text != "{}" else {}


@lru_cache(maxsize=4096)
def _tags_of(text: str) -> tuple[Any, ...]:
    """The tags of a ``tags`` column's JSON text; kept, as many records share their tags."""
    return tuple(_json_list(text))


def row_to_view(row: Any, term_fields: Mapping[str, int] | None = None) -> RecordView:
    """The :class:`RecordView` of a row holding :data:`VIEW_COLUMNS` (with the index's ``term_fields``, if any)."""
    tags = row["tags"]
    return RecordView(row["memory_id"], row["title"], row["description"], row["body"],
                      _tags_of(tags) if isinstance(tags, str) else tuple(_json_list(tags)),
                      row["created_at_ms"], row["updated_at_ms"], term_fields)


@lru_cache(maxsize=256)
def _encoded(value: Provenance | UsageStats) -> str:
    """The JSON text of a provenance or usage value. Both are frozen values and a bulk write repeats
    the same few (one author, fresh counters), so their encodings are kept."""
    return dumps(value.to_json())


#: ``id(value) -> (value, its JSON)`` of the values :func:`_encoded_json` saw last: a bulk write passes
#: the same provenance and usage objects for every record, and comparing by identity skips hashing
#: them (a dataclass's hash is computed field by field on every call). Holding the value keeps its id
#: from being reused.
_ENCODED_BY_ID: dict[int, tuple[object, str]] = {}
_ENCODED_BY_ID_SIZE = 64


def _encoded_json(value: Provenance | UsageStats) -> str:
    seen = _ENCODED_BY_ID.get(id(value))
    if seen is not None and seen[0] is value:
        return seen[1]
    try:
        text = _encoded(value)
    except TypeError:  # a value holding something unhashable: encode it every time
        return dumps(value.to_json())
    if len(_ENCODED_BY_ID) >= _ENCODED_BY_ID_SIZE:
        _ENCODED_BY_ID.clear()
    _ENCODED_BY_ID[id(value)] = (value, text)
    return text


def _encoded_list(values: tuple[str, ...]) -> str:
    return dumps(list(values)) if values else "[]"


def _encoded_details(audit: Sequence[AuditEntry]) -> list[str]:
    """The JSON text of each audit entry's detail; a detail object several entries share (the
    validator shares equal ones) is encoded once. The entries keep their objects alive, so ids are stable."""
    by_id: dict[int, str] = {}
    out: list[str] = []
    for entry in audit:
        text = by_id.get(id(entry.detail))
        if text is None:
            text = by_id[id(entry.detail)] = dumps(entry.detail)
        out.append(text)
    return out


def insert_values(rec: MemoryRecord) -> tuple[Any, ...]:
    """The values of :data:`INSERT_COLUMNS` for ``rec`` (each enum's text read from the member's value
    attribute: ``.value`` is a property, two Python calls at every read)."""
    kind, key = rec.scope.storage()
    return (
        rec.id,
        kind,
        key,
        rec.kind._value_,
        rec.title,
        rec.description,
        rec.body,
        _encoded_list(rec.tags),
        _encoded_json(rec.provenance),
        rec.trust._value_,
        rec.status.kind._value_,
        rec.status.detail,
        rec.supersedes,
        _encoded_list(rec.derived_from),
        rec.working_set_rank,
        rec.rank_set_at_ms,
        rec.content_hash,
        rec.created_at_ms,
        rec.updated_at_ms,
        _encoded_json(rec.usage),
        rec.tombstoned_at_ms,
        int(rec.ever_quarantined),
        rec.expires_at_ms,
        canonical_metadata(rec.metadata) if rec.metadata else "{}",
    )


def injection_values(rows: Sequence[InjectionRow]) -> list[tuple[Any, ...]]:
    """The values of :data:`INJECTION_COLUMNS` for each injection-ledger row."""
    return [(r.record_id, r.identity, r.session_key, r.surface, r.at_ms) for r in rows]


def state_values(rec: MemoryRecord) -> tuple[Any, ...]:
    """The values of :data:`STATE_ASSIGNMENTS` for ``rec``. Ops never change a stored record's
    content, scope or lineage; only its state."""
    return (
        rec.trust.value,
        rec.status.kind.value,
        rec.status.detail,
        rec.working_set_rank,
        rec.rank_set_at_ms,
        rec.updated_at_ms,
        rec.tombstoned_at_ms,
        int(rec.ever_quarantined),
    )


#: The validator's two record reads, after "<the realm's records> WHERE" (``?`` placeholders).
_BY_ID = "memory_id = ?"
#: Ids or hashes per erasure-register lookup.
_ERASURE_CHUNK = 500
_TOMBSTONED_SINCE = (
    "scope_kind = ? AND scope_key = ? AND content_hash = ? AND status_kind = 'tombstoned' "
    "AND tombstoned_at_ms >= ? LIMIT 1"
)


class SqlRecordReader:
    """The validator's :class:`~meta_memory.agent_memory.validator.RecordReader` over a connection of an
    open transaction of ``realm`` (either backend: the store supplies the SQL naming the realm's records)."""

    __slots__ = ("_store", "_conn", "realm")

    def __init__(self, store: SqlAgentMemoryStore[Any], conn: Connection, realm: str) -> None:
        self._store = store
        self._conn = conn
        self.realm = realm

    def get_record(self, memory_id: str) -> MemoryRecord | None:
        """The record ``memory_id`` (any status), or ``None`` (also for an id no stored text can hold)."""
        if self._store.refuses_nul and "\x00" in memory_id:
            return None
        sql, params = self._store._realm_records(self.realm, RECORD_COLUMNS, _BY_ID, (memory_id,))
        row = self._conn.execute(sql, params).fetchone()
        return row_to_record(self.realm, row) if row else None

    def get_records(self, ids: Collection[str]) -> dict[str, MemoryRecord]:
        """The records of ``ids`` that exist (any status), by id: a few ``IN`` lookups of the primary key."""
        wanted = sorted({i for i in ids if not (self._store.refuses_nul and "\x00" in i)})
        out: dict[str, MemoryRecord] = {}
        for first in range(0, len(wanted), _ERASURE_CHUNK):
            chunk = tuple(wanted[first:first + _ERASURE_CHUNK])
            where = f"memory_id IN ({', '.join('?' for _ in chunk)})"
            sql, params = self._store._realm_records(self.realm, RECORD_COLUMNS, where, chunk)
            for row in self._conn.execute(sql, params).fetchall():
                rec = row_to_record(self.realm, row)
                out[rec.id] = rec
        return out

    def tombstoned_since(self, scope: Scope, content_hash: str, since_ms: int) -> bool:
        """Whether a record of ``scope`` with ``content_hash`` was tombstoned at or after ``since_ms`` (epoch ms)."""
        kind, key = scope.storage()
        sql, params = self._store._realm_records(self.realm, "1", _TOMBSTONED_SINCE, (kind, key, content_hash, since_ms))
        return self._conn.execute(sql, params).fetchone() is not None

    def erasures_held(self) -> bool:
        """Whether the realm's erasure register holds any row: one seek, in the caller's transaction (the
        write transaction of a batch, so no erase can land between it and the batch's commit)."""
        sql, params = self._store._realm_rows(self.realm, "erasures", "1", "1 = 1 LIMIT 1", ())  # any row at all
        return self._conn.execute(sql, params).fetchone() is not None

    def erased(self, ids: Collection[str], content_hashes: Collection[str]) -> list[Erasure]:
        """The erasure-register rows naming any of ``ids`` or matching any of ``content_hashes`` (a few
        ``IN`` lookups, on the register's key and its match index).

        A row is looked up by its fold-2 hash, else its fold-1 hash, else its content hash (the finest of
        those it was registered with: ``shared_ddl.ERASURE_LOOKUP_HASH``), and by its fold-3 hash
        (``shared_ddl.ERASURE_SKELETON_HASH``): ``content_hashes`` holds the four hashes of each write
        (:func:`~meta_memory.agent_memory.hashing.erasure_hashes`), and content a row matches has that row's
        finest fold-2 lookup hash or its fold-3 hash among them, so these lookups find every row
        :meth:`~meta_memory.agent_memory.erase.Erasure.covers` may match."""
        out: dict[str, Erasure] = {}
        for column, wanted in (("memory_id", ids), (ERASURE_LOOKUP_HASH, content_hashes),
                               (ERASURE_SKELETON_HASH, content_hashes)):
            values = sorted({v for v in wanted if not (self._store.refuses_nul and "\x00" in v)})
            for first in range(0, len(values), _ERASURE_CHUNK):
                chunk = tuple(values[first:first + _ERASURE_CHUNK])
                sql, params = self._store._realm_rows(
                    self.realm, "erasures",
                    "memory_id, scope_kind, scope_key, content_hash, folded_hash, casefolded_hash, skeleton_hash",
                    f"{column} IN ({', '.join('?' * len(chunk))})", chunk)
                for r in self._conn.execute(sql, params).fetchall():
                    out[r[0]] = Erasure(r[0], r[1], r[2], r[3], r[4], r[5], r[6])
        return list(out.values())

    def erased_texts(self, hashes: Collection[str]) -> list[ErasedText]:
        """The field-level erasure-register rows (``erasure_texts``) holding any of ``hashes`` (a write's
        :func:`~meta_memory.agent_memory.erase.field_hashes`): a few ``IN`` lookups on the table's key."""
        out: list[ErasedText] = []
        values = sorted({v for v in hashes if not (self._store.refuses_nul and "\x00" in v)})
        for first in range(0, len(values), _ERASURE_CHUNK):
            chunk = tuple(values[first:first + _ERASURE_CHUNK])
            sql, params = self._store._realm_rows(self.realm, "erasure_texts", "hash, scope_kind, scope_key, memory_id",
                                                  f"hash IN ({', '.join('?' * len(chunk))})", chunk)
            out += [ErasedText(r[0], r[1], r[2], r[3]) for r in self._conn.execute(sql, params).fetchall()]
        return out


@dataclass(frozen=True, slots=True)
class _ErasedProposal:
    """A proposal an erase takes: its id, status, target scope (JSON), content hashes (exact, folds 1, 2
    and 3: :func:`~meta_memory.agent_memory.hashing.erasure_hashes`; all ``""`` when unreadable), and
    the scope its erasure is registered under (the proposing agent's identity scope, else the target's)."""

    proposal_id: str
    status: str
    scope_json: dict[str, Any]
    hashes: ErasureHashes
    register_scope: tuple[str, str]
    #: the field-level hashes the erase registers for it (its body and description: ``erase.erased_texts``)
    texts: frozenset[str] = frozenset()


#: Every proposal status (an erase looks at decided proposals too: their rows still hold the content).
_PROPOSAL_STATUSES = ("pending", "held", "accepted", "rejected")


def _erasable_proposals(tx: WriteTx, closure: Sequence[MemoryRecord], identity: str | None) -> list[_ErasedProposal]:
    """The proposals an erase of ``closure`` takes: every proposal of ``identity`` (an identity erase), and
    any proposal holding erased content proposed from, or into, a scope that content was erased from."""
    # by fold-2 and fold-3 hash: a proposal whose text differs from an erased record's only in whitespace,
    # invisible characters, width, case or look-alike letters holds its content
    erased = {(r.scope.storage(), h) for r in closure for h in erasure_hashes(r.title, r.body, r.content_hash)[2:]}
    # and by field: a proposal showing, in any field, an erased body or description (``erase.field_hashes``)
    erased_fields = {(r.scope.storage(), h) for r in closure for h in field_hashes(erased_texts(r))}
    out: list[_ErasedProposal] = []
    for row in tx.proposals.listing(_PROPOSAL_STATUSES, MAX_ERASE_RECORDS):
        author = row.author
        proposer = author.get("identity") if author.get("author") == "agent" else None
        proposer_scope = ("identity", logical_identity(proposer)) if isinstance(proposer, str) and proposer else None
        record: NewMemoryRecord | None
        try:
            record = normalize_record(NewMemoryRecord.from_json(row.record, stored=True), stored=True)
            hashes = erasure_hashes(record.title, record.body)
            shown = field_hashes(shown_texts(record)) if erased_fields else set()
        except (ValueError, KeyError, TypeError):
            record, hashes, shown = None, ("", "", "", ""), set()  # an unreadable proposal goes only with its proposer's identity
        target = (row.scope_kind, row.scope_key)
        own = identity is not None and proposer_scope == ("identity", identity)
        scopes = (target, *((proposer_scope,) if proposer_scope is not None else ()))
        same = bool(hashes[0]) and any(any((s, folded) in erased for folded in hashes[2:])
                                       or any((s, h) in erased_fields for h in shown) for s in scopes)
        if own or same:
            scope_json = Scope.from_storage(tx.realm, row.scope_kind, row.scope_key).to_json()
            registered = frozenset(field_hashes(erased_texts(record))) if record is not None else frozenset()
            out.append(_ErasedProposal(row.proposal_id, row.status, scope_json, hashes, proposer_scope or target,
                                       registered))
    return out


class RankingCounts:
    """A thread-safe count, per ``degraded_reason`` label, of the candidate rankings a store answered without
    proof that they hold the best rows (what :meth:`SqlAgentMemoryStore.ranking_stats` reports); the
    ``reasons`` given are reported from 0."""

    def __init__(self, *reasons: str) -> None:
        self._lock = threading.Lock()
        self._counts = dict.fromkeys(reasons, 0)

    def add(self, reason: str) -> None:
        with self._lock:
            self._counts[reason] = self._counts.get(reason, 0) + 1

    def stats(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)


class SqlAgentMemoryStore(AgentMemoryStore, Generic[C]):
    """The backend-neutral half of a SQL agent-memory store (see the module docstring).

    Subclasses implement the row primitives below with their own SQL; every one
    runs on the connection of an open write transaction (``conn``) of realm
    ``realm`` unless said otherwise. They set ``rankings`` (a :class:`RankingCounts`) when they open.
    """

    rankings: RankingCounts

    #: Most rows one identity scope may hold, any status (``[agent_memory] identity_record_limit``); a batch
    #: that would leave more is refused whole (:meth:`_check_record_limit`).
    identity_record_limit: int = DEFAULT_IDENTITY_RECORD_LIMIT

    def ranking_stats(self) -> dict[str, int]:
        """See :meth:`AgentMemoryStore.ranking_stats` (the subclass says where it counts)."""
        return self.rankings.stats()

    # ----------------------------------------------------------------- transactions

    @abstractmethod
    def _write_conn(self, realm: str) -> contextlib.AbstractContextManager[C]:
        """The connection of one write transaction on realm ``realm`` (a validated name) holding its
        write lock, plain table names reading that realm only; commits when the block ends, rolls back
        on anything raised (backend errors become ``AgentMemoryError("io", ...)``)."""

    @abstractmethod
    def _snapshot_conn(self, realm: str) -> contextlib.AbstractContextManager[C]:
        """The connection of one read-only snapshot of realm ``realm`` (no write lock), plain table
        names reading that realm only."""

    @contextlib.contextmanager
    def transaction(self, realm: str) -> Iterator[WriteTx]:
        """See :meth:`AgentMemoryStore.transaction`."""
        name = self._realm_name(realm)
        with self._write_conn(name) as conn:
            yield WriteTx(self, Sql(conn, self.dialect), name)

    @contextlib.contextmanager
    def snapshot(self, realm: str) -> Iterator[ReadTx]:
        """See :meth:`AgentMemoryStore.snapshot`."""
        name = self._realm_name(realm)
        with self._snapshot_conn(name) as conn:
            yield ReadTx(self, Sql(conn, self.dialect), name)

    # ----------------------------------------------------------------- row primitives

    def _reader(self, conn: C, realm: str) -> SqlRecordReader:
        return SqlRecordReader(self, conn, realm)

    @abstractmethod
    def _realm_records(
        self, realm: str, columns: str, where: str, params: tuple[Any, ...]
    ) -> tuple[str, tuple[Any, ...]]:
        """The backend's statement ``SELECT <columns> FROM <realm's records> WHERE <where>`` (``where`` written
        with ``?`` placeholders bound to ``params``) and its parameters, for any connection of ``realm``."""

    @abstractmethod
    def _realm_rows(
        self, realm: str, table: str, columns: str, where: str, params: tuple[Any, ...]
    ) -> tuple[str, tuple[Any, ...]]:
        """As :meth:`_realm_records`, for any of the realm's tables (``table``)."""

    @abstractmethod
    def _insert_record(self, conn: C, realm: str, rec: MemoryRecord) -> int:
        """Insert ``rec`` (:func:`insert_values`); returns its row id."""

    def _write_new_records(self, conn: C, realm: str, recs: Sequence[MemoryRecord]) -> None:
        """Insert ``recs`` (new records, in order) and index the active ones: each inserted, then indexed
        if active, one after the other. A backend may write them together, to the same rows."""
        for rec in recs:
            rid = self._insert_record(conn, realm, rec)
            if rec.status.is_active:
                self._index_record(conn, realm, rid, rec)

    @abstractmethod
    def _update_record(self, conn: C, realm: str, rec: MemoryRecord) -> int:
        """Write ``rec``'s state (:func:`state_values`) over the stored row; returns its row id."""

    @abstractmethod
    def _index_record(self, conn: C, realm: str, rid: int, rec: MemoryRecord) -> None:
        """Add the full-text row of a record that became active."""

    @abstractmethod
    def _unindex_record(self, conn: C, realm: str, rid: int) -> None:
        """Remove the index rows (full text and any other) of a record that stopped being active."""

    @abstractmethod
    def _insert_rows(self, conn: C, realm: str, table: str, columns: str, rows: Sequence[tuple[Any, ...]]) -> None:
        """Insert ``rows`` (values of ``columns``, a comma-separated list) into ``realm``'s ``table``."""

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

    @abstractmethod
    def _scope_footprint(self, conn: C, scope: Scope, limit: int) -> tuple[int, int]:
        """``(records, UTF-8 bytes of title + description + body)`` over at most ``limit`` non-tombstoned
        records of ``scope`` (a bounded read: the count stops at ``limit``)."""

    @abstractmethod
    def _active_sql(self, realm: str, scope: Scope, tail: str, params: Sequence[Any]) -> tuple[str, tuple[Any, ...]]:
        """The backend's statement ``SELECT <RECORD_COLUMNS> FROM <realm's records> WHERE <scope> AND
        status_kind = 'active' <tail>`` and its parameters; ``tail`` is written with ``?`` placeholders
        bound to ``params``."""

    @abstractmethod
    def _read_all(self, realm: str, statements: Sequence[tuple[str, tuple[Any, ...]]]) -> list[list[Any]]:
        """The rows of each statement (from :meth:`_active_sql`), all read from one snapshot of ``realm``
        (not inside a write transaction)."""

    # ----------------------------------------------------------------- batches

    def _apply_in_tx(self, conn: C, batch: StagedBatch, gate: WriteGate | None, token: str,
                     vetted: Collection[int] = (), verdict: GateVerdict | None = None) -> BatchReceipt:
        now = self.clock.now_ms()
        reason = batch.quarantine_reason(gate) if verdict is None else verdict.reason
        plan = plan_batch(batch, self._reader(conn, batch.realm), now_ms=now, quarantine_reason=reason,
                          vetted=vetted)
        planned: list[tuple[MemoryRecord, MemoryRecord | None]] = []
        for memory_id, rec in plan.records.items():
            if self.refuses_nul and has_nul(
                rec.id, rec.title, rec.description, rec.body, rec.tags, rec.supersedes, rec.derived_from
            ):
                raise AgentMemoryError("invalid_record", f"record '{memory_id}' contains a NUL character")
            planned.append((rec, plan.before.get(memory_id)))
        self._write_planned(conn, batch.realm, planned)
        self._check_record_limit(conn, batch.realm, planned)
        if plan.audit:
            details = _encoded_details(plan.audit)
            if self.refuses_nul and any("\x00" in d for d in details):
                raise AgentMemoryError("invalid_record", "audit detail contains a NUL character")
            self._insert_rows(
                conn,
                batch.realm,
                "audit",
                AUDIT_INSERT_COLUMNS,
                [(token, e.op_index, e.op_kind, e.memory_id, d, now) for e, d in zip(plan.audit, details, strict=True)],
            )
        if reason is not None:
            self._log.info("agent memory write quarantined in realm %s: %s", batch.realm, reason)
        return BatchReceipt(
            token=token,
            realm=batch.realm,
            applied_at_ms=now,
            results=tuple(plan.results),
            records=dict(plan.records),
            quarantined=reason,
        )

    def _write_planned(self, conn: C, realm: str, planned: Sequence[tuple[MemoryRecord, MemoryRecord | None]]) -> None:
        """Write a validated batch's records in order, each ``(record, the stored record it replaces or
        None)``: insert the new, update the changed, and keep the full-text index in step (a record has
        an index row iff it is active). Here one record at a time through the row primitives; a backend
        may write the whole batch set-based (same rows, same row-id order). Here each run of new records
        goes to :meth:`_write_new_records` together, and each changed record is updated in its place."""
        fresh: list[MemoryRecord] = []  # a run of new records, written together before the next update
        for rec, before in planned:
            if before is None:
                fresh.append(rec)
                continue
            if fresh:
                self._write_new_records(conn, realm, fresh)
                fresh = []
            rid = self._update_record(conn, realm, rec)
            if before.status.is_active and not rec.status.is_active:
                self._unindex_record(conn, realm, rid)
            elif rec.status.is_active and not before.status.is_active:
                self._index_record(conn, realm, rid, rec)
        if fresh:
            self._write_new_records(conn, realm, fresh)

    def _check_record_limit(self, conn: C, realm: str,
                            planned: Sequence[tuple[MemoryRecord, MemoryRecord | None]]) -> None:
        """Refuse (``AgentMemoryError("limit", ...)``, naming ``agent_memory.identity_record_limit``) a batch
        that left an identity scope it added rows to holding more than :attr:`identity_record_limit` rows.
        Runs after the batch's rows are written, in its transaction: the count read is the one the triggers
        keep (``scope_rows``), so the refusal rolls the whole batch back. Other scopes are not bounded."""
        added: dict[tuple[str, str], int] = {}
        for rec, before in planned:
            if before is None and rec.scope.kind is ScopeKind.IDENTITY:
                stored = rec.scope.storage()
                added[stored] = added.get(stored, 0) + 1
        for (kind, key), n in added.items():
            self._refuse_past_record_limit(conn, realm, key, n, "write")

    def _refuse_past_record_limit(self, conn: C, realm: str, identity: str, added: int, what: str) -> None:
        """Refuse (``AgentMemoryError("limit", ...)``, naming ``agent_memory.identity_record_limit``) when the
        identity scope ``identity`` holds more than :attr:`identity_record_limit` rows (its records, any
        status, and its open proposals) after ``what`` (``write`` / ``proposal``) added ``added`` of them,
        read in the write transaction ``conn`` (the refusal rolls it back)."""
        held = self._scope_rows(conn, realm, ScopeKind.IDENTITY.value, identity)
        if held > self.identity_record_limit:
            raise AgentMemoryError.over_limit(
                f"identity scope '{identity}' of realm '{realm}' holds {held - added} records (open proposals "
                f"included), this {what} adds {added}", "identity_record_limit", self.identity_record_limit)

    @abstractmethod
    def _scope_rows(self, conn: C, realm: str, scope_kind: str, scope_key: str) -> int:
        """The rows of one scope (any status) as the ``scope_rows`` table counts them, in the write
        transaction ``conn`` (``0`` for a scope never written): an identity scope's open proposals
        (pending or held, made by that identity) are counted with its records."""

    # ----------------------------------------------------------------- active-record reads

    def _find_active_duplicate(self, conn: C, scope: Scope, chash: str) -> MemoryRecord | None:
        row = conn.execute(*self._active_sql(scope.realm, scope, _OLDEST_DUPLICATE, (chash,))).fetchone()
        return row_to_record(scope.realm, row) if row else None

    #: Content hashes looked up per statement by :meth:`_find_active_duplicates`.
    DUPLICATE_LOOKUP_CHUNK = 256

    def _find_active_duplicates(self, conn: C, scope: Scope, hashes: Sequence[str]) -> dict[str, MemoryRecord]:
        """For each of ``hashes`` held by an active record of ``scope``, the oldest such record: the
        exact-duplicate check of a bulk write, a few statements instead of one per record (each an
        ``IN`` list of seeks on the scope/status/hash index)."""
        return self._oldest_holders(conn, scope, hashes, lambda tail, chunk: self._active_sql(
            scope.realm, scope, f"AND {tail}", chunk))

    def _find_quarantined_duplicates(self, conn: C, scope: Scope, hashes: Sequence[str]) -> dict[str, MemoryRecord]:
        """For each of ``hashes`` held by a quarantined record of ``scope``, the oldest such record (the same
        seeks): what a write that would land quarantined answers instead of a second copy."""
        return self._oldest_holders(conn, scope, hashes, lambda tail, chunk: self._realm_records(
            scope.realm, RECORD_COLUMNS, f"scope_kind = ? AND scope_key = ? AND status_kind = 'quarantined' AND {tail}",
            (*scope.storage(), *chunk)))

    def _oldest_holders(self, conn: C, scope: Scope, hashes: Sequence[str],
                        statement: Callable[[str, tuple[str, ...]], tuple[str, tuple[Any, ...]]]) -> dict[str, MemoryRecord]:
        """For each of ``hashes``, the oldest record ``statement`` finds holding it: ``statement(tail, chunk)``
        is the ``(sql, params)`` of a records read ending in ``tail`` (the hash ``IN`` list and the order) over
        :data:`DUPLICATE_LOOKUP_CHUNK` hashes at a time."""
        found: dict[str, MemoryRecord] = {}
        distinct = list(dict.fromkeys(hashes))
        for first in range(0, len(distinct), self.DUPLICATE_LOOKUP_CHUNK):
            chunk = tuple(distinct[first : first + self.DUPLICATE_LOOKUP_CHUNK])
            tail = f"content_hash IN ({', '.join('?' * len(chunk))}) ORDER BY content_hash, created_at_ms, rid"
            for row in conn.execute(*statement(tail, chunk)).fetchall():
                rec = row_to_record(scope.realm, row)
                found.setdefault(rec.content_hash, rec)
        return found

    def _active_reads(self, realm: str, scope: Scope, queries: Sequence[tuple[str, tuple[Any, ...]]]) -> list[list[Any]]:
        return self._read_all(realm, [self._active_sql(realm, scope, tail, params) for tail, params in queries])

    #: The backend's SQL spellings (:mod:`~meta_memory.agent_memory.store.dialect`).
    dialect: ClassVar[Dialect]

    def _filter_tail(self, where: FilterNode | None) -> tuple[str, list[Any]]:
        """``AND <the filter's SQL> `` and its parameters (every key path and value bound), or nothing."""
        if where is None:
            return "", []
        sql, params = compile_filter(where, pg=self.dialect.pg)
        return f"AND {sql} ", params

    def passing(self, realm: str, scope: Scope, where: FilterNode, memory_ids: Collection[str]) -> set[str]:
        """See :meth:`AgentMemoryStore.passing`."""
        name = self._realm_name(realm)
        ids = sorted({i for i in memory_ids if isinstance(i, str) and not (self.refuses_nul and "\x00" in i)})
        if not ids or not self._has_realm(name):
            return set()
        tail, params = self._filter_tail(where)
        statements = []
        for i in range(0, len(ids), 500):
            part = ids[i:i + 500]
            sql, bound = self._active_sql(name, scope, f"AND memory_id IN ({', '.join('?' * len(part))}) " + tail,
                                          (*part, *params))
            statements.append((sql.replace(RECORD_COLUMNS, "memory_id", 1), bound))
        return {str(r["memory_id"]) for rows in self._read_all(name, statements) for r in rows}

    def matching_rids(self, realm: str, scope: Scope, where: FilterNode) -> list[tuple[int, str]]:
        """See :meth:`AgentMemoryStore.matching_rids`."""
        name = self._realm_name(realm)
        if not self._has_realm(name):
            return []
        tail, params = self._filter_tail(where)
        sql, bound = self._active_sql(name, scope, tail, params)
        sql = sql.replace(RECORD_COLUMNS, "rid, memory_id", 1)
        (rows,) = self._read_all(name, [(sql, bound)])
        return [(int(r["rid"]), str(r["memory_id"])) for r in rows]

    def list_active(
        self, realm: str, scope: Scope, *, tags: Sequence[str] = (), limit: int = 100,
        before: tuple[int, str] | None = None, where: FilterNode | None = None,
    ) -> list[tuple[tuple[int, str], MemoryRecord]]:
        """See :meth:`AgentMemoryStore.list_active`."""
        name = self._realm_name(realm)
        tail, params = self._filter_tail(where)
        tail += "".join(f"AND {self.dialect.has_tag} " for _ in tags)
        params += list(tags)
        # the order is total over the scope by (updated_at_ms, memory_id), ids compared bytewise on both
        # backends: a cursor is a position in it that no write of another scope moves (no row id)
        collate = self.dialect.collate
        if before is not None:
            # the first term is the index's range on updated_at_ms; the second places the cursor within a tie
            tail += f"AND updated_at_ms <= ? AND (updated_at_ms < ? OR memory_id{collate} < ?) "
            params += [before[0], before[0], before[1]]
        (rows,) = self._active_reads(name, scope, [(
            tail + f"ORDER BY updated_at_ms DESC, memory_id{collate} DESC LIMIT ?", (*params, max(1, limit)))])
        return [((int(r["updated_at_ms"]), str(r["memory_id"])), row_to_record(name, r)) for r in rows]

    # ----------------------------------------------------------------- erase (beyond the spec)

    @abstractmethod
    def _scope_records(self, conn: C, realm: str, scope: Scope) -> list[MemoryRecord]:
        """Every record of ``scope`` (any status), inside a write transaction."""

    @abstractmethod
    def _linked_children(self, conn: C, realm: str, ids: Sequence[str]) -> list[MemoryRecord]:
        """Records that supersede, or derive from, any of ``ids``."""

    @abstractmethod
    def _pending_promotion_records(self, conn: C, realm: str, ids: Sequence[str]) -> list[str]:
        """The ids among ``ids`` that a *pending* gated promotion waits on."""

    @abstractmethod
    def _delete_content(self, conn: C, realm: str, ids: Sequence[str]) -> None:
        """Delete the records' rows and every row that carries their content (see :mod:`..erase`)."""

    def _after_erase(self, realm: str, report: EraseReport, identity: str | None) -> None:
        """Backend clean-up after an erase committed (SQLite: rewrite the full-text index, truncate the WAL,
        cut the erased records out of imported markdown; ``identity`` is set for an identity erase)."""

    def _erase_leftovers(self, conn: C, realm: str) -> None:
        """Inside the erase's transaction, after the rows went: drop what the backend keeps besides them
        (PostgreSQL: full-text terms no active record holds any more)."""

    def _same_content(self, conn: C, realm: str, recs: Sequence[MemoryRecord],
                      titles: dict[Scope, dict[str, list[str]]]) -> list[MemoryRecord]:
        """Records sharing a scope and content with any of ``recs`` (any status): the same content hash, or
        the same fold-2 hash (:func:`~meta_memory.agent_memory.hashing.casefolded_content_hash`: a text that
        differs only in whitespace, invisible characters, width or case), or the same fold-3 hash
        (:func:`~meta_memory.agent_memory.hashing.skeleton_content_hash`: or in look-alike letters), the
        erasure register's matches. Each implies titles equal under fold 2 or fold 3, so the candidates are
        the rows of the scope whose title folded either way is one of ``recs``' so folded; their records are
        read by id and their hashes compared here.

        ``titles`` caches, per scope, the ids of its rows by folded title: one read of a scope's titles (a
        walk of the scope, as the title is not indexed) per erase, however many batches its closure takes."""
        by_scope: dict[Scope, tuple[set[str], set[str], set[str]]] = {}
        for r in recs:
            hashes, folded_titles, folded = by_scope.setdefault(r.scope, (set(), set(), set()))
            hashes.add(r.content_hash)
            folded_titles.update((fold_compat(r.title), fold_skeleton(r.title)))
            folded.update(erasure_hashes(r.title, r.body, r.content_hash)[2:])
        out: list[MemoryRecord] = []
        for scope, (hashes, folded_titles, folded) in by_scope.items():
            ids_by_title = titles.get(scope)
            if ids_by_title is None:
                ids_by_title = titles[scope] = {}
                sql, params = self._realm_records(realm, "memory_id, title", "scope_kind = ? AND scope_key = ?",
                                                  scope.storage())
                for mid, title in conn.execute(sql, params).fetchall():
                    for key in {fold_compat(title), fold_skeleton(title)}:
                        ids_by_title.setdefault(key, []).append(mid)
            wanted = sorted({mid for t in folded_titles for mid in ids_by_title.get(t, ())})
            for first in range(0, len(wanted), _ERASURE_CHUNK):
                chunk = tuple(wanted[first:first + _ERASURE_CHUNK])
                sql, params = self._realm_records(
                    realm, RECORD_COLUMNS, f"memory_id IN ({', '.join('?' * len(chunk))})", chunk)
                for row in conn.execute(sql, params).fetchall():
                    rec = row_to_record(realm, row)
                    if rec.content_hash in hashes or not folded.isdisjoint(
                            erasure_hashes(rec.title, rec.body, rec.content_hash)[2:]):
                        out.append(rec)
        return out

    def _same_text(self, conn: C, realm: str, recs: Sequence[MemoryRecord], fields: dict[Scope, FieldIndex],
                   ) -> list[MemoryRecord]:
        """Records of the scope of any of ``recs`` showing, in any text field (title, body, description, a tag,
        a metadata key or string: :func:`~meta_memory.agent_memory.erase.shown_texts`), a text one of ``recs``
        registers on its own (its body or description: :func:`~meta_memory.agent_memory.erase.erased_texts`),
        compared by :func:`~meta_memory.agent_memory.erase.field_hashes` (any status).

        ``fields`` caches, per scope, its records by what their fields show
        (:class:`~meta_memory.agent_memory.erase.FieldIndex`: one read of a scope's records per erase, however
        many batches its closure takes, each ASCII field folded once and not hashed); a scope none of ``recs``
        registers a text of is not read. The index's candidates are read by id and kept when one of their
        fields' hashes is one of the erased texts'."""
        wanted: dict[Scope, list[str]] = {}
        for r in recs:
            texts = erased_texts(r)
            if field_hashes(texts):
                wanted.setdefault(r.scope, []).extend(texts)
        ids: set[str] = set()
        hashes: dict[Scope, set[str]] = {}
        for scope, texts in wanted.items():
            index = fields.get(scope)
            if index is None:
                index = fields[scope] = FieldIndex()
                for rec in self._scope_records(conn, realm, scope):
                    index.add(rec.id, shown_texts(rec))
            ids.update(index.candidates(texts))
            hashes[scope] = field_hashes(texts)
        ids.difference_update(r.id for r in recs)
        if not ids:
            return []
        found = self._reader(conn, realm).get_records(ids)
        return [found[i] for i in sorted(found)
                if found[i].scope in hashes and not hashes[found[i].scope].isdisjoint(field_hashes(shown_texts(found[i])))]

    def erase(
        self, realm: str, scope: Scope, memory_id: str | None = None, *, erased_by: str,
        reason: str | None = None, dry_run: bool = False, may_erase: Callable[[Scope], bool] | None = None,
        keep_out_content: bool = True,
    ) -> EraseReport:
        """See :meth:`AgentMemoryStore.erase`."""
        name = self.realm_name(realm, scope)
        # erase_identity: the identity's proposals and harvests go too
        identity = scope.key if memory_id is None and scope.kind is ScopeKind.IDENTITY else None

        def fn(tx: WriteTx) -> EraseReport:
            conn = cast(C, tx._sql.conn)
            reader = self._reader(conn, name)
            if memory_id is None:
                start = self._scope_records(conn, name, scope)
            else:
                rec = reader.get_record(memory_id) if not (self.refuses_nul and "\x00" in memory_id) else None
                if rec is None or rec.scope != scope:
                    raise RecordNotFound(memory_id)
                start = [rec]
            # An erase of content takes every copy of it in the scope and every proposal of it; a retention
            # sweep (keep_out_content=False) takes only the records it found out of use.
            titles: dict[Scope, dict[str, list[str]]] = {}
            # an identity erase starts from every record of its scope: no other record there to find by field
            fields: dict[Scope, FieldIndex] = {scope: FieldIndex()} if memory_id is None else {}
            same = (lambda recs: [*self._same_content(conn, name, recs, titles), *self._same_text(conn, name, recs, fields)]
                    ) if keep_out_content else None
            try:
                closure = content_closure(start, reader.get_record, lambda ids: self._linked_children(conn, name, ids),
                                          same)
            except ValueError as exc:
                raise AgentMemoryError("invalid_record", f"erase refused: {exc}") from None
            proposals = _erasable_proposals(tx, closure, identity) if keep_out_content else []
            # Quarantined records are erased with the rest (their review closes as erased): erasure never
            # waits on a reviewer. A gated promotion still pending is a decision in flight, refused.
            held = self._pending_promotion_records(conn, name, [r.id for r in closure] + [p.proposal_id for p in proposals])
            if held:
                raise AgentMemoryError(
                    "review_pending",
                    f"erase refused: {len(held)} record(s) or proposal(s) of its content closure wait on a "
                    f"pending gated promotion ({', '.join(sorted(set(held))[:5])}); decide it "
                    "(meta/memory/proposals/decide or the gating flow) first",
                )
            if may_erase is not None:
                denied = sorted({r.scope.describe() for r in closure if not may_erase(r.scope)})
                if denied:
                    raise AgentMemoryError(
                        "scope_not_writable",
                        f"erase refused: the record's content reached {', '.join(denied)}, which this caller may not erase",
                    )
            erased = tuple(ErasedRecord(r.id, r.scope, r.content_hash, r.status.kind.value) for r in closure)
            proposal_ids = tuple(p.proposal_id for p in proposals)
            if dry_run:
                return EraseReport(erased, True, None, proposal_ids)
            now = self.clock.now_ms()
            ids = [r.id for r in closure]
            tx.promotions.delete_for(ids + list(proposal_ids))
            for i in range(0, len(ids), 500):
                self._delete_content(conn, name, ids[i:i + 500])
            tx.proposals.delete(list(proposal_ids))
            if identity is not None:
                tx.harvests.delete_identity(identity)
            gone = set(ids) | set(proposal_ids)
            for run in tx.dream_runs.recent(MAX_ERASE_RECORDS):
                scrubbed = scrub_dream_detail(run.detail, gone, identity)
                if scrubbed is not None:
                    tx.dream_runs.set_detail(run.run_id, scrubbed)
            self._erase_leftovers(conn, name)
            # the fold-1 hash too: an earlier release sharing the database matches by it
            hashes = {r.id: erasure_hashes(r.title, r.body, r.content_hash) for r in closure}
            none = ("", "", "", "")
            registered = [(e.memory_id, *e.scope.storage(), *(hashes[e.memory_id] if keep_out_content else none), now)
                          for e in erased]
            registered += [(p.proposal_id, p.register_scope[0], p.register_scope[1],
                            *(p.hashes if keep_out_content else none), now)
                           for p in proposals]
            self._insert_rows(conn, name, "erasures", "memory_id, scope_kind, scope_key, content_hash, folded_hash, "
                              "casefolded_hash, skeleton_hash, erased_at_ms", registered)
            if keep_out_content:  # the body and description of each on their own: the field-level register
                texts = {(h, *r.scope.storage(), r.id, now) for r in closure for h in field_hashes(erased_texts(r))}
                texts |= {(h, *p.register_scope, p.proposal_id, now) for p in proposals for h in p.texts}
                if texts:
                    self._insert_rows(conn, name, "erasure_texts", "hash, scope_kind, scope_key, memory_id, erased_at_ms",
                                      sorted(texts))
            token = mint_token("erase")
            audit = [
                (e.memory_id, {"scope": e.scope.to_json(), "content_hash": e.content_hash, "status": e.status,
                               **({"quarantine": "erased"} if e.quarantined else {})})
                for e in erased
            ] + [
                (p.proposal_id, {"scope": p.scope_json, "content_hash": p.hashes[0], "status": p.status,
                                 "proposal": True})
                for p in proposals
            ]
            self._insert_rows(conn, name, "audit", AUDIT_INSERT_COLUMNS, [
                (token, i, "erase", mid, dumps({"op": "erase", "erased_by": erased_by, "reason": reason, **detail}), now)
                for i, (mid, detail) in enumerate(audit)
            ])
            return EraseReport(erased, False, now, proposal_ids)

        if not self._has_realm(name):  # nothing to erase in a realm nobody wrote to; never create it
            if memory_id is not None:
                raise RecordNotFound(memory_id)
            return EraseReport((), dry_run, None if dry_run else self.clock.now_ms())
        with self.transaction(name) as tx:
            report = fn(tx)
        if not report.dry_run:  # a harvest's cause may be all an identity erase removed
            forget_keys()  # the secret scanner's kept metadata keys: an erased record's among them
            self._after_erase(name, report, identity)
        return report

    def _expired_records(self, conn: C, realm: str, now_ms: int, limit: int) -> list[MemoryRecord]:
        """See :meth:`~meta_memory.agent_memory.store.tx.WriteTx.expired` (inside ``conn``'s transaction)."""
        sql, params = self._realm_records(
            realm, RECORD_COLUMNS, "status_kind = 'active' AND expires_at_ms <= ? ORDER BY expires_at_ms, rid LIMIT ?",
            (now_ms, max(0, limit)))
        return [row_to_record(realm, r) for r in conn.execute(sql, params).fetchall()]

    def tombstoned_closures_before(self, realm: str, cutoff_ms: int, limit: int = 1000) -> list[str]:
        """Ids of tombstoned records (tombstoned before ``cutoff_ms``) whose content closure holds no active or
        quarantined record: what a tombstone-retention sweep may erase. At most ``limit`` starting ids."""
        name = self._realm_name(realm)

        def fn(tx: WriteTx) -> list[str]:
            conn = cast(C, tx._sql.conn)
            reader = tx.reader
            out: list[str] = []
            seen: set[str] = set()
            for rec in self._tombstoned_before(conn, name, cutoff_ms, limit):
                if rec.id in seen:
                    continue
                closure = content_closure([rec], reader.get_record, lambda ids: self._linked_children(conn, name, ids))
                seen.update(r.id for r in closure)
                if all(r.status.kind in (StatusKind.TOMBSTONED, StatusKind.SUPERSEDED) for r in closure) and all(
                    (r.tombstoned_at_ms or 0) < cutoff_ms for r in closure if r.status.kind is StatusKind.TOMBSTONED
                ):
                    out.append(rec.id)
            return out

        with self.transaction(name) as tx:
            return fn(tx)

    @abstractmethod
    def _tombstoned_before(self, conn: C, realm: str, cutoff_ms: int, limit: int) -> list[MemoryRecord]:
        """Tombstoned records with ``tombstoned_at_ms < cutoff_ms``, oldest first, at most ``limit``."""

    @abstractmethod
    def _page_sql(self, realm: str, after_rid: int, limit: int, scope: Scope | None) -> tuple[str, tuple[Any, ...]]:
        """The SQL reading ``limit`` records of ``realm`` (every status), ``rid > after_rid``, by ``rid``."""

    def records_page(
        self, realm: str, *, after: int = 0, limit: int = 1000, scope: Scope | None = None
    ) -> list[tuple[int, MemoryRecord]]:
        """See :meth:`AgentMemoryStore.records_page`."""
        name = self._realm_name(realm)
        (rows,) = self._read_all(name, [self._page_sql(name, after, max(1, limit), scope)])
        return [(r["rid"], row_to_record(name, r)) for r in rows]

    def recent(self, realm: str, scope: Scope, limit: int, where: FilterNode | None = None) -> list[MemoryRecord]:
        """See :meth:`AgentMemoryStore.recent`."""
        name = self._realm_name(realm)
        tail, params = self._filter_tail(where)
        (rows,) = self._active_reads(name, scope, [(tail + _NEWEST_FIRST + " LIMIT ?", (*params, max(0, limit)))])
        return [row_to_record(name, r) for r in rows]

    def manifest(
        self, realm: str, scope: Scope, tier: ManifestTier | str = ManifestTier.WORKING_SET, k: int = DEFAULT_MANIFEST_K
    ) -> list[RecordMeta]:
        """See :meth:`AgentMemoryStore.manifest`.

        ``working_set``: ranked (rank ASC, updated DESC, insertion DESC, limit k) then
        recent (unranked or updated since ranked; updated DESC, created DESC,
        insertion DESC, limit 2k), de-duplicated, capped at 2k. ``full``: every active
        record, ranked first. ``k`` must be 1..512 (else ``AgentMemoryError("invalid_record",
        "k must be between 1 and 512")``).
        """
        tier = ManifestTier(tier)
        if tier is ManifestTier.WORKING_SET and not 1 <= k <= MAX_MANIFEST_K:
            raise AgentMemoryError("invalid_record", f"k must be between 1 and {MAX_MANIFEST_K}")
        name = self._realm_name(realm)
        if tier is ManifestTier.FULL:
            (rows,) = self._active_reads(name, scope, [(_FULL_MANIFEST, ())])
        else:
            ranked, recent = self._active_reads(name, scope, [(_RANKED, (k,)), (_RECENT_UNRANKED, (2 * k,))])
            seen: set[str] = set()
            rows = []
            for r in [*ranked, *recent]:
                if r["memory_id"] not in seen:
                    seen.add(r["memory_id"])
                    rows.append(r)
            rows = rows[: 2 * k]
        now = self.clock.now_ms()
        return [row_to_record(name, r).meta(now) for r in rows]
