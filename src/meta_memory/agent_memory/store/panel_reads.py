"""The console Memory panel's read models over the ``records`` and ``injections`` tables (seed:
"Console Memory panel"; reference §2B tables, §7 shapes).

:class:`PanelReads` is what :attr:`ReadTx.panel <meta_memory.agent_memory.store.tx.ReadTx.panel>`
hands out: the record listing (keyset paging by ``(updated_at_ms DESC, memory_id DESC)``, text
search, filters), one record with its body, lineage lookups, the injection ledger, the per-scope
counts and the realm's scopes. The side tables' listings are the repositories of :mod:`.tables`.

Every statement is written once; the snapshot's dialect supplies what differs (code point order,
byte lengths), and on SQLite a Unicode-aware lowercase function (``mm_lower``) is registered on the
snapshot's connection, so both backends return the same rows in the same order. All times are
UTC epoch ms. A read never judges access: every row carries what the panel's visibility rules need
(scope, status, quarantine history).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from meta_memory.agent_memory.model import Scope, Status, UsageStats
from meta_memory.agent_memory.store.dialect import SQLITE, unexpired
from meta_memory.agent_memory.store.tables import STANDING_FORGETS, Row, Sql, loads

__all__ = [
    "SEARCHED_COLUMNS",
    "QUARANTINED_CONTENT",
    "ReadableScopes",
    "RecordFilters",
    "RecordRow",
    "InjectionLedgerRow",
    "ScopeOverviewRow",
    "PanelReads",
]

#: The columns a text search looks in (a term matches when it occurs in any of them; ``tags`` is searched
#: tag by tag, each tag value on its own, never as the column's JSON text).
SEARCHED_COLUMNS = ("title", "description", "body", "tags")
#: SQL true for a record holding quarantined content (quarantined, or tombstoned and ever quarantined).
QUARANTINED_CONTENT = "(status_kind = 'quarantined' OR (status_kind = 'tombstoned' AND ever_quarantined = 1))"
#: The largest time a store can hold (SQLite INTEGER / PostgreSQL BIGINT).
_MAX_STORED_MS = 2**63 - 1
_LIST_BASE = (
    "memory_id, scope_kind, scope_key, kind, title, description, tags, provenance, trust, status_kind, "
    "status_detail, supersedes, derived_from, working_set_rank, created_at_ms, updated_at_ms, usage_stats, "
    "ever_quarantined, expires_at_ms, metadata"
)
_INJ_COLS = "injection_id, record_id, identity, session_key, surface, at_ms"


@dataclass(frozen=True)
class ReadableScopes:
    """What one caller may read of one realm's records, as the listing's SQL applies it: ``scopes``, the
    ``(scope_kind, scope_key)`` pairs (``("realm", "")`` for the realm scope) whose records it may read,
    except those holding quarantined content (:data:`QUARANTINED_CONTENT`); ``reviewed``, the pairs
    among them whose quarantined content it may read too. A scope in neither is unreadable.

    The store never decides access: the panel's visibility rules judge each scope the realm names
    (:meth:`meta_memory.panel.visibility.Visibility.readable_scopes`) and the store only keeps the rows
    this describes, so rows the caller may not read are never read, counted or timed."""

    scopes: frozenset[tuple[str, str]] = frozenset()
    reviewed: frozenset[tuple[str, str]] = frozenset()

    def admits(self, scope_kind: str, scope_key: str, status: str, ever_quarantined: bool) -> bool:
        """The rule the SQL applies, for one record (its stored scope, status kind and quarantine history)."""
        scope = (scope_kind, "" if scope_kind == "realm" else scope_key)
        if scope in self.reviewed:
            return True
        quarantined = status == "quarantined" or (status == "tombstoned" and ever_quarantined)
        return scope in self.scopes and not quarantined


@dataclass(frozen=True)
class RecordFilters:
    """The record listing's filters (``None`` = any): ``scope_kind`` (identity|mob|operator|realm),
    ``scope_key`` (identity / mob / operator name, ``""`` for realm), ``status``
    (active|superseded|quarantined|tombstoned), ``terms``: text search terms, each of which
    must occur, lowercased, as a substring of the lowercased title, description, body or one tag
    (empty = no text filter; see :data:`SEARCHED_COLUMNS`), and ``readable``: the caller's
    :class:`ReadableScopes` (``None`` = no access filter)."""

    scope_kind: str | None = None
    scope_key: str | None = None
    status: str | None = None
    terms: tuple[str, ...] = ()
    readable: ReadableScopes | None = None


@dataclass(frozen=True)
class RecordRow:
    """One record as the panel shows it.

    ``data`` is the record JSON (the serde shape of a stored record: ``id``,
    ``scope{scope, realm, <kind>}``, ``kind``, ``title``, ``description``,
    ``tags``, ``provenance``, ``trust``, ``status{status, by?|reason?}``,
    ``supersedes?``, ``derived_from``, ``working_set_rank?``,
    ``created_at_ms``, ``updated_at_ms``, ``usage``, ``ever_quarantined``)
    WITHOUT ``body``, plus ``body_bytes`` (UTF-8 length of the body).
    ``body`` is set only by :meth:`PanelReads.record` (the detail view); ``content_hash`` by it and by
    :meth:`PanelReads.quarantined` (a reviewer binds a decision to it).
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
    """One ``injections`` row: ``record_id`` went into ``identity``'s context at ``at_ms``
    via ``surface`` (``build`` | ``turn``); ``session_key`` is ``None`` for the build surface.
    ``injection_id`` (the ledger's row number, shared by every identity) orders rows and is never shown."""

    realm: str
    injection_id: int
    record_id: str
    identity: str
    session_key: str | None
    surface: str
    at_ms: int

    def to_json(self) -> dict[str, Any]:
        """``{realm, record_id, identity, session_key, surface, at_ms}`` (no ``injection_id``)."""
        out = asdict(self)
        del out["injection_id"]
        return out


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


def _record_row(realm: str, row: Row, *, detail: bool = False, hashed: bool = False) -> RecordRow:
    scope = Scope.from_storage(realm, row["scope_kind"], row["scope_key"])
    status = Status.from_storage(row["status_kind"], row["status_detail"])
    data: dict[str, Any] = {
        "id": row["memory_id"],
        "scope": scope.to_json(),
        "kind": row["kind"],
        "title": row["title"],
        "description": row["description"],
        "tags": loads(row["tags"], []),
        "metadata": loads(row["metadata"], {}),
        "provenance": loads(row["provenance"], {}),
        "trust": row["trust"],
        "status": status.to_json(),
    }
    if row["supersedes"] is not None:
        data["supersedes"] = row["supersedes"]
    data["derived_from"] = loads(row["derived_from"], [])
    if row["working_set_rank"] is not None:
        data["working_set_rank"] = row["working_set_rank"]
    data["created_at_ms"] = row["created_at_ms"]
    data["updated_at_ms"] = row["updated_at_ms"]
    data["usage"] = UsageStats.from_json(loads(row["usage_stats"], {})).to_json()
    data["ever_quarantined"] = bool(row["ever_quarantined"])
    data["expires_at_ms"] = row["expires_at_ms"]
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
        content_hash=row["content_hash"] if detail or hashed else None,
    )


def _lower_text(value: object) -> str | None:
    return value.lower() if isinstance(value, str) else None


class PanelReads:
    """The panel's reads of one realm inside one snapshot (see the module docstring)."""

    __slots__ = ("_sql", "realm", "now_ms")

    def __init__(self, sql: Sql, realm: str, now_ms: int) -> None:
        self._sql = sql
        self.realm = realm
        #: The snapshot's clock reading (epoch ms): records expired by then are not listed or counted as
        #: active.
        self.now_ms = now_ms

    @property
    def _list_cols(self) -> str:
        return f"{_LIST_BASE}, {self._sql.dialect.octets.format('body')} AS body_bytes"

    def _records(self, where: str, params: Sequence[Any], *, detail: bool = False,
                 hashed: bool = False) -> list[RecordRow]:
        cols = self._list_cols + (", body, content_hash" if detail else ", content_hash" if hashed else "")
        rows = self._sql.rows(f"SELECT {cols} FROM records {where}", params)
        return [_record_row(self.realm, r, detail=detail, hashed=hashed) for r in rows]

    def _lower(self, column: str) -> str:
        """A SQL expression lowercasing ``column`` like Python does (Unicode letters included)."""
        if self._sql.dialect is SQLITE:  # SQLite's own lower() folds ASCII letters only
            conn = self._sql.conn
            if isinstance(conn, sqlite3.Connection):
                conn.create_function("mm_lower", 1, _lower_text, deterministic=True)
            return f"mm_lower({column})"
        return f"lower({column})"

    def _term_clause(self, term: str) -> tuple[str, list[Any]]:
        """SQL true when ``term`` (already lowercased) occurs in the title, description or body, or in
        one of the record's tags (each tag value on its own: never the ``tags`` column's JSON text, so
        ``[``, ``"`` or ``","`` match no record for its tag list's encoding)."""
        sqlite = self._sql.dialect is SQLITE
        find = "instr({}, ?) > 0" if sqlite else "strpos({}, ?) > 0"
        parts = [find.format(self._lower(col)) for col in SEARCHED_COLUMNS if col != "tags"]
        if sqlite:
            parts.append(f"EXISTS (SELECT 1 FROM json_each(tags) WHERE {find.format(self._lower('value'))})")
        else:
            parts.append("EXISTS (SELECT 1 FROM jsonb_array_elements_text(tags::jsonb) AS t(tag) "
                         f"WHERE {find.format(self._lower('t.tag'))})")
        return "(" + " OR ".join(parts) + ")", [term] * len(parts)

    def _scopes_clause(self, scopes: frozenset[tuple[str, str]]) -> tuple[str, list[Any]]:
        """SQL true for a record of one of ``scopes`` (one parameter however many there are)."""
        parts: list[str] = []
        params: list[Any] = []
        if ("realm", "") in scopes:
            parts.append("scope_kind = 'realm'")
        keys = sorted(f"{kind}:{key}" for kind, key in scopes if kind != "realm")
        if keys:
            parts.append(self._sql.dialect.in_texts.format("(scope_kind || ':' || scope_key)"))
            params.append(json.dumps(keys))
        return ("(" + " OR ".join(parts) + ")" if parts else "1 = 0"), params

    def _readable_clause(self, readable: ReadableScopes) -> tuple[str, list[Any]]:
        """SQL true for a record ``readable`` admits (:meth:`ReadableScopes.admits`)."""
        reviewed, reviewed_params = self._scopes_clause(readable.reviewed)
        plain, plain_params = self._scopes_clause(readable.scopes - readable.reviewed)
        return (f"({reviewed} OR ({plain} AND NOT {QUARANTINED_CONTENT}))", [*reviewed_params, *plain_params])

    def _after_clause(self, ms: int, memory_id: str, column: str = "updated_at_ms") -> tuple[str, list[Any]]:
        """The keyset condition "strictly after ``(ms, memory_id)``" in an order by ``(column DESC,
        memory_id DESC)`` (``column`` is ``updated_at_ms`` for the record listing, ``created_at_ms`` for
        the quarantine queue).

        Text without NUL cannot sort between ``p`` and ``p + "\\x00" + ...``, so on a backend that
        refuses NUL such a key is answered as "ids ``<= p``" (the rows code point order selects)."""
        c = self._sql.collate
        head, nul, _ = memory_id.partition("\x00")
        if nul and self._sql.dialect.refuses_nul:
            return f"({column} < ? OR ({column} = ? AND memory_id{c} <= ?))", [ms, ms, head]
        return f"({column} < ? OR ({column} = ? AND memory_id{c} < ?))", [ms, ms, memory_id]

    # ---------------------------------------------------------------- records

    def records_page(
        self, filters: RecordFilters, after: tuple[int, str] | None, limit: int
    ) -> tuple[list[RecordRow], bool]:
        """Up to ``limit`` body-free rows matching ``filters``, strictly after the key ``after``
        (``(updated_at_ms, memory_id)``; ``None`` = from the newest), ordered ``(updated_at_ms DESC,
        memory_id DESC)``, and whether more rows follow."""
        where: list[str] = []
        params: list[Any] = []
        for column, value in (("scope_kind", filters.scope_kind), ("scope_key", filters.scope_key),
                              ("status_kind", filters.status)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        if filters.status == "active":  # an expired record is not active, swept or not
            where.append(unexpired())
            params.append(self.now_ms)
        if filters.readable is not None:  # before the text search: unreadable rows are never searched
            clause, values = self._readable_clause(filters.readable)
            where.append(clause)
            params += values
        for term in filters.terms:
            clause, values = self._term_clause(term)
            where.append(clause)
            params += values
        # A stored time fits a signed 64-bit integer, so a cursor beyond it is before every row.
        if after is not None and after[0] <= _MAX_STORED_MS:
            clause, values = self._after_clause(*after)
            where.append(clause)
            params += values
        tail = ("WHERE " + " AND ".join(where) + " ") if where else ""
        tail += f"ORDER BY updated_at_ms DESC, memory_id{self._sql.collate} DESC LIMIT ?"
        rows = self._records(tail, [*params, limit + 1])
        return rows[:limit], len(rows) > limit

    def record(self, memory_id: str) -> RecordRow | None:
        """One record with ``body`` and ``content_hash``, or ``None``."""
        if self._sql.unstorable(memory_id):
            return None
        rows = self._records("WHERE memory_id = ?", (memory_id,), detail=True)
        return rows[0] if rows else None

    def records_by_ids(self, ids: Iterable[str]) -> dict[str, RecordRow]:
        """Body-free rows of the ids that exist (missing ids are absent)."""
        wanted = sorted({i for i in ids if not self._sql.unstorable(i)})
        out: dict[str, RecordRow] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            for row in self._records(f"WHERE memory_id IN ({', '.join('?' for _ in chunk)})", chunk):
                out[row.memory_id] = row
        return out

    def claimants(self, memory_id: str, limit: int) -> list[RecordRow]:
        """Rows whose ``supersedes`` names ``memory_id`` (uncommitted claimants included), oldest created first."""
        if self._sql.unstorable(memory_id):
            return []
        c = self._sql.collate
        return self._records(f"WHERE supersedes = ? ORDER BY created_at_ms, memory_id{c} LIMIT ?", (memory_id, limit))

    def quarantined(self, limit: int, after: tuple[int, str] | None = None,
                    readable: ReadableScopes | None = None) -> list[RecordRow]:
        """Up to ``limit`` quarantined records (body-free, with ``content_hash``), newest created first (``(created_at_ms DESC,
        memory_id DESC)``), strictly after the key ``after`` (``(created_at_ms, memory_id)``; ``None`` =
        from the newest). With ``readable`` only the rows it admits (:meth:`ReadableScopes.admits`: for a
        quarantined row, a scope among ``reviewed``) are read, before ``limit`` is applied, so a page is
        cut from readable rows and unreadable ones are never read."""
        c = self._sql.collate
        where = "status_kind = 'quarantined'"
        params: list[Any] = []
        if readable is not None:
            clause, params = self._readable_clause(readable)
            where += f" AND {clause}"
        if after is not None and after[0] <= _MAX_STORED_MS:
            clause, values = self._after_clause(*after, column="created_at_ms")
            where += f" AND {clause}"
            params += values
        return self._records(
            f"WHERE {where} ORDER BY created_at_ms DESC, memory_id{c} DESC LIMIT ?", [*params, limit], hashed=True
        )

    # ---------------------------------------------------------------- injections

    def _injections(self, tail: str, params: Sequence[Any]) -> list[InjectionLedgerRow]:
        rows = self._sql.rows(f"SELECT {_INJ_COLS} FROM injections {tail}", params)
        return [InjectionLedgerRow(self.realm, *tuple(r)) for r in rows]

    def record_injections(self, memory_id: str, limit: int) -> list[InjectionLedgerRow]:
        """Injection-ledger rows of one record, newest first."""
        if self._sql.unstorable(memory_id):
            return []
        return self._injections("WHERE record_id = ? ORDER BY at_ms DESC, injection_id DESC LIMIT ?", (memory_id, limit))

    def injections(self, limit: int) -> list[InjectionLedgerRow]:
        """Injection-ledger rows, newest first."""
        return self._injections("ORDER BY at_ms DESC, injection_id DESC LIMIT ?", (limit,))

    # ---------------------------------------------------------------- overview

    def scope_overview(self) -> list[ScopeOverviewRow]:
        """One row per scope of the realm's records, in scope order (code point)."""
        c, octets = self._sql.collate, self._sql.dialect.octets
        all_bytes = " + ".join(octets.format(col) for col in ("title", "description", "body"))
        # An active record past its expiry (not swept yet) is counted under "expired", never "active".
        rows = self._sql.rows(
            f"SELECT scope_kind, scope_key, CASE WHEN status_kind = 'active' AND NOT ({unexpired()}) THEN 'expired' "
            f"ELSE status_kind END AS st, trust, {QUARANTINED_CONTENT} AS q, COUNT(*), "
            f"COALESCE(SUM({octets.format('body')}), 0), COALESCE(SUM({all_bytes}), 0) "
            f"FROM records GROUP BY scope_kind, scope_key, st, trust, q ORDER BY scope_kind{c}, scope_key{c}",
            (self.now_ms,),
        )
        acc: dict[tuple[str, str], _ScopeTotals] = {}
        for r in rows:
            kind, key, status, trust, q, count, body_bytes, all_bytes_sum = tuple(r)
            acc.setdefault((kind, key), _ScopeTotals()).add(
                status, trust, bool(q), int(count), int(body_bytes), int(all_bytes_sum)
            )
        return [a.row(self.realm, kind, key) for (kind, key), a in acc.items()]

    def next_expiry(self) -> int | None:
        """The soonest ``expires_at_ms`` (epoch ms) of an active record not yet expired, or ``None``: until
        then :meth:`scope_overview`'s counts change only by a write (one seek of the expiry index)."""
        row = self._sql.one("SELECT MIN(expires_at_ms) FROM records WHERE status_kind = 'active' "
                            "AND expires_at_ms IS NOT NULL AND expires_at_ms > ?", (self.now_ms,))
        return None if row is None or row[0] is None else int(row[0])

    def census(self) -> dict[str, Any]:
        """``{"records": {status: count}, "held_forgets": count}`` of the realm (the metrics' store
        census): one ``GROUP BY`` over the records and the standing held forgets. ``status`` is the
        record's status kind, except that an active record past its expiry the sweep has not reached yet
        counts as ``expired``, never as ``active`` (as in :meth:`scope_overview`)."""
        records: dict[str, int] = {}
        for status, count in self._sql.rows(
                f"SELECT CASE WHEN status_kind = 'active' AND NOT ({unexpired()}) THEN 'expired' "
                "ELSE status_kind END AS st, COUNT(*) FROM records GROUP BY st", (self.now_ms,)):
            records[str(status)] = int(count)
        row = self._sql.one("SELECT COUNT(*) FROM pending_forgets f " + STANDING_FORGETS)
        return {"records": records, "held_forgets": int(row[0]) if row is not None else 0}

    def holds_quarantine_evidence(self) -> bool:
        """Whether any record holds quarantined content (quarantined, or tombstoned and ever quarantined)."""
        return self._sql.one(f"SELECT 1 FROM records WHERE {QUARANTINED_CONTENT} LIMIT 1") is not None

    def realm_scopes(self) -> frozenset[tuple[str, str]]:
        """Scopes of the realm's records, proposals and gated promotions, and its harvested identities."""
        rows = self._sql.rows(
            "SELECT scope_kind, scope_key FROM records "
            "UNION SELECT scope_kind, scope_key FROM proposals "
            "UNION SELECT scope_kind, scope_key FROM pending_promotions "
            "UNION SELECT 'identity', identity FROM pending_harvests",
        )
        return frozenset((r[0], "" if r[0] == "realm" else r[1]) for r in rows)


class _Tally:
    """Record counts by status and by trust tier, body bytes, and what the retention floors count
    (records not tombstoned, and their bytes)."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.trust: dict[str, int] = {}
        self.body = self.floor_records = self.floor_bytes = 0

    def add(self, status: str, trust: str, count: int, body_bytes: int, all_bytes: int) -> None:
        self.counts[status] = self.counts.get(status, 0) + count
        self.trust[trust] = self.trust.get(trust, 0) + count
        self.body += body_bytes
        if status != "tombstoned":
            self.floor_records += count
            self.floor_bytes += all_bytes


class _ScopeTotals:
    """The figures of one scope, summed over its (status, trust, quarantined-content) groups:
    over every record, and over those holding quarantined content."""

    def __init__(self) -> None:
        self.every = _Tally()
        self.quarantined = _Tally()

    def add(self, status: str, trust: str, quarantined: bool, count: int, body_bytes: int, all_bytes: int) -> None:
        self.every.add(status, trust, count, body_bytes, all_bytes)
        if quarantined:
            self.quarantined.add(status, trust, count, body_bytes, all_bytes)

    def row(self, realm: str, kind: str, key: str) -> ScopeOverviewRow:
        e, q = self.every, self.quarantined
        return ScopeOverviewRow(
            realm, kind, key, e.counts, e.body, e.floor_records, e.floor_bytes, q.counts, q.body,
            q.floor_records, q.floor_bytes, e.trust, q.trust,
        )
