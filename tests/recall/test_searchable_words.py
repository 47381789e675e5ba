"""Every word a user types is searchable, through the real gateway; old full-text indexes are rebuilt.

Short alphanumeric words (``S3``, ``AI``, ``Q3``, ``v2``, ``Go``, ``UK``), Turkish dotted and dotless
i, a single CJK character, an emoji: each finds the record it is written in over HTTP, while
stopword-only queries still answer ``no_query_terms``. A single digit (``level 3``) and a single letter
written in capitals (``plan B``, but ``A`` and ``I``) rank their record first, on SQLite and PostgreSQL. A
realm file (or PostgreSQL schema) whose full-text index was written by an older tokeniser is re-indexed at
its next open. Properties: the query side's terms are the index side's tokens for any text holding digits,
in the FTS5 column and in PostgreSQL's row alike.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from contract.pgsupport import DSN, dsn_with_schema, require_postgres, throwaway_schema
from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.model import Author, Scope
from meta_memory.agent_memory.store import pg_schema, schema
from meta_memory.agent_memory.store.base import AgentMemoryStore
from meta_memory.agent_memory.store.pg_schema import fts_row
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore, realm_db_path
from meta_memory.recall import fts
from meta_memory.recall import text as recall_text
from meta_memory.recall.fts import match_expression
from meta_memory.recall.lexical import LexicalRecallProvider
from meta_memory.recall.provider import RecallRequest
from meta_memory.recall.text import index_text, normalize, query_terms, token_set, tokens
from support import realm_db, write_config

from .conftest import IDENTITY, T0, rec
from .store_index import StoreIndex

ME = "lead:main"

RECORDS = {
    "storage": ("Storage plan", "Move the archive to S3 before Q3; the v2 exporter is ready."),
    "stack": ("Team stack", "The UK team writes Go and builds the AI assistant."),
    "office": ("Ofis", "İstanbul ofisi ılık"),
    "tea": ("茶", "我喜欢喝绿茶"),
    "mood": ("Friday", "Shipped the release 🎉 and had tea 🍵"),
    "filler": ("Unrelated", "Gardening notes about tomatoes and basil."),
}

QUERIES = {
    "S3": "storage", "s3": "storage", "Q3": "storage", "v2": "storage",
    "AI": "stack", "Go": "stack", "UK": "stack", "uk": "stack",
    "istanbul": "office", "ISTANBUL": "office", "İSTANBUL": "office", "ILIK": "office", "ılık": "office",
    "茶": "tea", "绿茶": "tea",
    "🎉": "mood", "🍵": "mood",
}


def _ids(gateway: Any, query: str) -> tuple[list[str], str | None]:
    got = gateway.result("meta/agent_memory/recall", {"identity": ME, "query_text": query, "max_entries": 8})
    return [r["memory_id"] for r in got["records"]], got["skip_reason"]


def test_every_word_a_user_types_finds_its_record(gateway: Any) -> None:
    ids = {}
    for name, (title, body) in RECORDS.items():
        ids[name] = gateway.result("meta/agent_memory/remember", {"identity": ME, "title": title, "body": body})["memory_id"]
    for query, name in QUERIES.items():
        found, skip = _ids(gateway, query)
        assert skip is None, (query, skip)
        assert ids[name] in found, (query, found)
        assert ids["filler"] not in found, query
    for query in ("where did I put the", "is it up to us", "a I"):
        found, skip = _ids(gateway, query)
        assert (found, skip) == ([], "no_query_terms"), query


def test_an_index_written_by_an_older_tokeniser_is_rebuilt_at_open(tmp_path: Path) -> None:
    root = tmp_path / "am"
    with SqliteAgentMemoryStore(root) as store:
        rec, _ = record_writes.remember(store, "default", ME, "Storage plan", "Move the archive to S3; 茶 and 🍵")
        tomb, _ = record_writes.remember(store, "default", ME, "Gone", "an S3 note that was forgotten")
        record_writes.forget(store, "default", Scope.identity("default", ME), tomb.memory_id, Author.application())
    # What an older release left: its own index fingerprint, rows without the short words.
    conn = sqlite3.connect(realm_db_path(root, "default"))
    conn.execute("UPDATE schema_migrations SET name = 'fts-0000000000000000' WHERE domain = 'records-fts'")
    conn.execute("DELETE FROM records_fts")
    conn.execute("INSERT INTO records_fts(rowid, title, body, tags) SELECT rid, 'storag plan', 'move archiv', '' "
                 "FROM records WHERE status_kind = 'active'")
    conn.commit()
    conn.close()
    with SqliteAgentMemoryStore(root) as store:
        scope = Scope.identity("default", ME)
        for query in ("S3", "茶", "🍵", "storage"):
            expr = match_expression(query)
            assert expr is not None
            assert [v.memory_id for v, _ in store.search("default", scope, expr, 10)] == [rec.memory_id], query


# -- single digits and single capital letters ------------------------------------------------------

LEVELS = {
    "level 2": ("Deploy", "Deploy the build to level 2 of the staging ladder."),
    "level 3": ("Deploy", "Deploy the build to level 3 of the staging ladder."),
    "room 5": ("Meeting", "The review meets in room 5 on the first floor."),
    "room 7": ("Meeting", "The review meets in room 7 on the first floor."),
    "plan B": ("Fallback", "If the vendor slips we switch to plan B and ship the lite build."),
    "plan C": ("Fallback", "If the vendor slips we switch to plan C and ship the lite build."),
    "vitamin D": ("Supplements", "Takes vitamin D every morning."),
    "vitamin C": ("Supplements", "Takes vitamin C every morning."),
    "R": ("Languages", "The analysts write R for the reports."),
    "C": ("Languages", "The analysts write C for the reports."),
    "level ٣": ("Deploy", "Deploy the build to level ٣ of the staging ladder."),
}

#: query -> the record it must rank first (and alone among the records that differ only by that word)
RANKED_FIRST = {
    "level 3": "level 3", "level 2": "level 2", "3": "level 3", "room 5": "room 5", "room 7": "room 7",
    "plan B": "plan B", "plan C": "plan C", "vitamin C": "vitamin C", "vitamin D": "vitamin D",
    "analysts write R": "R", "analysts write C": "C", "٣": "level ٣", "level ٣": "level ٣",
}


def _remember_levels(gateway: Any) -> dict[str, str]:
    return {name: gateway.result("meta/agent_memory/remember", {"identity": ME, "title": title, "body": body})["memory_id"]
            for name, (title, body) in LEVELS.items()}


def test_a_single_digit_or_capital_letter_ranks_its_record_first(backend_gateway: Any) -> None:
    ids = _remember_levels(backend_gateway)
    for query, name in RANKED_FIRST.items():
        found, skip = _ids(backend_gateway, query)
        assert skip is None and found, (query, skip)
        assert found[0] == ids[name], (query, found)
    found, _ = _ids(backend_gateway, "3")  # the digit alone: only the record that holds it
    assert found == [ids["level 3"]]
    # "A" and "I" alone are English words, not names; a lower-case single letter is not searched either
    for query in ("A I", "a b c", "b"):
        assert _ids(backend_gateway, query) == ([], "no_query_terms"), query


def test_each_search_path_ranks_a_single_digit_or_capital_letter(index: StoreIndex) -> None:
    """FTS5, the in-process index (which reads FTS5's rows) and PostgreSQL answer alike."""
    index.add_many(rec(name, title, body, at=T0 + i) for i, (name, (title, body)) in enumerate(LEVELS.items()))
    for query, name in RANKED_FIRST.items():
        got = LexicalRecallProvider().recall(RecallRequest(IDENTITY, "default", query), index.reader(IDENTITY))
        assert [s.record.memory_id for s in got.records][:1] == [name], query  # type: ignore[attr-defined]


@contextmanager
def _index_version_5(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This code writing full-text rows as the release of index version 5 did: no token of one character but a
    CJK character or an emoji (no digit, no capital letter alone), and the index recorded at version 5."""
    with monkeypatch.context() as patch:
        index_text = recall_text.index_text
        patch.setattr(recall_text, "index_text", lambda text: " ".join(
            t for t in index_text(text).split() if len(t) > 1 or recall_text.is_cjk(t) or not t.isalnum()))
        patch.setattr(fts, "INDEX_VERSION", 5)
        yield


def _fill(store: AgentMemoryStore) -> dict[str, str]:
    return {name: record_writes.remember(store, "default", ME, title, body)[0].memory_id
            for name, (title, body) in LEVELS.items()}


def _check_reindexed(gw: Any, ids: dict[str, str]) -> None:
    assert _ids(gw, "3") == ([ids["level 3"]], None)
    for query in ("level 3", "plan B", "٣", "room 7"):
        assert _ids(gw, query)[0][0] == ids[RANKED_FIRST[query]], query


def test_a_sqlite_realm_indexed_without_single_digits_is_reindexed_at_open(
        monkeypatch: pytest.MonkeyPatch, gateway_factory: Any, tmp_path: Path) -> None:
    state = tmp_path / "state"
    with _index_version_5(monkeypatch), SqliteAgentMemoryStore(state / "agent-memory") as store:
        ids = _fill(store)
        old = f"fts-{schema.fts_fingerprint()}"
    with sqlite3.connect(realm_db(state)) as conn:  # as the previous release left it: no row holds "3"
        assert conn.execute("SELECT name FROM schema_migrations WHERE domain = 'records-fts' "
                            "ORDER BY version DESC").fetchone() == (old,)
        assert conn.execute("SELECT count(*) FROM records_fts WHERE records_fts MATCH '\"3\"'").fetchone() == (0,)
    _check_reindexed(gateway_factory(state), ids)


@pytest.mark.postgres
def test_a_postgres_schema_indexed_without_single_digits_is_reindexed_at_open(
        monkeypatch: pytest.MonkeyPatch, gateway_factory: Any, tmp_path: Path) -> None:
    require_postgres()
    import psycopg

    from meta_memory.agent_memory.store.postgres import PostgresAgentMemoryStore

    with throwaway_schema() as name:
        q = pg_schema.quote_ident(name)
        with _index_version_5(monkeypatch):
            store = PostgresAgentMemoryStore(DSN, schema=name)
            try:
                ids = _fill(store)
            finally:
                store.close()
        with psycopg.connect(DSN) as conn:
            assert conn.execute(f"SELECT count(*) FROM {q}.records_fts WHERE doc @@ '3'::tsquery").fetchone() == (0,)
        body = f'[agent_memory]\nstore = "postgres"\ndsn = "{dsn_with_schema(name)}"\n'
        gw = gateway_factory(tmp_path / "state", config=write_config(tmp_path / "meta.toml", body))
        try:
            _check_reindexed(gw, ids)
        finally:
            gw.stop()
        with psycopg.connect(DSN) as conn:
            assert conn.execute(f"SELECT count(*) FROM {q}.records_fts WHERE doc @@ '3'::tsquery").fetchone() == (1,)


# -- both sides agree on texts holding digits -------------------------------------------------------

#: Single decimal digits of several scripts (ASCII, Arabic-Indic, Devanagari, fullwidth...) and compatibility
#: digits NFKC maps onto ASCII ones (superscript, circled).
_DIGITS = st.characters(categories=("Nd",)) | st.sampled_from(list("0123456789²³①⑨"))
_LETTERS = st.characters(categories=("Lu", "Ll", "Lo"))
_PIECES = st.one_of(_DIGITS, st.text(alphabet=_LETTERS | _DIGITS, min_size=1, max_size=8))
_SEPARATORS = st.sampled_from([" ", "  ", ", ", ". ", "-", "_", ":", "/", "\n", "(", ")", "#", "'"])


@st.composite
def _texts_with_digits(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A text of words and lone digits, with the lone digits written in it as words of their own."""
    pieces = draw(st.lists(_PIECES, min_size=1, max_size=10))
    digits = draw(st.lists(_DIGITS, min_size=1, max_size=3))
    words = pieces + digits
    order = draw(st.permutations(words))
    seps = draw(st.lists(_SEPARATORS, min_size=len(order), max_size=len(order)))
    text = "".join(w + (" " if w in digits else sep) for w, sep in zip(order, seps, strict=True))
    return text, digits


@settings(max_examples=400, deadline=None)
@given(_texts_with_digits())
def test_query_and_index_sides_agree_on_texts_with_digits(case: tuple[str, list[str]]) -> None:
    text, digits = case
    index = token_set(text)
    assert set(query_terms(text)) <= index  # every term a query of the text asks is indexed for it
    for digit in digits:  # each lone digit is a term and finds the text
        assert query_terms(digit) == [normalize(digit)], digit
        assert normalize(digit) in index, digit
    assert index_text(text).split() == tokens(text)  # the column FTS5 and the in-process index read
    lexemes, _, ntok = fts_row(text, "", text, [])  # PostgreSQL's row: the same tokens
    assert set(lexemes) == index and ntok == 2 * len(tokens(text))


@settings(max_examples=200, deadline=None)
@given(st.characters(categories=("Lu",)), st.text(alphabet=_LETTERS, min_size=3, max_size=10))
def test_a_capital_letter_written_alone_is_a_term_on_both_sides(letter: str, word: str) -> None:
    text = f"{word} {letter}"
    name = normalize(letter)
    if name in ("a", "i"):  # English words, not names ("A", "I", and their fullwidth or Turkish spellings)
        assert token_set(f"plan {letter}") == {"plan"} and query_terms(letter) == []
        return
    assume(len(name) == 1 and name.isalpha())  # not a letter NFKC and case folding spell as two ("Ǆ": "dž")
    assert query_terms(letter) == [name] and name in token_set(text)
    assert set(query_terms(text)) <= token_set(text)
    assert query_terms(name) == [] or name.isupper()  # written in lower case it is not a term
