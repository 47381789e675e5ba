"""One identity's quota of session-state rows (``identity_limit``): past it the identity's taint lands on
one overflow row that taints all its sessions, survives the expiry of its older rows and a reset of any
session, and other identities keep every permissive operation."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meta_memory.clock import ManualClock
from meta_memory.errors import AgentMemoryError
from meta_memory.firewall.classify import Classification
from meta_memory.firewall.taint import TaintTracker
from meta_memory.session_ref import SessionRef
from meta_memory.session_state import memory_session_state
from meta_memory.session_state.store import default_identity_limit

WEB = Classification(False, "web tool 'web_fetch'")
DAY = 86_400_000


def bob(key: str | None) -> SessionRef:
    return SessionRef("default", "bob:1", key)


def test_a_flood_stays_within_the_quota_and_keeps_its_taint_past_the_expiry_of_older_rows() -> None:
    clock = ManualClock()
    state = memory_session_state(clock, limit=1000, identity_limit=5, expiry_ms=30 * DAY)
    tracker = TaintTracker(clock, state=state)
    for i in range(4):
        tracker.observe(bob(f"s{i}"), WEB)  # identity row + 4 session rows: the quota
    clock.advance(20 * DAY)
    for i in range(4, 300):
        assert tracker.observe(bob(f"s{i}"), WEB) is not None
    assert state.stats()["sessions"] == 5  # the four rows and one overflow row
    assert tracker.write_taint(bob("s299")) is not None
    assert tracker.write_taint(bob("never-seen")) is not None  # every session of bob's counts (fail closed)
    tracker.reset(bob("s3"))  # a session with its own row resets as ever
    with pytest.raises(AgentMemoryError):
        tracker.reset(bob("s299"))  # a reset mark would be a new row past the quota
    assert tracker.write_taint(bob("s3")) is not None  # the overflow is not a session a reset can name
    assert tracker.write_taint(bob("s299")) is not None
    clock.advance(11 * DAY)  # the first rows expire; the overflow row (last taint 11 days ago) does not
    state.sweep()
    assert tracker.write_taint(bob("s299")) is not None
    clock.advance(30 * DAY)
    state.sweep()
    assert tracker.write_taint(bob("s299")) is None


def test_other_identities_proceed_while_one_is_at_its_quota() -> None:
    clock = ManualClock()
    state = memory_session_state(clock, limit=40, identity_limit=4)
    tracker = TaintTracker(clock, state=state)
    for i in range(100):
        tracker.observe(bob(f"s{i}"), WEB)
    with pytest.raises(AgentMemoryError) as err:
        state.commit_injection("default", "bob:1", "fresh", ["r"], 10)
    assert err.value.reason == "session_limit" and "session_state_identity_limit" in err.value.message
    state.commit_injection("default", "bob:1", "s0", ["r"], 10)  # an existing row keeps working
    for n in range(5):
        alice = SessionRef("default", f"alice:{n}", "a")
        tracker.note_session(alice)
        state.commit_injection("default", f"alice:{n}", "a", ["r"], 10)
        assert tracker.write_taint(alice) is None
    assert not state.at_capacity()


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 100_000_000))
def test_the_default_quota_is_a_twentieth_of_the_cap_within_it(limit: int) -> None:
    quota = default_identity_limit(limit)
    assert quota <= limit and (quota >= 2 or limit < 2) and quota == min(limit, max(2, limit // 20))


def test_taint_past_the_rows_of_every_realm_taints_every_realm_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    clock = ManualClock()
    state = memory_session_state(clock, limit=40, identity_limit=4, expiry_ms=30 * DAY)
    tracker = TaintTracker(clock, state=state)
    for realm in range(5):  # an identity row and three reset session rows a realm: 20, its rows in every realm
        for i in range(3):
            ref = SessionRef(f"r{realm}", "bob:1", f"s{i}")
            tracker.observe(ref, WEB)
            tracker.reset(ref)
    with caplog.at_level("WARNING", logger="meta_memory.session_state"):
        assert tracker.observe(SessionRef("fresh", "bob:1", "x"), WEB) is not None
    assert [r.getMessage() for r in caplog.records] == [
        "session state of bob:1 is at its 20 rows in every realm together: further taint of this identity is "
        "recorded on one row and taints all its sessions in every realm"]
    for realm in ("fresh", "r0", "never-named"):  # its sessions everywhere, reset or not, carry it
        assert tracker.write_taint(SessionRef(realm, "bob:1", "s0")) is not None, realm
    assert tracker.write_taint(SessionRef("r0", "alice:1", "s0")) is None
