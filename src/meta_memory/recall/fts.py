"""The full-text index contract between the record store and recall.

The store runs :func:`create_statements` in its schema migration, writes
:func:`document` for a record into :data:`FTS_TABLE` (``rowid`` = the
record's ``rowid``) in the same transaction as the record, and deletes that
row in the same transaction as any change that takes the record out of
``active``. A record is in the index iff it is active. Recall builds a
``MATCH`` expression with :func:`match_expression`; candidates are ordered by
bm25 computed over the statistics of the scope the recall reads
(:mod:`meta_memory.recall.bm25`), never FTS5's own ``bm25()``, whose statistics
are the whole realm's.

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

The change log :data:`CHANGES_TABLE` (``seq`` -> ``rid``) is appended to by
:func:`note_change` in the same transaction as every insert into or delete
from the index: ``seq`` grows with each change, so any process can tell from
``max(seq)`` whether the index changed since it last looked, and which rows
(the in-process index of :mod:`meta_memory.recall.lexical_index` catches up
this way). One row per change, keyed by ``seq`` alone: a change appends to
the right edge of one b-tree (one page per write; the log keyed by ``rid``
with an index on ``seq`` wrote two). It holds no content.

The scope statistics :data:`SCOPES_TABLE` (``scope_kind, scope_key`` -> ``n_rows``,
``n_tokens``: the scope's indexed rows and their tokens, a row gone once the scope has
none) are kept by :func:`note_scope` in the same transaction as every insert into or
delete from the index: bm25's ``N`` and average length of one scope, read at recall
without a scan. A term's document frequency within the scope is counted from the
scope's matching rows, which the ranking reads anyway (in a realm of one scope, where the
realm's counts are the scope's, from FTS5 by :mod:`meta_memory.recall.fts_top`).

Spec: README "Going beyond the reference" (Unicode-aware recall); reference
notes §3.1-§3.3.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from meta_memory.recall import text
from meta_memory.recall.query_limits import bounded_terms

__all__ = [
    "FTS_TABLE",
    "CHANGES_TABLE",
    "SCOPES_TABLE",
    "INDEX_VERSION",
    "COLUMNS",
    "TOKENIZE",
    "BM25_WEIGHTS",
    "BM25_EXPR",
    "create_statements",
    "document",
    "match_expression",
    "match_terms",
    "match_phrases",
    "note_change",
    "note_scope",
    "document_size",
    "quote",
]

FTS_TABLE = "records_fts"

#: The change log of :data:`FTS_TABLE`: ``(seq INTEGER PRIMARY KEY, rid INTEGER)``, one row per change.
CHANGES_TABLE = "records_fts_log"

#: The per-scope statistics of the index: ``(scope_kind, scope_key) -> (n_rows, n_tokens)``.
SCOPES_TABLE = "records_fts_scopes"

#: Version of what :func:`document` writes (tokenisation, stemming, columns) and of the statistics
#: kept beside it. A store must rebuild its index when this (or the DDL) changes. 3: two-letter
#: words, the Turkish i fold, CJK characters beside their bigrams, emoji. 4: per-scope statistics. 5: the
#: characters that show nothing inside a word (zero-width space, soft hyphen...) no longer split it. 6: a
#: single digit (``3`` of "level 3"), and a single capital letter but ``A`` and ``I`` (``B`` of "plan B").
INDEX_VERSION = 6

#: The indexed columns, in table order.
COLUMNS: tuple[str, ...] = ("title", "body", "tags")

#: Split on whitespace (Z*) and control characters only: the text is pre-tokenised.
TOKENIZE = "unicode61 remove_diacritics 0 categories 'L* M* N* P* S* Co Cn'"

#: bm25 column weights, in :data:`COLUMNS` order (the reference's field weights:
#: title 4, body 2, tags 5).
BM25_WEIGHTS: tuple[float, ...] = (4.0, 2.0, 5.0)

#: FTS5's own ranking expression (its statistics are the whole table's, i.e. every scope of a realm:
#: recall does not rank by it; see :mod:`meta_memory.recall.bm25`).
BM25_EXPR = f"bm25({FTS_TABLE}, {', '.join(f'{w:g}' for w in BM25_WEIGHTS)})"


def create_statements() -> list[str]:
    """DDL for the full-text index (idempotent: safe to run at every open).

    Returns a list of SQL statements to execute in order.
    """
    columns = ", ".join(COLUMNS)
    return [
        f'CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} USING fts5({columns}, tokenize = "{TOKENIZE}")',
        f"CREATE TABLE IF NOT EXISTS {CHANGES_TABLE} (seq INTEGER PRIMARY KEY, rid INTEGER NOT NULL)",
        f"CREATE TABLE IF NOT EXISTS {SCOPES_TABLE} (scope_kind TEXT NOT NULL, scope_key TEXT NOT NULL, "
        "n_rows INTEGER NOT NULL, n_tokens INTEGER NOT NULL, PRIMARY KEY (scope_kind, scope_key)) WITHOUT ROWID",
    ]


def note_scope(conn: Any, scope_kind: str, scope_key: str, rows: int, tokens: int) -> None:
    """Add ``rows`` indexed rows holding ``tokens`` tokens (negative: removed) to a scope's statistics.

    Call inside the transaction that inserts into or deletes from the index; ``conn`` is a ``sqlite3``
    connection. A scope left with no row loses its statistics row (no trace of an erased scope stays).
    """
    conn.execute(
        f"INSERT INTO {SCOPES_TABLE}(scope_kind, scope_key, n_rows, n_tokens) VALUES (?, ?, ?, ?) "
        "ON CONFLICT(scope_kind, scope_key) DO UPDATE SET n_rows = n_rows + excluded.n_rows, "
        "n_tokens = n_tokens + excluded.n_tokens",
        (scope_kind, scope_key, rows, tokens),
    )
    if rows < 0:
        conn.execute(f"DELETE FROM {SCOPES_TABLE} WHERE scope_kind = ? AND scope_key = ? AND n_rows <= 0",
                     (scope_kind, scope_key))


def document_size(columns: Iterable[str]) -> int:
    """How many tokens a full-text row holds (its columns as :func:`document` writes them): bm25's ``D``.
    A column is its tokens joined by single spaces (none hold white space), so its count is its spaces
    plus one, or nothing when empty (the same as splitting it, without building the list)."""
    return sum(text.count(" ") + 1 for text in columns if text)


def note_change(conn: Any, rid: int) -> None:
    """Log that the full-text row of ``rid`` was inserted or deleted (call inside that change's transaction).

    ``conn`` is a ``sqlite3`` connection; the row's ``seq`` becomes one more than the log's largest
    (SQLite's choice of a new ``INTEGER PRIMARY KEY``; no log row is ever deleted, and writes are
    serialised, so ``seq`` values are unique and only grow).
    """
    conn.execute(_NOTE_CHANGE, (rid,))


_NOTE_CHANGE = f"INSERT INTO {CHANGES_TABLE}(rid) VALUES (?)"


def document(title: str, description: str, body: str, tags: Sequence[str]) -> dict[str, str]:
    """Column -> text to index for one record.

    Input: the record's title, description, body and tags (raw, as stored).
    Output: ``{"title": ..., "body": ..., "tags": ...}``, each the record's
    tokens joined by single spaces (repeats kept, so bm25 sees term
    frequencies). Insert with ``INSERT INTO records_fts(rowid, <keys>)``.
    Never raises.
    """
    return {
        "title": text.index_text(title),
        "body": text.index_text(description + "\n" + body),
        "tags": text.index_text(" ".join(tags)),
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


def match_phrases(expression: str) -> list[str]:
    """The phrases of a ``MATCH`` string of quoted strings (``""`` inside is a quote) or bare words joined
    by ``OR``, in order, repeats kept.

    Input: e.g. ``'"passport" OR travel'``. Output: ``["passport", "travel"]`` (a doubled quote inside a
    quoted string stands for one quote). Raises
    ``ValueError`` naming the problem for anything else (``(``, ``NEAR``, ``*``, ``AND``, an unterminated
    string, a dangling ``OR``), as FTS5 refuses such a string.
    """
    terms: list[str] = []
    i, n = 0, len(expression)
    expect_term = True
    while i < n:
        ch = expression[i]
        if ch.isspace():
            i += 1
            continue
        if expect_term:
            if ch == '"':
                j, buf = i + 1, []
                while True:
                    k = expression.find('"', j)
                    if k < 0:
                        raise ValueError("unterminated string")
                    buf.append(expression[j:k])
                    if k + 1 < n and expression[k + 1] == '"':
                        buf.append('"')
                        j = k + 2
                        continue
                    i = k + 1
                    break
                terms.append("".join(buf))
            else:
                m = re.match(r"[\w\-]+", expression[i:])
                if not m or m.group(0) == "OR":
                    raise ValueError(f"syntax error near {expression[i:i + 10]!r}")
                terms.append(m.group(0))
                i += len(m.group(0))
            expect_term = False
        else:
            if expression.startswith("OR", i) and (i + 2 == n or expression[i + 2].isspace() or expression[i + 2] == '"'):
                i += 2
                expect_term = True
                continue
            raise ValueError(f"syntax error near {expression[i:i + 10]!r}")
    if expect_term and terms:
        raise ValueError("expression ends with OR")
    return terms


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
