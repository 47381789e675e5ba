"""AssertionLedger behaviour (seed: the runtime owns the assertion ledger, Indexing,
Querying, Conflict detection, Memory store info; reference §1.3–1.9)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from meta_memory.clock import ManualClock
from meta_memory.errors import ConfigError, MemoryBackendUnavailable
from meta_memory.ledger import (
    AssertionLedger,
    IndexRequest,
    LedgerConfig,
    MemoryConflictSignal,
    QueryRequest,
)
from meta_memory.ledger.errors import LedgerValidationError
from meta_memory.ledger.persistence import MAX_RETAINED
from support import run_together


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(1_700_000_000_000)


@pytest.fixture
def state_path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "memory-ledger-state.json"


def open_ledger(path: Path | None, clock: ManualClock) -> AssertionLedger:
    ledger = AssertionLedger(path, None, clock)
    ledger.load()
    return ledger


def fact(entity: str = "identity:ops", topic: str = "deployment", text: str = "Deploys need approval.", **kw: object):
    return IndexRequest(entity=entity, topic=topic, fact=text, **kw)  # type: ignore[arg-type]


def on_disk(path: Path) -> dict:
    return json.loads(path.read_text())


def test_index_writes_canonical_assertion_and_file(state_path: Path, clock: ManualClock) -> None:
    ledger = open_ledger(state_path, clock)
    result = ledger.index(
        IndexRequest(
            entity=" Identity:Ops ", topic="Deployment", store=" Vector", fact="  Keep Case. ", metadata={"k": [1]}
        )
    )
    assert result.model_dump() == {
        "entity": "identity:ops",
        "topic": "deployment",
        "store": "vector",
        "assertion_id": "memory-assert-000000",
        "conflict_active": False,
    }
    assert on_disk(state_path) == {
        "assertions": [
            {
                "assertion_id": "memory-assert-000000",
                "entity": "identity:ops",
                "topic": "deployment",
                "store": "vector",
                "fact": "Keep Case.",
                "metadata": {"k": [1]},
                "indexed_at_ms": 1_700_000_000_000,
            }
        ],
        "conflicts": [],
    }
    assert not state_path.with_suffix(".tmp").exists()


def test_ids_are_sequential_and_store_defaults_to_knowledge_graph(state_path: Path, clock: ManualClock) -> None:
    ledger = open_ledger(state_path, clock)
    ids = [ledger.index(fact(text=f"fact {i}")).assertion_id for i in range(3)]
    assert ids == ["memory-assert-000000", "memory-assert-000001", "memory-assert-000002"]
    assert {a.store for a in ledger.query().assertions} == {"knowledge_graph"}


def test_restart_reloads_state_and_continues_the_sequence(state_path: Path, clock: ManualClock) -> None:
    first = open_ledger(state_path, clock)
    first.index(fact(text="one"))
    first.index(fact(text="two", conflict=True, conflict_reason="disputed"))
    before = first.query()

    second = open_ledger(state_path, clock)
    assert second.query() == before
    assert second.index(fact(text="three")).assertion_id == "memory-assert-000002"


@pytest.mark.parametrize(("stored_ids", "next_id"), [
    pytest.param(("memory-assert-000041", "memory-assert-7", "custom"), "memory-assert-000042",
                 id="highest-suffix-plus-one"),
    pytest.param(("custom-a", "memory-assert-x1", "memory-assert-"), "memory-assert-000003",
                 id="without-parsable-ids-is-the-count"),
])
def test_bootstrap_counter(state_path: Path, clock: ManualClock, stored_ids: tuple[str, ...], next_id: str) -> None:
    rows = [
        {"assertion_id": aid, "entity": "e", "topic": "t", "store": "todo", "fact": "f", "indexed_at_ms": 1}
        for aid in stored_ids
    ]
    state_path.parent.mkdir(parents=True)
    state_path.write_text(json.dumps({"assertions": rows}))
    assert open_ledger(state_path, clock).index(fact()).assertion_id == next_id


def test_ids_grow_past_six_digits(clock: ManualClock) -> None:
    ledger = open_ledger(None, clock)
    ledger._sequence = 1_000_000  # white-box: reach the boundary without a million writes
    assert ledger.index(fact()).assertion_id == "memory-assert-1000000"


def test_the_4097th_index_evicts_the_oldest(state_path: Path, clock: ManualClock) -> None:
    rows = [
        {
            "assertion_id": f"memory-assert-{i:06d}",
            "entity": "e",
            "topic": "t",
            "store": "todo",
            "fact": f"f{i}",
            "indexed_at_ms": i,
        }
        for i in range(MAX_RETAINED)
    ]
    state_path.parent.mkdir(parents=True)
    state_path.write_text(json.dumps({"assertions": rows}))
    ledger = open_ledger(state_path, clock)
    assert ledger.assertion_count == MAX_RETAINED
    assert ledger.index(fact()).assertion_id == f"memory-assert-{MAX_RETAINED:06d}"
    saved = on_disk(state_path)["assertions"]
    assert len(saved) == MAX_RETAINED
    assert saved[0]["assertion_id"] == "memory-assert-000001"
    assert saved[-1]["assertion_id"] == f"memory-assert-{MAX_RETAINED:06d}"
    assert open_ledger(state_path, clock).query() == ledger.query()


def test_in_memory_ledger_caps_and_never_writes(tmp_path: Path, clock: ManualClock) -> None:
    ledger = open_ledger(None, clock)
    for i in range(MAX_RETAINED + 1):
        ledger.index(fact(text=f"f{i}"))
    assertions = ledger.query().assertions
    assert len(assertions) == MAX_RETAINED
    assert assertions[0].fact == "f1"
    assert list(tmp_path.iterdir()) == []


def test_conflict_upsert_order_and_activity(state_path: Path, clock: ManualClock) -> None:
    ledger = open_ledger(state_path, clock)
    only = ledger.index(IndexRequest(entity="svc", topic="owner", store="todo", conflict=True))
    assert only.assertion_id is None and only.conflict_active is True
    assert ledger.query().assertions == []

    clock.advance(10)
    again = ledger.index(
        IndexRequest(entity="SVC", topic="owner", store="todo", conflict=True, conflict_reason=" two owners ")
    )
    assert again.conflict_active
    ledger.index(IndexRequest(entity="api", topic="owner", store="vector", conflict=True))
    conflicts = ledger.query().conflicts
    assert conflicts == [
        MemoryConflictSignal(entity="api", topic="owner", store="vector", reason=None, updated_at_ms=clock.now_ms()),
        MemoryConflictSignal(
            entity="svc", topic="owner", store="todo", reason="two owners", updated_at_ms=clock.now_ms()
        ),
    ]
    assert on_disk(state_path)["conflicts"] == [c.model_dump() for c in conflicts]

    # conflict_active ignores the store: a fact in another store still sees the conflict.
    other_store = ledger.index(IndexRequest(entity="svc", topic="owner", store="timeline", fact="Team A owns it."))
    assert other_store.conflict_active is True
    assert ledger.index(fact(entity="svc", topic="runtime")).conflict_active is False


def test_fact_and_conflict_in_one_call_write_both(state_path: Path, clock: ManualClock) -> None:
    ledger = open_ledger(state_path, clock)
    result = ledger.index(fact(conflict=True, conflict_reason="runbooks disagree"))
    assert result.assertion_id == "memory-assert-000000" and result.conflict_active
    saved = on_disk(state_path)
    assert len(saved["assertions"]) == 1 and len(saved["conflicts"]) == 1
    assert saved["conflicts"][0]["reason"] == "runbooks disagree"


def test_conflict_false_with_fact_records_no_signal(clock: ManualClock) -> None:
    ledger = open_ledger(None, clock)
    assert ledger.index(fact(conflict=False, conflict_reason="ignored")).conflict_active is False
    assert ledger.query().conflicts == []


def test_index_refusals_change_nothing(state_path: Path, clock: ManualClock) -> None:
    ledger = open_ledger(state_path, clock)
    with pytest.raises(LedgerValidationError, match="fact is required unless conflict=true"):
        ledger.index(IndexRequest(entity="e", topic="t"))
    with pytest.raises(LedgerValidationError, match="store 'graph' is unsupported"):
        ledger.index(fact(store="Graph"))
    with pytest.raises(LedgerValidationError, match="entity must be a non-empty string"):
        ledger.index(fact(entity=" "))
    with pytest.raises(LedgerValidationError, match="metadata"):
        ledger.index(fact(metadata={"x": float("nan")}))
    assert not state_path.exists()
    assert ledger.index(fact()).assertion_id == "memory-assert-000000"


def test_query_filters(clock: ManualClock) -> None:
    ledger = open_ledger(None, clock)
    ledger.index(IndexRequest(entity="identity:ops", topic="deployment", store="todo", fact="Needs APPROVAL."))
    ledger.index(IndexRequest(entity="identity:ops", topic="billing", store="vector", fact="Invoices monthly."))
    ledger.index(IndexRequest(entity="identity:dev", topic="deployment", fact="Fridays frozen."))
    ledger.index(IndexRequest(entity="identity:dev", topic="deployment", conflict=True, conflict_reason="Approval?"))

    def facts(**kw: str) -> list[str]:
        return [a.fact for a in ledger.query(QueryRequest(**kw)).assertions]

    assert facts() == ["Needs APPROVAL.", "Invoices monthly.", "Fridays frozen."]
    assert facts(entity=" IDENTITY:OPS ") == ["Needs APPROVAL.", "Invoices monthly."]
    assert facts(topic="Deployment", store="TODO") == ["Needs APPROVAL."]
    # Empty filters and unsupported stores are absent filters.
    assert facts(entity="  ", store="nonsense") == ["Needs APPROVAL.", "Invoices monthly.", "Fridays frozen."]
    # The substring query runs across entity, topic and fact, case-insensitively.
    assert facts(query="approval") == ["Needs APPROVAL."]
    assert facts(query=" BILL") == ["Invoices monthly."]
    assert facts(query="identity:dev") == ["Fridays frozen."]
    assert facts(query="nothing like it") == []
    # Conflicts match on their reason too.
    assert [c.entity for c in ledger.query(QueryRequest(query="APPROVAL?")).conflicts] == ["identity:dev"]
    assert ledger.query(QueryRequest(query="fridays")).conflicts == []


def test_query_is_case_insensitive_beyond_ascii(clock: ManualClock) -> None:
    ledger = open_ledger(None, clock)
    ledger.index(fact(text="Die Straße ist GESPERRT – ÉTÉ"))
    assert len(ledger.query(QueryRequest(query="été")).assertions) == 1
    assert len(ledger.query(QueryRequest(query="STRASSE")).assertions) == 1


def test_query_results_cannot_corrupt_the_ledger(state_path: Path, clock: ManualClock) -> None:
    ledger = open_ledger(state_path, clock)
    ledger.index(fact(metadata={"source": "runbook"}))
    ledger.query().assertions[0].metadata["source"] = "tampered"
    assert ledger.query().assertions[0].metadata == {"source": "runbook"}


def test_stores_counts_assertions_and_conflicts(clock: ManualClock) -> None:
    ledger = open_ledger(None, clock)
    ledger.index(fact(store="todo"))
    ledger.index(fact(store="todo", text="second"))
    ledger.index(IndexRequest(entity="e", topic="t", store="todo", conflict=True))
    ledger.index(fact(store="top_of_mind", conflict=True))
    assert [(s.store, s.record_count) for s in ledger.stores()] == [
        ("knowledge_graph", 0),
        ("vector", 0),
        ("timeline", 0),
        ("todo", 3),
        ("top_of_mind", 2),
    ]


def test_conflict_for_reference(clock: ManualClock) -> None:
    ledger = open_ledger(None, clock)
    ledger.index(IndexRequest(entity="b", topic="y", store="vector", conflict=True, conflict_reason="by"))
    ledger.index(IndexRequest(entity="a", topic="y", store="todo", conflict=True, conflict_reason="ay"))
    ledger.index(IndexRequest(entity="a", topic="x", store="vector", conflict=True, conflict_reason="ax"))
    assert ledger.conflict_for_reference(" A ", "Y").reason == "ay"  # type: ignore[union-attr]
    assert ledger.conflict_for_reference("a").reason == "ax"  # type: ignore[union-attr]
    assert ledger.conflict_for_reference(topic="y").reason == "ay"  # type: ignore[union-attr]
    assert ledger.conflict_for_reference("b", "x") is None
    assert ledger.conflict_for_reference() is None
    assert ledger.conflict_for_reference(" ", "") is None


def test_persist_io_failure_rolls_back(state_path: Path, clock: ManualClock) -> None:
    ledger = open_ledger(state_path, clock)
    ledger.index(fact(text="kept", conflict=True, conflict_reason="old"))
    committed = state_path.read_bytes()
    state_path.with_suffix(".tmp").mkdir()  # the next stage cannot be written
    with pytest.raises(MemoryBackendUnavailable) as info:
        ledger.index(fact(text="lost", conflict=True, conflict_reason="new"))
    assert info.value.to_jsonrpc()["code"] == -32010
    assert info.value.message.startswith("Memory backend unavailable: memory ledger persist failed")
    assert str(state_path.parent) not in info.value.message
    assert state_path.read_bytes() == committed
    assert [a.fact for a in ledger.query().assertions] == ["kept"]
    assert [c.reason for c in ledger.query().conflicts] == ["old"]
    state_path.with_suffix(".tmp").rmdir()
    assert ledger.index(fact(text="next")).assertion_id == "memory-assert-000001"


def test_rollback_restores_evicted_assertions(clock: ManualClock, tmp_path: Path) -> None:
    path = tmp_path / "memory-ledger-state.json"
    rows = [
        {"assertion_id": f"memory-assert-{i:06d}", "entity": "e", "topic": "t", "store": "todo", "fact": f"f{i}",
         "indexed_at_ms": i}
        for i in range(MAX_RETAINED)
    ]
    path.write_text(json.dumps({"assertions": rows}))
    ledger = open_ledger(path, clock)
    before = ledger.query()
    path.with_suffix(".tmp").mkdir()
    with pytest.raises(MemoryBackendUnavailable):
        ledger.index(fact())
    assert ledger.query() == before


def test_concurrent_index_calls_are_all_kept(state_path: Path, clock: ManualClock) -> None:
    ledger = open_ledger(state_path, clock)

    def worker(n: int) -> None:
        for i in range(50):
            ledger.index(fact(entity=f"worker-{n}", text=f"fact {i}"))

    run_together(worker, 8)
    saved = on_disk(state_path)["assertions"]
    assert len(saved) == 400
    assert len({row["assertion_id"] for row in saved}) == 400
    for n in range(8):
        assert [r["fact"] for r in saved if r["entity"] == f"worker-{n}"] == [f"fact {i}" for i in range(50)]


def test_lifecycle_errors(clock: ManualClock) -> None:
    ledger = AssertionLedger(None, None, clock)
    with pytest.raises(RuntimeError, match="load"):
        ledger.query()
    ledger.load()
    with pytest.raises(RuntimeError, match="once"):
        ledger.load()


def test_from_config(tmp_path: Path, clock: ManualClock) -> None:
    in_memory = AssertionLedger.from_config(None, tmp_path, clock)
    assert in_memory.state_path is None
    persisted = AssertionLedger.from_config(LedgerConfig(), tmp_path, clock)
    assert persisted.state_path == tmp_path / "memory-ledger-state.json"
    persisted.index(fact())
    assert (tmp_path / "memory-ledger-state.json").is_file()
    with pytest.raises(ConfigError, match="persistent"):
        AssertionLedger.from_config(LedgerConfig(), None, clock)


def test_method_table_returns_wire_json(clock: ManualClock) -> None:
    from meta_memory.rpc.methods import build_method_table
    from meta_memory.rpc.registry import CallContext
    from meta_memory.runtime import Runtime

    table = build_method_table()
    with Runtime(clock=clock) as runtime:
        def call(method: str, params: object) -> dict:
            return table.call(runtime, CallContext(), method, params)

        assert {"meta/memory/index", "meta/memory/query", "meta/memory/stores"} <= set(table.names(runtime))
        indexed = call("meta/memory/index", {"entity": "E", "topic": "T", "fact": "F", "metadata": {"source": "runbook"}})
        assert indexed == {
            "entity": "e",
            "topic": "t",
            "store": "knowledge_graph",
            "assertion_id": "memory-assert-000000",
            "conflict_active": False,
        }
        result = call("meta/memory/query", {"query": "f"})
        assert result["assertions"][0]["metadata"] == {"source": "runbook"}
        assert result["conflicts"] == []
        assert call("meta/memory/stores", None)["stores"][0] == {"store": "knowledge_graph", "record_count": 1}
        json.dumps(result)
