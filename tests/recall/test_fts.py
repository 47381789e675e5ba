"""The full-text contract: schema, documents and MATCH expressions that never break FTS5."""

from __future__ import annotations

import itertools
import sqlite3
import unicodedata

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from meta_memory.errors import AgentMemoryError
from meta_memory.recall import fts

from .conftest import rec
from .store_index import StoreIndex

_EXAMPLES = itertools.count()


@pytest.fixture(scope="module")
def conn() -> sqlite3.Connection:
    c = sqlite3.connect(":memory:")
    for stmt in fts.create_statements():
        c.execute(stmt)
    for stmt in fts.create_statements():  # idempotent
        c.execute(stmt)
    rows = [
        ("Multi-agent setup", "", "We run a multi-agent system", ["ops"]),
        ("Tea", "", "我喜欢喝绿茶", []),
        ("Café", "", "Meet at the café on the STRASSE", ["travel"]),
        ("Quotes", "", 'He said "don\'t" and a:b (x) * NEAR AND -x', []),
    ]
    for i, (title, desc, body, tags) in enumerate(rows, start=1):
        doc = fts.document(title, desc, body, tags)
        c.execute(f"INSERT INTO {fts.FTS_TABLE}(rowid, {', '.join(doc)}) VALUES (?, ?, ?, ?)", (i, *doc.values()))
    return c


def _hits(c: sqlite3.Connection, query: str) -> list[int]:
    match = fts.match_expression(query)
    if match is None:
        return []
    rows = c.execute(
        f"SELECT rowid FROM {fts.FTS_TABLE} WHERE {fts.FTS_TABLE} MATCH ? ORDER BY {fts.BM25_EXPR}", (match,)
    )
    return [r[0] for r in rows]


def test_document_columns_match_schema() -> None:
    doc = fts.document("Title", "desc", "body text", ["a-tag"])
    assert tuple(doc) == fts.COLUMNS
    assert doc["body"] == "desc body text"
    assert doc["tags"] == "a-tag tag"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("multi-agent", [1]),
        ("agent", [1]),
        ("绿茶", [2]),
        (unicodedata.normalize("NFD", "café"), [3]),
        ("ｃａｆé", [3]),
        ("straße", [3]),
        ("don't", [4]),
        ("NEAR", [4]),
        ("AND", []),  # a stopword: no term, nothing matched
    ],
)
def test_examples_are_found(conn: sqlite3.Connection, query: str, expected: list[int]) -> None:
    assert _hits(conn, query) == expected


@pytest.mark.parametrize("query", ['"', "a:b", "(", ")", "*", "-x", "^", "NOT", "OR", "title:", '"unterminated', "{x}"])
def test_syntax_characters_never_raise(conn: sqlite3.Connection, query: str) -> None:
    assert isinstance(_hits(conn, query), list)


def test_stopword_query_has_no_match_expression() -> None:
    assert fts.match_expression("where did I put the") is None
    assert fts.match_expression(None, []) is None


def test_match_expression_quotes_every_term() -> None:
    assert fts.match_expression("Passport travel NEAR") == '"near" OR "passport" OR "travel"'


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80), st.lists(st.text(max_size=20), max_size=3))
def test_any_query_yields_valid_match_or_none(conn: sqlite3.Connection, text: str, extra: list[str]) -> None:
    match = fts.match_expression(text, extra)
    if match is None:
        return
    conn.execute(f"SELECT count(*) FROM {fts.FTS_TABLE} WHERE {fts.FTS_TABLE} MATCH ?", (match,)).fetchone()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(min_size=1, max_size=60))
def test_any_text_indexes_and_finds_itself(index: StoreIndex, text: str) -> None:
    # One store for every example, a fresh identity each: bm25 reads only the scope's own statistics.
    safe = text.encode("utf-8", "replace").decode("utf-8")
    who = f"h{next(_EXAMPLES)}"
    try:
        index.add(rec("m" + who, "t", safe, scope=who))
    except AgentMemoryError:
        assume(False)  # the validator refuses it (an empty body after trimming, a control character, a secret)
    match = fts.match_expression(safe)
    if match is not None:
        found = [r.memory_id for r, _ in index.reader(who).search(match, 5)]
        assert found == ["m" + who]
