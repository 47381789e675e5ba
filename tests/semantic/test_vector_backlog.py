"""Hybrid completeness: ``meta/status`` reports records still waiting for a vector, per realm, and the
SDK's ``wait_for_vectors`` waits for the backlog to drain (or says how much is left)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from extras import require_extra
from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.model import Author, Scope
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from meta_memory.recall.semantic import model as model_module
from meta_memory.recall.semantic.indexer import VectorIndexer
from meta_memory.recall.semantic.setup import build_recall_provider
from meta_memory.sdk import Meta

from .semantic_support import ConceptEmbedder

pytestmark = pytest.mark.semantic
require_extra("semantic", "numpy")

ID = "lead:main"


class GatedEmbedder(ConceptEmbedder):
    """The fake embedder, but each batch waits until the test opens the gate (the backlog stays put)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        assert self.gate.wait(30), "the test never opened the gate"
        return super().embed(texts)


@pytest.fixture
def gated(monkeypatch: pytest.MonkeyPatch) -> GatedEmbedder:
    embedder = GatedEmbedder()
    monkeypatch.setattr(model_module, "MiniLMEmbedder", lambda *a, **k: embedder)
    return embedder


def _handle(tmp_path: Path, provider: str) -> Any:
    return Meta.builder().persistent_state(tmp_path / "state").agent_memory(recall_provider=provider).build()


def test_backlog_is_counted_per_realm_and_drains(store: SqliteAgentMemoryStore) -> None:
    record_writes.remember(store, "default", ID, "Garage", "bought a blue sedan", [])
    record_writes.remember(store, "default", ID, "Kitchen", "the oven arrived", [])
    record_writes.remember(store, "north", ID, "Trip", "vacation in Paris", [])
    indexer = VectorIndexer(store, ConceptEmbedder())
    before = indexer.backlog()
    assert before["pending"] == 3
    assert sorted((r["realm"], r["pending"]) for r in before["realms"]) == [("default", 2), ("north", 1)]
    assert before["complete"] is False and before["indexing"] is False and before["model"] == "concepts-test"
    indexer.drain()
    after = indexer.backlog()
    assert after["pending"] == 0 and after["complete"] is True
    assert after["realms"] == [{"realm": r, "pending": 0} for r in store.list_realms()]
    assert after["embedded"] == 3


def test_a_forgotten_record_leaves_the_backlog(store: SqliteAgentMemoryStore) -> None:
    record_writes.remember(store, "default", ID, "Garage", "bought a blue sedan", [])
    record_writes.remember(store, "default", ID, "Kitchen", "the oven arrived", [])
    gone = next(r for r in store.active_records("default", Scope.identity("default", ID)) if r.title == "Kitchen")
    indexer = VectorIndexer(store, ConceptEmbedder())
    assert indexer.backlog()["pending"] == 2
    record_writes.forget(store, "default", Scope.identity("default", ID), gone.memory_id, Author.application())
    assert indexer.backlog()["pending"] == 1
    indexer.drain()
    assert indexer.backlog()["pending"] == 0 and indexer.embedded == 1


def test_lexical_reports_no_backlog_with_a_reason(tmp_path: Path) -> None:
    with _handle(tmp_path, "lexical") as h:
        h.remember_agent_memory(ID, title="Garage", body="bought a blue sedan")
        report = h.status()["agent_memory"]["vector_backlog"]
        assert report["provider"] == "lexical" and report["pending"] == 0 and report["complete"] is True
        assert "lexical" in report["reason"]
        assert h.wait_for_vectors(timeout_s=0) == report  # nothing to wait for


def test_status_shows_the_backlog_until_vectors_land(tmp_path: Path, gated: GatedEmbedder) -> None:
    with _handle(tmp_path, "hybrid") as h:
        h.remember_agent_memory(ID, title="Garage", body="bought a blue sedan")
        h.remember_agent_memory_batch(ID, [("Kitchen", "the oven arrived"), ("Trip", "vacation in Paris")])
        report = h.status()["agent_memory"]["vector_backlog"]
        assert report["provider"] == "hybrid" and report["pending"] == 3
        assert report["realms"] == [{"realm": "default", "pending": 3}]
        assert report["complete"] is False and report["indexing"] is True
        with pytest.raises(TimeoutError, match=r"3 record\(s\) still wait for a vector .*default: 3"):
            h.wait_for_vectors(timeout_s=0.2, poll_s=0.05)
        gated.gate.set()
        done = h.wait_for_vectors(timeout_s=30, poll_s=0.05)
        assert done["pending"] == 0 and done["complete"] is True and done["embedded"] == 3
        assert h.status()["agent_memory"]["vector_backlog"]["pending"] == 0


def test_async_handle_waits_too(tmp_path: Path, gated: GatedEmbedder) -> None:
    async def run() -> dict[str, Any]:
        builder = Meta.builder().persistent_state(tmp_path / "s").agent_memory(recall_provider="hybrid")
        async with builder.build_async() as h:
            await h.remember_agent_memory(ID, title="Garage", body="bought a blue sedan")
            with pytest.raises(TimeoutError):
                await h.wait_for_vectors(timeout_s=0.1, poll_s=0.02)
            gated.gate.set()
            return await h.wait_for_vectors(timeout_s=30, poll_s=0.02)

    assert asyncio.run(run())["complete"] is True


def test_wait_for_vectors_refuses_a_gateway_without_agent_memory(tmp_path: Path) -> None:
    with Meta.builder().persistent_state(tmp_path / "state").agent_memory(False).build() as h:
        with pytest.raises(ValueError, match="agent memory is off"):
            h.wait_for_vectors(timeout_s=0)


def test_a_store_with_no_realm_yet_has_an_empty_complete_backlog(tmp_path: Path) -> None:
    store = _empty_store(tmp_path)
    try:
        report = build_recall_provider("hybrid", store, embedder=ConceptEmbedder(), start=False).backlog()
        assert report["pending"] == 0 and report["realms"] == [] and report["complete"] is True
    finally:
        store.close()


def _empty_store(tmp_path: Path) -> SqliteAgentMemoryStore:
    from meta_memory.clock import ManualClock

    return SqliteAgentMemoryStore(tmp_path / "empty", ManualClock(1_700_000_000_000))


def test_a_report_never_shows_a_stored_vector_that_embedded_does_not_count(store: SqliteAgentMemoryStore) -> None:
    """``pending`` and ``embedded`` are read together: a report taken while a pass has stored its vectors
    but not yet counted them waits for the count (``wait_for_vectors`` returns the report that saw
    ``pending`` reach 0)."""
    for title in ("Garage", "Kitchen", "Trip"):
        record_writes.remember(store, "default", ID, title, f"{title} body", [])
    stored, release = threading.Event(), threading.Event()
    put_vectors = store.put_vectors

    def slow_put(*args: Any, **kw: Any) -> int:
        n = put_vectors(*args, **kw)
        stored.set()
        release.wait(5)
        return n

    indexer = VectorIndexer(store, ConceptEmbedder())
    indexer.store = type("Slow", (), {"__getattr__": lambda _, name: getattr(store, name),
                                      "put_vectors": staticmethod(slow_put)})()
    drain = threading.Thread(target=indexer.drain)
    drain.start()
    assert stored.wait(10)
    reports: list[dict[str, Any]] = []
    reader = threading.Thread(target=lambda: reports.append(indexer.backlog()))
    reader.start()
    reader.join(0.2)
    release.set()
    reader.join(10)
    drain.join(10)
    assert reports and reports[0]["pending"] == 0 and reports[0]["embedded"] == 3, reports
