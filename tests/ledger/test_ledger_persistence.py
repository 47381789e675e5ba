"""The ledger file: byte format, atomic replace, and the bootstrap load (reference §1.9)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meta_memory.errors import StartupError
from meta_memory.ledger import persistence
from meta_memory.ledger.model import MemoryAssertion, MemoryConflictSignal
from meta_memory.ledger.normalise import SUPPORTED_STORES

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=8,
)
assertions_st = st.builds(
    MemoryAssertion,
    assertion_id=st.text(max_size=20),
    entity=st.text(min_size=1, max_size=10),
    topic=st.text(min_size=1, max_size=10),
    store=st.sampled_from(SUPPORTED_STORES),
    fact=st.text(min_size=1, max_size=30),
    metadata=st.none() | st.dictionaries(st.text(max_size=5), json_values, max_size=3),
    indexed_at_ms=st.integers(0, 2**63),
)
conflicts_st = st.builds(
    MemoryConflictSignal,
    entity=st.text(min_size=1, max_size=10),
    topic=st.text(min_size=1, max_size=10),
    store=st.sampled_from(SUPPORTED_STORES),
    reason=st.none() | st.text(max_size=20),
    updated_at_ms=st.integers(0, 2**63),
)


@settings(max_examples=150)
@given(st.lists(assertions_st, max_size=5), st.lists(conflicts_st, max_size=4))
def test_assembled_fragments_equal_a_full_pretty_dump(
    assertions: list[MemoryAssertion], conflicts: list[MemoryConflictSignal]
) -> None:
    data = persistence.dump_state(assertions, conflicts)
    state = {
        "assertions": [a.model_dump(mode="json") for a in assertions],
        "conflicts": [c.model_dump(mode="json") for c in conflicts],
    }
    assert data == json.dumps(state, indent=2, ensure_ascii=False).encode("utf-8")
    assert json.loads(data) == state


def test_stage_path_replaces_the_extension() -> None:
    assert persistence.stage_path(Path("d/memory-ledger-state.json")) == Path("d/memory-ledger-state.tmp")


def test_write_atomic_creates_parents_and_leaves_no_stage(tmp_path: Path) -> None:
    target = tmp_path / "nested" / "memory-ledger-state.json"
    persistence.write_atomic(target, b'{"a": 1}')
    persistence.write_atomic(target, b"second")
    assert target.read_bytes() == b"second"
    assert sorted(p.name for p in target.parent.iterdir()) == ["memory-ledger-state.json"]


def test_failed_write_leaves_the_committed_file(tmp_path: Path) -> None:
    target = tmp_path / "memory-ledger-state.json"
    target.write_bytes(b"committed")
    (tmp_path / "memory-ledger-state.tmp").mkdir()  # the stage cannot be opened as a file
    with pytest.raises(OSError):
        persistence.write_atomic(target, b"new")
    assert target.read_bytes() == b"committed"


def row(**overrides: Any) -> dict[str, Any]:
    base = {
        "assertion_id": "memory-assert-000001",
        "entity": "identity:ops",
        "topic": "deployment",
        "store": "knowledge_graph",
        "fact": "Production deploys require approval.",
        "metadata": {"source": "runbook"},
        "indexed_at_ms": 1_700_000_000_000,
    }
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not ...}


def write_state(path: Path, assertions: list[Any], conflicts: list[Any] | None = None) -> None:
    state: dict[str, Any] = {"assertions": assertions}
    if conflicts is not None:
        state["conflicts"] = conflicts
    path.write_text(json.dumps(state))


def test_missing_file_is_an_empty_ledger(tmp_path: Path) -> None:
    assert persistence.load(tmp_path / "memory-ledger-state.json") == ([], [])


def test_hand_edited_rows_load_normalised(tmp_path: Path) -> None:
    path = tmp_path / "memory-ledger-state.json"
    write_state(
        path,
        [row(entity="  Identity:OPS ", topic=" DePloyment", store=" TODO ", fact="  Keep Case  ", metadata=...)],
        [{"entity": " A ", "topic": "B", "store": "Vector", "reason": "  ", "updated_at_ms": 5}],
    )
    assertions, conflicts = persistence.load(path)
    assert [(a.entity, a.topic, a.store, a.fact, a.metadata) for a in assertions] == [
        ("identity:ops", "deployment", "todo", "Keep Case", None)
    ]
    assert conflicts == [MemoryConflictSignal(entity="a", topic="b", store="vector", reason=None, updated_at_ms=5)]


@pytest.mark.parametrize(
    "bad",
    [
        {"store": "graph"},
        {"store": "  "},
        {"entity": "   "},
        {"topic": ""},
        {"fact": " \n "},
    ],
)
def test_rows_failing_normalisation_are_dropped_silently(tmp_path: Path, bad: dict[str, Any]) -> None:
    path = tmp_path / "memory-ledger-state.json"
    write_state(path, [row(assertion_id="memory-assert-000001", **bad), row(assertion_id="memory-assert-000002")])
    assertions, _ = persistence.load(path)
    assert [a.assertion_id for a in assertions] == ["memory-assert-000002"]


def test_conflicts_later_duplicates_win_and_sort_by_key(tmp_path: Path) -> None:
    path = tmp_path / "memory-ledger-state.json"
    write_state(
        path,
        [],
        [
            {"entity": "b", "topic": "t", "store": "todo", "reason": "first", "updated_at_ms": 1},
            {"entity": "a", "topic": "t", "store": "todo", "updated_at_ms": 2},
            {"entity": " B", "topic": "T", "store": "TODO", "reason": "second", "updated_at_ms": 3},
        ],
    )
    _, conflicts = persistence.load(path)
    assert [(c.entity, c.reason, c.updated_at_ms) for c in conflicts] == [("a", None, 2), ("b", "second", 3)]


def test_load_evicts_the_oldest_beyond_the_cap(tmp_path: Path) -> None:
    path = tmp_path / "memory-ledger-state.json"
    write_state(path, [row(assertion_id=f"memory-assert-{i:06d}") for i in range(persistence.MAX_RETAINED + 10)])
    assertions, _ = persistence.load(path)
    assert len(assertions) == persistence.MAX_RETAINED
    assert assertions[0].assertion_id == "memory-assert-000010"


@pytest.mark.parametrize(
    ("content", "detail"),
    [
        (b"{not json", "invalid JSON"),
        (b"[]", "top level"),
        (b'{"assertions": {}}', "'assertions' must be a list"),
        (b'{"assertions": [1]}', "assertions[0]: expected an object"),
        (b'{"assertions": [{"entity": "e"}]}', "missing required field 'assertion_id'"),
        (json.dumps({"assertions": [row(fact=...)]}).encode(), "assertions[0]: missing required field 'fact'"),
        (json.dumps({"assertions": [row(indexed_at_ms="soon")]}).encode(), "assertions[0].indexed_at_ms"),
        (json.dumps({"assertions": [row(indexed_at_ms=True)]}).encode(), "assertions[0].indexed_at_ms"),
        (json.dumps({"assertions": [row(indexed_at_ms=-1)]}).encode(), "assertions[0].indexed_at_ms"),
        (json.dumps({"assertions": [row(entity=3)]}).encode(), "assertions[0].entity: expected a string"),
        (b'{"assertions": [], "conflicts": [{"entity": "e", "topic": "t", "store": "todo"}]}', "updated_at_ms"),
        (b'{"conflicts": [{"entity": "e", "topic": "t", "store": "todo", "reason": 1, "updated_at_ms": 1}]}', "reason"),
        (b'{"assertions": [{"x": NaN}]}', "NaN"),
        (b"\xff\xfe", "not UTF-8"),
    ],
)
def test_malformed_file_refuses_boot_naming_the_path(tmp_path: Path, content: bytes, detail: str) -> None:
    path = tmp_path / "memory-ledger-state.json"
    path.write_bytes(content)
    with pytest.raises(StartupError) as info:
        persistence.load(path)
    assert str(path) in str(info.value)
    assert detail in str(info.value)


@pytest.mark.skipif(os.geteuid() == 0 if hasattr(os, "geteuid") else True, reason="root reads anything")
def test_unreadable_file_refuses_boot(tmp_path: Path) -> None:  # pragma: no cover - not run as root
    path = tmp_path / "memory-ledger-state.json"
    path.write_text("{}")
    path.chmod(0)
    with pytest.raises(StartupError, match="cannot be read"):
        persistence.load(path)


def test_a_directory_in_place_of_the_file_refuses_boot(tmp_path: Path) -> None:
    path = tmp_path / "memory-ledger-state.json"
    path.mkdir()
    with pytest.raises(StartupError, match="cannot be read"):
        persistence.load(path)


def test_file_stays_exact_after_a_failed_persist_and_evictions(tmp_path, monkeypatch) -> None:
    """The cached assertions section (appends, evictions, rollback) always writes a file equal to a full dump."""
    from meta_memory.clock import ManualClock
    from meta_memory.errors import MemoryBackendUnavailable
    from meta_memory.ledger import persistence
    from meta_memory.ledger.ledger import AssertionLedger
    from meta_memory.ledger.model import parse_index_params

    # a cap of 40 instead of 4,096: the same appends, evictions and rollback, without 4,099 rewrites of a
    # growing file (the 4,096 default is held through the gateway in tests/gateway and tests/integrity)
    monkeypatch.setattr(persistence, "MAX_RETAINED", 40)
    path = tmp_path / "memory-ledger-state.json"
    ledger = AssertionLedger(path, None, ManualClock())
    ledger.load()
    real_write = persistence.write_atomic
    for i in range(persistence.MAX_RETAINED + 3):
        if i == 7:
            def failing(*args, **kwargs):
                raise OSError(28, "No space left on device")

            monkeypatch.setattr(persistence, "write_atomic", failing)
            with pytest.raises(MemoryBackendUnavailable):
                ledger.index(parse_index_params({"entity": "e", "topic": "t", "fact": "lost"}))
            monkeypatch.setattr(persistence, "write_atomic", real_write)
        ledger.index(parse_index_params({"entity": "e", "topic": "t", "fact": f"f{i}", "conflict": i % 10 == 0}))
    q = ledger.query()
    assert len(q.assertions) == persistence.MAX_RETAINED and q.assertions[0].fact == "f3"
    assert path.read_bytes() == persistence.dump_state(q.assertions, q.conflicts)
