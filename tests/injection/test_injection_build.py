"""Build-time assembly: protocol, per-scope index, bodies; scope budgets; recorder protocol."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meta_memory.clock import ManualClock
from meta_memory.errors import AgentMemoryError
from meta_memory.injection import (
    BUILD_MEMORY_PROTOCOL,
    RECORDER_PROTOCOL_INSTRUCTIONS,
    IndexRow,
    ScopeRef,
    build_query_text,
    build_scope_set,
)
from meta_memory.injection.index import render_index, scope_budgets

from .support import BLOCK_OPEN, ENTRY_OPEN, FakeStore, coordinator, nonce_of, record

NOW = 1_700_000_000_000
ID = "identity:luka"


def rows(prefix: str, n: int, title_bytes: int = 20, age_days: int | None = 2) -> list[IndexRow]:
    return [
        IndexRow(f"{prefix}-{i}", "fact", f"{prefix} title {i} " + "t" * title_bytes, f"hook {i}", age_days)
        for i in range(n)
    ]


def test_build_assembly_composes_protocol_index_and_bodies() -> None:
    store = FakeStore(
        records=[record(1), record(2)],
        manifests={"identity": rows("idr", 3), "realm": [IndexRow("rr-1", "gotcha", "Realm <rule>", "", None)]},
    )
    clock = ManualClock(NOW)
    coord = coordinator(store, clock=clock, manifests=True)
    scopes = build_scope_set("default", ID, mobs=["crew"])
    result = coord.assemble_build(ID, "default", "identity identity:luka profile lead", None, scopes)
    text = result.text
    assert result.surface == "build" and result.included_ids == ("mem-1", "mem-2")
    assert text.startswith(f"Agent memory for identity `{ID}` in realm `default` [mem-token: ")
    i_protocol = text.index("\n\n" + BUILD_MEMORY_PROTOCOL)
    i_index = text.index("\n\nMemory index (metadata only; bodies are not loaded):\nIdentity records:")
    i_bodies = text.index("\n" + BLOCK_OPEN)
    assert i_protocol < i_index < i_bodies
    index = text[i_index:i_bodies]
    assert '\n<meta_memory_observation id="idr-0" kind="fact" age="saved 2 days ago" title="idr title 0 ' in index
    assert 'description="hook 0"/>' in index
    assert '\n\nRealm records:\n<meta_memory_observation id="rr-1" kind="gotcha" title="Realm &lt;rule&gt;"/>' in text
    # every line of the index past its title and section labels is one quoted entry
    lines = [ln for ln in index.split("\n")[3:] if ln and not ln.endswith(" records:")]
    assert lines and all(ln.startswith(ENTRY_OPEN) and ln.endswith('"/>') for ln in lines)
    assert "Mob records:" not in text  # empty section omitted
    assert [s for s, _ in store.manifest_requests] == list(scopes)
    assert {k for _, k in store.manifest_requests} == {24}
    req = store.requests[0]
    assert req.scopes == scopes and req.query_terms == ("identity", "identity:luka", "profile", "lead")
    assert [(row.surface, row.session_key, row.at_ms) for _, row in store.ledger] == [("build", None, NOW)] * 2
    assert store.usage == [("default", ["mem-1", "mem-2"], "injected")]


def test_build_without_manifests_is_header_and_bodies() -> None:
    store = FakeStore(records=[record(1)])
    text = coordinator(store).assemble_build(ID, query_text="identity identity:luka").text
    assert text.startswith("Agent memory for identity `identity:luka`")
    assert "Memory index" not in text and BUILD_MEMORY_PROTOCOL not in text
    assert store.requests[0].scopes == (ScopeRef("identity", "default", ID), ScopeRef("realm", "default"))


def test_build_index_alone_still_renders_and_bodies_are_budgeted() -> None:
    store = FakeStore(manifests={"identity": rows("a", 2)})
    result = coordinator(store, manifests=True).assemble_build(ID, query_text="x")
    assert result.included_ids == () and "Identity records:" in result.text
    big = FakeStore(records=[record(i, 2048) for i in range(20)], manifests={"identity": rows("a", 24, 150)})
    out = coordinator(big, manifests=True, max_entries=20).assemble_build(ID, query_text="x")
    assert 0 < len(out.included_ids) < 20
    index_part = out.text[: out.text.index("\n" + BLOCK_OPEN)]
    blocks_part = out.text[len(index_part) :]
    assert len(blocks_part.encode()) <= 20480


def test_build_skip_reasons_and_nonce_scope() -> None:
    assert coordinator(FakeStore(), manifests=True).assemble_build(ID).skip_reason == "no_records"
    failing = FakeStore(error=RuntimeError("down"))
    assert coordinator(failing).assemble_build(ID).skip_reason == "recall_failed"
    store = FakeStore(records=[record(1)])
    coord = coordinator(store)
    turn = nonce_of(coord.inject_for_turn(ID, None, "s1", "q").text)
    build = nonce_of(coord.assemble_build(ID).text)
    assert build != turn  # build mints for session key None
    coord.session_compacted(ID, "s1")
    assert nonce_of(coord.inject_for_turn(ID, None, "s1", "q").text) not in (turn, build)


def test_build_runs_recall_and_manifests_concurrently_under_one_deadline() -> None:
    store = FakeStore(
        records=[record(1)], manifests={"identity": rows("a", 1)}, sleep_s=0.15, manifest_sleep_s=0.15
    )
    coord = coordinator(store, manifests=True, recall_timeout_ms=2000)
    scopes = build_scope_set("default", ID, mobs=["m1", "m2"], operator="op", operator_scope="provisional")
    t0 = time.monotonic()
    result = coord.assemble_build(ID, scopes=scopes)
    assert time.monotonic() - t0 < 0.6  # 6 calls of 0.15 s would take 0.9 s in sequence
    assert result.included_ids == ("mem-1",) and "Identity records:" in result.text


def test_manifest_timeout_skip_and_fail() -> None:
    store = FakeStore(records=[record(1)], manifests={"identity": rows("a", 1)}, manifest_sleep_s=1.0)
    t0 = time.monotonic()
    result = coordinator(store, manifests=True, recall_timeout_ms=50).assemble_build(ID)
    assert time.monotonic() - t0 < 0.5
    assert result.included_ids == ("mem-1",) and "Memory index" not in result.text
    with pytest.raises(AgentMemoryError) as err:
        coordinator(store, manifests=True, recall_timeout_ms=50, recall_failure_policy="fail").assemble_build(ID)
    assert str(err.value) == "agent memory timeout: manifest fetch exceeded 50 ms"


def test_recall_timeout_under_fail_policy_in_build() -> None:
    store = FakeStore(records=[record(1)], sleep_s=1.0)
    with pytest.raises(AgentMemoryError, match="automatic recall exceeded 40 ms"):
        coordinator(store, recall_timeout_ms=40, recall_failure_policy="fail").assemble_build(ID)


def test_scope_budgets_weighted_order_preserving_and_exact() -> None:
    assert scope_budgets(["identity", "mob", "realm"]) == [4681, 2341, 1170]
    assert scope_budgets(["identity", "realm"]) == [6554, 1638]
    assert scope_budgets(["identity", "mob", "mob", "operator", "realm"]) == [3277, 1639, 1638, 819, 819]
    assert scope_budgets([]) == []


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(["identity", "mob", "operator", "realm"]), min_size=1, max_size=12),
    st.integers(min_value=0, max_value=100_000),
)
def test_scope_budgets_always_sum_exactly(kinds: list[str], total: int) -> None:
    shares = scope_budgets(kinds, total)
    assert sum(shares) == total and len(shares) == len(kinds)
    weight = {"identity": 4, "mob": 2, "operator": 1, "realm": 1}
    for i, a in enumerate(kinds):
        for j, b in enumerate(kinds):
            if weight[a] > weight[b]:
                assert shares[i] >= shares[j]
            if weight[a] == weight[b] and i < j:
                assert 0 <= shares[i] - shares[j] <= 1  # ties go to the earlier scope


def test_index_sections_respect_their_share() -> None:
    scopes = build_scope_set("r", "i", mobs=["m"])
    many = {i: rows(s.kind, 24, 150) for i, s in enumerate(scopes)}
    index = render_index(scopes, many)
    sections = index.split("\n", 1)[1].split("\n\n")
    shares = scope_budgets([s.kind for s in scopes])
    assert [s.split(":", 1)[0] for s in sections] == ["Identity records", "Mob records", "Realm records"]
    for section, share in zip(sections, shares, strict=True):
        size = len(section.encode())
        assert size <= share
        assert size > share - 260  # the next row (about 250 bytes) would not have fitted
    assert render_index(scopes, {}) is None


def test_build_scope_set_composition() -> None:
    scopes = build_scope_set("r", "i", mobs=[" m1 ", "", "m1", "m2"], operator="op")
    assert [(s.kind, s.key) for s in scopes] == [("identity", "i"), ("mob", "m1"), ("mob", "m2"), ("realm", "")]
    with_op = build_scope_set("r", "i", operator=" op ", operator_scope="provisional")
    assert [(s.kind, s.key) for s in with_op] == [("identity", "i"), ("operator", "op"), ("realm", "")]
    assert len(build_scope_set("r", "i", operator="  ", operator_scope="provisional")) == 2


def test_build_query_text() -> None:
    text = build_query_text(
        "identity:a", "lead", active_peers=["p1"], managed_edges=[("x", "y")], labels={"team": "core  infra"}
    )
    assert text == "identity identity:a profile lead active peer p1 managed edge x y label team core infra"


def test_recorder_protocol_covers_the_rules() -> None:
    text = RECORDER_PROTOCOL_INSTRUCTIONS
    assert text.startswith("Memory recorder protocol:")
    for needle in (
        "`memory` tool",
        "resets and respawns",
        '"update"',
        "memory index",
        "one fact per record",
        "`description`",
        "operator_said",
        '"observed"',
        "verified_claim",
        "verification_evidence",
        "absolute dates",
        "open_loop",
        "resolved when",
        "repository, configuration",
        "propose_to_mob",
    ):
        assert needle.lower() in text.lower(), needle
