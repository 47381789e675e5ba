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
    batch takes: a recall meanwhile waits at most part of its budget for the lock, then asks FTS5."""
    import threading

    with Meta.builder().persistent_state(tmp_path / "state").build() as h:
        store = h.runtime.agent_memory.service.store
        _bulk(h.call, MIN_ROWS + 10)
        store.lexical_index.warm("default")
        assert store.lexical_index.ready("default")
        index = store.lexical_index._ready["default"]
        answers: list[list[str]] = []
        with index.lock:  # as the worker holds it while it applies a large batch
            reader = threading.Thread(target=lambda: answers.append(_recall(h.call, "harbour ferry")))
            reader.start()
            reader.join(20)
            assert not reader.is_alive(), "the recall waited for the index's lock"
        assert len(answers) == 1 and len(answers[0]) == 8  # answered by FTS5 meanwhile
