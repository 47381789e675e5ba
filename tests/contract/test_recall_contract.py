"""Recall through the store, on SQLite and PostgreSQL alike: the one normalisation, quoting, ranking.

Spec README "Going beyond the reference" (Unicode-aware recall); reference notes §3.1-§3.3.
"""

from __future__ import annotations

import unicodedata
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.model import Author, Scope
from meta_memory.agent_memory.store.base import AgentMemoryStore
from meta_memory.errors import AgentMemoryError
from meta_memory.recall.fts import SCOPES_TABLE, match_expression, quote
from meta_memory.recall.lexical import LexicalRecallProvider
from meta_memory.recall.provider import RecallRequest
from meta_memory.recall.text import tokens
from meta_memory.services.recall_reader import guarded_recall
from support import raw_rows

R = "default"
ID = "lead:main"
ME = Scope.identity(R, ID)


def recall(store: AgentMemoryStore, text: str, identity: str = ID, k: int = 8) -> list[str]:
    request = RecallRequest(identity=identity, realm=R, query_text=text, max_entries=k)
    outcome = guarded_recall(LexicalRecallProvider(), store, request, Scope.identity(R, identity))
    return [s.record.title for s in outcome.records]


def test_passport_example_and_stopword_only_query(agent_store: AgentMemoryStore) -> None:
    record_writes.remember(agent_store, R, ID, "Passport location", "Top drawer of the desk", ["travel"])
    record_writes.remember(agent_store, R, ID, "Lunch", "Salad on Mondays")
    assert recall(agent_store, "I need the passport for travel") == ["Passport location"]
    request = RecallRequest(identity=ID, realm=R, query_text="where did I put the")
    outcome = guarded_recall(LexicalRecallProvider(), agent_store, request, ME)
    assert outcome.records == [] and outcome.skip_reason == "no_query_terms"


@pytest.mark.parametrize(
    ("title", "body", "query"),
    [
        ("Favourite place", "The café on the corner", "cafe\u0301"),  # stored NFC, asked NFD
        ("Favourite place", "The cafe\u0301 on the corner", "café"),  # stored NFD, asked NFC
        ("Favourite place", "The ｃａｆé on the corner", "CAFÉ"),  # full-width, upper case
        ("Drinks", "每天早上喝绿茶", "绿茶"),  # CJK bigrams
        ("Address", "Lives on Hauptstraße", "HAUPTSTRASSE"),  # casefold ß -> ss
        ("Address", "Lives on HAUPTSTRASSE", "hauptstraße"),
        ("Agents", "multi-agent planning notes", "agent"),  # hyphenated word parts
    ],
)
def test_unicode_recall_examples(agent_store: AgentMemoryStore, title: str, body: str, query: str) -> None:
    record_writes.remember(agent_store, R, ID, title, body)
    record_writes.remember(agent_store, R, ID, "Unrelated", "nothing to see here at all")
    assert recall(agent_store, query) == [title]


def test_forgotten_and_superseded_records_leave_recall(agent_store: AgentMemoryStore) -> None:
    rec, _ = record_writes.remember(agent_store, R, ID, "Standup", "Standup at nine")
    new, _ = record_writes.update(agent_store, R, ID, rec.memory_id, "Standup", "Standup at ten")
    assert [s for s in recall(agent_store, "standup")] == ["Standup"]
    hits = agent_store.search(R, ME, match_expression("standup"), 10)
    assert [r.id for r, _ in hits] == [new.memory_id]
    record_writes.forget(agent_store, R, ME, new.memory_id, Author.application())
    assert recall(agent_store, "standup") == []


def test_ranking_prefers_tags_and_titles_and_scores_lower_is_better(agent_store: AgentMemoryStore) -> None:
    record_writes.remember(agent_store, R, ID, "Garden notes", "water the tomatoes daily")
    record_writes.remember(agent_store, R, ID, "Tomatoes", "buy seeds", ["tomatoes"])
    record_writes.remember(agent_store, R, ID, "Shopping", "tomatoes and bread")
    ranked = recall(agent_store, "tomatoes")
    assert ranked[0] == "Tomatoes" and sorted(ranked) == ["Garden notes", "Shopping", "Tomatoes"]
    hits = agent_store.search(R, ME, match_expression("tomatoes"), 10)
    scores = [score for _, score in hits]
    assert hits[0][0].title == "Tomatoes"  # title (4) + tags (5) weigh more than body (2)
    assert scores == sorted(scores) and all(s < 0 for s in scores)
    assert agent_store.search(R, ME, match_expression("tomatoes"), 1) == hits[:1]


HOSTILE = [
    '"',
    '""',
    "a\" OR \"b",
    "AND OR NOT",
    "passport*",
    "-passport",
    "title:passport",
    "NEAR(passport drawer)",
    "passport'; DROP TABLE records; --",
    "\\' | ! & <-> :*",
    "%passport%",
    "_",
    "\x00passport",
    "passport\ud800",
    "(((passport)))",
    "{passport}^2",
]


@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_query_strings_are_just_words(agent_store: AgentMemoryStore, query: str) -> None:
    rec, _ = record_writes.remember(agent_store, R, ID, "Passport location", "Top drawer of the desk")
    record_writes.remember(agent_store, R, ID, "Other", "nothing in common")
    expr = match_expression(query)
    if expr is None:
        return
    hits = agent_store.search(R, ME, expr, 10)
    stored = [agent_store.get(R, r.id) for r, _ in hits]
    assert all(x is not None and x.scope == ME and x.status.is_active for x in stored)
    if "passport" in query.lower():
        assert [r.id for r, _ in hits] == [rec.memory_id]
    assert agent_store.get(R, rec.memory_id) is not None  # nothing was dropped


@pytest.mark.parametrize("expression", ['"unterminated', '"a" OR', "OR", '"a" AND "b" ('])
def test_malformed_match_expressions_are_io_errors_not_crashes(agent_store: AgentMemoryStore, expression: str) -> None:
    record_writes.remember(agent_store, R, ID, "Anything", "some words")
    with pytest.raises(AgentMemoryError) as info:
        agent_store.search(R, ME, expression, 10)
    assert info.value.reason == "io"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=4))
def test_any_query_text_searches_safely_and_finds_its_own_words(agent_store: AgentMemoryStore, words: list[str]) -> None:
    text = " ".join(words)
    expr = match_expression(text)
    if expr is None:
        return
    title = "probe " + unicodedata.normalize("NFC", text)[:150]
    try:
        rec, _ = record_writes.remember(agent_store, R, ID, title, "probe body " + text[:1000])
    except AgentMemoryError:
        return  # e.g. a string that looks like a secret, or NUL on PostgreSQL
    hits = agent_store.search(R, ME, expr, 500)
    assert rec.memory_id in {r.id for r, _ in hits}
    stored = [agent_store.get(R, r.id) for r, _ in hits]
    assert all(x is not None and x.scope == ME and x.status.is_active for x in stored)


def test_quoted_term_with_quote_character_round_trips(agent_store: AgentMemoryStore) -> None:
    record_writes.remember(agent_store, R, ID, "Quoting", "plain words only")
    assert agent_store.search(R, ME, quote('say "hi"'), 10) == []
    token = tokens("Quoting")[0]  # the stored (stemmed) token
    assert [r.title for r, _ in agent_store.search(R, ME, quote(token), 10)] == ["Quoting"]


def _statistics_rows(store: AgentMemoryStore, backend: str) -> list[tuple[Any, ...]]:
    """Every row of the store's per-scope ranking statistics (scope, then counts or term)."""
    if backend == "sqlite":
        return [tuple(r) for r in raw_rows(store, R, f"SELECT * FROM {SCOPES_TABLE}")]
    return [tuple(r.values()) if isinstance(r, dict) else tuple(r) for table in ("fts_stats", "fts_terms")
            for r in raw_rows(store, R, f"SELECT * FROM {table}")]


def test_ranking_statistics_are_per_scope_and_leave_with_the_last_record(agent_store: AgentMemoryStore,
                                                                         backend: str) -> None:
    """The statistics bm25 reads are kept per scope, and a scope's rows (its terms on PostgreSQL) go when
    its last active record does: no count of an erased identity, nor a word only it held, stays."""
    other = Scope.identity(R, "lead:other")
    record_writes.remember(agent_store, R, ID, "Mine", "plain words")
    gone = record_writes.remember(agent_store, R, "lead:other", "Theirs", "zyxwcanary plain")[0].memory_id
    rows = _statistics_rows(agent_store, backend)
    assert any("lead:other" in row for row in rows) and any("lead:main" in row for row in rows)
    agent_store.erase(R, other, gone, erased_by="dpo")
    rows = _statistics_rows(agent_store, backend)
    assert not any("lead:other" in row or "zyxwcanary" in row for row in rows), rows
    assert any("lead:main" in row for row in rows)
    assert recall(agent_store, "plain words") == ["Mine"]
