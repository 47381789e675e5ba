"""The default lexical provider: reference behaviour, Unicode recall, ordering, context."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meta_memory.errors import InvalidParams
from meta_memory.recall import fts
from meta_memory.recall.fullscan import FullScanRecallProvider
from meta_memory.recall.lexical import LexicalConfig, LexicalRecallProvider, field_score
from meta_memory.recall.provider import SKIP_NO_QUERY_TERMS, RecallRequest

from .conftest import IDENTITY, T0, rec
from .store_index import StoreIndex

MINUTE = 60_000


def ask(index: StoreIndex, query: str | None, *, selection: str = "contextual", max_entries: int = 8,
        provider: object | None = None, terms: tuple[str, ...] = ()) -> list[str]:
    prov = provider or LexicalRecallProvider()
    req = RecallRequest(IDENTITY, "default", query, terms, selection, max_entries)  # type: ignore[arg-type]
    return [s.record.memory_id for s in prov.recall(req, index.reader(IDENTITY)).records]  # type: ignore[attr-defined]


@pytest.mark.parametrize("provider", [LexicalRecallProvider(), FullScanRecallProvider()])
def test_passport_example(index: StoreIndex, provider: object) -> None:
    index.add(rec("generic", "Daily notes", "Went for a walk and had lunch", at=T0 + 5))
    index.add(rec("passport", "Passport location", "Top drawer of the desk", tags=("travel",), at=T0))
    assert ask(index, "I need the passport for travel", provider=provider) == ["passport"]


def test_stopword_query_returns_nothing_with_reason(index: StoreIndex) -> None:
    index.add(rec("m1", "Where did I put the keys", "the keys are in the bowl"))
    out = LexicalRecallProvider().recall(RecallRequest(IDENTITY, "default", "where did I put the"), index.reader(IDENTITY))
    assert out.records == [] and out.skip_reason == SKIP_NO_QUERY_TERMS


def test_field_score_follows_the_reference_points() -> None:
    sets = (frozenset({"travel"}), frozenset({"passport", "location"}), frozenset({"drawer"}))
    texts = ("passport location", "top drawer, the passportholder")
    assert field_score(["travel"], *sets, *texts) == 5
    assert field_score(["passport"], *sets, *texts) == 4 + 1  # title token, body substring (>= 5 chars)
    assert field_score(["drawer"], *sets, *texts) == 2
    assert field_score(["top"], *sets, *texts) == 0  # short substrings do not count
    assert field_score(["travel", "passport", "drawer"], *sets, *texts) == 12


def test_unicode_recall_examples(index: StoreIndex) -> None:
    index.add(rec("tea", "Drinks", "我喜欢喝绿茶", at=T0))
    index.add(rec("cafe", "Meeting place", unicodedata.normalize("NFC", "the café on the corner"), at=T0 + 1))
    index.add(rec("street", "Address", "Hauptstraße 5", at=T0 + 2))
    index.add(rec("agents", "Design", "a multi-agent runtime", at=T0 + 3))
    assert ask(index, "绿茶") == ["tea"]
    assert ask(index, unicodedata.normalize("NFD", "café")) == ["cafe"]
    assert ask(index, "ｃａｆé") == ["cafe"]
    assert ask(index, "HAUPTSTRASSE") == ["street"]
    assert ask(index, "multi-agent") == ["agents"]
    assert ask(index, "agent") == ["agents"]


@pytest.mark.parametrize("query", ["don't", '"', "a:b", "(", "*", "NEAR", "AND", "-x", "OR passport*"])
def test_syntax_queries_are_safe(index: StoreIndex, query: str) -> None:
    index.add(rec("m1", "Passport", "NEAR the door AND don't forget"))
    result = ask(index, query)
    assert result in ([], ["m1"])


def test_syntax_words_find_their_text(index: StoreIndex) -> None:
    index.add(rec("m1", "Passport", "NEAR the door AND don't forget"))
    index.add(rec("m2", "Other", "nothing here"))
    assert ask(index, "NEAR") == ["m1"]
    assert ask(index, "OR passport*") == ["m1"]


def test_field_weights_order_tag_title_body(index: StoreIndex) -> None:
    index.add(rec("body", "Misc", "garden tools in the shed", at=T0 + 3))
    index.add(rec("title", "Garden plan", "tomatoes in spring", at=T0 + 2))
    index.add(rec("tag", "Misc notes", "seeds and soil", tags=("garden",), at=T0 + 1))
    assert ask(index, "garden") == ["tag", "title", "body"]


def test_ties_break_by_updated_then_created_then_id(index: StoreIndex) -> None:
    index.add(rec("b", "Same", "identical words here", at=T0, updated=T0 + 10))
    index.add(rec("a", "Same", "identical words here", at=T0, updated=T0 + 10))
    index.add(rec("c", "Same", "identical words here", at=T0 + 1, updated=T0 + 10))
    index.add(rec("d", "Same", "identical words here", at=T0, updated=T0 + 20))
    cfg = LexicalConfig(context_window_ms=0)
    assert ask(index, "identical", provider=LexicalRecallProvider(cfg)) == ["d", "c", "a", "b"]


def test_always_selection_is_newest_first(index: StoreIndex) -> None:
    index.add(rec("old", "A", "x", at=T0, updated=T0))
    index.add(rec("new", "B", "y", at=T0, updated=T0 + 100))
    index.add(rec("mid", "C", "z", at=T0 + 50, updated=T0 + 50))
    assert ask(index, None, selection="always") == ["new", "mid", "old"]
    assert ask(index, "where did I put the", selection="always", max_entries=2) == ["new", "mid"]


def test_max_entries_truncates(index: StoreIndex) -> None:
    index.add_many(rec(f"m{i}", f"Garden {i}", "garden", at=T0 + i) for i in range(20))
    assert len(ask(index, "garden", max_entries=3)) == 3


def test_inactive_and_foreign_records_are_never_recalled(index: StoreIndex) -> None:
    index.add(rec("mine", "Garden", "garden"))
    index.add(rec("gone", "Garden", "garden"))
    index.add(rec("quarantined", "Garden", "garden", status="quarantined"))
    index.add(rec("theirs", "Garden", "garden", scope="other"))
    index.set_status("gone", "tombstoned", T0 + 1)
    assert ask(index, "garden") == ["mine"]
    assert ask(index, None, selection="always") == ["mine"]


def test_extra_query_terms_are_normalised_and_used(index: StoreIndex) -> None:
    index.add(rec("m1", "Passport location", "drawer"))
    assert ask(index, None, terms=("PASSPORT",)) == ["m1"]
    assert ask(index, "where is it", terms=("passports",)) == ["m1"]


def test_context_lifts_a_match_written_next_to_a_stronger_match(index: StoreIndex) -> None:
    # Two weak matches on "caroline"; the one written a minute after the strong
    # "research" match is lifted above the newer one written an hour later.
    index.add(rec("q", "Caroline", "What did you research for the project?", at=T0))
    index.add(rec("a", "Caroline", "Adoption agencies, mostly.", at=T0 + MINUTE))
    index.add(rec("far", "Caroline", "Unrelated talk about lunch.", at=T0 + 60 * MINUTE))
    index.add(rec("noise", "Melanie", "Nothing in common.", at=T0 + 2 * MINUTE))
    no_reply = LexicalRecallProvider(LexicalConfig(reply_weight=0.0))
    assert ask(index, "What did Caroline research?", provider=no_reply) == ["q", "a", "far"]
    flat = LexicalRecallProvider(LexicalConfig(context_window_ms=0, reply_weight=0.0))
    assert ask(index, "What did Caroline research?", provider=flat) == ["q", "far", "a"]


def test_context_can_admit_unmatched_neighbours_when_enabled(index: StoreIndex) -> None:
    index.add(rec("q", "Chat", "What did you research for the project?", at=T0))
    index.add(rec("a", "Chat", "Adoption agencies, mostly.", at=T0 + MINUTE))
    index.add(rec("far", "Chat", "Unrelated talk about lunch.", at=T0 + 60 * MINUTE))
    index.add(rec("b", "Chat", "Long day at the office.", at=T0 - MINUTE))
    no_reply = LexicalRecallProvider(LexicalConfig(reply_weight=0.0))
    assert ask(index, "research", provider=no_reply) == ["q"]
    admit = LexicalRecallProvider(LexicalConfig(context_admits_unmatched=True, reply_weight=0.0))
    assert sorted(ask(index, "research", provider=admit)) == ["a", "b", "q"]


def test_request_validation() -> None:
    with pytest.raises(InvalidParams) as err:
        RecallRequest(IDENTITY, "default", "x", selection="sometimes")  # type: ignore[arg-type]
    assert err.value.field == "selection"
    for bad in (0, 513, True, "8"):
        with pytest.raises(InvalidParams):
            RecallRequest(IDENTITY, "default", "x", max_entries=bad)  # type: ignore[arg-type]


def test_reference_provider_ignores_non_ascii_but_ours_does_not(index: StoreIndex) -> None:
    index.add(rec("tea", "Drinks", "我喜欢喝绿茶 und Straße"))
    assert ask(index, "绿茶", provider=FullScanRecallProvider()) == []
    assert ask(index, "绿茶") == ["tea"]


def test_search_finds_own_records_below_other_scopes_best(index: StoreIndex) -> None:
    # 150 stronger matches of another identity share the table; ours must still come back.
    index.add_many(rec(f"o{i}", "Garden garden", "garden garden garden", scope="other") for i in range(150))
    index.add_many(rec(f"m{i}", "Notes", f"a garden note number {i}", at=T0 + i) for i in range(3))
    found = [r.memory_id for r, _ in index.reader(IDENTITY).search('"garden"', 100)]
    assert sorted(found) == ["m0", "m1", "m2"]
    assert ask(index, "garden") == ["m2", "m1", "m0"]


_WORDS = ["harbour", "ferry", "noon", "Ferry-boat", "İstanbul", "istanbul", "straße", "strasse", "日本語", "ab", "s3",
          "harbourmaster", "FERRY", "naïve", "naive", "✈️", "x"]


@settings(max_examples=200, deadline=None)
@given(title=st.lists(st.sampled_from(_WORDS), max_size=5), body=st.lists(st.sampled_from(_WORDS), max_size=8),
       description=st.lists(st.sampled_from(_WORDS), max_size=3), tags=st.lists(st.sampled_from(_WORDS), max_size=3),
       query=st.lists(st.sampled_from(_WORDS), min_size=1, max_size=6))
def test_points_from_the_index_s_term_fields_equal_the_points_from_tokenising(
        title: list[str], body: list[str], description: list[str], tags: list[str], query: list[str]) -> None:
    """A candidate the in-process index found (its ``term_fields``) scores exactly as the same record
    tokenised: the fast path of re-ranking changes no point and no count of holders."""
    from meta_memory.agent_memory.model import RecordView
    from meta_memory.recall.lexical import _Fields, _indexed_points, term_points
    from meta_memory.recall.text import token_set

    plain = RecordView("m1", " ".join(title), " ".join(description), " ".join(body), tuple(tags), T0, T0)
    terms = sorted(token_set(" ".join(query)))
    columns = {"title": token_set(plain.title), "body": token_set(f"{plain.description}\n{plain.body}"
                                                                  if plain.description else plain.body),
               "tags": token_set(" ".join(plain.tags))}
    bits = {t: sum(1 << i for i, c in enumerate(fts.COLUMNS) if t in columns[c]) for t in terms}
    indexed = RecordView(plain.id, plain.title, plain.description, plain.body, plain.tags, T0, T0,
                         {t: b for t, b in bits.items() if b})
    fields = _Fields.of(plain)
    want_held = [0] * len(terms)
    want = []
    for i, term in enumerate(terms):
        in_tags, in_title, in_body = fields.held(term, f" {term} ")
        want_held[i] += in_tags or in_title or in_body
        want.append(term_points(term, in_tags, in_title, in_body, fields.title_norm, fields.body_norm))
    held = [0] * len(terms)
    assert _indexed_points(terms, indexed.term_fields or {}, indexed, held) == want
    assert held == want_held


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(st.tuples(st.lists(st.sampled_from(_WORDS), max_size=5), st.lists(st.sampled_from(_WORDS), max_size=8),
                               st.lists(st.sampled_from(_WORDS), max_size=2)), min_size=1, max_size=8),
       query=st.lists(st.sampled_from(_WORDS), min_size=1, max_size=6), dropped=st.sets(st.integers(0, 7)))
def test_points_read_from_one_index_table_equal_the_points_of_each_record(
        rows: list[tuple[list[str], list[str], list[str]]], query: list[str], dropped: set[int]) -> None:
    """Candidates whose term columns are rows of one index table (some rows of it left out, as the store
    leaves out rows no longer live) get the points and holder counts each record's own mapping gives."""
    import numpy as np

    from meta_memory.agent_memory.model import RecordView
    from meta_memory.recall.lexical import _planned_points, _QueryPlan, _table_points
    from meta_memory.recall.term_columns import TermColumns
    from meta_memory.recall.text import token_set

    terms = sorted(token_set(" ".join(query)))
    records, fields = [], []
    for title, body, tags in rows:
        rec = RecordView(f"m{len(records)}", " ".join(title), "", " ".join(body), tuple(tags), T0, T0)
        columns = {"title": token_set(rec.title), "body": token_set(rec.body), "tags": token_set(" ".join(tags))}
        fields.append({t: b for t in terms if (b := sum(1 << i for i, c in enumerate(fts.COLUMNS) if t in columns[c]))})
        records.append(rec)
    table = TermColumns(terms, np.array([[f.get(t, 0) for f in fields] for t in terms], dtype=np.uint8)
                        .reshape(len(terms), len(fields)))
    kept = [c for c in range(len(records)) if c not in dropped] or [0]
    assert [dict(table.row(c)) for c in kept] == [fields[c] for c in kept]
    held_rows, held_table = [0] * len(terms), [0] * len(terms)
    want = _planned_points(_QueryPlan(terms), [(records[c], fields[c]) for c in kept], held_rows)
    got = _table_points(_QueryPlan(terms), [records[c] for c in kept], table, kept, held_table)
    assert got == want and held_table == held_rows


def test_the_field_cache_keeps_short_records_only() -> None:
    """Re-ranking's per-record cache keeps a record of a few KiB, not a 64 KiB body (computed afresh, the same
    fields either way), so a store of long bodies cannot make it hold hundreds of MiB."""
    from types import SimpleNamespace

    from meta_memory.recall.lexical import _FieldCache

    cache = _FieldCache(capacity=8, max_chars=4096)

    def rec(i: int, body: str) -> SimpleNamespace:
        return SimpleNamespace(memory_id=f"m{i}", title="Harbour", description="", body=body, tags=("ferry",),
                               created_at_ms=0, updated_at_ms=0)

    short, long = rec(1, "the ferry leaves at noon"), rec(2, "the ferry leaves at noon " * 3000)
    assert cache.get(short) is cache.get(short)  # kept
    assert cache.get(long) is not cache.get(long)  # not kept
    a, b = cache.get(long), cache.get(long)
    assert [getattr(a, f) for f in a.__slots__] == [getattr(b, f) for f in b.__slots__]
    cache.dates(long)
    assert len(cache._items) == 1 and len(cache._dates) == 0


_SUB_WORDS = ["deploy", "deployment", "redeploy", "travel", "travels", "gravel", "backup", "backups", "notebook",
              "book", "harbour", "harbours", "ferry", "noon"]


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(st.tuples(st.lists(st.sampled_from(_SUB_WORDS), max_size=4),
                               st.lists(st.sampled_from(_SUB_WORDS), max_size=8),
                               st.integers(0, 3), st.booleans()), min_size=1, max_size=30),
       query=st.lists(st.sampled_from(_SUB_WORDS), min_size=1, max_size=5),
       max_entries=st.integers(1, 12), anchors=st.integers(1, 6), admits=st.booleans())
def test_skipping_the_substring_rule_for_candidates_out_of_reach_changes_no_answer(
        rows: list[tuple[list[str], list[str], int, bool]], query: list[str], max_entries: int, anchors: int,
        admits: bool) -> None:
    """Re-ranking leaves the substring rule untested for candidates whose score cannot reach the best: the records,
    their order and their scores are those of applying it to every candidate, context neighbours (questions and
    their replies) included."""
    from unittest import mock

    import numpy as np

    from meta_memory.agent_memory.model import Candidates, RecordView
    from meta_memory.recall import lexical
    from meta_memory.recall.store_reader import neighbours_from
    from meta_memory.recall.term_columns import TermColumns
    from meta_memory.recall.text import token_set

    records, fields, scores = [], [], []
    for n, (title, body, gap, question) in enumerate(rows):
        at = T0 + 60_000 * n + gap
        rec = RecordView(f"m{n:03d}", " ".join(title), "", " ".join(body) + ("?" if question else "."), (), at, at)
        records.append(rec)
        scores.append(-0.5 - (n * 7919 % 13) / 4)
    terms = sorted(token_set(" ".join(query)))
    for rec in records:
        columns = {"title": token_set(rec.title), "body": token_set(rec.body), "tags": frozenset[str]()}
        fields.append({t: b for t in terms if (b := sum(1 << i for i, c in enumerate(fts.COLUMNS) if t in columns[c]))})
    held = [c for c, f in enumerate(fields) if f]
    table = TermColumns(terms, np.array([[fields[c].get(t, 0) for c in held] for t in terms], dtype=np.uint8)
                        .reshape(len(terms), len(held)))

    class Reader:
        def search(self, match: str, limit: int) -> Candidates:
            return Candidates([(records[c], scores[c]) for c in held], table=table, columns=list(range(len(held))))

        def recent(self, limit: int) -> list[RecordView]:
            return records[:limit]

        def neighbours(self, found: list[RecordView], span: int, window_ms: int) -> dict[str, list[RecordView]]:
            return neighbours_from(records, found, span, window_ms)

    config = lexical.LexicalConfig(context_anchors=anchors, context_admits_unmatched=admits)
    request = RecallRequest(IDENTITY, "default", " ".join(query), max_entries=max_entries)
    got = LexicalRecallProvider(config).recall(request, Reader())
    with mock.patch.object(lexical.LexicalRecallProvider, "_bounded", return_value=None):
        want = LexicalRecallProvider(config).recall(request, Reader())
    assert [(r.record.id, r.score) for r in got.records] == [(r.record.id, r.score) for r in want.records]
