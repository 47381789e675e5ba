"""Per-turn injection through the coordinator: budgets, dedup, nonces, skip reasons, ledger, time bounds."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from meta_memory.clock import ManualClock
from meta_memory.errors import AgentMemoryError, CapacityExceeded, RecordNotFound
from meta_memory.injection import InjectableRecord, InjectionCoordinator, InjectionOptions, TimeBox

from .support import BLOCK_OPEN, FakeStore, coordinator, nonce_of, record

ID = "lead:main"


def blocks(text: str | None) -> int:
    return 0 if text is None else text.count(BLOCK_OPEN)


def test_block_is_delivered_with_metadata() -> None:
    store = FakeStore(records=[record(1), record(2)])
    result = coordinator(store).inject_for_turn(ID, "default", "s1", "  where   is the passport ")
    assert result.skip_reason is None and result.surface == "turn"
    assert result.included_ids == ("mem-1", "mem-2")
    assert result.rendered_bytes == len(result.text.encode())
    assert result.text.startswith(f"Agent memory for identity `{ID}` in realm `default` [mem-token: ")
    req = store.requests[0]
    assert (req.identity, req.realm, req.query_text) == (ID, "default", "where is the passport")
    assert req.query_terms == ("where", "the", "passport")
    assert (req.selection, req.max_entries, req.scopes) == ("contextual", 8, None)
    assert result.to_dict()["included_ids"] == ["mem-1", "mem-2"]


def test_roster_generation_maps_to_logical_identity_and_realm_defaults() -> None:
    store = FakeStore(records=[record(1)])
    coord = coordinator(store, realm="team")
    result = coord.inject_for_turn("rt:identity:parent-1:3", None, None, "hello")
    assert "for identity `identity:parent-1` in realm `team`" in result.text
    assert store.requests[0].identity == "identity:parent-1" and store.requests[0].realm == "team"


def test_large_records_are_truncated() -> None:
    store = FakeStore(records=[InjectableRecord("m", "t", "y" * 10_000)])
    assert "[truncated]" in coordinator(store).inject_for_turn(ID, query_text="q").text


def test_assembly_budget_with_twelve_2kb_records() -> None:
    store = FakeStore(records=[record(i, 2048) for i in range(12)])
    result = coordinator(store, max_entries=12).inject_for_turn(ID, query_text="anything")
    assert 0 < blocks(result.text) < 12
    assert len(result.text.encode()) <= 20480 + 64
    assert blocks(result.text) == len(result.included_ids)


def test_session_budget_is_exhausted_within_eight_turns_but_not_before_the_third() -> None:
    store = FakeStore(records=[record(i, 2048) for i in range(64)])
    coord = coordinator(store, max_entries=64)
    outcomes = [coord.inject_for_turn(ID, None, "s1", f"turn {t}") for t in range(8)]
    assert all(o.text for o in outcomes[:3])
    empty = [i for i, o in enumerate(outcomes) if o.text is None]
    assert empty and empty[0] >= 3
    assert all(o.text is None for o in outcomes[empty[0]:])  # once spent, the session stays spent
    assert {o.skip_reason for o in outcomes[empty[0]:]} <= {"budget_exhausted", "nothing_renderable"}
    assert sum(o.rendered_bytes for o in outcomes) <= 61440
    assert coord.sessions.used_bytes("default", ID, "s1") == sum(o.rendered_bytes for o in outcomes)
    # another session still has its full budget
    assert blocks(coord.inject_for_turn(ID, None, "s2", "turn").text) > 0


def test_dedup_within_a_session_not_across_sessions() -> None:
    store = FakeStore(records=[record(1), record(2)])
    coord = coordinator(store)
    first = coord.inject_for_turn(ID, None, "s1", "q")
    assert first.included_ids == ("mem-1", "mem-2")
    store.records.append(record(3))
    second = coord.inject_for_turn(ID, None, "s1", "q")
    assert second.included_ids == ("mem-3",)
    assert 'index="1"' in second.text
    third = coord.inject_for_turn(ID, None, "s1", "q")
    assert third.skip_reason == "nothing_renderable" and third.text is None
    other = coord.inject_for_turn(ID, None, "s2", "q")
    assert other.included_ids == ("mem-1", "mem-2", "mem-3")
    # without a session key nothing is deduplicated or counted
    assert coord.inject_for_turn(ID, None, None, "q").included_ids == ("mem-1", "mem-2", "mem-3")
    assert coord.inject_for_turn(ID, None, None, "q").included_ids == ("mem-1", "mem-2", "mem-3")


def test_ledger_rows_and_usage_marks_and_dedup_does_not_relog() -> None:
    clock = ManualClock(1_800_000_000_000)
    store = FakeStore(records=[record(1), record(2)])
    coord = coordinator(store, clock=clock)
    coord.inject_for_turn(ID, "r1", "s1", "q")
    assert [(realm, row.to_dict()) for realm, row in store.ledger] == [
        ("r1", {"record_id": rid, "identity": ID, "session_key": "s1", "surface": "turn", "at_ms": 1_800_000_000_000})
        for rid in ("mem-1", "mem-2")
    ]
    assert store.usage == [("r1", ["mem-1", "mem-2"], "injected")]
    coord.inject_for_turn(ID, "r1", "s1", "q")
    assert len(store.ledger) == 2 and len(store.usage) == 1


def test_ledger_and_usage_failures_do_not_fail_the_turn() -> None:
    def boom(*_a: object) -> None:
        raise RuntimeError("disk full")

    store = FakeStore(records=[record(1)])
    coord = InjectionCoordinator(recall_fn=store.recall, log_injections_fn=boom, mark_usage_fn=boom)
    assert coord.inject_for_turn(ID, None, "s", "q").included_ids == ("mem-1",)


def test_nonce_present_and_rotates_across_session_keys() -> None:
    store = FakeStore(records=[record(1)])
    coord = coordinator(store)
    a = nonce_of(coord.inject_for_turn(ID, None, "s1", "q").text)
    assert len(a) == 32
    coord.session_compacted(ID, "s1")
    assert nonce_of(coord.inject_for_turn(ID, None, "s1", "q").text) == a
    b = nonce_of(coord.inject_for_turn(ID, None, "s2", "q").text)
    assert b != a and len(b) == 32
    coord.session_reset(ID, "s2")
    assert nonce_of(coord.inject_for_turn(ID, None, "s2", "q").text) not in (a, b)


def test_nonce_stays_out_of_ledger_usage_results_errors_and_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="meta_memory")
    store = FakeStore(records=[record(1)])
    coord = coordinator(store)
    result = coord.inject_for_turn(ID, None, "s1", "q")
    nonce = nonce_of(result.text)
    assert nonce not in repr(result) and nonce not in str(result.included_ids)
    assert nonce not in repr(store.ledger) and nonce not in repr(store.usage)
    assert nonce not in repr(coord) and nonce not in repr(coord.sessions)
    # same session, so the same nonce would be used; make the provider fail under policy "fail"
    store.error = RuntimeError("provider down")
    with pytest.raises(AgentMemoryError) as err:
        coord.clone(recall_failure_policy="fail").inject_for_turn(ID, None, "s1", "q")
    assert nonce not in str(err.value) and nonce not in repr(err.value.to_jsonrpc())
    assert nonce not in caplog.text and "body 1" not in caplog.text


def test_every_skip_reason() -> None:
    store = FakeStore(records=[record(1)])
    assert coordinator(store, per_turn_injection="off").inject_for_turn(ID, query_text="q").skip_reason == (
        "per_turn_injection_off"
    )
    assert coordinator(store).inject_for_turn(ID, query_text=" \n\t ").skip_reason == "contextual_with_empty_query"
    assert coordinator(store).inject_for_turn(ID, query_text=None).skip_reason == "contextual_with_empty_query"
    assert coordinator(FakeStore()).inject_for_turn(ID, query_text="q").skip_reason == "no_records"
    store = FakeStore(records=[record(1, 2048)])
    coord = coordinator(store)
    coord.sessions.commit("default", ID, "full", [], 61440 - 511)
    assert coord.inject_for_turn(ID, None, "full", "q").skip_reason == "budget_exhausted"
    coord.sessions.commit("default", ID, "almost", [], 61440 - 512)
    assert coord.inject_for_turn(ID, None, "almost", "q").skip_reason == "nothing_renderable"  # no block fits
    coord.inject_for_turn(ID, None, "s", "q")
    assert coord.inject_for_turn(ID, None, "s", "q").skip_reason == "nothing_renderable"
    store.error = RuntimeError("down")
    assert coord.inject_for_turn(ID, None, "t", "q").skip_reason == "recall_failed"
    skipped = coord.inject_for_turn(ID, None, "t", "q")
    assert skipped.to_dict() == {
        "text": None,
        "skip_reason": "recall_failed",
        "included_ids": [],
        "rendered_bytes": 0,
        "surface": "turn",
    }


def test_always_selection_recalls_with_empty_query() -> None:
    store = FakeStore(records=[record(1)])
    result = coordinator(store, selection="always").inject_for_turn(ID, query_text="")
    assert result.included_ids == ("mem-1",)
    assert store.requests[0].query_text is None and store.requests[0].query_terms == ()


def test_per_turn_off_never_calls_the_provider() -> None:
    store = FakeStore(records=[record(1)])
    coordinator(store, per_turn_injection="off").inject_for_turn(ID, query_text="q")
    assert store.requests == []


def test_compaction_resets_budget_and_dedup_and_allows_reinjection() -> None:
    store = FakeStore(records=[record(1)])
    coord = coordinator(store)
    first = coord.inject_for_turn(ID, None, "s1", "q")
    assert coord.inject_for_turn(ID, None, "s1", "q").skip_reason == "nothing_renderable"
    coord.sessions.commit("default", ID, "s1", [], 61440)
    assert coord.inject_for_turn(ID, None, "s1", "q").skip_reason == "budget_exhausted"
    coord.session_compacted(ID, "s1")
    again = coord.inject_for_turn(ID, None, "s1", "q")
    assert again.included_ids == first.included_ids
    assert coord.sessions.used_bytes("default", ID, "s1") == again.rendered_bytes


def test_session_dedup_is_shared_across_clones() -> None:
    store = FakeStore(records=[record(1)])
    coord = coordinator(store)
    coord.inject_for_turn(ID, None, "s1", "q")
    twin = coord.clone(max_entries=4)
    assert twin.options.max_entries == 4 and coord.options.max_entries == 8
    assert twin.inject_for_turn(ID, None, "s1", "q").skip_reason == "nothing_renderable"


def test_labels_render_with_defanging_and_never_without() -> None:
    rec = InjectableRecord("m", "t", "b", 0, scope_kind="realm", trust="steward_verified", has_provenance=True)
    store = FakeStore(records=[rec])
    on = coordinator(store).inject_for_turn(ID, query_text="q").text
    assert 'scope="realm" trust="steward_verified"' in on
    off = coordinator(store, defang_inbound=False).inject_for_turn(ID, query_text="q").text
    assert "scope=" not in off and "trust=" not in off
    plain = coordinator(FakeStore(records=[record(1)])).inject_for_turn(ID, query_text="q").text
    assert "scope=" not in plain


def test_custom_header_is_used() -> None:
    store = FakeStore(records=[record(1)])
    text = coordinator(store, instruction_header="Recalled\nnotes").inject_for_turn(ID, query_text="q").text
    assert text.startswith("Recalled notes for identity `lead:main`")


# -- time bounds and failure policy -------------------------------------------------


def test_sleeping_provider_times_out_and_turn_is_delivered_quickly() -> None:
    store = FakeStore(records=[record(1)], sleep_s=1.0)
    coord = coordinator(store, recall_timeout_ms=50)
    t0 = time.monotonic()
    result = coord.inject_for_turn(ID, None, "s1", "q")
    assert time.monotonic() - t0 < 0.5
    assert result.skip_reason == "recall_failed" and result.text is None
    assert store.ledger == [] and coord.sessions.used_bytes("default", ID, "s1") == 0


def test_sleeping_provider_under_fail_policy_raises_timeout() -> None:
    store = FakeStore(records=[record(1)], sleep_s=1.0)
    coord = coordinator(store, recall_timeout_ms=50, recall_failure_policy="fail")
    t0 = time.monotonic()
    with pytest.raises(AgentMemoryError) as err:
        coord.inject_for_turn(ID, None, "s1", "q")
    assert time.monotonic() - t0 < 0.5
    assert err.value.reason == "timeout"
    assert str(err.value) == "agent memory timeout: automatic recall exceeded 50 ms"
    assert err.value.to_jsonrpc()["code"] == -32040


def test_fast_provider_within_budget_is_used() -> None:
    store = FakeStore(records=[record(1)], sleep_s=0.02)
    assert coordinator(store, recall_timeout_ms=1000).inject_for_turn(ID, query_text="q").included_ids == ("mem-1",)


def test_raising_provider_skip_and_fail() -> None:
    store = FakeStore(records=[record(1)], error=RuntimeError("sqlite is locked"))
    assert coordinator(store).inject_for_turn(ID, query_text="q").skip_reason == "recall_failed"
    with pytest.raises(AgentMemoryError) as err:
        coordinator(store, recall_failure_policy="fail").inject_for_turn(ID, query_text="q")
    assert err.value.reason == "io" and "sqlite is locked" in str(err.value)
    own = RecordNotFound("mem-x")
    store.error = own
    with pytest.raises(RecordNotFound) as err2:
        coordinator(store, recall_failure_policy="fail").inject_for_turn(ID, query_text="q")
    assert err2.value is own


def test_hung_providers_cannot_pile_up_threads() -> None:
    gate = threading.Event()

    def hung(_request: object) -> list[InjectableRecord]:
        gate.wait(10)
        return [record(1)]

    box = TimeBox(max_in_flight=2)
    coord = InjectionCoordinator(InjectionOptions(recall_timeout_ms=30), recall_fn=hung, timebox=box)
    try:
        t0 = time.monotonic()
        results = [coord.inject_for_turn(ID, None, None, "q") for _ in range(6)]
        assert time.monotonic() - t0 < 1.0
        assert {r.skip_reason for r in results} == {"recall_failed"}
        assert box.running == 2
        strict = coord.clone(recall_failure_policy="fail")
        with pytest.raises(CapacityExceeded) as err:  # no slot freed within the budget: capacity, not a timeout
            strict.inject_for_turn(ID, None, None, "q")
        assert isinstance(err.value, CapacityExceeded) and "still running" in str(err.value)
        assert err.value.resource == "recall_slots" and err.value.retry_after_ms == 30
    finally:
        gate.set()
    deadline = time.monotonic() + 2
    while box.running and time.monotonic() < deadline:
        time.sleep(0.01)
    assert box.running == 0
    assert coord.inject_for_turn(ID, None, None, "q").skip_reason is None


def test_default_query_terms_come_from_recall_normalisation() -> None:
    from meta_memory.recall.text import query_terms

    store = FakeStore(records=[record(1)])
    InjectionCoordinator(recall_fn=store.recall).inject_for_turn(ID, query_text="I need the PASSPORT for travel")
    terms = store.requests[0].query_terms
    assert terms == tuple(query_terms("I need the PASSPORT for travel"))
    assert "the" not in terms and any("passport" in t for t in terms)
