"""Record metadata and metadata filters through the store, on SQLite and PostgreSQL alike:
every filter case answers the same on both backends and as the pure evaluator defines it, numbers
compare as numbers, nested and list values bind as data, and filter keys never become SQL."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.fields import normalize_metadata
from meta_memory.agent_memory.filters import matches, parse_filter
from meta_memory.agent_memory.model import Scope
from meta_memory.agent_memory.store.base import AgentMemoryStore
from meta_memory.agent_memory.writes import RememberItem
from meta_memory.recall.lexical import LexicalRecallProvider
from meta_memory.recall.provider import RecallRequest
from meta_memory.services.recall_reader import guarded_recall

R = "default"
ID = "lead:main"
ME = Scope.identity(R, ID)

RECORDS: list[dict[str, Any]] = [
    {},
    {"n": 1},
    {"n": 1.0},
    {"n": "1"},
    {"n": True},
    {"n": None},
    {"n": [1, 2]},
    {"n": {"m": 2}},
    {"n": {"m": "x"}},
    {"n": [{"m": 2}]},
    {"n": 10, "c": "zz"},
    {"n": -3.5},
    {"n": "é"},
    {"n": "Z"},
    {"n": 9},
    {"a') OR 1=1 --": "x"},
]

CASES: list[tuple[dict[str, Any], list[int]]] = [
    ({"n": 1}, [1, 2]),
    ({"n": None}, [0, 5, 15]),  # a missing key reads as null
    ({"n": {"$ne": 1}}, [0, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]),
    ({"n": {"$gt": 2}}, [10, 14]),  # 10 > 9 as numbers (as text "10" < "9")
    ({"n": {"$lt": "b"}}, [3, 13]),  # strings as strings, never numbers
    ({"n": {"$gte": 1, "$lte": 9}}, [1, 2, 14]),
    ({"n": True}, [4]),  # booleans are not numbers
    ({"n": {"$in": [1, "1", None]}}, [0, 1, 2, 3, 5, 15]),
    ({"n": {"$nin": [1, True]}}, [0, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]),
    ({"n.m": 2}, [7]),
    ({"n": {"m": 2}}, [7]),
    ({"n": {"$eq": [1, 2]}}, [6]),
    ({"n": {"$eq": {"m": 2}}}, [7]),
    ({"n": 2}, []),  # a scalar never matches inside an array
    ({"$or": [{"n": 10}, {"n": "Z"}]}, [10, 13]),
    ({"$and": [{"n": {"$gt": 0}}, {"c": "zz"}]}, [10]),
    ({"$not": {"n": {"$gte": 1}}}, [0, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 15]),
    ({"n": {"$not": {"$lt": 2}}}, [0, 3, 4, 5, 6, 7, 8, 9, 10, 12, 13, 14, 15]),
    ({"n.m.k": None}, list(range(16))),
    ({"c": {"$ne": "zz"}}, [i for i in range(16) if i != 10]),
    ({"a') OR 1=1 --": "x"}, [15]),  # stored keys may hold SQL text: it is data
]


def _seed(store: AgentMemoryStore, records: list[dict[str, Any]], identity: str = ID, first: int = 0) -> list[str]:
    outcomes = record_writes.remember_many(store, R, identity, [RememberItem(f"Record {i}", f"coffee note number {i}", (), m)
                                                         for i, m in enumerate(records, first)])
    assert all(o.record is not None for o in outcomes), [o.error for o in outcomes]
    return [o.record.id for o in outcomes if o.record is not None]


def _listed(store: AgentMemoryStore, flt: Any, identity: str = ID) -> set[str]:
    return {rec.id for _, rec in store.list_active(R, Scope.identity(R, identity), limit=500,
                                                   where=parse_filter(flt))}


def test_metadata_is_stored_returned_and_replaced_by_update(agent_store: AgentMemoryStore) -> None:
    rec, created, _ = record_writes.remember_record(agent_store, R, ID, "Coffee", "Black, no sugar",
                                                    metadata={"b": {"y": [1, 2.5, None]}, "a": "é"})
    assert created and rec.metadata == {"a": "é", "b": {"y": [1, 2.5, None]}}
    assert agent_store.get(R, rec.id).metadata == rec.metadata  # type: ignore[union-attr]
    assert rec.project().metadata == rec.metadata
    # not part of the content hash: a duplicate keeps the stored metadata
    again, created, _ = record_writes.remember_record(agent_store, R, ID, "Coffee", "Black, no sugar", metadata={"a": "other"})
    assert not created and again.id == rec.id and again.metadata == rec.metadata
    new, prior = record_writes.update(agent_store, R, ID, rec.id, metadata={"c": 1})
    assert prior == rec.id and new.metadata == {"c": 1}  # replaced whole, not merged
    kept, _ = record_writes.update(agent_store, R, ID, new.memory_id, title="Coffee order")
    assert kept.metadata == {"c": 1}


@pytest.mark.parametrize(("flt", "expected"), CASES, ids=[str(c[0]) for c in CASES])
def test_every_filter_case_on_list_and_the_evaluator(agent_store: AgentMemoryStore, flt: dict[str, Any],
                                                     expected: list[int]) -> None:
    ids = _seed(agent_store, RECORDS)
    assert [i for i, m in enumerate(RECORDS) if matches(parse_filter(flt), normalize_metadata(m))] == expected
    assert _listed(agent_store, flt) == {ids[i] for i in expected}


def test_a_filter_never_reaches_another_identity(agent_store: AgentMemoryStore) -> None:
    _seed(agent_store, [{"team": "red"}], identity="other:agent")
    mine = _seed(agent_store, [{"team": "blue"}])
    assert _listed(agent_store, {"team": "red"}) == set()
    assert _listed(agent_store, {"$or": [{"team": "red"}, {"team": "blue"}]}) == set(mine)
    assert _listed(agent_store, {"team": {"$ne": "nobody"}}) == set(mine)


def test_list_with_a_filter_pages_by_its_cursor(agent_store: AgentMemoryStore, clock: Any) -> None:
    ids = []
    for i in range(12):
        clock.advance(1)
        ids += _seed(agent_store, [{"i": i, "even": i % 2 == 0}], first=i)
    where = parse_filter({"even": True})
    seen: list[str] = []
    before = None
    while True:
        page = agent_store.list_active(R, ME, limit=2, before=before, where=where)
        seen += [rec.id for _, rec in page]
        if len(page) < 2:
            break
        before = page[-1][0]
    assert seen == [ids[i] for i in range(10, -1, -2)]


def _recall(store: AgentMemoryStore, flt: Any, text: str = "coffee", k: int = 3, selection: str = "contextual",
            ) -> list[str]:
    request = RecallRequest(identity=ID, realm=R, query_text=text, max_entries=k, where=parse_filter(flt),
                            selection=selection)  # type: ignore[arg-type]
    return [s.record.id for s in guarded_recall(LexicalRecallProvider(), store, request, ME).records]


def test_recall_returns_the_top_k_among_matching_records(agent_store: AgentMemoryStore) -> None:
    # many better-matching records outside the filter: they must not crowd out the matching ones
    loud = [{"kind": "loud"}] * 40
    record_writes.remember_many(agent_store, R, ID, [RememberItem(f"Coffee {i}", "coffee coffee coffee coffee", (), m)
                                        for i, m in enumerate(loud)])
    quiet = _seed(agent_store, [{"kind": "quiet", "n": i} for i in range(5)], first=100)
    got = _recall(agent_store, {"kind": "quiet"}, k=3)
    assert len(got) == 3 and set(got) <= set(quiet)
    assert set(_recall(agent_store, {"kind": "quiet", "n": {"$gte": 3}}, k=8)) == {quiet[3], quiet[4]}
    assert set(_recall(agent_store, {"kind": "quiet"}, selection="always", k=8)) == set(quiet)
    assert _recall(agent_store, {"kind": "none"}) == []


# -- the backends against the evaluator, on random records and filters ---------------------------

_KEYS = st.sampled_from(["a", "b", "c"])
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from([0.5, -1.5, 2.0]),
                     st.sampled_from(["", "a", "b", "A", "é", "10", "9"]))
_VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=2),
                                                        st.dictionaries(_KEYS, inner, max_size=2)), max_leaves=4)
_METADATA = st.dictionaries(_KEYS, _VALUES, max_size=3)
_PATHS = st.sampled_from(["a", "b", "c", "a.b", "b.c", "a.a"])
_ORDERED = st.one_of(st.integers(-5, 5), st.sampled_from([0.5, -1.5, "a", "b", "é", "9"]))


def _leaf() -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        st.builds(lambda p, v: {p: v}, _PATHS, _SCALARS),
        st.builds(lambda p, op, v: {p: {op: v}}, _PATHS, st.sampled_from(["$eq", "$ne"]), _VALUES),
        st.builds(lambda p, op, v: {p: {op: v}}, _PATHS, st.sampled_from(["$gt", "$gte", "$lt", "$lte"]), _ORDERED),
        st.builds(lambda p, op, v: {p: {op: v}}, _PATHS, st.sampled_from(["$in", "$nin"]),
                  st.lists(_SCALARS, max_size=3)),
    )


_FILTERS = st.recursive(_leaf(), lambda inner: st.one_of(
    st.builds(lambda xs: {"$and": xs}, st.lists(inner, min_size=1, max_size=3)),
    st.builds(lambda xs: {"$or": xs}, st.lists(inner, min_size=1, max_size=3)),
    st.builds(lambda x: {"$not": x}, inner),
), max_leaves=5)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(records=st.lists(_METADATA, min_size=1, max_size=8), filters=st.lists(_FILTERS, min_size=1, max_size=5))
def test_the_backend_answers_every_random_filter_as_the_evaluator(
        open_store: Any, records: list[dict[str, Any]], filters: list[dict[str, Any]]) -> None:
    store = open_store()
    identity = f"h:{abs(hash((repr(records), repr(filters)))) % 10**12}"
    outcomes = record_writes.remember_many(store, R, identity, [RememberItem(f"T{i}", f"body {i}", (), m)
                                                         for i, m in enumerate(records)])
    ids = [o.record.id for o in outcomes if o.record is not None]
    assert len(ids) == len(records)
    for flt in filters:
        node = parse_filter(flt)
        want = {ids[i] for i, m in enumerate(records) if matches(node, normalize_metadata(m))}
        assert _listed(store, flt, identity) == want, flt


@pytest.mark.parametrize("widenings", [1, 3])
def test_a_filter_few_candidates_pass_still_finds_the_best_matching(agent_store: AgentMemoryStore, widenings: int,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """More better-scoring records than the first candidate window fail the filter: the search widens,
    then reads the scope's matching rows (SQLite); PostgreSQL filters in its one statement."""
    import meta_memory.agent_memory.store.sqlite as sqlite_store

    monkeypatch.setattr(sqlite_store, "_WIDENINGS", widenings)
    record_writes.remember_many(agent_store, R, ID, [RememberItem(f"Coffee {i}", "coffee coffee coffee coffee", (), {"kind": "loud"})
                                        for i in range(70)])
    quiet = _seed(agent_store, [{"kind": "quiet", "n": i} for i in range(2)], first=500)
    assert set(_recall(agent_store, {"kind": "quiet"}, k=1)) <= set(quiet)
    assert len(_recall(agent_store, {"kind": "quiet"}, k=1)) == 1
    assert set(_recall(agent_store, {"kind": "quiet"}, k=5)) == set(quiet)
