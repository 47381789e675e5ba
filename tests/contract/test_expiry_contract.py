"""Record expiry on both backends, through the public surfaces (the embedded SDK over the method table,
raw RPC params, the ``memory`` tool, export and import): ``ttl_s`` sets ``expires_at_ms``; an expired
record leaves every active read at once, before any sweep; the sweep tombstones it like a forget."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from meta_memory.clock import ManualClock
from meta_memory.errors import AgentMemoryError, InvalidParams
from meta_memory.sdk import Meta, MetaBuilder

from .pgsupport import dsn_with_schema, throwaway_schema

ID, OTHER = "lead:main", "lead:other"
T0 = 1_700_000_000_000


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
def builder(backend: str, tmp_path: Path, clock: ManualClock) -> Iterator[Callable[..., MetaBuilder]]:
    """An embedded runtime on the parametrised backend, on a manual clock (``state`` names the state
    directory, so a second runtime can be another installation; each gets its own schema)."""
    schemas: list[str] = []

    def make(state: str = "state", **options: Any) -> MetaBuilder:
        # the background sweep waits a day of the manual clock: each test runs its sweeps itself
        options = {"expiry_sweep_s": 86_400, **options}
        b = Meta.builder().persistent_state(tmp_path / state).clock(clock)
        if backend == "postgres":
            options = {"store": "postgres", "dsn": dsn_with_schema(schemas[["state", "other"].index(state)]),
                       **options}
        return b.agent_memory(**options)

    if backend == "sqlite":
        yield make
        return
    with throwaway_schema() as a, throwaway_schema() as b:
        schemas += [a, b]
        yield make


def _ids(records: Any) -> list[str]:
    return [r.memory_id if hasattr(r, "memory_id") else r["memory_id"] for r in records]


def test_an_expired_record_leaves_every_active_read_before_the_sweep(
        builder: Callable[..., MetaBuilder], clock: ManualClock) -> None:
    with builder().build() as h:
        me = h.agent(ID)
        brief = me.remember("Parking spot", "The car is parked on level 3, bay 12.", ttl_s=60)
        keep = me.remember("Parking rule", "Never park the car in bay 13.")
        assert brief.expires_at_ms == T0 + 60_000 and keep.expires_at_ms is None
        assert set(_ids(me.recall("parked car"))) == {brief.memory_id, keep.memory_id}

        clock.advance(59_999)  # still active one millisecond before
        assert brief.memory_id in _ids(me.recall("parked car"))
        clock.advance(1)  # expires_at_ms <= now: not active
        assert _ids(me.recall("parked car")) == [keep.memory_id]
        assert _ids(me.recall()) == [keep.memory_id]
        assert _ids(h.list_agent_memory(ID).records) == [keep.memory_id]
        assert [r.id for r in h.manifest_agent_memory(ID, tier="full")] == [keep.memory_id]
        listed = h.memory_panel_records(status="active", identity=ID)
        assert [r.id for r in listed.records] == [keep.memory_id]
        counts = h.memory_panel_overview().scopes[0].counts
        assert counts == {"active": 1, "expired": 1}
        # the metrics' store census counts it as expired too, never as active (first scrape: a fresh census)
        scrape = h.runtime.observability.metrics.render().decode()
        assert 'meta_memory_records{realm="default",status="active"} 1.0' in scrape
        assert 'meta_memory_records{realm="default",status="expired"} 1.0' in scrape
        # history says so too, before the sweep: never "active"
        assert [v.status for v in h.history_agent_memory(ID, brief.memory_id).versions] == ["expired"]
        # the record itself is still stored (a reviewer sees it) until the sweep
        assert h.runtime.agent_memory.store.get("default", brief.memory_id).status.kind.value == "active"

        assert h.runtime.expiry.sweep() == 1
        rec = h.runtime.agent_memory.store.get("default", brief.memory_id)
        assert rec.status.kind.value == "tombstoned" and rec.expires_at_ms == T0 + 60_000
        assert h.runtime.expiry.sweep() == 0  # nothing left
        events = [e for e in h.events_list(limit=1000).events if e.event_type == "memory.record.forgotten"]
        assert [e.data for e in events] == [{"realm": "default", "record_id": brief.memory_id, "reason": "expired"}]
        assert events[0].identity == ID
        history = h.history_agent_memory(ID, brief.memory_id)
        assert history.versions[-1].status == "tombstoned"
        assert h.memory_panel_overview().scopes[0].counts == {"active": 1, "tombstoned": 1}
        with h.runtime.agent_memory.store.snapshot("default") as tx:
            assert tx.panel.census()["records"] == {"active": 1, "tombstoned": 1}


def test_recall_answers_the_best_k_among_unexpired_records(
        builder: Callable[..., MetaBuilder], clock: ManualClock) -> None:
    with builder().build() as h:
        me = h.agent(ID)
        # the expired records match the query best: a top-k-then-drop recall would come back short
        me.remember_batch([{"title": f"Deploy deploy {i}", "body": f"deploy deploy deploy step {i}", "ttl_s": 5}
                           for i in range(6)])
        live = [me.remember(f"Note {i}", f"one deploy note number {i}").memory_id for i in range(3)]
        me.remember("Unrelated", "lunch is at noon")
        clock.advance(5_000)
        assert sorted(_ids(me.recall("deploy", k=3))) == sorted(live)
        assert sorted(_ids(me.recall("deploy", k=8))) == sorted(live)


def test_update_keeps_sets_or_clears_the_expiry_and_refuses_an_expired_record(
        builder: Callable[..., MetaBuilder], clock: ManualClock) -> None:
    with builder().build() as h:
        me = h.agent(ID)
        v1 = me.remember("Door code", "The door code is on the note by the lift.", ttl_s=100)
        kept = me.update(v1.memory_id, body="The door code is on the note by the stairs.").record
        assert kept.expires_at_ms == T0 + 100_000  # no ttl_s: the prior's expiry stays
        clock.advance(10_000)
        moved = me.update(kept.memory_id, ttl_s=1_000).record  # ttl_s alone is a change
        assert moved.expires_at_ms == T0 + 10_000 + 1_000_000 and moved.body == kept.body
        cleared = me.update(moved.memory_id, clear_expiry=True).record
        assert cleared.expires_at_ms is None
        again = me.update(cleared.memory_id, ttl_s=1).record
        clock.advance(1_000)
        with pytest.raises(AgentMemoryError, match="not active") as inactive:
            me.update(again.memory_id, body="revived")
        when = datetime.fromtimestamp(again.expires_at_ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S")
        assert f"expired at {when}." in str(inactive.value)  # a time a reader can read, not only epoch ms
        with pytest.raises(InvalidParams) as exc:
            h.call("meta/agent_memory/update", {"identity": ID, "memory_id": again.memory_id,
                                                "ttl_s": 5, "clear_expiry": True})
        assert "exclusive" in str(exc.value)


def test_an_expired_duplicate_does_not_absorb_a_new_write(
        builder: Callable[..., MetaBuilder], clock: ManualClock) -> None:
    with builder().build() as h:
        me = h.agent(ID)
        first = me.remember("Wifi", "The guest wifi password rotates weekly.", ttl_s=30)
        same = me.remember("Wifi", "The guest wifi password rotates weekly.", tags=["net"])
        assert not same.created and same.expires_at_ms == T0 + 30_000  # a merge keeps the record's expiry
        clock.advance(30_000)
        fresh = me.remember("Wifi", "The guest wifi password rotates weekly.")
        assert fresh.created and fresh.memory_id not in (first.memory_id, same.memory_id)
        assert fresh.expires_at_ms is None
        batch = me.remember_batch([("Wifi", "The guest wifi password rotates weekly.")])
        assert batch.results[0].memory_id == fresh.memory_id and batch.results[0].created is False


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "60", None, 10**30, [60], {"s": 1}])
def test_a_bad_ttl_is_refused_naming_the_field_and_nothing_is_written(
        builder: Callable[..., MetaBuilder], bad: Any) -> None:
    with builder().build() as h:
        if bad is None:  # null is "no expiry", not an error
            out = h.call("meta/agent_memory/remember", {"identity": ID, "title": "t", "body": "b", "ttl_s": None})
            assert out["expires_at_ms"] is None
            return
        with pytest.raises(InvalidParams) as exc:
            h.call("meta/agent_memory/remember", {"identity": ID, "title": "t", "body": "b", "ttl_s": bad})
        assert exc.value.field == "ttl_s"
        with pytest.raises(InvalidParams) as exc:
            h.call("meta/agent_memory/remember_batch", {"identity": ID, "records": [
                {"title": "ok", "body": "fine"}, {"title": "t", "body": "b", "ttl_s": bad}]})
        assert exc.value.field == "records.1.ttl_s"
        assert "records.1.ttl_s" in str(exc.value), exc.value  # the message names the item, as data.field does
        assert h.list_agent_memory(ID).records == []


def test_a_ttl_over_the_configured_cap_is_refused_naming_the_cap(builder: Callable[..., MetaBuilder]) -> None:
    with builder(max_ttl_s=3600, tool_max_ttl_s=60).build() as h:
        ok = h.call("meta/agent_memory/remember", {"identity": ID, "title": "t", "body": "b", "ttl_s": 3600})
        assert ok["expires_at_ms"] == T0 + 3_600_000
        with pytest.raises(InvalidParams) as exc:
            h.call("meta/agent_memory/remember", {"identity": ID, "title": "t2", "body": "b2", "ttl_s": 3601})
        assert exc.value.field == "ttl_s" and "3600" in str(exc.value) and "max_ttl_s" in str(exc.value)
        with pytest.raises(InvalidParams) as exc:
            h.call("meta/agent_memory/update", {"identity": ID, "memory_id": ok["memory_id"], "ttl_s": 3601})
        assert exc.value.field == "ttl_s"
        with pytest.raises(InvalidParams) as exc:
            h.call("meta/agent_memory/remember_batch", {"identity": ID, "records": [
                {"title": "a", "body": "a", "ttl_s": 10}, {"title": "b", "body": "b", "ttl_s": 4000}]})
        assert exc.value.field == "records.1.ttl_s" and "records.1.ttl_s" in str(exc.value), exc.value
        assert len(h.list_agent_memory(ID).records) == 1  # the refused batch wrote nothing

        # the model, steered by injected text, asks for a huge ttl: refused as a tool error, never clamped
        def tool(arguments: dict[str, Any]) -> dict[str, Any]:
            return h.call("meta/agent_memory/tool", {"identity": ID, "session_key": "s1", "arguments": arguments})

        for ttl in (61, 10**30, True, "60", 0):
            out = tool({"action": "remember", "title": "Forever", "body": "Keep this forever.", "ttl_s": ttl})
            assert out["is_error"] and "ttl_s" in out["text"], out
        out = tool({"action": "propose_to_mob", "title": "x", "body": "y", "ttl_s": 5})
        assert out["is_error"] and "ttl_s" in out["text"]
        out = tool({"action": "remember", "title": "Short", "body": "Short-lived note.", "ttl_s": 60})
        assert not out["is_error"], out
        stored = [r for r in h.list_agent_memory(ID).records if r.title == "Short"]
        assert stored and stored[0].expires_at_ms == T0 + 60_000
        out = tool({"action": "update", "memory_id": stored[0].memory_id, "title": "Short", "body": "Edited note."})
        assert not out["is_error"], out
        edited = [r for r in h.list_agent_memory(ID).records if r.title == "Short"]
        assert edited[0].body == "Edited note." and edited[0].expires_at_ms == T0 + 60_000  # kept


def test_the_sweep_tombstones_in_bounded_batches_and_leaves_other_realms_and_identities_alone(
        builder: Callable[..., MetaBuilder], clock: ManualClock) -> None:
    with builder().build() as h:
        me, other, far = h.agent(ID), h.agent(OTHER), h.agent(ID, realm="elsewhere")
        me.remember_batch([(f"Temp {i}", f"temporary note {i}") for i in range(2)])
        doomed = me.remember_batch([{"title": f"Gone {i}", "body": f"expiring note {i}", "ttl_s": 10}
                                    for i in range(5)])
        other_doomed = other.remember("Other", "other expiring note", ttl_s=10)
        far_doomed = far.remember("Far", "far expiring note", ttl_s=10)
        later = me.remember("Later", "expires later", ttl_s=1000)
        clock.advance(10_000)
        sweep = h.runtime.expiry
        sweep.batch = 2
        assert sweep.sweep() == 7
        store = h.runtime.agent_memory.store
        for mid in [r.memory_id for r in doomed.results] + [other_doomed.memory_id]:
            assert store.get("default", mid).status.kind.value == "tombstoned"
        assert store.get("elsewhere", far_doomed.memory_id).status.kind.value == "tombstoned"
        assert store.get("default", later.memory_id).status.kind.value == "active"
        assert len(me.recall()) == 3


def test_export_and_import_carry_expiry_and_never_revive_an_expired_record(
        builder: Callable[..., MetaBuilder], clock: ManualClock) -> None:
    from meta_memory.portability import export_jsonl, import_jsonl
    from meta_memory.portability.signing import ExportKey, LineSigner

    key = ExportKey.new("test")
    with builder().build() as h:
        me = h.agent(ID)
        soon = me.remember("Soon", "expires soon", ttl_s=10).memory_id
        late = me.remember("Late", "expires late", ttl_s=10_000).memory_id
        lapsed = me.remember("Lapsed", "expired before the export", ttl_s=1).memory_id
        clock.advance(1_000)
        buf = io.StringIO()
        export_jsonl(h.runtime, buf, signer=LineSigner(key), ledger=False)
    lines = buf.getvalue().splitlines()
    exported = {r["record"]["id"]: r for r in map(json.loads, lines) if r.get("type") == "record"}
    assert exported[lapsed]["record"]["status"] == {"status": "tombstoned"}  # never exported as active
    assert exported[lapsed]["tombstoned_at_ms"] == T0 + 1_000
    assert exported[soon]["record"]["expires_at_ms"] == T0 + 10_000

    clock.advance(9_000)  # "soon" expires between the export and the import
    with builder("other").build() as h2:
        import_jsonl(h2.runtime, lines, keys=[key])
        store = h2.runtime.agent_memory.store
        assert store.get("default", soon).status.kind.value == "tombstoned"
        assert store.get("default", lapsed).status.kind.value == "tombstoned"
        landed = store.get("default", late)
        assert landed.status.kind.value == "active" and landed.expires_at_ms == T0 + 10_000_000
        assert _ids(h2.agent(ID).recall()) == [late]


def test_import_refuses_a_live_record_expiring_past_the_targets_max_ttl(
        builder: Callable[..., MetaBuilder], clock: ManualClock) -> None:
    from meta_memory.portability import export_jsonl, import_jsonl
    from meta_memory.portability.signing import ExportKey, LineSigner

    key = ExportKey.new("test")
    with builder().build() as h:
        me = h.agent(ID)
        short = me.remember("Short", "lives an hour", ttl_s=3_600).memory_id
        long = me.remember("Long", "lives a day", ttl_s=86_400).memory_id
        gone = me.remember("Gone", "forgotten, lived a day", ttl_s=86_400).memory_id
        me.forget(gone)
        buf = io.StringIO()
        export_jsonl(h.runtime, buf, signer=LineSigner(key), ledger=False)
    lines = buf.getvalue().splitlines()
    number = {json.loads(line).get("record", {}).get("id"): n for n, line in enumerate(lines, 1)}
    with builder("other", max_ttl_s=3_600).build() as h2:
        summary = import_jsonl(h2.runtime, lines, keys=[key])
        assert [(note.line, note.memory_id) for note in summary.refused] == [(number[long], long)]
        assert "expires_at_ms is later than now + agent_memory.max_ttl_s (3600 s)" in summary.refused[0].why
        store = h2.runtime.agent_memory.store
        assert store.get("default", long) is None  # refused, never shortened
        assert store.get("default", short).expires_at_ms == T0 + 3_600_000
        assert store.get("default", gone).status.kind.value == "tombstoned"  # a tombstone's expiry is moot


def test_an_expired_record_is_not_injected(builder: Callable[..., MetaBuilder], clock: ManualClock) -> None:
    with builder().build() as h:
        agent = h.agent(ID)
        agent.remember("Oak", "The old oak by the gate is 300 years old.", ttl_s=60)
        agent.remember("Elm", "The elm by the gate was planted last spring.")
        session = agent.session("s1")
        session.note()
        assert "300 years" in (session.inject("the oak by the gate").text or "")
        clock.advance(60_000)
        block = agent.session("s2").inject("the oak by the gate")
        assert "300 years" not in (block.text or "") and "planted last spring" in (block.text or "")
        assert "300 years" not in (agent.session("s3").inject("", surface="build").text or "")


def test_a_quarantined_record_released_after_its_expiry_is_never_active(
        builder: Callable[..., MetaBuilder], clock: ManualClock) -> None:
    with builder().build() as h:
        session = h.agent(ID).session("s1")
        assert session.tool_result("web_fetch").session_tainted
        out = session.tool({"action": "remember", "title": "Gate", "body": "The gate code is on the board.",
                            "ttl_s": 60})
        assert "QUARANTINED" in out.text
        origin = out.text.split("memory ")[1].split(" ")[0]
        clock.advance(60_000)
        reviewed = h.memory_panel_record(origin).record.content_hash
        h.memory_quarantine_decide(ID, origin, verdict="release", expected_content_hash=reviewed)
        assert _ids(h.agent(ID).recall("gate code")) == []
        released = h.runtime.agent_memory.store.get("default", f"{origin}-released")
        assert released is not None and released.expires_at_ms == T0 + 60_000
        assert h.runtime.expiry.sweep() == 1


def test_the_background_sweep_runs_every_expiry_sweep_s(
        builder: Callable[..., MetaBuilder], clock: ManualClock) -> None:
    import time

    with builder(expiry_sweep_s=1).build() as h:
        rec = h.agent(ID).remember("Blink", "gone in a second", ttl_s=1)
        clock.advance(2_000)
        store = h.runtime.agent_memory.store
        deadline = time.monotonic() + 15
        while store.get("default", rec.memory_id).status.kind.value != "tombstoned":
            assert time.monotonic() < deadline, "the scheduled sweep did not run"
            time.sleep(0.05)
