"""The durable event bus: events published together keep their order and survive a reopen."""

from __future__ import annotations

from pathlib import Path

from meta_memory.clock import ManualClock
from meta_memory.events.bus import EventBus


def test_events_published_together_are_numbered_in_order_and_survive_a_reopen(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    bus = EventBus(ManualClock(1_000), path=path, retention=5)
    bus.emit("first", {"n": 0}, identity="a:1")
    envs = bus.emit_many([("batch", {"n": i}, "a:1") for i in range(1, 4)] + [("system", {}, None)])
    assert [e.seq for e in envs] == [2, 3, 4, 5]
    assert envs[-1].identity == "_system"
    bus.emit_many([("more", {"n": 9}, "b:1")])
    bus.close()
    again = EventBus(ManualClock(2_000), path=path, retention=5)
    kept = again.list()
    assert [(e.seq, e.event_type) for e in kept] == [(2, "batch"), (3, "batch"), (4, "batch"), (5, "system"), (6, "more")]
    assert again.emit("next", {}).seq == 7
    again.close()
