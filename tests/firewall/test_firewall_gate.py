"""The LLM write gate: postures, reasons, author kinds and the ordering guarantee."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from meta_memory.agent_memory.model import Author, EvidenceRef
from meta_memory.clock import ManualClock
from meta_memory.errors import ConfigError
from meta_memory.firewall import Firewall
from meta_memory.firewall.classify import Classification
from meta_memory.firewall.gate import POLICY_REASON, LlmWriteGate, is_llm_author
from meta_memory.firewall.taint import RESET_BOUNDARY_REASON, TaintTracker

WEB = Classification(False, "web tool 'web_search'")
AGENT = Author.agent("lead:main")
OTHER = Author.agent("scout:1")
NON_LLM = [Author.operator("root"), Author.application()]
LLM = [AGENT, Author.steward("run-1"), Author.distiller("run-2")]


@pytest.fixture
def tracker() -> TaintTracker:
    return TaintTracker(ManualClock())


def test_unknown_posture_is_a_config_error(tracker: TaintTracker) -> None:
    with pytest.raises(ConfigError, match="llm_writes"):
        LlmWriteGate(tracker, "strict")


@pytest.mark.parametrize("author", LLM + NON_LLM)
def test_observed_posture_lets_clean_writes_land_active(tracker: TaintTracker, author: Author) -> None:
    assert LlmWriteGate(tracker).quarantine_reason(author, "fresh_write", ()) is None


@pytest.mark.parametrize("author", LLM)
def test_quarantined_posture_quarantines_every_llm_fresh_write(tracker: TaintTracker, author: Author) -> None:
    gate = LlmWriteGate(tracker, "quarantined")
    assert gate.quarantine_reason(author, "fresh_write", ()) == POLICY_REASON == "llm_writes=quarantined policy"


def test_quarantined_posture_exempts_review_verdicts(tracker: TaintTracker) -> None:
    gate = LlmWriteGate(tracker, "quarantined")
    assert gate.quarantine_reason(Author.steward("run-1"), "review_verdict", ()) is None


@pytest.mark.parametrize("posture", ["observed", "quarantined"])
@pytest.mark.parametrize("author", NON_LLM)
def test_non_llm_authors_are_never_quarantined(tracker: TaintTracker, posture: str, author: Author) -> None:
    tracker.observe("lead:main", "s1", WEB)
    ev = [EvidenceRef("s1")]
    assert LlmWriteGate(tracker, posture).quarantine_reason(author, "fresh_write", ev) is None


def test_tainted_agent_session_quarantines_with_source(tracker: TaintTracker) -> None:
    gate = LlmWriteGate(tracker)
    tracker.note_session("lead:main", "s1")
    assert gate.quarantine_reason(AGENT) is None
    tracker.observe("lead:main", "s1", WEB)
    assert gate.quarantine_reason(AGENT) == "session tainted by web tool 'web_search'"
    assert gate.quarantine_reason(OTHER) is None  # another identity is unaffected
    tracker.note_session("lead:main", "session-2")
    assert gate.quarantine_reason(AGENT) is None


def test_pending_taint_counts_for_the_gate(tracker: TaintTracker) -> None:
    tracker.observe("lead:main", None, WEB)
    assert LlmWriteGate(tracker).quarantine_reason(AGENT) == "session tainted by web tool 'web_search'"


def test_named_session_taint_counts_but_never_clears(tracker: TaintTracker) -> None:
    gate = LlmWriteGate(tracker)
    tracker.observe("helper:1", "s-shared", WEB)
    tracker.note_session("lead:main", "s-clean")
    assert gate.quarantine_reason(AGENT, session_key="s-shared") == "session tainted by web tool 'web_search'"
    tracker.observe("lead:main", "s-bad", WEB)
    assert gate.quarantine_reason(AGENT, session_key="s-clean") == "session tainted by web tool 'web_search'"


def test_tainted_session_survives_compaction_and_clears_at_reset(tracker: TaintTracker) -> None:
    gate = LlmWriteGate(tracker)
    tracker.observe("lead:main", "s1", WEB)
    tracker.compacted("lead:main", "s1")
    assert gate.quarantine_reason(AGENT) is not None
    tracker.reset("lead:main")
    tracker.note_session("lead:main", "s2")
    assert gate.quarantine_reason(AGENT) is None


def test_evidence_from_tainted_or_reset_sessions_quarantines(tracker: TaintTracker) -> None:
    gate = LlmWriteGate(tracker)
    distiller = Author.distiller("run-9")
    tracker.observe("lead:main", "s1", WEB)
    assert gate.quarantine_reason(distiller, "fresh_write", [EvidenceRef("s1", 0)]) == (
        "evidence session tainted by web tool 'web_search' (session-tainted ⇒ range-tainted)"
    )
    tracker.note_session("scout:1", "s2")
    tracker.reset("scout:1", "s2")
    assert gate.quarantine_reason(distiller, "fresh_write", [{"session_id": "s2"}]) == RESET_BOUNDARY_REASON
    assert RESET_BOUNDARY_REASON == (
        "evidence session closed at a reset boundary; distillates quarantine pending steward review (§8.4)"
    )
    assert gate.quarantine_reason(distiller, "fresh_write", [EvidenceRef("s3")]) is None
    # first matching ref decides
    ev = [EvidenceRef("s3"), EvidenceRef("s2"), EvidenceRef("s1")]
    assert gate.quarantine_reason(distiller, "fresh_write", ev) == RESET_BOUNDARY_REASON


def test_agent_taint_is_reported_before_evidence(tracker: TaintTracker) -> None:
    tracker.observe("lead:main", "s1", WEB)
    tracker.note_session("scout:1", "s2")
    tracker.reset("scout:1", "s2")
    got = LlmWriteGate(tracker).quarantine_reason(AGENT, "fresh_write", [EvidenceRef("s2")])
    assert got == "session tainted by web tool 'web_search'"


def test_duck_typed_authors() -> None:
    assert not is_llm_author({"author": "application"})
    assert not is_llm_author(SimpleNamespace(kind="operator"))
    assert is_llm_author({"author": "agent", "identity": "x:1"})
    assert is_llm_author(SimpleNamespace(kind="martian"))  # unknown kinds fail closed
    tracker = TaintTracker(ManualClock())
    tracker.observe("x:1", "s", WEB)
    gate = LlmWriteGate(tracker)
    assert gate.quarantine_reason({"author": "agent", "identity": "x:1"}) is not None
    assert gate.quarantine_reason(SimpleNamespace(kind="agent", identity="rt:x:1:0")) is not None
    assert gate.quarantine_reason(SimpleNamespace(kind="agent", identity="y:1")) is None


def test_roster_identity_author_shares_the_logical_taint() -> None:
    tracker = TaintTracker(ManualClock())
    tracker.observe("rt:identity:parent-1:0", "s1", WEB)
    gate = LlmWriteGate(tracker)
    assert gate.quarantine_reason(Author.agent("identity:parent-1")) is not None
    assert gate.quarantine_reason(SimpleNamespace(kind="agent", identity="rt:identity:parent-1:1")) is not None


def test_ordering_guarantee_across_threads() -> None:
    """A gate call that starts after observe() returned always sees the taint, from any thread."""
    firewall = Firewall(None, ManualClock())
    gate = firewall.gate
    rounds = 200
    misses: list[str] = []
    ready = [threading.Event() for _ in range(rounds)]

    def observer() -> None:
        for i in range(rounds):
            firewall.note_session(f"agent:{i}", f"s{i}")
            firewall.tool_result(f"agent:{i}", f"s{i}", "web_fetch")
            ready[i].set()

    def writer(offset: int) -> None:
        for i in range(offset, rounds, 4):
            # Before the taint, the write may or may not be clean; after the event it must be quarantined.
            gate.quarantine_reason({"author": "agent", "identity": f"agent:{i}"})
            ready[i].wait(5)
            reason = gate.quarantine_reason({"author": "agent", "identity": f"agent:{i}"})
            if reason != "session tainted by web tool 'web_fetch'":
                misses.append(f"agent:{i} -> {reason!r}")

    def noise() -> None:
        for i in range(rounds * 5):
            firewall.tool_result(f"noise:{i % 50}", f"n{i}", "calculator")
            firewall.reset(f"noise:{i % 50}")

    threads = [threading.Thread(target=observer), threading.Thread(target=noise)]
    threads += [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not misses


def test_same_thread_observe_then_write_sees_taint_every_time() -> None:
    firewall = Firewall({"untrusted_tools": ["scrape"]}, ManualClock())
    errors: list[int] = []

    def worker(k: int) -> None:
        for i in range(300):
            ident = f"w{k}:{i}"
            firewall.tool_result(ident, f"{ident}-s", "scrape")
            if firewall.gate.quarantine_reason({"author": "agent", "identity": ident}) is None:
                errors.append(i)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []


# --------------------------------------------------------------------------- forgets


@pytest.mark.parametrize("author", NON_LLM)
def test_a_non_llm_forget_is_never_held(tracker: TaintTracker, author: Author) -> None:
    tracker.observe("lead:main", "s1", WEB)
    assert LlmWriteGate(tracker, "quarantined").forget_hold_reason(author, session_key="s1") is None


def test_a_tainted_agent_forget_is_held_and_a_clean_one_is_not(tracker: TaintTracker) -> None:
    gate = LlmWriteGate(tracker)
    assert gate.forget_hold_reason(AGENT, session_key="s1") is None
    tracker.observe("lead:main", "s1", WEB)
    assert gate.forget_hold_reason(AGENT, session_key="s1") == "session tainted by web tool 'web_search'"
    assert gate.forget_hold_reason(OTHER, session_key="s2") is None


@pytest.mark.parametrize("author", LLM)
def test_the_strict_posture_holds_every_llm_forget(tracker: TaintTracker, author: Author) -> None:
    assert LlmWriteGate(tracker, "quarantined").forget_hold_reason(author) == POLICY_REASON


def test_at_capacity_every_llm_write_quarantines_fail_closed() -> None:
    from meta_memory.clock import ManualClock
    from meta_memory.firewall.taint import CAPACITY_REASON
    from meta_memory.session_state import memory_session_state

    clock = ManualClock()
    tracker = TaintTracker(clock, state=memory_session_state(clock, limit=2))
    gate = LlmWriteGate(tracker)
    tracker.note_session("lead:main", "s1")
    assert gate.quarantine_reason(AGENT) is None
    tracker.note_session("scout:1", "s2")
    assert gate.quarantine_reason(AGENT) == CAPACITY_REASON
    assert gate.quarantine_reason(Author.distiller("run-1")) == CAPACITY_REASON
    assert gate.quarantine_reason(Author.application()) is None  # non-LLM authors are never gated
