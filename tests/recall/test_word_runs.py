"""The index's runs of word characters answer the substring rule as reading the texts does.

:class:`~meta_memory.recall.word_runs.WordRuns` against ``term in normalize(text)`` over rows added one by one
with look-ups in between (a term asked, then a row holding it inside a new word, then asked again), and the
store's candidates: the ``inside`` table a search hands re-ranking against the candidates' own texts, through
writes, a new version, a forget and a rewrite of a record's texts by another connection.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.model import Author, Scope
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from meta_memory.recall import fts, lexical_index
from meta_memory.recall.text import is_word_run, normalize, query_terms
from meta_memory.recall.word_runs import MAX_TERMS, WordRuns

REALM = "default"
A = "identity:ana"
B = "identity:ben"
_TITLE, _BODY = (1 << fts.COLUMNS.index(c) for c in ("title", "body"))

#: few letters, so that a term of five is often inside a longer word; a mark, a hyphen, a capital İ and ß
#: (which normalise to more characters), separators
_TEXT = st.text(alphabet="abab-é\u0301 .İß", max_size=40)
_TERM = st.text(alphabet="abé-s", min_size=5, max_size=7)


def _body(description: str, body: str) -> str:
    return description + "\n" + body if description else body


def _expected(terms: list[str], texts: list[tuple[str, str]]) -> np.ndarray:
    """``term in normalize(text)``, title and body, as the substring rule tests it."""
    return np.array([[(_TITLE if t in normalize(title) else 0) | (_BODY if t in normalize(body) else 0)
                      for title, body in texts] for t in terms], dtype=np.uint8).reshape(len(terms), len(texts))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.tuples(_TEXT, _TEXT, _TEXT, st.booleans()), min_size=1, max_size=16), data=st.data())
def test_the_runs_answer_as_the_texts_do(rows: list[tuple[str, str, str, bool]], data: st.DataObject) -> None:
    """Whatever rows were added before and after a term was first asked (its runs are kept), a look-up says
    for each asked slot whether its normalised title and body hold each term, as ``in`` on the texts does;
    slots asked in any order and repeated, merged into the flat array or waiting (a row's flag: merge after it). The terms are cut from the rows'
    texts (rows added later too), so that most are held somewhere."""
    texts = [(title, _body(description, body)) for title, description, body, _ in rows]
    pieces = [normalize(t) for pair in texts for t in pair if len(normalize(t)) >= 5]
    asks = data.draw(st.lists(st.tuples(st.integers(0, len(rows)),
                                        st.lists(_cut(pieces) if pieces else _TERM, min_size=1, max_size=4),
                                        st.lists(st.integers(0, len(rows)), max_size=12)), max_size=8))
    runs = WordRuns()
    for added in range(len(rows) + 1):
        for after, asked, places in asks:
            if after != added:
                continue
            terms = list(dict.fromkeys(t for t in asked if len(t) >= 5 and is_word_run(t)))
            slots = [p for p in places if p < added]
            got = runs.inside(terms, np.array(slots, dtype=np.int32))
            assert got.tolist() == _expected(terms, [texts[s] for s in slots]).tolist(), (terms, slots)
        if added < len(rows):
            title, body = texts[added]
            runs.add(added, normalize(title), normalize(body))
            if rows[added][3]:
                runs.merge()


def _cut(pieces: list[str]) -> st.SearchStrategy[str]:
    """A part of five to eight characters of one of ``pieces``."""
    return st.tuples(st.sampled_from(pieces), st.integers(0, 40), st.integers(5, 8)).map(
        lambda p: p[0][min(p[1], len(p[0]) - 5):][:p[2]])


def test_a_term_asked_before_a_row_holds_it_inside_a_new_word_is_found_after() -> None:
    runs = WordRuns()
    runs.add(0, "harbour", "the ferry")
    assert runs.inside(["harbo"], np.array([0])).tolist() == [[_TITLE]]
    assert runs.inside(["ferryman"], np.array([0])).tolist() == [[0]]
    runs.add(1, "noon", "ask the ferryman")  # a run new to the realm holding a term asked before
    assert runs.inside(["ferryman", "harbo"], np.array([1, 0])).tolist() == [[_BODY, 0], [0, _TITLE]]


def test_a_look_up_refuses_what_it_cannot_answer() -> None:
    runs = WordRuns()
    runs.add(0, "harbour", "")
    with pytest.raises(ValueError):
        runs.inside(["harb"], np.array([0]))
    with pytest.raises(ValueError):
        runs.inside([f"term{k:03d}" for k in range(MAX_TERMS + 1)], np.array([0]))
    with pytest.raises(ValueError):
        runs.add(5, "out of order", "")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteAgentMemoryStore]:
    with SqliteAgentMemoryStore(tmp_path / "am") as s:
        s.lexical_index.min_rows = 0  # small test realms are indexed too
        yield s


_WORDS = ["harbour", "harbourmaster", "ferry", "ferryman", "passport", "sport", "İstanbul", "straße", "rivers",
          "multi-agent", "agents", "noon"]


def _check(store: SqliteAgentMemoryStore, scope: Scope, query: str) -> int:
    """Assert the search's ``inside`` table against its candidates' own texts; returns the candidates."""
    match = fts.match_expression(query)
    assert match is not None
    found = store.search(REALM, scope, match, 100)
    table = found.table
    assert table is not None and found.columns is not None
    terms = [t for t in dict.fromkeys(query_terms(query)) if len(t) >= 5 and is_word_run(t)]
    assert list(table.inside_terms) == terms
    if terms:
        views = [view for view, _ in found]
        want = _expected(terms, [(v.title, _body(v.description, v.body)) for v in views])
        assert table.inside is not None
        assert table.inside[:, found.columns].tolist() == want.tolist()
    return len(found)


def test_the_store_hands_on_what_the_candidates_texts_hold(store: SqliteAgentMemoryStore, tmp_path: Path) -> None:
    """Through writes after the build, a new version of a record, a forget and another connection's writes:
    the runs a search reads are those of the candidates' current texts."""
    rng = random.Random(3)
    scope = Scope.identity(REALM, A)
    ids = []
    for i in range(30):
        title = " ".join(rng.choices(_WORDS, k=2))
        body = " ".join(rng.choices(_WORDS, k=8))
        rec, _ = record_writes.remember(store, REALM, A if i % 3 else B, f"{title} {i}", body, [])
        ids.append(rec.memory_id)
    assert store.lexical_index.warm(REALM)
    query = "harbour ferry sport agent river straße"
    assert _check(store, scope, query) > 0
    record_writes.remember(store, REALM, A, "Ferrymen", "a sportsman at the harbourside", [])
    new, _ = record_writes.update(store, REALM, A, ids[1], body="the riverside harbourmasters")
    assert record_writes.forget(store, REALM, scope, ids[2], Author.application())
    with SqliteAgentMemoryStore(tmp_path / "am") as other:
        record_writes.remember(other, REALM, A, "Straßenbahn", "multi-agentsport passports", [])
    assert _check(store, scope, query) > 0
    realm = store.lexical_index._ready[REALM]
    assert realm.runs is not None and len(realm.runs) == realm.used


def test_a_realm_past_the_bound_keeps_no_runs(store: SqliteAgentMemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its candidates come without the ``inside`` table: re-ranking reads their texts for the substring rule."""
    monkeypatch.setattr(lexical_index, "RUNS_MAX_ROWS", 5)
    for i in range(8):
        record_writes.remember(store, REALM, A, f"Harbourmaster {i}", "the ferryman", [])
    assert store.lexical_index.warm(REALM)
    assert store.lexical_index._ready[REALM].runs is None
    match = fts.match_expression("harbourmaster ferry")
    assert match is not None
    found = store.search(REALM, Scope.identity(REALM, A), match, 100)
    assert len(found) == 8 and found.table is not None and found.table.inside is None


def test_rows_added_after_the_build_are_merged_by_the_worker(store: SqliteAgentMemoryStore,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A search that catches up past the merge's threshold leaves the merge to the index's worker; the rows'
    runs answer the same before and after it."""
    monkeypatch.setattr("meta_memory.recall.word_runs.TAIL_ROWS", 3)
    scope = Scope.identity(REALM, A)
    record_writes.remember(store, REALM, A, "Harbourmaster", "the ferry and the ferryman", [])
    assert store.lexical_index.warm(REALM)
    realm = store.lexical_index._ready[REALM]
    assert realm.runs is not None
    for i in range(4):
        record_writes.remember(store, REALM, A, f"Ferry {i}", "a sportsman at the harbourside", [])
    assert _check(store, scope, "harbour ferry sport") == 5  # caught up: four rows wait, a merge is asked for
    deadline = time.monotonic() + 10
    while realm.runs.merged < realm.used and time.monotonic() < deadline:
        time.sleep(0.02)
    assert realm.runs.merged == realm.used == 5
    assert _check(store, scope, "harbour ferry sport") == 5
