"""The memory tool's dispatch: actions, result texts, scope pinning and the write gate."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meta_memory.agent_memory.model import Author
from meta_memory.clock import ManualClock
from meta_memory.errors import AgentMemoryError, InvalidParams
from meta_memory.firewall import Firewall
from meta_memory.session_ref import SessionRef
from meta_memory.tool import RecorderTool, ToolResult
from tool.memory_tool_fakes import FakeStore

ME = "lead:main"
AVAILABLE = (
    "It becomes available to prompt assembly from the next build; this confirmation is your in-turn awareness of it."
)


def call(tool: RecorderTool, session: str | None = "s1", mob: str | None = None, identity: str = ME,
         realm: str = "default", **args):
    return tool.dispatch(SessionRef(realm, identity, session), mob, args)


def remember(tool: RecorderTool, title: str = "Deploys", body: str = "Need approval.", **kw) -> ToolResult:
    return call(tool, action="remember", title=title, body=body, **kw)


def test_remember_confirms_with_the_exact_text(tool: RecorderTool, store: FakeStore) -> None:
    got = remember(tool)
    assert got == ToolResult(f"Stored memory mem-1. {AVAILABLE}", is_error=False, exclude_from_indexing=True)
    row = store.rows["mem-1"]
    assert row.identity == ME and row.status == "active"
    assert row.author == Author.agent(ME)
    assert got.to_dict() == {"text": got.text, "is_error": False, "exclude_from_indexing": True}


def test_write_read_update_forget_roundtrip(tool: RecorderTool, store: FakeStore) -> None:
    first = remember(tool, "Passport", "Passport number lives in the vault.")
    assert first.text.startswith("Stored memory mem-1.")
    recalled = call(tool, action="recall", query_text="passport")
    rows = json.loads(recalled.text)
    assert [r["memory_id"] for r in rows] == ["mem-1"]
    assert set(rows[0]) == {"memory_id", "title", "body", "tags", "updated_at_ms"}
    assert recalled.text == json.dumps(rows, indent=2, ensure_ascii=False)
    assert store.rows["mem-1"].recalls == 1

    updated = call(tool, action="update", memory_id="mem-1", title="Passport", body="Passport is in the safe.")
    assert updated.text == f"Updated: new record memory mem-2. {AVAILABLE}"
    assert [r["memory_id"] for r in json.loads(call(tool, action="recall").text)] == ["mem-2"]

    forgot = call(tool, action="forget", memory_id="mem-2")
    assert forgot == ToolResult(
        "Forgot memory mem-2. It stops being injected immediately; text already in a live context is only "
        "revoked by reset/respawn."
    )
    assert call(tool, action="recall", query_text="passport") == ToolResult("No matching memory records.")
    again = call(tool, action="forget", memory_id="mem-2")
    assert again == ToolResult("memory mem-2 was not found in your scope", is_error=True)


def test_recall_limits_and_defaults(store: FakeStore) -> None:
    tool = RecorderTool(store, max_entries=2)
    for i in range(5):
        remember(tool, f"t{i}", f"body {i}")
    assert len(json.loads(call(tool, action="recall").text)) == 2
    assert len(json.loads(call(tool, action="recall", max_entries=3).text)) == 3
    assert [r["title"] for r in json.loads(call(tool, action="recall", max_entries=1).text)] == ["t4"]


def test_recall_text_keeps_non_ascii(tool: RecorderTool) -> None:
    remember(tool, "Café", "Der Schlüssel liegt im Büro. 東京")
    assert "Schlüssel" in call(tool, action="recall", query_text="schlüssel").text


def test_scope_is_pinned_to_the_caller(tool: RecorderTool, store: FakeStore) -> None:
    remember(tool)
    other = call(tool, identity="scout:1", action="forget", memory_id="mem-1")
    assert other == ToolResult("memory mem-1 was not found in your scope", is_error=True)
    assert call(tool, identity="scout:1", action="recall").text == "No matching memory records."
    assert store.rows["mem-1"].status == "active"


def test_retarget_fields_are_refused(tool: RecorderTool, store: FakeStore) -> None:
    for extra in ({"identity": "boss:1"}, {"scope": "mob"}, {"realm": "other"}, {"author": "operator"}):
        args = {"action": "remember", "title": "t", "body": "b", **extra}
        got = tool.dispatch(SessionRef("default", ME, "s1"), None, args)
        assert got.is_error and got.text.startswith(f"unknown field '{next(iter(extra))}'")
    assert store.rows == {}


def test_roster_identities_write_the_logical_scope(tool: RecorderTool, store: FakeStore) -> None:
    call(tool, identity="rt:identity:parent-1:0", action="remember", title="t", body="b")
    assert store.rows["mem-1"].identity == "identity:parent-1"
    got = call(tool, identity="rt:identity:parent-1:1", action="recall")
    assert json.loads(got.text)[0]["memory_id"] == "mem-1"


def test_cross_identity_and_unknown_updates_answer_like_forget(tool: RecorderTool) -> None:
    remember(tool)
    for memory_id in ("mem-1", "mem-404"):
        got = call(tool, identity="scout:1", action="update", memory_id=memory_id, title="t", body="b")
        assert got == ToolResult(f"memory {memory_id} was not found in your scope", is_error=True)
        assert got == call(tool, identity="scout:1", action="forget", memory_id=memory_id)


def test_argument_errors_are_tool_errors(tool: RecorderTool) -> None:
    got = call(tool, action="explode")
    assert got == ToolResult(
        "unknown action 'explode' (expected remember, update, forget, recall, or propose_to_mob)", is_error=True
    )
    assert call(tool, action="remember", body="b") == ToolResult(
        '`title` is required for action "remember"', is_error=True
    )
    assert call(tool, action="update", title="t", body="b").text == '`memory_id` is required for action "update"'


def test_store_failures_become_tool_errors(tool: RecorderTool, store: FakeStore) -> None:
    store.fail_with = AgentMemoryError(
        "secret_detected", "op 0: write refused: content matches the 'github-token' secret pattern class", op_index=0
    )
    got = remember(tool)
    assert got.is_error and got.text.startswith("invalid agent memory record: op 0: write refused")
    store.fail_with = RuntimeError("disk full")
    assert remember(tool) == ToolResult("disk full", is_error=True)


def test_bad_host_parameters_are_refused(tool: RecorderTool) -> None:
    with pytest.raises(ValueError, match="identity"):
        SessionRef("default", "  ", "s1")
    with pytest.raises(ValueError, match="session_key"):
        SessionRef("default", ME, "")
    with pytest.raises(ValueError, match="realm"):
        SessionRef(" ", ME, "s1")
    with pytest.raises(InvalidParams):
        tool.dispatch(SessionRef("default", ME, "s1"), 7, {"action": "recall"})  # type: ignore[arg-type]


def test_every_action_acts_in_the_realm_of_its_session(tool: RecorderTool, store: FakeStore,
                                                       firewall: Firewall) -> None:
    firewall.tool_result(SessionRef("ops", ME, "s1"), "web_fetch")
    tainted = remember(tool, "dirty", "read on the web", realm="ops")
    assert "QUARANTINED" in tainted.text and store.rows["mem-1"].realm == "ops"
    clean = remember(tool, "clean", "same key, other realm")
    assert "QUARANTINED" not in clean.text and store.rows["mem-2"].realm == "default"
    assert call(tool, realm="ops", action="recall").text == "No matching memory records."
    assert [r["memory_id"] for r in json.loads(call(tool, action="recall").text)] == ["mem-2"]
    proposed = call(tool, realm="ops", mob="crew", action="propose_to_mob", title="t", body="b")
    assert proposed.text.startswith("Proposed to mob scope as prop-3")
    assert store.proposals["prop-3"]["realm"] == "ops"
    assert store.proposals["prop-3"]["taint"] == "session tainted by web tool 'web_fetch'"


def test_propose_to_mob_needs_a_mob(tool: RecorderTool, store: FakeStore) -> None:
    got = call(tool, action="propose_to_mob", title="t", body="b")
    assert got == ToolResult(
        "propose_to_mob is unavailable: this member is not running inside a mob", is_error=True
    )
    assert call(tool, mob="  ", action="propose_to_mob", title="t", body="b").is_error
    ok = call(tool, mob="crew", action="propose_to_mob", title="t", body="b")
    assert ok == ToolResult(
        "Proposed to mob scope as prop-1. A steward or operator must review and commit it before it becomes "
        "shared memory."
    )
    assert store.proposals["prop-1"]["mob"] == "crew"
    assert store.proposals["prop-1"]["author"] == Author.agent(ME)


def test_verified_claim_is_stored_as_a_claim_at_observed_tier(tool: RecorderTool, store: FakeStore) -> None:
    got = remember(tool, epistemic="verified_claim", verification_evidence="read the deploy log")
    assert not got.is_error
    record = store.rows["mem-1"].record
    assert record.trust == "agent_observed"
    assert record.verification == {"checked": "read the deploy log", "evidence": []}


def test_quarantined_posture_reports_quarantine(store: FakeStore, clock) -> None:
    store.firewall = Firewall(None, clock, llm_writes="quarantined")
    tool = RecorderTool(store)
    got = remember(tool)
    assert got.text == (
        "Stored memory mem-1 — stored but QUARANTINED pending review (llm_writes=quarantined policy). "
        "It will not be injected or recalled until a steward or operator promotes it."
    )
    assert not got.is_error
    assert call(tool, action="recall").text == "No matching memory records."


def test_recorder_gate_quarantines_tainted_session_writes(tool: RecorderTool, store: FakeStore,
                                                          firewall: Firewall) -> None:
    firewall.note_session(SessionRef("default", ME, "s1"))
    assert remember(tool, "clean", "before browsing").text.startswith("Stored memory mem-1. ")
    firewall.tool_result(SessionRef("default", ME, "s1"), "web_search")
    tainted = remember(tool, "dirty", "after browsing")
    assert tainted.text == (
        "Stored memory mem-2 — stored but QUARANTINED pending review (session tainted by web tool 'web_search'). "
        "It will not be injected or recalled until a steward or operator promotes it."
    )
    assert store.rows["mem-2"].status == "quarantined"
    update = call(tool, action="update", memory_id="mem-1", title="clean", body="rewritten")
    assert update.text == (
        "Updated: new record memory mem-3 — stored but QUARANTINED pending review (session tainted by web tool "
        "'web_search'). It will not be injected or recalled until a steward or operator promotes it. "
        "The prior record remains active until review."
    )
    assert store.rows["mem-1"].status == "active"
    assert [r["memory_id"] for r in json.loads(call(tool, action="recall").text)] == ["mem-1"]
    # compaction keeps the taint
    firewall.compacted(SessionRef("default", "lead:main", "s1"))
    assert "QUARANTINED" in remember(tool, "still", "tainted").text
    # a new session starts clean
    firewall.note_session(SessionRef("default", ME, "session-2"))
    assert remember(tool, "fresh", "new session", session="session-2").text.startswith("Stored memory mem-5. ")


def test_dispatch_naming_a_tainted_session_quarantines(tool: RecorderTool, firewall: Firewall) -> None:
    firewall.tool_result(SessionRef("default", "helper:1", "shared"), "scrape_page")
    firewall.note_session(SessionRef("default", ME, "mine"))
    got = call(tool, session="shared", action="remember", title="t", body="b")
    # another identity's taint of the key: quarantined, its source not shown
    assert "QUARANTINED" in got.text and "session tainted by another identity's session of this key" in got.text
    assert "scrape_page" not in got.text
    firewall.tool_result(SessionRef("default", ME, "shared"), "scrape_page")  # this identity's own taint: named
    got = call(tool, session="shared", action="remember", title="t2", body="b2")
    assert "session tainted by configured untrusted tool 'scrape_page'" in got.text


def test_reset_clears_taint_for_later_writes(tool: RecorderTool, firewall: Firewall) -> None:
    firewall.tool_result(SessionRef("default", ME, "s1"), "web_fetch")
    assert "QUARANTINED" in remember(tool, "a", "b").text
    firewall.reset(SessionRef("default", ME))
    firewall.note_session(SessionRef("default", ME, "s2"))
    assert remember(tool, "c", "d", ).text.startswith("Stored memory")
    # ...and a write that names the reset session key again is clean too
    assert not call(tool, session="s1", action="remember", title="e", body="f").text.count("QUARANTINED")


def test_untrusted_tool_errors_taint_too(tool: RecorderTool, firewall: Firewall) -> None:
    firewall.tool_result(SessionRef("default", ME, "s1"), "mcp__scraper__get", is_error=True)
    assert "MCP server 'scraper' (tool 'mcp__scraper__get')" in remember(tool).text


json_leaf = st.none() | st.booleans() | st.integers() | st.text(max_size=12)
json_value = st.recursive(json_leaf, lambda inner: st.lists(inner, max_size=3), max_leaves=5)
fields = st.sampled_from(["action", "title", "body", "tags", "kind", "epistemic", "memory_id", "query_text",
                          "max_entries", "verification_evidence", "description"])


@settings(max_examples=150)
@given(
    args=st.dictionaries(fields, json_value, max_size=6),
    action=st.sampled_from(["remember", "update", "forget", "recall", "propose_to_mob"]),
    mob=st.none() | st.just("crew"),
)
def test_dispatch_never_raises_for_any_arguments(args: dict, action: str, mob: str | None) -> None:
    clock = ManualClock()
    tool = RecorderTool(FakeStore(Firewall(None, clock), clock))
    args.setdefault("action", action)
    got = tool.dispatch(SessionRef("default", ME, "s1"), mob, args)
    assert isinstance(got, ToolResult) and got.text and got.exclude_from_indexing
