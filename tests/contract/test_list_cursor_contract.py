"""Paging ``list_active`` (``meta/agent_memory/list``) by its cursor, on both backends.

The order is newest updated first, ties broken by ``memory_id``: a cursor is the last listed record's
``(updated_at_ms, memory_id)``. Under writes interleaved between pages (new records of the identity and
of another one, updates, forgets, many records sharing one millisecond), a walk visits every record that
stayed active and unchanged through it exactly once, never a record twice, in that order; the wire cursor
round-trips and holds nothing but the position.
"""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.list_cursor import decode_cursor, encode_cursor
from meta_memory.agent_memory.model import Author, Scope
from meta_memory.agent_memory.store.base import AgentMemoryStore

R = "paging"
_walks = itertools.count()

#: Between two pages: ``(what, which, clock step ms)``; ``which`` picks a record of the identity.
_ACTIONS = st.lists(st.tuples(st.sampled_from(["mine", "other", "update", "forget", "none"]),
                              st.integers(0, 10_000), st.integers(0, 1)), max_size=6)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(initial=st.lists(st.integers(0, 1), min_size=0, max_size=24), page=st.integers(1, 5),
       between=st.lists(_ACTIONS, max_size=12))
def test_a_walk_visits_every_unchanged_record_once_under_interleaved_writes(
        agent_store: AgentMemoryStore, clock: Any, initial: list[int], page: int,
        between: list[list[tuple[str, int, int]]]) -> None:
    n = next(_walks)
    me, other = f"agent:walker-{n}", f"agent:other-{n}"
    scope = Scope.identity(R, me)
    active: list[str] = []
    for i, step in enumerate(initial):  # steps of 0 ms: records sharing one update time
        clock.advance(step)
        active.append(record_writes.remember(agent_store, R, me, "Note", f"start {n}.{i}")[0].memory_id)
    start = set(active)
    changed: set[str] = set()
    visited: list[tuple[int, str]] = []
    before: tuple[int, str] | None = None
    for walk_step in itertools.count():
        rows = agent_store.list_active(R, scope, limit=page, before=before)
        assert all(rec.id == key[1] and rec.updated_at_ms == key[0] for key, rec in rows)
        visited += [key for key, _ in rows]
        assert len(visited) <= len(initial) + 6 * len(between), "the walk does not end"
        if len(rows) < page:
            break
        before = decode_cursor(encode_cursor(*rows[-1][0]))
        assert before == rows[-1][0]
        for what, which, step in between[walk_step] if walk_step < len(between) else []:
            clock.advance(step)
            if what == "mine":
                active.append(record_writes.remember(agent_store, R, me, "Note", f"new {n}.{walk_step}.{which}")[0]
                              .memory_id)
            elif what == "other":
                record_writes.remember(agent_store, R, other, "Note", f"other {n}.{walk_step}.{which}")
            elif what in ("update", "forget") and active:
                prior = active.pop(which % len(active))
                changed.add(prior)
                if what == "update":
                    rec, _ = record_writes.update(agent_store, R, me, prior, body=f"revised {n}.{walk_step}.{which}")
                    active.append(rec.memory_id)
                else:
                    assert record_writes.forget(agent_store, R, scope, prior, Author.application())
    ids = [m for _, m in visited]
    assert len(ids) == len(set(ids)), "a record was listed twice"
    assert start - changed <= set(ids), "a record that stayed was skipped"
    assert visited == sorted(visited, key=lambda k: (k[0], k[1].encode()), reverse=True)
