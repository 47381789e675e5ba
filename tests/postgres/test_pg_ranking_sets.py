"""The term sets the PostgreSQL ranking matches once it knows its threshold (no server needed).

Bounds and cuts are multiples of 1/4 (and one tiny power of two), so every sum is exact in floating point
whatever its order.

:func:`~meta_memory.agent_memory.store.pg_ranking.covering_sets` must return exactly the minimal sets of
terms whose bounds reach the cut: a row holding none of them in full has a bound below the cut (so it
cannot enter the answer), and every row that can is matched.
"""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from meta_memory.agent_memory.store import pg_ranking


@settings(max_examples=300, deadline=None)
@given(bounds=st.lists(st.one_of(st.just(2.0 ** -20), st.integers(1, 48).map(lambda q: q / 4)), min_size=1, max_size=9),
       cut=st.integers(1, 120).map(lambda q: q / 4))
def test_covering_sets_are_the_minimal_sets_reaching_the_cut(bounds: list[float], cut: float) -> None:
    terms = [pg_ranking.TermStat(f"t{i}", 1) for i in range(len(bounds))]
    got = pg_ranking.covering_sets(terms, bounds, cut)
    want = set()
    for size in range(1, len(bounds) + 1):
        for combo in itertools.combinations(range(len(bounds)), size):
            total = sum(bounds[i] for i in combo)
            if total >= cut and all(total - bounds[i] < cut for i in combo):
                want.add(frozenset(f"t{i}" for i in combo))
    if got is None:
        assert len(want) > pg_ranking.MAX_COVER_SETS
        return
    assert {frozenset(s) for s in got} == want
    held = set(itertools.chain.from_iterable(got))
    for size in range(1, len(bounds) + 1):  # any held subset reaching the cut contains one of the sets
        for combo in itertools.combinations(range(len(bounds)), size):
            names = {f"t{i}" for i in combo}
            if sum(bounds[i] for i in combo) >= cut:
                assert any(set(s) <= names for s in got) and (not got or names & held)


def test_many_terms_fall_back_to_term_by_term_matching() -> None:
    terms = [pg_ranking.TermStat(f"t{i}", 1) for i in range(pg_ranking.MAX_COVER_TERMS + 1)]
    assert pg_ranking.covering_sets(terms, [1.0] * len(terms), 3.0) is None
    few = terms[: pg_ranking.MAX_COVER_TERMS]
    assert pg_ranking.covering_sets(few, [1e-6] * len(few), 3.0) == []  # nothing reaches the cut
