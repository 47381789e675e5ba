"""A recall sees every change made since the one before it, through the embedded SDK.

The SQLite store serves the records recall read lately from memory while the realm's file says nothing a recall
could see has changed since (:mod:`meta_memory.agent_memory.store.view_cache`). Each test recalls (so the records
are kept), changes a record — written over an erased record's row, forgotten, superseded, erased, its trust
changed (a state update: same content, a newer ``updated_at_ms``, the ranking's tie-break), expired — or has
another store on the same files change it, and recalls again. Each runs over a small identity (candidates from
the full-text table) and over one large enough for the in-process recall index (candidates and write-order
neighbours from memory).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.batch import RetierOp, StagedBatch
from meta_memory.agent_memory.model import Author, TrustTier
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from meta_memory.clock import ManualClock
from meta_memory.recall.lexical_index import MIN_ROWS
from meta_memory.sdk import Meta

ME = "lead:alice"
OTHER = "lead:bob"
START_MS = 1_700_000_000_000


def _filler(handle: Any, identity: str, count: int) -> None:
    agent = handle.agent(identity)
    for first in range(0, count, 1000):
        agent.remember_batch([(f"Filler {i}", f"unrelated filler words number {i}")
                              for i in range(first, min(count, first + 1000))])


@pytest.fixture(params=["small", "indexed"])
def env(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Any, ManualClock]]:
    clock = ManualClock(START_MS)
    # what these tests check is which records answer, not how fast: the first recall over the filler waits on
    # the index's build, which a loaded 2-core machine can stretch past the default 500 ms budget
    builder = Meta.builder().persistent_state(tmp_path / "state").clock(clock).agent_memory(recall_timeout_ms=30_000)
    with builder.build() as handle:
        if request.param == "indexed":  # enough rows for the in-process index; its build is started and awaited
            _filler(handle, ME, MIN_ROWS)
            _filler(handle, OTHER, 50)
            clock.advance(600_000)  # the fillers are outside the write-order window of what follows
            handle.agent(ME).recall("filler")
            store = handle.runtime.agent_memory.service.store
            deadline = time.monotonic() + 60
            while not store.lexical_index.ready("default"):
                assert time.monotonic() < deadline, "the recall index was not built"
                time.sleep(0.02)
        yield handle, clock


def _bodies(handle: Any, query: str, k: int = 8, identity: str = ME) -> list[str]:
    return [r.body for r in handle.agent(identity).recall(query, k)]


def _store(handle: Any) -> SqliteAgentMemoryStore:
    store = handle.runtime.agent_memory.service.store
    assert isinstance(store, SqliteAgentMemoryStore)
    return store


def test_a_record_written_over_an_erased_record_s_row_is_recalled(env: tuple[Any, ManualClock]) -> None:
    handle, clock = env
    agent = handle.agent(ME)
    agent.remember("Lantern", "an older lantern record keeps the rows below")
    clock.advance(1000)
    secret = agent.remember("Harbour", "the harbour gate code is 4471")
    assert _bodies(handle, "harbour gate") == ["the harbour gate code is 4471"]  # its row is read and kept
    assert agent.erase(secret.memory_id).count == 1  # the row is deleted: the next write takes its place
    clock.advance(1000)
    agent.remember("Harbour", "the harbour gate opens at dawn")
    for _ in range(2):
        assert _bodies(handle, "harbour gate") == ["the harbour gate opens at dawn"]


def test_a_forgotten_record_is_not_recalled(env: tuple[Any, ManualClock]) -> None:
    handle, clock = env
    agent = handle.agent(ME)
    best = agent.remember("Harbour gate", "the harbour gate code is 4471, harbour gate")
    clock.advance(1000)
    agent.remember("Harbour", "the harbour gate opens at dawn")
    assert _bodies(handle, "harbour gate", 1) == ["the harbour gate code is 4471, harbour gate"]
    agent.forget(best.memory_id)
    for _ in range(2):
        assert _bodies(handle, "harbour gate", 1) == ["the harbour gate opens at dawn"]


def test_a_superseded_record_gives_way_to_its_new_version(env: tuple[Any, ManualClock]) -> None:
    handle, clock = env
    agent = handle.agent(ME)
    old = agent.remember("Harbour gate", "the harbour gate code is 4471")
    assert _bodies(handle, "harbour gate") == ["the harbour gate code is 4471"]
    clock.advance(1000)
    agent.update(old.memory_id, body="the harbour gate code is 9902")
    for _ in range(2):
        assert _bodies(handle, "harbour gate") == ["the harbour gate code is 9902"]


def test_an_erased_record_is_not_recalled(env: tuple[Any, ManualClock]) -> None:
    handle, clock = env
    agent = handle.agent(ME)
    gone = agent.remember("Harbour gate", "the harbour gate code is 4471, harbour gate")
    clock.advance(1000)
    agent.remember("Harbour", "the harbour gate opens at dawn")
    assert _bodies(handle, "harbour gate", 1) == ["the harbour gate code is 4471, harbour gate"]
    assert agent.erase(gone.memory_id).count == 1
    for _ in range(2):
        assert _bodies(handle, "harbour gate", 1) == ["the harbour gate opens at dawn"]


def test_a_state_update_moves_a_record_in_the_order(env: tuple[Any, ManualClock]) -> None:
    handle, clock = env
    agent = handle.agent(ME)
    # the same score for both: equal length, the same terms; the newer one comes first
    north = agent.remember("Lantern", "the lantern hangs by the north door")
    clock.advance(1000)
    agent.remember("Lantern", "the lantern hangs by the south door")
    assert _bodies(handle, "lantern", 1) == ["the lantern hangs by the south door"]
    clock.advance(1000)
    record_writes.apply_batch(_store(handle), StagedBatch(realm="default", author=Author.operator(), ops=(
        RetierOp(id=north.memory_id, trust=TrustTier.AGENT_VERIFIED),)))  # same content, updated now
    for _ in range(2):
        assert _bodies(handle, "lantern", 1) == ["the lantern hangs by the north door"]
        assert _bodies(handle, "lantern", 2) == ["the lantern hangs by the north door",
                                                 "the lantern hangs by the south door"]


def test_an_expired_record_is_not_recalled(env: tuple[Any, ManualClock]) -> None:
    handle, clock = env
    agent = handle.agent(ME)
    agent.remember("Harbour gate", "the harbour gate code is 4471, harbour gate", ttl_s=60)
    clock.advance(1000)
    agent.remember("Harbour", "the harbour gate opens at dawn")
    assert _bodies(handle, "harbour gate", 1) == ["the harbour gate code is 4471, harbour gate"]
    clock.advance(60_000)  # past its expiry; nothing is written
    for _ in range(2):
        assert _bodies(handle, "harbour gate", 1) == ["the harbour gate opens at dawn"]


def test_a_state_update_by_another_store_on_the_same_files_is_seen(env: tuple[Any, ManualClock],
                                                                   tmp_path: Path) -> None:
    handle, clock = env
    agent = handle.agent(ME)
    north = agent.remember("Lantern", "the lantern hangs by the north door")
    clock.advance(1000)
    agent.remember("Lantern", "the lantern hangs by the south door")
    assert _bodies(handle, "lantern", 1) == ["the lantern hangs by the south door"]
    clock.advance(1000)
    root = _store(handle).root
    with SqliteAgentMemoryStore(root, clock=clock) as other:  # another process's store on the same files
        record_writes.apply_batch(other, StagedBatch(realm="default", author=Author.operator(), ops=(
            RetierOp(id=north.memory_id, trust=TrustTier.AGENT_VERIFIED),)))
    assert _bodies(handle, "lantern", 1) == ["the lantern hangs by the north door"]
