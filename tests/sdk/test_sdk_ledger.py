"""The Python SDK for the ledger: embedded builder, remote HTTP, spawned stdio; sync and async."""

from __future__ import annotations

import asyncio
import json

import pytest

from meta_memory import Meta, memory
from meta_memory.errors import ConfigError, InvalidParams, MemoryBackendUnavailable, StartupError
from meta_memory.ledger.model import MemoryIndexResult, MemoryQueryResult, MemoryStoreInfo


def _exercise(handle) -> None:
    r = handle.memory_index("identity:ops", "deployment", "knowledge_graph", fact="Deploys need approval.",
                            metadata={"source": "runbook"})
    assert isinstance(r, MemoryIndexResult) and r.assertion_id and not r.conflict_active
    c = handle.memory_index("identity:ops", "deployment", conflict=True, conflict_reason="disputed")
    assert c.assertion_id is None and c.conflict_active
    q = handle.memory_query("approval")
    assert isinstance(q, MemoryQueryResult) and [a.fact for a in q.assertions] == ["Deploys need approval."]
    assert handle.memory_query({"entity": "IDENTITY:OPS"}, store="knowledge_graph").conflicts[0].reason == "disputed"
    stores = handle.memory_stores()
    assert all(isinstance(s, MemoryStoreInfo) for s in stores) and stores[0].record_count == 2
    with pytest.raises(InvalidParams) as exc:
        handle.memory_index("e", "t")
    assert exc.value.code == -32602 and "fact is required" in exc.value.message
    with pytest.raises(TypeError):
        handle.memory_query(42)


def test_embedded_persistent_handle(tmp_path):
    with Meta.builder().persistent_state(tmp_path).memory(memory.local_json()).build() as handle:
        _exercise(handle)
    state = json.loads((tmp_path / "memory-ledger-state.json").read_text())
    assert len(state["assertions"]) == 1 and len(state["conflicts"]) == 1
    with Meta.builder().persistent_state(tmp_path).memory(memory.local_json()).build() as again:
        assert len(again.memory_query().assertions) == 1


def test_persistent_state_alone_persists_the_ledger(tmp_path):
    """The README's embedded example: ``persistent_state(dir)`` with no ``.memory(...)`` keeps the ledger
    in ``dir`` (local JSON), so a fact indexed before close is read back after reopening."""
    with Meta.builder().persistent_state(tmp_path).build() as handle:
        handle.ledger.index("identity:ops", "deployment", fact="Production deploys require approval.")
        ledger = handle.status().ledger
        assert (ledger.persisted, ledger.backend) == (True, "local_json")
    assert (tmp_path / "memory-ledger-state.json").exists()
    with Meta.builder().persistent_state(tmp_path).build() as again:
        assert [a.fact for a in again.ledger.query("approval").assertions] == ["Production deploys require approval."]


def test_builder_with_in_memory_ledger_never_writes_it(tmp_path):
    with Meta.builder().persistent_state(tmp_path).ledger(memory.in_memory()).build() as handle:
        handle.memory_index("e", "t", fact="volatile")
        assert len(handle.memory_query().assertions) == 1
        ledger = handle.status().ledger
        assert (ledger.persisted, ledger.backend) == (False, "in_memory")
    assert not (tmp_path / "memory-ledger-state.json").exists()
    with Meta.builder().persistent_state(tmp_path).build() as again:
        assert again.memory_query().assertions == []


def test_builder_without_state_dir_keeps_the_ledger_in_memory():
    with Meta.builder().build() as handle:
        assert handle.status().ledger.backend == "in_memory"


def test_remote_handle_over_http(gateway):
    with Meta.connect(gateway.url) as handle:
        _exercise(handle)


def test_spawned_stdio_handle(tmp_path):
    with Meta.spawn(tmp_path / "s") as handle:
        _exercise(handle)


def test_async_handles(gateway, tmp_path):
    async def run() -> None:
        async with Meta.connect_async(gateway.url) as remote:
            r = await remote.memory_index("e", "t", fact="async remote")
            assert r.assertion_id
            assert [a.fact for a in (await remote.memory_query()).assertions] == ["async remote"]
        async with Meta.builder().persistent_state(tmp_path / "emb").memory(memory.local_json()).build_async() as emb:
            await asyncio.gather(*(emb.memory_index("e", "t", fact=f"f{i}") for i in range(20)))
            assert len((await emb.memory_query()).assertions) == 20

    asyncio.run(run())


def test_health_failure_raises_typed_error(tmp_path):
    handle = Meta.builder().persistent_state(tmp_path).memory(memory.local_json()).build()
    try:
        handle.memory_index("e", "t", fact="ok")
    finally:
        handle.close()
    with pytest.raises(StartupError) as exc:  # the startup health check itself refuses
        Meta.builder().persistent_state(tmp_path).memory(memory.local_json("http://127.0.0.1:9")).build()
    assert "health" in str(exc.value).lower()


def test_elephant_and_unsupported_options_are_refused():
    with pytest.raises(ConfigError) as exc:
        memory.elephant("http://localhost:3000")
    assert "local_json" in str(exc.value)
    for bad in ({"stores": ["vector"]}, {"space_id": "x"}, {"collection": "c"}):
        with pytest.raises(ConfigError) as exc:
            Meta.builder().memory(memory.local_json(), **bad)
        assert next(iter(bad)) in str(exc.value)


def test_typed_error_classes_match_between_modes(gateway, tmp_path):
    with Meta.connect(gateway.url) as remote, Meta.builder().persistent_state(tmp_path).build() as local:
        errors = []
        for h in (remote, local):
            with pytest.raises(InvalidParams) as exc:
                h.memory_index("", "t", fact="x")
            errors.append((exc.value.code, exc.value.message, exc.value.data))
        assert errors[0] == errors[1]
    assert MemoryBackendUnavailable.code == -32010
