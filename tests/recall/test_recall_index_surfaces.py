"""Through the public surfaces, a recall right after a remember finds the record and a forgotten record is
gone, whether the realm's candidates come from the in-process index or from FTS5 (its build runs in the
background while recalls go on)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from meta_memory.recall.lexical_index import MIN_ROWS
from meta_memory.sdk import Meta
from support import GatewayProcess

ME = "lead:indexed"


def _bulk(call: Any, n: int) -> None:
    for start in range(0, n, 500):
        items = [{"title": f"Log {i}", "body": f"routine entry {i} about the harbour and the ferry"}
                 for i in range(start, min(n, start + 500))]
        call("meta/agent_memory/remember_batch", {"identity": ME, "records": items})


def _recall(call: Any, query: str) -> list[str]:
    out = call("meta/agent_memory/recall", {"identity": ME, "query_text": query, "max_entries": 8})
    return [r["memory_id"] for r in out["records"]]


def _remember_then_recall(call: Any, i: int) -> None:
    word = f"zq{i}marker"
    mid = call("meta/agent_memory/remember", {"identity": ME, "title": f"Fact {i}", "body": f"the {word} is here"})[
        "memory_id"]
    assert _recall(call, word) == [mid]
    assert call("meta/agent_memory/forget", {"identity": ME, "memory_id": mid})["deleted"] is True
    assert _recall(call, word) == []


def test_embedded_sdk_recall_after_remember_from_the_index(tmp_path: Path) -> None:
    with Meta.builder().persistent_state(tmp_path / "state").build() as handle:
        store = handle.runtime.agent_memory.service.store
        _bulk(handle.call, MIN_ROWS + 10)
        assert _recall(handle.call, "harbour ferry")  # FTS5 answers; the index build starts
        until = time.monotonic() + 60
        while not store.lexical_index.ready("default"):
            assert time.monotonic() < until, "the recall index was not built"
            time.sleep(0.05)
        for i in range(5):
            _remember_then_recall(handle.call, i)
        assert store.lexical_index.ready("default")  # answered from memory, caught up after each write


def test_gateway_recall_after_remember_while_the_index_builds(gateway: GatewayProcess) -> None:
    _bulk(gateway.result, MIN_ROWS + 10)
    _recall(gateway.result, "harbour ferry")  # starts the background build in the gateway
    until = time.monotonic() + 4
    i = 0
    while time.monotonic() < until:  # before, during and after the build
        _remember_then_recall(gateway.result, i)
        i += 1
    assert i > 1


def test_recall_never_waits_past_its_budget_while_the_worker_applies_a_large_batch(tmp_path: Path) -> None:
    """A batch far over the in-place catch-up limit is applied to the realm's index by the worker, under
    the index's lock, for a long time: a recall meanwhile asks FTS5 (or times out) within its budget
    instead of waiting for the lock."""
    from meta_memory.errors import AgentMemoryError

    budget_ms = 200
    with Meta.builder().persistent_state(tmp_path / "state").agent_memory(recall_timeout_ms=budget_ms).build() as h:
        store = h.runtime.agent_memory.service.store
        _bulk(h.call, MIN_ROWS + 10)
        store.lexical_index.warm("default")
        assert store.lexical_index.ready("default")
        _bulk(h.call, 100_000)  # the worker's catch-up holds the index's lock for a long while
        worst = 0.0
        until = time.monotonic() + 30
        head = None
        while time.monotonic() < until:
            started = time.monotonic()
            try:
                _recall(h.call, "harbour ferry")
            except AgentMemoryError as exc:
                assert exc.reason == "timeout", exc  # fail closed, in time
            worst = max(worst, time.monotonic() - started)
            position = store.lexical_index.position("default")
            if head is None:
                head = position
            elif position is not None and position > head:
                break  # the worker caught up: the window of the long apply is over
        assert worst < budget_ms / 1000 + 0.3, f"a recall took {worst:.3f} s under a {budget_ms} ms budget"
