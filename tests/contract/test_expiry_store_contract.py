"""The expiry rule at the store interface, on both backends (hypothesis): whatever records expire and
whenever the reads happen, search answers the best ``k`` among the unexpired matching records (the same
records in the same order as a store that never held the expired ones), and the active reads agree."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.model import Scope, is_expired
from meta_memory.agent_memory.store.base import AgentMemoryStore
from meta_memory.agent_memory.writes import RememberItem
from meta_memory.clock import ManualClock
from meta_memory.recall.fts import match_expression

ID = "lead:main"
_realms = itertools.count()

# per record: how many times it says "deploy" (its rank) and its ttl in seconds (None: never expires)
RECORDS = st.lists(st.tuples(st.integers(1, 4), st.one_of(st.none(), st.integers(1, 50))), min_size=1, max_size=14)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=RECORDS, elapsed_s=st.integers(0, 60), k=st.integers(1, 8))
def test_search_answers_the_best_k_among_unexpired_records(
        agent_store: AgentMemoryStore, clock: ManualClock, records: list[tuple[int, int | None]],
        elapsed_s: int, k: int) -> None:
    realm, twin = f"r{next(_realms)}", f"t{next(_realms)}"
    start = clock.now_ms()
    items = [RememberItem(f"Note {i}", " ".join(["deploy"] * n + [f"n{i}"]),
                          expires_at_ms=None if ttl is None else start + ttl * 1000)
             for i, (n, ttl) in enumerate(records)]
    written = record_writes.remember_many(agent_store, realm, ID, items)
    clock.advance(elapsed_s * 1000)
    now = clock.now_ms()
    live = [it for it in items if not is_expired(it.expires_at_ms, now)]
    if live:
        record_writes.remember_many(agent_store, twin, ID, [RememberItem(it.title, it.body) for it in live])
    expr = match_expression("deploy")
    assert expr is not None
    got = agent_store.search(realm, Scope.identity(realm, ID), expr, k)
    want = agent_store.search(twin, Scope.identity(twin, ID), expr, k) if live else []
    assert [v.title for v, _ in got] == [v.title for v, _ in want]
    assert all(v.title in {it.title for it in live} for v, _ in got)
    assert len(got) == min(k, len(live))
    active = {r.title for r in agent_store.active_records(realm, Scope.identity(realm, ID))}
    assert active == {it.title for it in live}
    assert {o.record.title for o in written if o.record is not None} == {it.title for it in items}


def test_the_warm_in_process_index_answers_the_best_k_among_unexpired_records(
        agent_store: AgentMemoryStore, clock: ManualClock, backend: str) -> None:
    """SQLite's in-process index (a realm past its size threshold) holds expired rows until the sweep:
    the store asks it for more candidates than ``k`` by the scope's expired count, so none is short."""
    if backend != "sqlite":
        return  # PostgreSQL filters in its one statement (the other tests here)
    index = agent_store.lexical_index  # type: ignore[attr-defined]
    index.min_rows = 0
    realm = "warm"
    start = clock.now_ms()
    record_writes.remember_many(agent_store, realm, ID, [RememberItem(f"Hot {i}", "deploy deploy deploy deploy",
                                                         expires_at_ms=start + 1_000) for i in range(6)])
    record_writes.remember_many(agent_store, realm, ID, [RememberItem(f"Cold {i}", f"deploy note {i}") for i in range(3)])
    assert index.warm(realm)
    clock.advance(1_000)
    expr = match_expression("deploy")
    assert expr is not None
    got = agent_store.search(realm, Scope.identity(realm, ID), expr, 3)
    assert sorted(v.title for v, _ in got) == ["Cold 0", "Cold 1", "Cold 2"]
    assert index.ready(realm)  # answered by the index, not FTS5
