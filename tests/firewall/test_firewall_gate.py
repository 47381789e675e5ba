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
from meta_memory.session_ref import SessionRef

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
    assert LlmWriteGate(tracker).quarantine_reason(author, "fresh_write", (), realm="default") is None


@pytest.mark.parametrize("author", LLM)
def test_quarantined_posture_quarantines_every_llm_fresh_write(tracker: TaintTracker, author: Author) -> None:
    gate = LlmWriteGate(tracker, "quarantined")
    assert gate.quarantine_reason(author, "fresh_write", (), realm="default") == POLICY_REASON
    assert POLICY_REASON == "llm_writes=quarantined policy"


def test_quarantined_posture_exempts_review_verdicts(tracker: TaintTracker) -> None:
    gate = LlmWriteGate(tracker, "quarantined")
    assert gate.quarantine_reason(Author.steward("run-1"), "review_verdict", (), realm="default") is None


@pytest.mark.parametrize("posture", ["observed", "quarantined"])
@pytest.mark.parametrize("author", NON_LLM)
def test_non_llm_authors_are_never_quarantined(tracker: TaintTracker, posture: str, author: Author) -> None:
    tracker.observe(SessionRef("default", "lead:main", "s1"), WEB)
    ev = [EvidenceRef("s1")]
    assert LlmWriteGate(tracker, posture).quarantine_reason(author, "fresh_write", ev, realm="default") is None


def test_tainted_agent_session_quarantines_with_source(tracker: TaintTracker) -> None:
    gate = LlmWriteGate(tracker)
    tracker.note_session(SessionRef("default", "lead:main", "s1"))
    assert gate.quarantine_reason(AGENT, realm="default") is None
    tracker.observe(SessionRef("default", "lead:main", "s1"), WEB)
    assert gate.quarantine_reason(AGENT, realm="default") == "session tainted by web tool 'web_search'"
    assert gate.quarantine_reason(OTHER, realm="default") is None  # another identity is unaffected
    tracker.note_session(SessionRef("default", "lead:main", "session-2"))
    assert gate.quarantine_reason(AGENT, session_key="session-2", realm="default") is None
    # a write naming no session may come from s1's context: it still carries s1's taint
    assert gate.quarantine_reason(AGENT, realm="default") == "session tainted by web tool 'web_search'"
    tracker.reset(SessionRef("default", "lead:main", "s1"))
    tracker.note_session(SessionRef("default", "lead:main", "session-2"))
    assert gate.quarantine_reason(AGENT, realm="default") is None


def test_pending_taint_counts_for_the_gate(tracker: TaintTracker) -> None:
    tracker.observe(SessionRef("default", "lead:main", None), WEB)
    assert LlmWriteGate(tracker).quarantine_reason(AGENT, realm="default") == "session tainted by web tool 'web_search'"


def test_a_write_carries_its_own_session_taint_whichever_session_was_noted_last(tracker: TaintTracker) -> None:
    gate = LlmWriteGate(tracker)
    tainted = "session tainted by web tool 'web_search'"
    tracker.observe(SessionRef("default", "helper:1", "s-shared"), WEB)
    tracker.note_session(SessionRef("default", "lead:main", "s-clean"))
    # a key another identity tainted in the realm only adds quarantine, under a reason naming no source of that
    # identity's (what tainted another identity's session is not this one's to read, nor its text to show)
    assert gate.quarantine_reason(AGENT, session_key="s-shared", realm="default") == (
        "session tainted by another identity's session of this key")
    cited = gate.quarantine_reason(AGENT, session_key="s-clean", realm="default", evidence=[{"session_id": "s-shared"}])
    assert cited is not None and "another identity's session of this key" in cited and "web_search" not in cited
    assert gate.quarantine_reason(AGENT, session_key="s-shared", realm="elsewhere") is None
    tracker.observe(SessionRef("default", "lead:main", "s-bad"), WEB)  # the tainted sibling is noted last
    assert gate.quarantine_reason(AGENT, session_key="s-clean", realm="default") is None
    assert gate.quarantine_reason(AGENT, session_key="s-bad", realm="default") == tainted
    assert gate.quarantine_reason(AGENT, realm="default") == tainted  # no session named: the current one
    tracker.note_session(SessionRef("default", "lead:main", "s-clean"))  # the clean sibling is noted last
    assert gate.quarantine_reason(AGENT, session_key="s-clean", realm="default") is None
    assert gate.quarantine_reason(AGENT, session_key="s-bad", realm="default") == tainted
    # no session named: any of the identity's sessions may have written it, s-bad's taint counts
    assert gate.quarantine_reason(AGENT, realm="default") == tainted


def test_pending_taint_counts_for_a_write_naming_any_session(tracker: TaintTracker) -> None:
    tracker.observe(SessionRef("default", "lead:main"), WEB)  # no session known yet
    gate = LlmWriteGate(tracker)
    assert gate.quarantine_reason(AGENT, session_key="s-new", realm="default") == (
        "session tainted by web tool 'web_search'")
    assert gate.quarantine_reason(AGENT, session_key="s-new", realm="other") is None


def test_taint_and_evidence_are_judged_in_the_realm_written_to(tracker: TaintTracker) -> None:
    gate = LlmWriteGate(tracker)
    tracker.observe(SessionRef("ops", "lead:main", "s1"), WEB)
    assert gate.quarantine_reason(AGENT, session_key="s1", realm="ops") == "session tainted by web tool 'web_search'"
    assert gate.quarantine_reason(AGENT, session_key="s1", realm="default") is None
    distiller = Author.distiller("run-1")
    assert gate.quarantine_reason(distiller, "review_verdict", [EvidenceRef("s1")], realm="ops") == (
        "evidence session tainted by web tool 'web_search' (session-tainted ⇒ range-tainted)")
    assert gate.quarantine_reason(distiller, "review_verdict", [EvidenceRef("s1")], realm="default") is None
    assert gate.forget_hold_reason(AGENT, session_key="s1", realm="ops") is not None
    assert gate.forget_hold_reason(AGENT, session_key="s1", realm="default") is None


def test_tainted_session_survives_compaction_and_clears_at_reset(tracker: TaintTracker) -> None:
    gate = LlmWriteGate(tracker)
    tracker.observe(SessionRef("default", "lead:main", "s1"), WEB)
    tracker.compacted(SessionRef("default", "lead:main", "s1"))
    assert gate.quarantine_reason(AGENT, realm="default") is not None
    tracker.reset(SessionRef("default", "lead:main"))
    tracker.note_session(SessionRef("default", "lead:main", "s2"))
    assert gate.quarantine_reason(AGENT, realm="default") is None


def test_evidence_from_tainted_or_reset_sessions_quarantines(tracker: TaintTracker) -> None:
    gate = LlmWriteGate(tracker)
    distiller = Author.distiller("run-9")
    tracker.observe(SessionRef("default", "lead:main", "s1"), WEB)
    assert gate.quarantine_reason(distiller, "fresh_write", [EvidenceRef("s1", 0)], realm="default") == (
        "evidence session tainted by web tool 'web_search' (session-tainted ⇒ range-tainted)"
    )
    tracker.note_session(SessionRef("default", "scout:1", "s2"))
    tracker.reset(SessionRef("default", "scout:1", "s2"))
    cited = [{"session_id": "s2"}]
    assert gate.quarantine_reason(distiller, "fresh_write", cited, realm="default") == RESET_BOUNDARY_REASON
    assert RESET_BOUNDARY_REASON == (
        "evidence session closed at a reset boundary; distillates quarantine pending steward review (§8.4)"
    )
    assert gate.quarantine_reason(distiller, "fresh_write", [EvidenceRef("s3")], realm="default") is None
    # first matching ref decides
    ev = [EvidenceRef("s3"), EvidenceRef("s2"), EvidenceRef("s1")]
    assert gate.quarantine_reason(distiller, "fresh_write", ev, realm="default") == RESET_BOUNDARY_REASON


def test_agent_taint_is_reported_before_evidence(tracker: TaintTracker) -> None:
    tracker.observe(SessionRef("default", "lead:main", "s1"), WEB)
    tracker.note_session(SessionRef("default", "scout:1", "s2"))
    tracker.reset(SessionRef("default", "scout:1", "s2"))
    got = LlmWriteGate(tracker).quarantine_reason(AGENT, "fresh_write", [EvidenceRef("s2")], realm="default")
    assert got == "session tainted by web tool 'web_search'"


def test_duck_typed_authors() -> None:
    assert not is_llm_author({"author": "application"})
    assert not is_llm_author(SimpleNamespace(kind="operator"))
    assert is_llm_author({"author": "agent", "identity": "x:1"})
    assert is_llm_author(SimpleNamespace(kind="martian"))  # unknown kinds fail closed
    tracker = TaintTracker(ManualClock())
    tracker.observe(SessionRef("default", "x:1", "s"), WEB)
    gate = LlmWriteGate(tracker)
    assert gate.quarantine_reason({"author": "agent", "identity": "x:1"}, realm="default") is not None
    assert gate.quarantine_reason(SimpleNamespace(kind="agent", identity="rt:x:1:0"), realm="default") is not None
    assert gate.quarantine_reason(SimpleNamespace(kind="agent", identity="y:1"), realm="default") is None


def test_roster_identity_author_shares_the_logical_taint() -> None:
    tracker = TaintTracker(ManualClock())
    tracker.observe(SessionRef("default", "rt:identity:parent-1:0", "s1"), WEB)
    gate = LlmWriteGate(tracker)
    assert gate.quarantine_reason(Author.agent("identity:parent-1"), realm="default") is not None
    respawned = SimpleNamespace(kind="agent", identity="rt:identity:parent-1:1")
    assert gate.quarantine_reason(respawned, realm="default") is not None


def test_ordering_guarantee_across_threads() -> None:
    """A gate call that starts after observe() returned always sees the taint, from any thread."""
    firewall = Firewall(None, ManualClock())
    gate = firewall.gate
    rounds = 200
    misses: list[str] = []
    ready = [threading.Event() for _ in range(rounds)]

    def observer() -> None:
        for i in range(rounds):
            firewall.note_session(SessionRef("default", f"agent:{i}", f"s{i}"))
            firewall.tool_result(SessionRef("default", f"agent:{i}", f"s{i}"), "web_fetch")
            ready[i].set()

    def writer(offset: int) -> None:
        for i in range(offset, rounds, 4):
            # Before the taint, the write may or may not be clean; after the event it must be quarantined.
            gate.quarantine_reason({"author": "agent", "identity": f"agent:{i}"}, realm="default")
            ready[i].wait(5)
            reason = gate.quarantine_reason({"author": "agent", "identity": f"agent:{i}"}, realm="default")
            if reason != "session tainted by web tool 'web_fetch'":
                misses.append(f"agent:{i} -> {reason!r}")

    def noise() -> None:
        for i in range(rounds * 5):
            firewall.tool_result(SessionRef("default", f"noise:{i % 50}", f"n{i}"), "calculator")
            firewall.reset(SessionRef("default", f"noise:{i % 50}"))

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
            firewall.tool_result(SessionRef("default", ident, f"{ident}-s"), "scrape")
            if firewall.gate.quarantine_reason({"author": "agent", "identity": ident}, realm="default") is None:
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
    tracker.observe(SessionRef("default", "lead:main", "s1"), WEB)
    assert LlmWriteGate(tracker, "quarantined").forget_hold_reason(author, session_key="s1", realm="default") is None


def test_a_tainted_agent_forget_is_held_and_a_clean_one_is_not(tracker: TaintTracker) -> None:
    gate = LlmWriteGate(tracker)
    assert gate.forget_hold_reason(AGENT, session_key="s1", realm="default") is None
    tracker.observe(SessionRef("default", "lead:main", "s1"), WEB)
    assert gate.forget_hold_reason(AGENT, session_key="s1", realm="default") == "session tainted by web tool 'web_search'"
    assert gate.forget_hold_reason(OTHER, session_key="s2", realm="default") is None


@pytest.mark.parametrize("author", LLM)
def test_the_strict_posture_holds_every_llm_forget(tracker: TaintTracker, author: Author) -> None:
    assert LlmWriteGate(tracker, "quarantined").forget_hold_reason(author, realm="default") == POLICY_REASON


def test_at_capacity_every_llm_write_quarantines_fail_closed() -> None:
    from meta_memory.clock import ManualClock
    from meta_memory.firewall.taint import CAPACITY_REASON
    from meta_memory.session_state import memory_session_state

    clock = ManualClock()
    tracker = TaintTracker(clock, state=memory_session_state(clock, limit=2))
    gate = LlmWriteGate(tracker)
    tracker.note_session(SessionRef("default", "lead:main", "s1"))
    assert gate.quarantine_reason(AGENT, realm="default") is None
    tracker.note_session(SessionRef("default", "scout:1", "s2"))
    assert gate.quarantine_reason(AGENT, realm="default") == CAPACITY_REASON
    assert gate.quarantine_reason(Author.distiller("run-1"), realm="default") == CAPACITY_REASON
    assert gate.quarantine_reason(Author.application(), realm="default") is None  # non-LLM authors are never gated
