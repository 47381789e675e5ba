"""The firewall facade as the host-surface RPCs use it (meta/turn/tool_result, meta/session/*)."""

from __future__ import annotations

from typing import Any

from meta_memory.clock import ManualClock
from meta_memory.firewall import Firewall, ToolProvenance
from meta_memory.session_ref import SessionRef

S1 = SessionRef("default", "lead:main", "s1")


class Seen(list[dict[str, Any]]):
    """The firewall's events as ``{type, identity, **data}``, in order."""

    def emit(self, event_type: str, data: dict[str, Any], *, identity: str | None = None) -> None:
        self.append({"type": event_type, "identity": identity, **data})

    def emit_many(self, events: Any) -> None:
        for event_type, data, identity in events:
            self.emit(event_type, data, identity=identity)


def make(**kwargs: Any) -> tuple[Firewall, list[dict[str, Any]]]:
    seen = Seen()
    fw = Firewall(
        {"trusted_mcp_servers": ["knowledge_graph"], "untrusted_tools": ["scrape_page"]},
        ManualClock(5_000),
        seen,
        **kwargs,
    )
    return fw, seen


def test_tool_result_reports_trust_and_session_taint() -> None:
    fw, seen = make()
    assert fw.tool_result(S1, "calculator").to_dict() == {"trusted": True, "session_tainted": False}
    kg = ToolProvenance("mcp", "knowledge_graph")
    assert fw.tool_result(S1, "lookup", kg).to_dict() == {"trusted": True, "session_tainted": False}
    got = fw.tool_result(S1, "lookup", ToolProvenance("mcp", "pastebin"), is_error=True)
    assert got.to_dict() == {
        "trusted": False,
        "source": "MCP server 'pastebin' (tool 'lookup')",
        "session_tainted": True,
    }
    assert got.taint is not None and got.taint.tainted_at_ms == 5_000
    # later trusted results still report the sticky session taint
    assert fw.tool_result(S1, "calculator").to_dict() == {"trusted": True, "session_tainted": True}
    assert [e["kind"] for e in seen] == ["tainted"]
    assert seen[0]["type"] == "memory.taint.transition"


def test_server_tool_content_taints() -> None:
    fw, _ = make()
    got = fw.tool_result(S1, "google_search", server_tool=True)
    assert got.source == "provider server tool 'google_search'" and got.session_tainted


def test_session_lifecycle_through_the_facade() -> None:
    fw, seen = make()
    fw.note_session(S1)
    fw.tool_result(S1, "scrape_page")
    author = {"author": "agent", "identity": "lead:main"}
    assert fw.gate.quarantine_reason(author, realm="default") == (
        "session tainted by configured untrusted tool 'scrape_page'")
    assert fw.compacted(S1) is not None
    assert fw.gate.quarantine_reason(author, realm="default") is not None
    fw.reset(SessionRef("default", "lead:main"))
    fw.note_session(SessionRef("default", "lead:main", "s2"))
    assert fw.gate.quarantine_reason(author, realm="default") is None
    assert [e["kind"] for e in seen] == ["tainted", "reset_boundary"]


def test_quarantined_posture_through_the_facade() -> None:
    fw, _ = make(llm_writes="quarantined")
    author = {"author": "agent", "identity": "a:1"}
    assert fw.gate.quarantine_reason(author, realm="default") == "llm_writes=quarantined policy"
    assert fw.gate.quarantine_reason({"author": "application"}, realm="default") is None


def test_a_refused_sources_rule_is_shown_as_every_refusal_shows_a_callers_text() -> None:
    """The taint source quotes its rule through the one escape refusals use: a character beyond the Basic
    Multilingual Plane is its full ``\\U`` escape (not five hex digits after ``\\u``), a control character its
    ``\\x`` one, and a long rule is cut with ``...``."""
    from meta_memory.errors import echo
    from meta_memory.firewall.service import MAX_REFUSAL_RULE_CHARS, refused_source

    shown = refused_source("provenance", "k\U000f0041\x1b[2J\u202e unknown")
    assert shown == "tool result refused: provenance: k\\U000f0041\\x1b[2J\\u202e unknown", shown
    long = refused_source(None, "r" * (MAX_REFUSAL_RULE_CHARS + 5))
    assert long == "tool result refused: " + "r" * MAX_REFUSAL_RULE_CHARS + "...", long
    assert refused_source(None, "x\u200by") == "tool result refused: " + echo("x\u200by")
