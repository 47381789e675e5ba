"""Re-ranking's array paths against the per-candidate rules they replace: the best-k selection, the substring
search through joined texts, and a whole recall (points, scores, floor, context, order) over an index table, its
substring points read from the texts or from the index's runs."""

from __future__ import annotations

import heapq
import struct
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meta_memory.agent_memory.model import Candidates, RecordView
from meta_memory.recall import fts
from meta_memory.recall import lexical as lexical_module
from meta_memory.recall.lexical import (
    LexicalConfig,
    LexicalRecallProvider,
    _best,
    _holding,
    _planned_points,
    _QueryPlan,
    is_question,
    written_after,
)
from meta_memory.recall.provider import RecallRequest, record_id
from meta_memory.recall.term_columns import TermColumns
from meta_memory.recall.text import is_word_run, normalize, token_set
from meta_memory.recall.word_runs import WordRuns

T0 = 1_700_000_000_000

_SCORES = st.sampled_from([0.0, -0.0, 1.0, 2.5, 2.5000000000000004, 7.0, 11.25, -3.0, float("inf"), float("nan")])


@settings(max_examples=300, deadline=None)
@given(entries=st.lists(st.tuples(_SCORES, st.integers(0, 3), st.integers(0, 3)), max_size=30), k=st.integers(-1, 35),
       data=st.data())
def test_the_best_k_are_the_first_k_of_every_entry_sorted_by_its_order_key(
        entries: list[tuple[float, int, int]], k: int, data: st.DataObject) -> None:
    """Score desc, then updated desc, created desc, id asc — ties at the k-th score included — exactly as
    sorting every entry by the full key (what a ``heapq.nsmallest`` of the keys gave)."""
    ids = data.draw(st.lists(st.text("abc", max_size=3), min_size=len(entries), max_size=len(entries), unique=True))
    scores = [s for s, _, _ in entries]
    records = [RecordView(i, "", "", "", (), T0 + c, T0 + u) for i, (_, u, c) in zip(ids, entries)]
    keys = [(-s, -r.updated_at_ms, -r.created_at_ms, i) for s, r, i in zip(scores, records, ids)]
    want = [keys.index(key) for key in heapq.nsmallest(k, keys)] if k > 0 else []
    assert _best(scores, records, ids, k) == want


_TEXT = st.text(st.sampled_from("ab \x00é"), max_size=12)


@settings(max_examples=300, deadline=None)
@given(term=st.text(st.sampled_from("ab\x00é"), min_size=1, max_size=4), texts=st.lists(_TEXT, max_size=12),
       window=st.integers(1, 40))
def test_one_search_through_the_joined_texts_finds_the_texts_holding_the_term(
        term: str, texts: list[str], window: int) -> None:
    """The texts holding the term, in order, whatever the texts hold (NUL too) and however the search
    windows fall (one text longer than a window, a match at a window's edge)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lexical_module, "_WINDOW", window)
        assert _holding(term, texts) == [j for j, text in enumerate(texts) if term in text]
    assert _holding(term, texts) == [j for j, text in enumerate(texts) if term in text]


@settings(max_examples=200, deadline=None)
@given(terms=st.lists(st.text(st.sampled_from("ab\x00é"), min_size=1, max_size=4), min_size=1, max_size=5),
       texts=st.lists(_TEXT, max_size=12), window=st.integers(1, 40))
def test_texts_joined_once_answer_every_term_searched_through_them(terms: list[str], texts: list[str],
                                                                   window: int) -> None:
    """One join of the texts serves the searches of several terms, each as a search of its own would answer."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lexical_module, "_WINDOW", window)
        joined = lexical_module._Joined(texts)
        for term in terms:
            assert joined.holding(term) == [j for j, text in enumerate(texts) if term in text]


# ------------------------------------------------------------------------------------ a whole recall, two ways

def _bits(score: float) -> bytes:
    """A score's bits (a NaN equals itself, -0.0 differs from 0.0)."""
    return struct.pack("<d", score)


_WORDS = ["harbour", "harbourmaster", "ferry", "ferryman", "noon", "river", "rivers", "passport", "sport",
          "ab", "x", "İstanbul", "istanbul", "straße", "strasse"]


class _Reader:
    """The store's answer to one recall: the candidates (one index table for all) and the neighbours."""

    def __init__(self, found: Candidates, neighbours: dict[str, list[Any]]) -> None:
        self.found = found
        self.adjacency = neighbours

    def search(self, match: str, limit: int) -> Candidates:
        return self.found

    def neighbours(self, anchors: list[Any], span: int, window_ms: int) -> dict[str, list[Any]]:
        return {a.memory_id: self.adjacency.get(a.memory_id, []) for a in anchors}


def _reference(cfg: LexicalConfig, terms: list[str], found: list[tuple[Any, float]], fields: list[dict[str, int]],
               reader: _Reader, max_entries: int) -> list[tuple[str, float]]:
    """The ranking as computed candidate by candidate (the module doc, steps 3-6): each candidate's points
    from its own term mapping, its score and order key, the context lent from the best anchors, the best
    ``max_entries`` by ``heapq.nsmallest`` of the keys."""
    rows = _planned_points(_QueryPlan(terms), [(r, f) for (r, _), f in zip(found, fields)], [0] * len(terms))
    records: dict[str, Any] = {}
    keys: dict[str, tuple[float, int, int, str]] = {}
    for (record, bm25), points in zip(found, rows):
        total = sum(points)
        if total < cfg.min_relevance:
            continue
        score = cfg.field_weight * float(total) + cfg.bm25_weight * -bm25
        rid = record_id(record) or ""
        records[rid] = record
        keys[rid] = (-score, -record.updated_at_ms, -record.created_at_ms, rid)
    if cfg.context_window_ms > 0 and keys:
        anchors = heapq.nsmallest(cfg.context_anchors, keys.values())
        adjacency = reader.neighbours([records[key[3]] for key in anchors], cfg.context_span, cfg.context_window_ms)
        unmatched: dict[str, Any] = {}
        bonus: dict[str, float] = {}
        for key in anchors:
            anchor_id, anchor_score, anchor = key[3], -key[0], records[key[3]]
            near = adjacency.get(anchor_id, [])
            reply_id = None
            if cfg.reply_weight > 0 and is_question(anchor.body):
                full = len(near) == 2 * cfg.context_span
                reply_id = next((record_id(r) for i, r in enumerate(near) if written_after(anchor, r, i, full)), None)
            for step, rec in enumerate(near):
                rid = record_id(rec) or ""
                if rid == anchor_id:
                    continue
                reply = rid == reply_id
                if rid not in keys and rid not in unmatched:
                    if not (cfg.context_admits_unmatched or reply):
                        continue
                    unmatched[rid] = rec
                lent = cfg.context_weight * anchor_score / (2 ** (step // 2))
                if reply:
                    lent = max(lent, cfg.reply_weight * anchor_score)
                if lent > bonus.get(rid, 0.0):
                    bonus[rid] = lent
        for rid, extra in bonus.items():
            base = keys.get(rid)
            if base is None:
                rec = records[rid] = unmatched[rid]
                keys[rid] = (-(0.0 + extra), -rec.updated_at_ms, -rec.created_at_ms, rid)
            else:
                keys[rid] = (-(-base[0] + extra), *base[1:])
    return [(records[key[3]].memory_id, -key[0]) for key in heapq.nsmallest(max_entries, keys.values())]


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(st.tuples(st.lists(st.sampled_from(_WORDS), max_size=4), st.lists(st.sampled_from(_WORDS), max_size=6),
                               st.lists(st.sampled_from(_WORDS), max_size=2), st.booleans(),
                               st.sampled_from([-1.5, -2.0, -2.0000000000000004, -0.25, -7.0, float("nan")]),
                               st.integers(0, 2), st.integers(0, 2)), max_size=14),
       query=st.lists(st.sampled_from(_WORDS), min_size=1, max_size=5), max_entries=st.integers(1, 16),
       anchors=st.integers(0, 4), admit=st.booleans(), links=st.lists(st.tuples(st.integers(0, 13), st.integers(0, 13)),
                                                                        max_size=20),
       strangers=st.integers(0, 3), floor=st.sampled_from([2.0, 0.0, 5.0, float("nan")]))
def test_a_recall_ranks_as_the_per_candidate_rules_do(
        rows: list[tuple[list[str], list[str], list[str], bool, float, int, int]], query: list[str], max_entries: int,
        anchors: int, admit: bool, links: list[tuple[int, int]], strangers: int, floor: float) -> None:
    """Points, scores, the relevance floor, the context lent (unmatched replies and neighbours included),
    ties of score broken by updated, created and id: the records and scores one recall answers with
    equal, bit for bit, those of the rules applied candidate by candidate."""
    request = RecallRequest("lead:x", "default", " ".join(query), (), "contextual", max_entries)
    terms = request.terms()
    if not terms:
        return
    records, fields, found = [], [], []
    for n, (title, body, tags, asks, bm25, updated, created) in enumerate(rows):
        text = " ".join(body) + (" ?" if asks else "")
        rec = RecordView(f"m{n:02d}", " ".join(title), "", text, tuple(tags), T0 + created, T0 + updated)
        columns = {"title": token_set(rec.title), "body": token_set(rec.body), "tags": token_set(" ".join(tags))}
        fields.append({t: b for t in terms if (b := sum(1 << i for i, c in enumerate(fts.COLUMNS) if t in columns[c]))})
        records.append(rec)
        found.append((rec, bm25))
    distinct = list(dict.fromkeys(terms))
    table = TermColumns(distinct, np.array([[f.get(t, 0) for f in fields] for t in distinct], dtype=np.uint8)
                        .reshape(len(distinct), len(fields)))
    given_found = Candidates(found, table=table, columns=list(range(len(found))))
    outsiders = [RecordView(f"z{n}", "other", "", "other words", (), T0 + n, T0 + n) for n in range(strangers)]
    pool = records + outsiders
    adjacency: dict[str, list[Any]] = {}
    for a, b in links:
        if a < len(records) and b < len(pool) and a != b:
            adjacency.setdefault(records[a].memory_id, []).append(pool[b])
    cfg = LexicalConfig(context_anchors=anchors, context_admits_unmatched=admit, date_weight=0.0, min_relevance=floor)
    want = _reference(cfg, terms, found, fields, _Reader(given_found, adjacency), max_entries)
    # with the index's runs (:mod:`meta_memory.recall.word_runs`) answering the substring rule
    runs = WordRuns()
    for slot, rec in enumerate(records):
        runs.add(slot, normalize(rec.title), normalize(rec.body))
    with_runs = TermColumns(distinct, table.bits)
    with_runs.inside_terms = [t for t in distinct if len(t) >= 5 and is_word_run(t)]
    with_runs.inside = runs.inside(with_runs.inside_terms, np.arange(len(records)))
    # the index's table (the array path, with and without the runs) and FTS5's per-candidate columns (the loop) alike
    for candidates in (given_found, Candidates(found, table=with_runs, columns=list(range(len(found)))),
                       Candidates(found, fields=fields)):
        got = LexicalRecallProvider(cfg).recall(request, _Reader(candidates, adjacency)).records
        assert [(s.record.memory_id, _bits(s.score)) for s in got] == [(i, _bits(score)) for i, score in want]
