"""The PostgreSQL full-text rows and their per-scope statistics, written set-based (a batch at a time).

The layout is :mod:`.pg_schema`'s: ``records_fts`` (one row per active record), ``fts_stats`` (per realm
and scope: active rows, tokens) and ``fts_terms`` (per realm, scope and lexeme: active rows holding it;
a row gone at zero). Every function here runs inside the caller's open write transaction and writes a
whole batch in a fixed number of statements, whatever its size:

* the full-text rows: one ``INSERT ... SELECT`` over a JSON array per :data:`ROWS_PER_STATEMENT` rows, one ``DELETE ...
  RETURNING`` for every row removed;
* the statistics: the batch's changes are summed per scope and per (scope, lexeme) in Python first, then
  land as one upsert per table (``INSERT ... SELECT FROM unnest(...) ON CONFLICT DO UPDATE``) and one
  delete of the rows that reached zero. A hot row (a common word, the scope's totals) is updated once
  per batch, not once per record: no chain of dead row versions inside one transaction.

The statistics end exactly as the record-at-a-time writes left them (a sum does not depend on its order),
so bm25 reads the same numbers. ``sql`` is the store's statement formatter (``§`` -> the schema).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from meta_memory.agent_memory.store import pg_schema

__all__ = ["ROWS_PER_STATEMENT", "FtsRow", "Delta", "fts_row", "json_text", "insert_rows", "delete_rows"]

#: Full-text rows per ``INSERT`` statement.
ROWS_PER_STATEMENT = 1000

Sql = Callable[[str], str]


@dataclass(frozen=True, slots=True)
class FtsRow:
    """One record's full-text row: its row id, scope (storage form), distinct lexemes (sorted),
    ``{lexeme: column-weighted frequency}`` and token count (:func:`.pg_schema.fts_row`)."""

    rid: int
    scope_kind: str
    scope_key: str
    lexemes: list[str]
    freq: dict[str, float]
    ntok: int


def fts_row(rid: int, scope_kind: str, scope_key: str, title: str, description: str, body: str,
            tags: Sequence[str]) -> FtsRow:
    """The :class:`FtsRow` of one record's text."""
    lexemes, freq, ntok = pg_schema.fts_row(title, description, body, tags)
    return FtsRow(rid, scope_kind, scope_key, lexemes, freq, ntok)


class Delta:
    """The statistics change of a batch: per scope ``[rows, tokens]``, per (scope, lexeme) rows holding it."""

    __slots__ = ("scopes", "terms")

    def __init__(self) -> None:
        self.scopes: dict[tuple[str, str], list[int]] = {}
        self.terms: dict[tuple[str, str, str], int] = {}

    def add(self, kind: str, key: str, lexemes: Sequence[str], ntok: int, sign: int) -> None:
        """Count one row in (``sign`` 1) or out (``sign`` -1) of scope ``(kind, key)``."""
        totals = self.scopes.setdefault((kind, key), [0, 0])
        totals[0] += sign
        totals[1] += sign * ntok
        terms = self.terms
        for lex in lexemes:
            k = (kind, key, lex)
            terms[k] = terms.get(k, 0) + sign

    def write(self, conn: Any, sql: Sql, realm: str) -> None:
        """Land the change in ``fts_stats`` and ``fts_terms`` (a few statements; rows at zero deleted)."""
        scopes = sorted((k, v) for k, v in self.scopes.items() if v != [0, 0])
        if scopes:
            conn.execute(sql(
                "INSERT INTO §fts_stats(realm, scope_kind, scope_key, n_rows, n_tokens) "
                "SELECT %s, k, s, n, t FROM unnest(%s::text[], %s::text[], %s::bigint[], %s::bigint[]) AS u(k, s, n, t) "
                "ON CONFLICT (realm, scope_kind, scope_key) DO UPDATE "
                "SET n_rows = §fts_stats.n_rows + EXCLUDED.n_rows, n_tokens = §fts_stats.n_tokens + EXCLUDED.n_tokens"),
                (realm, [k[0] for k, _ in scopes], [k[1] for k, _ in scopes],
                 [v[0] for _, v in scopes], [v[1] for _, v in scopes]))
            if any(v[0] < 0 for _, v in scopes):
                conn.execute(sql(
                    "DELETE FROM §fts_stats WHERE realm = %s AND (scope_kind, scope_key) IN "
                    "(SELECT * FROM unnest(%s::text[], %s::text[])) AND n_rows <= 0"),
                    (realm, [k[0] for k, v in scopes if v[0] < 0], [k[1] for k, v in scopes if v[0] < 0]))
        terms = sorted((k, v) for k, v in self.terms.items() if v)
        if terms:
            conn.execute(sql(
                "INSERT INTO §fts_terms(realm, scope_kind, scope_key, term, df) "
                "SELECT %s, k, s, t, d FROM unnest(%s::text[], %s::text[], %s::text[], %s::bigint[]) AS u(k, s, t, d) "
                "ON CONFLICT (realm, scope_kind, scope_key, term) DO UPDATE SET df = §fts_terms.df + EXCLUDED.df"),
                (realm, [k[0] for k, _ in terms], [k[1] for k, _ in terms], [k[2] for k, _ in terms],
                 [v for _, v in terms]))
            gone = [k for k, v in terms if v < 0]
            if gone:
                conn.execute(sql(
                    "DELETE FROM §fts_terms WHERE realm = %s AND (scope_kind, scope_key, term) IN "
                    "(SELECT * FROM unnest(%s::text[], %s::text[], %s::text[])) AND df <= 0"),
                    (realm, [k[0] for k in gone], [k[1] for k in gone], [k[2] for k in gone]))


def json_text(value: Any) -> str:
    """``value`` as compact JSON text for a ``::jsonb`` parameter (non-ASCII kept as is)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def insert_rows(conn: Any, sql: Sql, realm: str, rows: Sequence[FtsRow], delta: Delta) -> None:
    """Insert the full-text rows of records that became active (one statement per
    :data:`ROWS_PER_STATEMENT`, the rows as one JSON array; ``doc`` is the ``tsvector`` of the
    frequency map's lexemes) and count them into ``delta``."""
    for first in range(0, len(rows), ROWS_PER_STATEMENT):
        chunk = rows[first:first + ROWS_PER_STATEMENT]
        for r in chunk:
            delta.add(r.scope_kind, r.scope_key, r.lexemes, r.ntok, 1)
        doc = json_text([[r.rid, r.scope_kind, r.scope_key, r.freq, r.ntok] for r in chunk])
        conn.execute(sql(
            "INSERT INTO §records_fts(rid, realm, scope_kind, scope_key, doc, tf, ntok) "
            "SELECT (e->>0)::bigint, %s, e->>1, e->>2, array_to_tsvector(ARRAY(SELECT jsonb_object_keys(e->3))), "
            "e->3, (e->>4)::integer FROM jsonb_array_elements(%s::jsonb) AS e"), (realm, doc))


def delete_rows(conn: Any, sql: Sql, rids: Sequence[int], delta: Delta) -> None:
    """Delete the full-text rows of ``rids`` (records that stopped being active, or erased) and count
    them out of ``delta``; a rid without a row changes nothing."""
    if not rids:
        return
    rows = conn.execute(sql(
        "DELETE FROM §records_fts WHERE rid = ANY(%s::bigint[]) "
        "RETURNING ntok, tsvector_to_array(doc), scope_kind, scope_key"), (list(rids),)).fetchall()
    for ntok, lexemes, kind, key in rows:
        delta.add(kind, key, list(lexemes or ()), int(ntok), -1)
