"""The SQL spellings that differ between the two store backends (SQLite and PostgreSQL).

Shared SQL (the side tables of :mod:`.tables`, the panel read models of
:mod:`.panel_reads`, the stores' shared reads in :mod:`.common`) is written
once, for SQLite, with ``?`` placeholders; the store picks its backend's
:class:`Dialect` (never sniffed from a connection), which turns it into
the backend's spelling and supplies the few expressions that differ:

- placeholders: ``?`` stays for ``sqlite3``, becomes ``%s`` for psycopg (a
  literal ``%`` is doubled);
- JSON reads: SQLite ``json_extract``/``json_each``, PostgreSQL ``jsonb``
  operators over the same TEXT columns;
- byte lengths: ``LENGTH(CAST(x AS BLOB))`` vs ``octet_length(x)``;
- ``INSERT OR IGNORE`` is ``INSERT ... ON CONFLICT DO NOTHING``;
- text order: code point on both (``COLLATE "C"`` on PostgreSQL, whose default
  collation follows the server locale), so listings come back in the same order;
- NUL: PostgreSQL text cannot hold it, so no stored key contains one.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

__all__ = ["Dialect", "SQLITE", "POSTGRES", "unexpired"]


#: The largest time either backend stores (SQLite INTEGER / PostgreSQL BIGINT): "never expires".
_NEVER_MS = 2**63 - 1


def unexpired(alias: str = "") -> str:
    """The one SQL form of the expiry rule (:func:`meta_memory.agent_memory.model.is_expired`):
    true for a ``records`` row (``alias`` its table prefix, e.g. ``"r."``) that has no expiry or
    whose ``expires_at_ms`` lies after the time bound to its one ``?`` (now, epoch ms). Every read
    answering "active" records adds it to ``status_kind = 'active'``; the same text on both backends.

    One comparison over ``COALESCE`` (no expiry reads as the largest stored time), not an ``OR``: it is a
    filter on the rows the read's own index finds, never a reason for the planner to pick another index
    or sort (the hot-query plan tests hold every active read to its index and order)."""
    return f"COALESCE({alias}expires_at_ms, {_NEVER_MS}) > ?"


@dataclass(frozen=True, slots=True)
class Dialect:
    """The SQL spellings of one backend.

    ``name``: ``"sqlite"`` | ``"postgres"``; ``pg``: whether placeholders are
    ``%s``; ``refuses_nul``: whether text cannot hold NUL (so a key with one
    names no row); ``collate``: the suffix that makes a text column sort by
    code point; ``octets``: a format string giving the UTF-8 byte length of a
    text column (``octets.format("body")``); ``injected_count``: an integer
    expression (``NULL`` when absent) over ``records.usage_stats``;
    ``evidence_session``: a boolean expression true when a record's provenance
    evidence cites the session bound to its one ``?``; ``steward_audit``: a
    boolean over ``audit.detail`` true for rows a steward wrote;
    ``insert_ignore``: ``(prefix, suffix)`` around ``INTO table(cols) VALUES (...)``;
    ``has_tag``: a boolean expression true when ``records.tags`` (a JSON array) holds the tag bound
    to its one ``?``; ``in_texts``: a format string, a boolean true when the text expression put in its
    ``{}`` equals one string of the JSON array bound to its one ``?`` (any number of strings, one parameter).
    """

    name: str
    pg: bool
    refuses_nul: bool
    collate: str
    octets: str
    injected_count: str
    evidence_session: str
    steward_audit: str
    insert_ignore: tuple[str, str]
    has_tag: str
    in_texts: str

    def sql(self, text: str) -> str:
        """``text`` (``?`` placeholders) in this dialect's placeholder style."""
        return _placeholders(text) if self.pg else text



@lru_cache(maxsize=512)
def _placeholders(sql: str) -> str:
    return sql.replace("%", "%%").replace("?", "%s")


SQLITE = Dialect(
    name="sqlite",
    pg=False,
    refuses_nul=False,
    collate="",
    octets="LENGTH(CAST({} AS BLOB))",
    injected_count="json_extract(usage_stats, '$.injected_count')",
    evidence_session=(
        "EXISTS (SELECT 1 FROM json_each(json_extract(provenance, '$.evidence')) "
        "WHERE json_extract(value, '$.session_id') = ?)"
    ),
    steward_audit="CASE WHEN json_valid(detail) THEN json_extract(detail, '$.author.author') END = 'steward'",
    insert_ignore=("INSERT OR IGNORE", ""),
    has_tag="EXISTS (SELECT 1 FROM json_each(tags) WHERE value = ?)",
    in_texts="{} IN (SELECT value FROM json_each(?))",
)

# Audit details are written by the store as JSON (never by hand), so the jsonb casts cannot fail.
POSTGRES = Dialect(
    name="postgres",
    pg=True,
    refuses_nul=True,
    collate=' COLLATE "C"',
    octets="octet_length({})",
    injected_count="(usage_stats::jsonb ->> 'injected_count')::bigint",
    evidence_session=(
        "EXISTS (SELECT 1 FROM jsonb_array_elements(CASE WHEN jsonb_typeof(provenance::jsonb -> 'evidence') = 'array' "
        "THEN provenance::jsonb -> 'evidence' ELSE '[]'::jsonb END) AS ev(value) "
        "WHERE ev.value ->> 'session_id' = ?)"
    ),
    steward_audit="(detail::jsonb #>> '{author,author}') = 'steward'",
    insert_ignore=("INSERT", " ON CONFLICT DO NOTHING"),
    has_tag="jsonb_exists(tags::jsonb, ?)",
    in_texts="{} IN (SELECT jsonb_array_elements_text(CAST(? AS jsonb)))",
)

