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


def test_recall_does_not_wait_for_the_index_while_the_worker_holds_it(tmp_path: Path) -> None:
    """The worker applies a large batch to the realm's index under the index's lock, for as long as the
    batch takes: a recall meanwhile waits at most part of its budget for the lock, then asks FTS5. (The
    budget is raised from 500 ms so that FTS5 scoring every row, on a loaded machine, is not what is timed.)"""
    import threading

    from meta_memory.errors import MetaError

    with Meta.builder().persistent_state(tmp_path / "state").agent_memory(recall_timeout_ms=5_000).build() as h:
        store = h.runtime.agent_memory.service.store
        _bulk(h.call, MIN_ROWS + 10)
        store.lexical_index.warm("default")
        assert store.lexical_index.ready("default")
        index = store.lexical_index._ready["default"]
        answers: list[list[str]] = []
        errors: list[MetaError] = []

        def recall() -> None:
            try:
                answers.append(_recall(h.call, "harbour ferry"))
            except MetaError as exc:  # a refusal (a recall past its budget): reported below, with the assertion
                errors.append(exc)

        with index.lock:  # as the worker holds it while it applies a large batch
            reader = threading.Thread(target=recall)
            reader.start()
            reader.join(20)
            assert not reader.is_alive(), "the recall waited for the index's lock"
        assert not errors, errors
        assert len(answers) == 1 and len(answers[0]) == 8  # answered by FTS5 meanwhile


def test_a_realm_too_large_for_the_index_recalls_what_the_index_recalls(tmp_path: Path) -> None:
    """``recall_index_mb`` too small for the realm (its index is refused, as when evicted): recall is answered
    from FTS5, skipping the rows that cannot enter the best, and returns the records the index returns, in
    the same order — on a realm of one identity larger than FTS5's own pool of rows."""
    import random

    rng = random.Random(5)
    common = [f"co{i}" for i in range(6)]
    middle = [f"mi{i}" for i in range(60)]
    rare = [f"ra{i}" for i in range(600)]

    def text(n: int) -> str:
        return " ".join(rng.choice(common if r < 0.5 else middle if r < 0.85 else rare)
                        for r in (rng.random() for _ in range(n)))

    items = [{"title": text(rng.randint(2, 5)), "body": text(rng.randint(8, 40)) + f" own{i}x"}
             for i in range(MIN_ROWS + 1500)]
    queries = [" ".join(rng.choice(pick) for pick in (common, common, middle, rare, middle)[:k])
               for k in (2, 3, 4, 5) for _ in range(6)]
    state = tmp_path / "state"
    # the answers are compared here, not their time: a loaded machine may take past the default 500 ms budget
    with Meta.builder().persistent_state(state).agent_memory(recall_timeout_ms=30_000).build() as h:
        for start in range(0, len(items), 500):
            h.call("meta/agent_memory/remember_batch", {"identity": ME, "records": items[start:start + 500]})
        store = h.runtime.agent_memory.service.store
        store.lexical_index.warm("default")
        assert store.lexical_index.ready("default")
        indexed = [_recall(h.call, q) for q in queries]
    with Meta.builder().persistent_state(state).agent_memory(recall_index_mb=1, recall_timeout_ms=30_000).build() as h:
        store = h.runtime.agent_memory.service.store
        assert not store.lexical_index.warm("default")  # refused: bigger than the budget
        fts5 = [_recall(h.call, q) for q in queries]
    assert fts5 == indexed
    assert sum(1 for ids in indexed if len(ids) == 8) >= len(queries) // 2
