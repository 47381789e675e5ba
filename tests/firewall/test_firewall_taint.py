"""Session-sticky taint lifecycle (seed: Content trust and session taint)."""

from __future__ import annotations

from typing import Any

import pytest

from meta_memory.clock import ManualClock
from meta_memory.events.bus import EventBus
from meta_memory.firewall.classify import Classification
from meta_memory.firewall.taint import (
    RESET_BOUNDARY_REASON,
    TAINT_EVENT,
    TaintState,
    TaintTracker,
)
from meta_memory.session_ref import SessionRef

WEB = Classification(False, "web tool 'web_search'")
MCP = Classification(False, "MCP server 'scraper' (tool 'q')")
CLEAN = Classification(True)


class Events(EventBus):
    """A timeline of the tracker's own (in memory), read back as ``(event_type, identity, data)``."""

    def __init__(self) -> None:
        super().__init__(ManualClock(0))

    @property
    def items(self) -> list[tuple[str, str, dict[str, Any]]]:
        return [(e.event_type, e.identity, e.data) for e in self.list(limit=10_000)]

    def kinds(self) -> list[str]:
        return [data["kind"] for _, _, data in self.items]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(1_000)


@pytest.fixture
def events() -> Events:
    return Events()


@pytest.fixture
def tracker(clock: ManualClock, events: Events) -> TaintTracker:
    return TaintTracker(clock, events)


def test_clean_until_untrusted_content_arrives(tracker: TaintTracker, events: Events) -> None:
    tracker.note_session(SessionRef("default", "lead:main", "s1"))
    assert tracker.observe(SessionRef("default", "lead:main", "s1"), CLEAN) is None
    assert tracker.identity_taint("lead:main", realm="default") is None
    assert events.items == []


def test_first_taint_wins_and_emits_one_event(tracker: TaintTracker, clock: ManualClock, events: Events) -> None:
    tracker.note_session(SessionRef("default", "lead:main", "s1"))
    first = tracker.observe(SessionRef("default", "lead:main", "s1"), WEB)
    clock.advance(50)
    second = tracker.observe(SessionRef("default", "lead:main", "s1"), MCP)
    assert first == second == TaintState(1_000, "web tool 'web_search'")
    assert tracker.session_taint(SessionRef("default", "lead:main", "s1")) == first
    assert events.items == [
        (
            TAINT_EVENT,
            "lead:main",
            {"realm": "default", "identity": "lead:main", "session_key": "s1", "kind": "tainted",
             "source": "web tool 'web_search'"},
        )
    ]


def test_trusted_content_never_clears_taint(tracker: TaintTracker) -> None:
    tracker.observe(SessionRef("default", "a:1", "s1"), WEB)
    assert tracker.observe(SessionRef("default", "a:1", "s1"), CLEAN) is not None
    assert tracker.identity_taint("a:1", realm="default") is not None


def test_compaction_does_not_clear_taint(tracker: TaintTracker, events: Events) -> None:
    tracker.observe(SessionRef("default", "a:1", "s1"), WEB)
    assert tracker.compacted(SessionRef("default", "a:1", "s1")) is not None
    assert tracker.identity_taint("a:1", realm="default") is not None
    assert events.kinds() == ["tainted"]


def test_rotation_starts_clean_and_keeps_the_old_session_fact(tracker: TaintTracker, events: Events) -> None:
    tracker.observe(SessionRef("default", "a:1", "s1"), WEB)
    tracker.note_session(SessionRef("default", "a:1", "s2"))
    assert tracker.identity_taint("a:1", realm="default") is None
    assert tracker.session_taint(SessionRef("default", "a:1", "s1")) is not None  # sticky, retained after rotation
    assert events.kinds() == ["tainted", "rotated_clean"]
    assert events.items[-1][2]["session_key"] == "s2"


def test_rotating_between_clean_sessions_is_silent(tracker: TaintTracker, events: Events) -> None:
    tracker.note_session(SessionRef("default", "a:1", "s1"))
    tracker.note_session(SessionRef("default", "a:1", "s2"))
    tracker.note_session(SessionRef("default", "a:1", "s2"))
    assert events.items == []


def test_returning_to_a_tainted_session_is_tainted_again(tracker: TaintTracker) -> None:
    tracker.observe(SessionRef("default", "a:1", "s1"), WEB)
    tracker.note_session(SessionRef("default", "a:1", "s2"))
    tracker.note_session(SessionRef("default", "a:1", "s1"))
    assert tracker.identity_taint("a:1", realm="default") is not None


def test_pending_taint_lands_on_the_next_noted_session(tracker: TaintTracker, events: Events) -> None:
    state = tracker.observe(SessionRef("default", "a:1", None), WEB)
    assert state is not None and tracker.identity_taint("a:1", realm="default") == state
    assert events.items[0][2] == {"realm": "default", "identity": "a:1", "session_key": None, "kind": "tainted",
                                  "source": WEB.source}
    tracker.note_session(SessionRef("default", "a:1", "s7"))
    assert tracker.session_taint(SessionRef("default", "a:1", "s7")) == state
    assert tracker.identity_taint("a:1", realm="default") == state
    assert events.kinds() == ["tainted", "tainted"]
    assert events.items[1][2]["session_key"] == "s7"


def test_observe_without_session_uses_the_current_session(tracker: TaintTracker) -> None:
    tracker.note_session(SessionRef("default", "a:1", "s1"))
    tracker.observe(SessionRef("default", "a:1", None), WEB)
    assert tracker.session_taint(SessionRef("default", "a:1", "s1")) is not None


def test_pending_first_taint_wins(tracker: TaintTracker, clock: ManualClock) -> None:
    tracker.observe(SessionRef("default", "a:1", None), WEB)
    clock.advance(10)
    tracker.observe(SessionRef("default", "a:1", None), MCP)
    tracker.note_session(SessionRef("default", "a:1", "s1"))
    assert tracker.session_taint(SessionRef("default", "a:1", "s1")) == TaintState(1_000, WEB.source)


def test_reset_clears_current_and_pending(tracker: TaintTracker, events: Events) -> None:
    tracker.observe(SessionRef("default", "a:1", "s1"), WEB)
    tracker.reset(SessionRef("default", "a:1"))
    assert tracker.identity_taint("a:1", realm="default") is None
    assert tracker.current_session("a:1", realm="default") is None
    assert events.kinds() == ["tainted", "reset_boundary"]
    assert events.items[-1][2] == {"realm": "default", "identity": "a:1", "session_key": "s1", "kind": "reset_boundary",
                                   "source": WEB.source}
    # pending taint is dropped too
    tracker.observe(SessionRef("default", "b:1", None), WEB)
    tracker.reset(SessionRef("default", "b:1"))
    tracker.note_session(SessionRef("default", "b:1", "s9"))
    assert tracker.identity_taint("b:1", realm="default") is None


def test_reset_session_key_can_be_reused_clean_but_evidence_remembers(tracker: TaintTracker) -> None:
    tracker.observe(SessionRef("default", "a:1", "s1"), WEB)
    tracker.reset(SessionRef("default", "a:1", "s1"))
    tracker.note_session(SessionRef("default", "a:1", "s1"))
    assert tracker.identity_taint("a:1", realm="default") is None
    assert tracker.evidence_reason("s1", realm="default") == (
        "evidence session tainted by web tool 'web_search' (session-tainted ⇒ range-tainted)"
    )


def test_reset_of_a_clean_session_marks_a_boundary(tracker: TaintTracker, events: Events) -> None:
    tracker.note_session(SessionRef("default", "a:1", "s1"))
    tracker.reset(SessionRef("default", "a:1", "s1"))
    tracker.reset(SessionRef("default", "a:1", "s1"))  # idempotent
    assert tracker.evidence_reason("s1", realm="default") == RESET_BOUNDARY_REASON
    assert tracker.reset_boundary(SessionRef("default", "a:1", "s1")) is not None
    assert events.kinds() == ["reset_boundary"]
    assert tracker.evidence_reason("never-seen", realm="default") is None


def test_reset_without_any_session_and_without_taint_is_silent(tracker: TaintTracker, events: Events) -> None:
    tracker.reset(SessionRef("default", "ghost:1"))
    assert events.items == []


def test_identities_are_logical(tracker: TaintTracker) -> None:
    tracker.observe(SessionRef("default", "rt:identity:parent-1:0", "s1"), WEB)
    assert tracker.identity_taint("identity:parent-1", realm="default") is not None
    assert tracker.current_session("rt:identity:parent-1:1", realm="default") == "s1"


def test_state_is_keyed_by_identity_another_identity_cannot_reset_it(tracker: TaintTracker) -> None:
    tracker.observe(SessionRef("default", "victim:1", "s1"), WEB)
    tracker.reset(SessionRef("default", "attacker:1", "s1"))  # names the victim's session key
    tracker.note_session(SessionRef("default", "attacker:1", "s1"))
    assert tracker.identity_taint("victim:1", realm="default") is not None
    assert tracker.session_taint(SessionRef("default", "victim:1", "s1")) is not None
    assert tracker.reset_boundary(SessionRef("default", "victim:1", "s1")) is None
    assert tracker.identity_taint("attacker:1", realm="default") is None


def test_state_is_keyed_by_realm(tracker: TaintTracker) -> None:
    tracker.observe(SessionRef("r1", "a:1", "s1"), WEB)
    assert tracker.identity_taint("a:1", realm="r1") is not None
    assert tracker.identity_taint("a:1", realm="r2") is None
    tracker.reset(SessionRef("r2", "a:1", "s1"))
    assert tracker.session_taint(SessionRef("r1", "a:1", "s1")) is not None


def test_no_capacity_eviction_taint_survives_thousands_of_sessions(tracker: TaintTracker) -> None:
    tracker.observe(SessionRef("default", "a:1", "s-tainted"), WEB)
    for i in range(5000):
        tracker.observe(SessionRef("default", "a:1", f"s{i}"), WEB)
        tracker.note_session(SessionRef("default", f"other:{i}", f"o{i}"))
    assert tracker.session_taint(SessionRef("default", "a:1", "s-tainted")) is not None
    assert tracker.stats()["tainted_sessions"] == 5001
    tracker.note_session(SessionRef("default", "a:1", "s-tainted"))
    assert tracker.identity_taint("a:1", realm="default") is not None


def test_at_the_row_cap_new_sessions_are_refused_and_taint_still_lands(clock: ManualClock) -> None:
    from meta_memory.errors import AgentMemoryError
    from meta_memory.session_state import memory_session_state

    tracker = TaintTracker(clock, state=memory_session_state(clock, limit=4))
    tracker.observe(SessionRef("default", "a:1", "s1"), WEB)  # identity row + session row
    tracker.note_session(SessionRef("default", "b:1", "s2"))
    tracker.note_session(SessionRef("default", "c:1", "s3"))
    assert tracker.at_capacity()
    with pytest.raises(AgentMemoryError) as err:
        tracker.note_session(SessionRef("default", "d:1", "s4"))
    assert err.value.reason == "session_limit" and "limit of 4" in err.value.message
    tracker.note_session(SessionRef("default", "b:1", "s-other"))  # known identities keep working
    assert tracker.observe(SessionRef("default", "b:1", None), WEB) is not None  # taint is never refused
    assert tracker.session_taint(SessionRef("default", "a:1", "s1")) is not None
    # pending taint of a new identity lands too
    assert tracker.observe(SessionRef("default", "e:1", None), WEB) is not None


def test_state_expires_by_age_only(clock: ManualClock) -> None:
    from meta_memory.session_state import memory_session_state

    day = 86_400_000
    tracker = TaintTracker(clock, state=memory_session_state(clock, expiry_ms=30 * day))
    tracker.observe(SessionRef("default", "a:1", "s1"), WEB)
    tracker.observe(SessionRef("default", "b:1", "s2"), WEB)
    clock.advance(20 * day)
    tracker.note_session(SessionRef("default", "b:1", "s2"))  # touched: b's session lives on
    clock.advance(11 * day)
    tracker.note_session(SessionRef("default", "c:1", "s3"))  # a write runs the sweep
    assert tracker.session_taint(SessionRef("default", "a:1", "s1")) is None
    assert tracker.session_taint(SessionRef("default", "b:1", "s2")) is not None


def test_a_failing_event_sink_never_breaks_tracking(clock: ManualClock) -> None:
    class Down(Events):
        def emit(self, *_: Any, **__: Any) -> Any:
            raise RuntimeError("bus down")

    tracker = TaintTracker(clock, Down())
    assert tracker.observe(SessionRef("default", "a:1", "s1"), WEB) is not None
    assert tracker.identity_taint("a:1", realm="default") is not None
