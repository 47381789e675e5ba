"""A realm whose recall index is built keeps its active rows decoded (``ViewCache.warm``): its first recalls read
no row, and nothing kept is ever served once the row changed, left the scope, expired or was erased."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.model import Scope
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from meta_memory.agent_memory.store.view_cache import WARM_SHARE, record_bytes, view_bytes
from meta_memory.clock import ManualClock
from meta_memory.sdk import Meta
from support import raw_write

R = "default"
A, B = "lead:alice", "lead:bob"
WORDS = ["harbour", "ferry", "anchor", "lantern", "compass", "pier", "tide", "beacon", "rope", "gull"]
START_MS = 1_700_000_000_000


@pytest.fixture
def handle(tmp_path: Path) -> Iterator[tuple[Any, SqliteAgentMemoryStore, ManualClock]]:
    clock = ManualClock(START_MS)
    with Meta.builder().persistent_state(tmp_path / "state").clock(clock).build() as h:
        store = h.runtime.agent_memory.store
        assert isinstance(store, SqliteAgentMemoryStore)
        store.lexical_index.min_rows = 0  # a test's small realm is indexed too
        yield h, store, clock


def _seed(h: Any, identity: str, n: int, offset: int = 0) -> list[str]:
    records = [{"title": f"{WORDS[i % 10]} note {i}", "body": f"the {WORDS[(i * 3) % 10]} and the {WORDS[(i * 7) % 10]} "
                f"entry {i}"} for i in range(offset, offset + n)]
    out = h.call("meta/agent_memory/remember_batch", {"identity": identity, "records": records})
    return [r["memory_id"] for r in out["results"]]


def _recall(h: Any, identity: str, query: str) -> list[tuple[str, str]]:
    out = h.call("meta/agent_memory/recall", {"identity": identity, "query_text": query, "max_entries": 20})
    return [(r["memory_id"], r["body"]) for r in out["records"]]


def _misses(store: SqliteAgentMemoryStore) -> tuple[int, int]:
    return store._views.misses, store._views.record_misses


def test_a_built_realm_answers_its_first_recalls_without_decoding_a_row(handle: Any) -> None:
    h, store, _ = handle
    _seed(h, A, 60)
    _seed(h, B, 40, offset=60)
    assert store.lexical_index.warm(R)  # builds the index and keeps the realm's rows resident, in this thread
    before = _misses(store)
    answers = {(who, word): _recall(h, who, word) for who in (A, B) for word in WORDS}
    assert _misses(store) == before  # every candidate, neighbour and re-checked record came from memory
    assert all(answers.values())
    store._views.clear()  # the same answers when every row is read from the file
    assert {(who, word): _recall(h, who, word) for who in (A, B) for word in WORDS} == answers
    assert _misses(store) != before


def test_nothing_kept_is_served_after_its_row_changed(handle: Any) -> None:
    h, store, _ = handle
    ids = _seed(h, A, 60)
    assert store.lexical_index.warm(R)
    forgotten, rewritten, updated = ids[0], ids[10], ids[20]  # all "harbour" notes
    assert {forgotten, rewritten, updated} <= {m for m, _ in _recall(h, A, "harbour")}
    h.call("meta/agent_memory/forget", {"identity": A, "memory_id": forgotten})
    new = h.call("meta/agent_memory/update", {"identity": A, "memory_id": updated, "body": "harbour moved"})
    raw_write(store, R, "UPDATE records SET body = 'harbour rewritten in place', content_hash = 'x' "
              "WHERE memory_id = ?", (rewritten,))
    got = dict(_recall(h, A, "harbour"))
    assert forgotten not in got and updated not in got
    assert got[new["memory_id"]] == "harbour moved"
    assert got[rewritten] == "harbour rewritten in place"


def test_an_erased_record_kept_resident_is_not_served(handle: Any) -> None:
    h, store, _ = handle
    ids = _seed(h, A, 40)
    assert store.lexical_index.warm(R)
    h.call("meta/agent_memory/erase", {"identity": A, "memory_id": ids[0]})
    assert ids[0] not in {m for m, _ in _recall(h, A, "harbour")}


def test_a_record_expiring_after_it_was_kept_is_not_served(handle: Any) -> None:
    h, store, clock = handle
    _seed(h, A, 40)
    short = h.call("meta/agent_memory/remember", {"identity": A, "title": "harbour lease", "body": "harbour until noon",
                                                  "ttl_s": 60})["memory_id"]
    assert store.lexical_index.warm(R)
    assert short in {m for m, _ in _recall(h, A, "harbour")}
    clock.advance(61_000)
    assert short not in {m for m, _ in _recall(h, A, "harbour")}


def test_another_identity_s_resident_rows_never_enter_an_answer(handle: Any) -> None:
    h, store, _ = handle
    mine = set(_seed(h, A, 30))
    theirs = set(_seed(h, B, 30, offset=30))
    assert store.lexical_index.warm(R)
    for word in WORDS:
        got = {m for m, _ in _recall(h, A, word)}
        assert got <= mine and not got & theirs


def test_keeping_a_realm_resident_stays_within_the_bounds_and_evicts_nothing(tmp_path: Path) -> None:
    with SqliteAgentMemoryStore(tmp_path / "am", clock=ManualClock(START_MS)) as store:
        store.lexical_index.min_rows = 0
        views = store._views
        views.capacity = 20
        views.max_bytes = 200_000
        other = [record_writes.remember(store, "other", A, f"harbour {i}", f"harbour kept {i} " + "y" * 3_000)[0]
                 for i in range(3)]
        store.search("other", Scope.identity("other", A), '"harbour"', 10)
        store.recall_records("other", [r.memory_id for r in other])
        kept_before = set(views._items)
        records_before = set(views._records)
        assert kept_before and records_before
        for i in range(60):
            record_writes.remember(store, R, A, f"harbour {i}", f"harbour note {i} " + "x" * 1_000)
        assert store.lexical_index.warm(R)
        assert kept_before <= set(views._items) and records_before <= set(views._records)  # nothing evicted
        assert len(views._items) <= max(len(kept_before), int(views.capacity * WARM_SHARE))
        assert sum(view_bytes(v) for v in views._items.values()) <= views.view_limit * WARM_SHARE
        assert sum(record_bytes(r) for _, r in views._records.values()) <= views.record_limit
        assert views.stats()["bytes"] <= views.stats()["limit_bytes"] == views.max_bytes
        assert len([k for k in views._items if k[0] == R]) > 0


def test_another_identity_s_write_leaves_a_resident_scope_served_from_memory(handle: Any) -> None:
    """Agents write between turns: a remember by another identity of the realm moves only its own scope's
    generation, so the resident rows of this one are still served without a read of the file."""
    h, store, _ = handle
    _seed(h, A, 60)
    _seed(h, B, 40, offset=60)
    assert store.lexical_index.warm(R)
    for word in WORDS:
        h.call("meta/agent_memory/remember", {"identity": B, "title": f"aside {word}", "body": f"bob {word} aside"})
        before = (store._views.live_reads, *_misses(store))
        assert _recall(h, A, word)
        assert (store._views.live_reads, *_misses(store)) == before
    h.call("meta/agent_memory/remember", {"identity": A, "title": "harbour aside", "body": "alice harbour aside"})
    reads = store._views.live_reads
    assert "alice harbour aside" in {body for _, body in _recall(h, A, "harbour")}
    assert store._views.live_reads > reads  # her own scope moved: its rows' liveness read again
