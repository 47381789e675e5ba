"""Taint the session-state database refuses (a full disk) fails closed: held, enforced, written later.

The store runs over a backend whose writes can be switched to fail as a full disk does; the firewall's
own write gate is what decides quarantine.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from meta_memory.clock import ManualClock
from meta_memory.errors import AgentMemoryError
from meta_memory.firewall.classify import Classification
from meta_memory.firewall.gate import LlmWriteGate
from meta_memory.firewall.taint import TaintTracker
from meta_memory.session_ref import SessionRef
from meta_memory.session_state import SessionStateStore, SqliteSessionBackend
from meta_memory.session_state.unwritten import OVERFLOW_SOURCE

T = TypeVar("T")
WEB = Classification(False, "web tool 'web_fetch'")


class FullDisk:
    """A SQLite session backend whose writes fail with ``disk_full`` while ``full`` is set."""

    def __init__(self) -> None:
        self.inner = SqliteSessionBackend(":memory:", 0)
        self.full = False

    def write(self, fn: Callable[[Any], T], *, durable: bool = True) -> T:
        if self.full:
            raise AgentMemoryError("disk_full", "write refused: no space left on the disk")
        return self.inner.write(fn, durable=durable)

    def read(self, fn: Callable[[Any], T]) -> T:
        return self.inner.read(fn)

    def close(self) -> None:
        self.inner.close()


def _setup(limit: int | None = None) -> tuple[FullDisk, SessionStateStore, TaintTracker, LlmWriteGate]:
    disk = FullDisk()
    state = SessionStateStore(disk, ManualClock(1_700_000_000_000))
    if limit is not None:
        state._held._limit = limit
    tracker = TaintTracker(ManualClock(1_700_000_000_000), state=state)
    return disk, state, tracker, LlmWriteGate(tracker)


def _agent(identity: str) -> dict[str, str]:
    return {"kind": "agent", "identity": identity}


def test_taint_that_cannot_be_written_is_enforced_then_written() -> None:
    disk, state, tracker, gate = _setup()
    disk.full = True
    taint = tracker.observe(SessionRef("default", "lead:main", "s1"), WEB)
    assert taint is not None and taint.source == WEB.source
    assert tracker.session_taint(SessionRef("default", "lead:main", "s1")) is not None
    assert gate.quarantine_reason(_agent("lead:main"), realm="default", session_key="s1") == f"session tainted by {WEB.source}"
    assert gate.quarantine_reason(_agent("lead:other"), realm="default", session_key="s1") is not None  # the session, any identity
    assert gate.quarantine_reason(_agent("lead:other"), realm="default", session_key="s2") is None
    # a write citing the held session as evidence is judged on it too; another identity is not told its source
    cited = gate.quarantine_reason(_agent("lead:other"), realm="default", session_key="s2",
                                   evidence=[{"session_id": "s1"}])
    assert cited is not None and "another identity's session of this key" in cited and "web_fetch" not in cited
    own = gate.quarantine_reason(_agent("lead:main"), realm="default", session_key="s2", evidence=[{"session_id": "s1"}])
    assert own is not None and "web_fetch" in own
    assert state.readiness_problem() is not None and "could not be written" in str(state.readiness_problem())

    disk.full = False  # room again: the next question writes it, and the database answers from then on
    assert gate.quarantine_reason(_agent("lead:main"), realm="default", session_key="s1") is not None
    assert state.readiness_problem() is None and len(state._held) == 0
    assert disk.inner.read(lambda sql: sql.rows("SELECT taint_source FROM session_states WHERE session_key = 's1'")) \
        == [(WEB.source,)]


def test_another_identitys_taint_counts_only_where_the_caller_shares_it_held_or_written() -> None:
    disk, state, tracker, gate = _setup()
    tenant = {"lead:main"}  # the identities whose sessions the writing caller also manages
    for full in (True, False):
        disk.full = full
        tracker.observe(SessionRef("default", "lead:main", "k1"), WEB)
        tracker.observe(SessionRef("default", "stranger", "k1"), WEB)
        tracker.observe(SessionRef("default", "stranger", "k2"), WEB)
        for shares, expected in ((None, True), (tenant.__contains__, False), ((lambda ident: False), False)):
            assert (gate.quarantine_reason(_agent("lead:other"), realm="default", session_key="k2",
                                           shares_key_with=shares) is not None) is expected, (full, shares)
            cited = gate.quarantine_reason(_agent("lead:other"), realm="default", session_key="k3",
                                           evidence=[{"session_id": "k2"}], shares_key_with=shares)
            assert (cited is not None) is expected, (full, shares)
        # k1: the stranger's taint does not count, the shared identity's does
        assert gate.quarantine_reason(_agent("lead:other"), realm="default", session_key="k1",
                                      shares_key_with=tenant.__contains__) is not None, full
        assert gate.quarantine_reason(_agent("lead:other"), realm="default", session_key="k1",
                                      shares_key_with=lambda ident: False) is None, full
        # the writer's own taint always counts
        assert gate.quarantine_reason(_agent("stranger"), realm="default", session_key="k2",
                                      shares_key_with=lambda ident: False) is not None, full
    assert len(state._held) == 0


def test_a_taint_seen_before_any_session_is_held_as_the_identity_s() -> None:
    disk, state, tracker, gate = _setup()
    disk.full = True
    tracker.observe(SessionRef("default", "lead:main", None), WEB)
    assert gate.quarantine_reason(_agent("lead:main"), realm="default", session_key=None) is not None
    disk.full = False
    assert tracker.note_session(SessionRef("default", "lead:main", "s9")) is not None  # the pending taint lands on the noted session
    assert gate.quarantine_reason(_agent("lead:main"), realm="default", session_key="s9") is not None


def test_past_the_hold_every_llm_write_quarantines_for_the_life_of_the_process() -> None:
    disk, state, tracker, gate = _setup(limit=2)
    disk.full = True
    for i in range(3):
        tracker.observe(SessionRef("default", f"lead:a{i}", f"s{i}"), WEB)
    assert gate.quarantine_reason(_agent("lead:unrelated"), realm="default", session_key="clean") == f"session tainted by {OVERFLOW_SOURCE}"
    disk.full = False
    # the two held taints are written; the third (past the hold) is known to no one, so every LLM write
    # stays quarantined for the life of the process, and readiness says so
    assert gate.quarantine_reason(_agent("lead:a0"), realm="default", session_key="s0") is not None
    assert len(state._held) == 1 and "every LLM-authored write is quarantined" in str(state.readiness_problem())
    assert gate.quarantine_reason(_agent("lead:unrelated"), realm="default", session_key="clean") == f"session tainted by {OVERFLOW_SOURCE}"


def test_answers_report_the_held_taint_the_gate_enforces() -> None:
    """A session noted before the disk filled, then tainted by a result whose taint could not be written:
    noting it again (answered from the database without a write) and compacting it say ``tainted``, as
    the write gate quarantines; status counts the held taint."""
    disk, state, tracker, gate = _setup()
    s0 = SessionRef("default", "lead:main", "s0")
    assert tracker.note_session(s0) is None
    disk.full = True
    assert tracker.observe(s0, WEB) is not None
    assert gate.quarantine_reason(_agent("lead:main"), realm="default", session_key="s0") is not None
    noted = tracker.note_session(s0)
    assert noted is not None and noted.source == WEB.source
    assert tracker.compacted(s0) is not None
    assert tracker.observe(s0, Classification(True, None)) is not None  # a trusted result after it
    assert tracker.stats()["held_taints"] == 1
