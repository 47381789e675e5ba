"""The full-text index contract between the record store and recall.

The store calls :func:`create_statements` in its schema migration, writes
:func:`document` for a record into ``records_fts`` (``rowid`` = the record's
``rowid``) in the same transaction as the record, and deletes that row in the
same transaction as any change that takes the record out of ``active``.
Recall builds a ``MATCH`` expression with :func:`match_expression`.

(Initial simple version; the recall module owns and refines it.)
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence

FTS_TABLE = "records_fts"


def create_statements() -> list[str]:
    """DDL for the full-text index (idempotent)."""
    return [
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} USING fts5("
        "title, body, tags, tokenize = 'unicode61 remove_diacritics 0')"
    ]


def _norm(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def document(title: str, description: str, body: str, tags: Sequence[str]) -> dict[str, str]:
    """Column -> text to index for one record."""
    return {"title": _norm(title), "body": _norm(description + "\n" + body), "tags": _norm(" ".join(tags))}


def match_expression(query_text: str | None, query_terms: Iterable[str] = ()) -> str | None:
    """An FTS5 MATCH expression with every token quoted, or ``None`` when nothing is searchable."""
    words = [w for w in _norm(" ".join([query_text or "", *query_terms])).split() if w]
    if not words:
        return None
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
