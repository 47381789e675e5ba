"""Usage marks are off the read path: a recall queues the marks of the records it
returned and answers; one background writer lands the queue in one transaction per realm, any other
read of the realm lands it first, closing the store lands it, and a full queue is written by the caller
(back-pressure) — no mark is lost and the usage counts are exact once written."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from meta_memory.agent_memory.store.telemetry import PendingTelemetry
from meta_memory.sdk import Meta
from support import open_ro, realm_db

ME = "lead:reader"


def _file_counts(state: Path) -> dict[str, int]:
    """explicit_recall_count per record, read from the realm's file (what is committed)."""
    with open_ro(realm_db(state, "default")) as conn:
        return {mid: json.loads(stats or "{}").get("explicit_recall_count", 0)
                for mid, stats in conn.execute("SELECT memory_id, usage_stats FROM records")}


def _seed(h: Any) -> str:
    return str(h.call("meta/agent_memory/remember", {"identity": ME, "title": "Harbour",
                                                     "body": "the harbour ferry leaves at noon"})["memory_id"])


def _recall(h: Any) -> list[str]:
    out = h.call("meta/agent_memory/recall", {"identity": ME, "query_text": "harbour ferry"})
    return [r["memory_id"] for r in out["records"]]


def _hold_back(h: Any) -> Any:
    store = h.runtime.agent_memory.store
    store._pending.delay_s = 60.0  # the background writer waits: only reads, back-pressure and close write
    return store


def test_a_recall_writes_nothing_and_the_next_read_lands_every_mark(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with Meta.builder().persistent_state(state).build() as h:
        memory_id = _seed(h)
        store = _hold_back(h)
        for _ in range(3):
            assert _recall(h) == [memory_id]
        assert _file_counts(state)[memory_id] == 0  # three recalls, no write: not even the previous one's marks
        record = store.get("default", memory_id)  # a read outside a recall lands the queue first
        assert record.usage.explicit_recall_count == 3
        assert _file_counts(state)[memory_id] == 3
        assert store.telemetry_stats() == {"dropped": 0}


def test_the_background_writer_lands_marks_without_any_read(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with Meta.builder().persistent_state(state).build() as h:
        memory_id = _seed(h)
        for _ in range(5):
            _recall(h)
        deadline = time.monotonic() + 10
        while _file_counts(state)[memory_id] < 5 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _file_counts(state)[memory_id] == 5


def test_a_full_queue_is_written_by_the_caller_and_nothing_is_dropped(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with Meta.builder().persistent_state(state).build() as h:
        memory_id = _seed(h)
        store = _hold_back(h)
        store._pending.max_pending = 3
        for _ in range(10):
            _recall(h)
        assert _file_counts(state)[memory_id] >= 8  # the queue never held more than 4 marks
        assert store.get("default", memory_id).usage.explicit_recall_count == 10
        assert store.telemetry_stats() == {"dropped": 0}


def test_closing_the_store_lands_the_queue(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with Meta.builder().persistent_state(state).build() as h:
        memory_id = _seed(h)
        _hold_back(h)
        _recall(h)
        _recall(h)
    assert _file_counts(state)[memory_id] == 2


def test_injection_ledger_rows_are_queued_and_seen_by_the_next_read(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with Meta.builder().persistent_state(state).build() as h:
        memory_id = _seed(h)
        store = _hold_back(h)
        out = h.call("meta/turn/inject", {"identity": ME, "session_key": "s1", "query_text": "harbour ferry"})
        assert out["included_ids"] == [memory_id]
        with open_ro(realm_db(state, "default")) as conn:
            assert conn.execute("SELECT COUNT(*) FROM injections").fetchone()[0] == 0  # queued, not written
        with store.snapshot("default"):  # the panel's reads are snapshots: they land the queue first
            pass
        with open_ro(realm_db(state, "default")) as conn:
            assert conn.execute("SELECT COUNT(*) FROM injections").fetchone()[0] == 1
        assert store.get("default", memory_id).usage.injected_count == 1


def test_pending_queue_hands_a_realm_s_batch_out_once_and_reports_it_in_flight() -> None:
    flushed: list[str] = []
    pending: PendingTelemetry[int] = PendingTelemetry(flushed.append, max_pending=2, delay_s=60.0)
    try:
        assert not pending.add("a", 1) and not pending.add("b", 2)
        assert pending.add("a", 3)  # over the bound: the caller must flush
        assert pending.unsettled("a") and pending.realms() == ["a", "b"]
        assert pending.take("a") == [1, 3]
        assert pending.in_flight("a") and pending.unsettled("a") and pending.take("a") == []
        pending.done("a")
        assert pending.in_flight("a")  # two batches were handed out
        pending.done("a")
        assert not pending.unsettled("a") and pending.unsettled("b")
        pending.flush_all()
        assert flushed == ["b"]
    finally:
        pending._flush = lambda realm: None
        pending.stop()
    assert not pending.died


def test_flush_all_returns_only_after_the_batch_the_background_writer_holds_has_landed() -> None:
    """``meta/status`` reads usage through ``flush_all``: a batch the writer has taken but not yet committed
    must land before it returns, or the caller reads the file without the marks it queued."""
    taken, release = threading.Event(), threading.Event()
    landed: list[int] = []
    pending: PendingTelemetry[int] = PendingTelemetry(lambda realm: None, delay_s=0.0)

    def slow_flush(realm: str) -> None:
        ops = pending.take(realm)
        try:
            if ops:
                taken.set()
                release.wait(10)
                landed.extend(ops)
        finally:
            pending.done(realm)

    pending._flush = slow_flush
    try:
        pending.add("a", 1)
        assert taken.wait(10)  # the background writer holds the batch, nothing is queued
        assert pending.realms() == [] and pending.in_flight("a")
        returned = threading.Event()
        caller = threading.Thread(target=lambda: (pending.flush_all(), returned.set()))
        caller.start()
        assert not returned.wait(0.3)  # still waiting for the batch in flight
        release.set()
        assert returned.wait(10) and landed == [1]
        caller.join(10)
    finally:
        release.set()
        pending.stop()


def test_flush_all_waits_for_the_batches_in_flight_when_called_not_for_later_ones() -> None:
    """On PostgreSQL batches of a realm are written without a realm lock, so one may be in flight at every
    moment under load: waiting for "none in flight" could last the whole bound. flush_all waits only for as many
    batches as had been handed out when it was called."""
    pending: PendingTelemetry[int] = PendingTelemetry(lambda realm: None, delay_s=60.0)
    try:
        pending.add("a", 1)
        assert pending.take("a") == [1]  # a writer holds the first batch
        returned = threading.Event()
        caller = threading.Thread(target=lambda: (pending.flush_all(), returned.set()))
        caller.start()
        assert not returned.wait(0.2)
        pending.add("a", 2)
        assert pending.take("a") == [2]  # a later batch, taken after the call: not waited for
        started = time.monotonic()
        pending.done("a")  # the first one lands
        assert returned.wait(5) and time.monotonic() - started < 2
        assert pending.in_flight("a")
        pending.done("a")
        caller.join(5)
    finally:
        pending.stop()


def test_back_pressure_does_not_wait_for_batches_in_flight() -> None:
    flushed: list[str] = []
    pending: PendingTelemetry[int] = PendingTelemetry(flushed.append, max_pending=1, delay_s=60.0)
    try:
        pending.add("a", 1)
        pending.take("a")  # in flight, never done here
        started = time.monotonic()
        pending.flush_all(landed=False)
        assert time.monotonic() - started < 1
    finally:
        pending.done("a")
        pending._flush = lambda realm: None
        pending.stop()


def test_a_metrics_scrape_never_waits_on_a_realm_s_telemetry_writer(tmp_path: Path) -> None:
    """``/metrics`` reads the dropped-telemetry count as it stands (a scrape must not wait on a realm's writer,
    up to the land bound); ``meta/status`` still writes the queue first."""
    with Meta.builder().persistent_state(tmp_path / "state").build() as h:
        store = h.runtime.agent_memory.store
        flushes: list[bool] = []
        store._pending.flush_all = lambda *, landed=True: flushes.append(landed)  # type: ignore[method-assign]
        assert "meta_memory_telemetry_rows_dropped_total 0.0" in h.runtime.observability.metrics.render().decode()
        assert flushes == []
        h.call("meta/status", {})
        assert flushes == [True]


def test_a_store_that_overrides_telemetry_stats_alone_is_still_scraped(tmp_path: Path) -> None:
    """A store written against ``telemetry_stats()`` (no keyword) does not break ``/metrics``: the scrape reads
    ``telemetry_snapshot()``, which a store need not override (by default it answers ``telemetry_stats()``)."""
    from meta_memory.agent_memory.store.base import AgentMemoryStore
    from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore

    class OwnCount(SqliteAgentMemoryStore):
        def telemetry_stats(self) -> dict[str, int]:
            return {"dropped": 7}

    with Meta.builder().persistent_state(tmp_path / "state").build() as h:
        store = h.runtime.agent_memory.store
        store.__class__ = OwnCount
        assert "meta_memory_telemetry_rows_dropped_total 0.0" in h.runtime.observability.metrics.render().decode()
        assert h.call("meta/status", {})["agent_memory"]["telemetry"] == {"dropped": 7}
        assert AgentMemoryStore.telemetry_snapshot(store) == {"dropped": 7}, "the default answers telemetry_stats"
