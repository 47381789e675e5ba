"""The full-text index contract between the record store and recall.

The store runs :func:`create_statements` in its schema migration, writes
:func:`document` for a record into :data:`FTS_TABLE` (``rowid`` = the
record's ``rowid``) in the same transaction as the record, and deletes that
row in the same transaction as any change that takes the record out of
``active``. A record is in the index iff it is active. Recall builds a
``MATCH`` expression with :func:`match_expression` and orders candidates by
:data:`BM25_EXPR` (smaller = better, as FTS5 reports it).

How it works: the text is tokenised *in Python* by :mod:`meta_memory.recall.text`
(NFKC + casefold + the Turkish i fold, words of every script from two characters, CJK
characters and bigrams, emoji, stopwords dropped)
and stored as space-separated tokens. The FTS5 tokenizer is configured to
split on whitespace only (every letter, mark, number, punctuation, symbol,
private-use and unassigned code point is a token character), so SQLite's
idea of a token is exactly ours, whatever Unicode version SQLite was built
with. Every query term is a double-quoted FTS5 string, so no user text can
ever be read as FTS5 syntax (``AND``, ``NEAR``, ``*``, ``-x``, ``a:b``, ``"``).

Columns (all indexed; bm25 weights in :data:`BM25_WEIGHTS`):

* ``title``  — tokens of the title;
* ``body``   — tokens of the description and the body;
* ``tags``   — tokens of the tags.

The change log :data:`CHANGES_TABLE` (``rid`` -> ``seq``) is written by
:func:`note_change` in the same transaction as every insert into or delete
from the index: ``seq`` grows with each change, so any process can tell from
``max(seq)`` whether the index changed since it last looked, and which rows
(the in-process index of :mod:`meta_memory.recall.lexical_index` catches up
this way). One row per ``rid`` ever indexed: it holds no content.

Spec: README "Going beyond the reference" (Unicode-aware recall); reference
notes §3.1-§3.3.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from meta_memory.recall import text
from meta_memory.recall.query_limits import bounded_terms

__all__ = [
    "FTS_TABLE",
    "CHANGES_TABLE",
    "INDEX_VERSION",
    "COLUMNS",
    "TOKENIZE",
    "BM25_WEIGHTS",
    "BM25_EXPR",
    "create_statements",
    "document",
    "match_expression",
    "match_terms",
    "note_change",
    "quote",
]

FTS_TABLE = "records_fts"

#: The change log of :data:`FTS_TABLE`: ``(rid INTEGER PRIMARY KEY, seq INTEGER)``, ``seq`` indexed.
CHANGES_TABLE = "records_fts_changes"

#: Version of what :func:`document` writes (tokenisation, stemming, columns).
#: A store must rebuild its index when this (or the DDL) changes. 3: two-letter words, the
#: Turkish i fold, CJK characters beside their bigrams, emoji.
INDEX_VERSION = 3

#: The indexed columns, in table order.
COLUMNS: tuple[str, ...] = ("title", "body", "tags")

#: Split on whitespace (Z*) and control characters only: the text is pre-tokenised.
TOKENIZE = "unicode61 remove_diacritics 0 categories 'L* M* N* P* S* Co Cn'"

#: bm25 column weights, in :data:`COLUMNS` order (the reference's field weights:
#: title 4, body 2, tags 5).
BM25_WEIGHTS: tuple[float, ...] = (4.0, 2.0, 5.0)

#: The ranking expression to ``ORDER BY`` (ascending: best first).
BM25_EXPR = f"bm25({FTS_TABLE}, {', '.join(f'{w:g}' for w in BM25_WEIGHTS)})"


def create_statements() -> list[str]:
    """DDL for the full-text index (idempotent: safe to run at every open).

    Returns a list of SQL statements to execute in order.
    """
    columns = ", ".join(COLUMNS)
    return [
        f'CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} USING fts5({columns}, tokenize = "{TOKENIZE}")',
        f"CREATE TABLE IF NOT EXISTS {CHANGES_TABLE} (rid INTEGER PRIMARY KEY, seq INTEGER NOT NULL)",
        f"CREATE INDEX IF NOT EXISTS {CHANGES_TABLE}_seq_idx ON {CHANGES_TABLE}(seq)",
    ]


def note_change(conn: Any, rid: int) -> None:
    """Log that the full-text row of ``rid`` was inserted or deleted (call inside that change's transaction).

    ``conn`` is a ``sqlite3`` connection; the row's ``seq`` becomes one more than the log's largest
    (writes are serialised, so ``seq`` values are unique and only grow).
    """
    conn.execute(
        f"INSERT INTO {CHANGES_TABLE}(rid, seq) VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM {CHANGES_TABLE})) "
        "ON CONFLICT(rid) DO UPDATE SET seq = excluded.seq",
        (rid,),
    )


def document(title: str, description: str, body: str, tags: Sequence[str]) -> dict[str, str]:
    """Column -> text to index for one record.

    Input: the record's title, description, body and tags (raw, as stored).
    Output: ``{"title": ..., "body": ..., "tags": ...}``, each the record's
    tokens joined by single spaces (repeats kept, so bm25 sees term
    frequencies). Insert with ``INSERT INTO records_fts(rowid, <keys>)``.
    Never raises.
    """
    return {
        "title": " ".join(text.tokens(title)),
        "body": " ".join(text.tokens(description + "\n" + body)),
        "tags": " ".join(text.tokens(" ".join(tags))),
    }


def quote(term: str) -> str:
    """One FTS5 string literal: ``"term"`` with inner ``"`` doubled."""
    return '"' + term.replace('"', '""') + '"'


def match_expression(query_text: str | None, query_terms: Iterable[str] = ()) -> str | None:
    """An FTS5 ``MATCH`` expression: the query's terms, each quoted, joined by ``OR``.

    Input: the raw query text (or ``None``) and extra query terms (raw strings,
    normalised and tokenised here). Output: e.g. ``'"passport" OR "travel"'``,
    or ``None`` when the query has no searchable term (only stopwords, short
    words or punctuation). The result is always valid FTS5 syntax. At most 64 terms
    (:mod:`meta_memory.recall.query_limits`).
    """
    terms = bounded_terms(query_text, query_terms)
    if not terms:
        return None
    return " OR ".join(quote(t) for t in terms)


def match_terms(expression: str) -> list[str] | None:
    """The phrases of a ``MATCH`` string exactly as :func:`match_expression` writes it, in order.

    Input: e.g. ``'"passport" OR "travel"'``. Output: ``["passport", "travel"]`` (repeats kept, as
    FTS5 scores each phrase), or ``None`` when the string is not quoted tokens joined by ``OR``
    (an inner quote, an empty phrase, bare words, other FTS5 syntax): such a query is left to FTS5.
    Never raises.
    """
    if len(expression) < 3 or expression[0] != '"' or expression[-1] != '"':
        return None
    parts = expression[1:-1].split('" OR "')
    if any(not part or '"' in part or any(ch.isspace() for ch in part) for part in parts):
        return None
    return parts
