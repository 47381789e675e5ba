"""The prompt-injection firewall over a real socket:
every classification precedence rule, the session-taint lifecycle, both write postures."""

from __future__ import annotations

from typing import Any

import pytest

from e2e_support import Rpc, memory_id_of, uid

POLICY = """
[agent_memory]
llm_writes = "observed"

[agent_memory.content_trust]
trusted_mcp_servers = ["knowledge_graph"]
untrusted_tools = ["scrape_page", "double_listed"]
trusted_tools = ["web_fetch", "web_search", "fetch", "http_request", "double_listed", "mcp__rogue__vetted", "pinned_tool"]
"""

MCP_ROGUE = {"kind": "mcp", "source_id": "rogue"}
MCP_KG = {"kind": "mcp", "source_id": "knowledge_graph"}

# (tool_name, extra params, trusted, source)
PRECEDENCE = [
    # 1. provider-native server-tool content: always untrusted, even a trusted name
    ("pinned_tool", {"server_tool": True}, False, "provider server tool 'pinned_tool'"),
    ("google_search", {"server_tool": True}, False, "provider server tool 'google_search'"),
    # 2. builtin web tools: untrusted although trusted_tools lists them
    ("web_fetch", {}, False, "web tool 'web_fetch'"),
    ("web_search", {}, False, "web tool 'web_search'"),
    ("fetch", {}, False, "web tool 'fetch'"),
    ("http_request", {}, False, "web tool 'http_request'"),
    ("web_fetch", {"provenance": MCP_KG}, False, "web tool 'web_fetch'"),
    # 3. untrusted_tools, and it beats trusted_tools
    ("scrape_page", {}, False, "configured untrusted tool 'scrape_page'"),
    ("double_listed", {}, False, "configured untrusted tool 'double_listed'"),
    ("scrape_page", {"provenance": MCP_KG}, False, "configured untrusted tool 'scrape_page'"),
    # 4. trusted_tools beats server rules
    ("mcp__rogue__vetted", {}, True, None),
    ("pinned_tool", {"provenance": MCP_ROGUE}, True, None),
    # 5. typed MCP provenance: source_id is the server even for an unqualified name
    ("search_docs", {"provenance": MCP_ROGUE}, False, "MCP server 'rogue' (tool 'search_docs')"),
    ("search_docs", {"provenance": MCP_KG}, True, None),
    ("mcp__knowledge_graph__query", {"provenance": MCP_ROGUE}, False,
     "MCP server 'rogue' (tool 'mcp__knowledge_graph__query')"),
    ("mcp__rogue__query", {"provenance": MCP_KG}, True, None),
    # 6. qualified-name fallback when provenance is absent or not MCP
    ("mcp__rogue__query", {}, False, "MCP server 'rogue' (tool 'mcp__rogue__query')"),
    ("mcp__rogue__query", {"provenance": {"kind": "builtin", "source_id": "knowledge_graph"}}, False,
     "MCP server 'rogue' (tool 'mcp__rogue__query')"),
    ("mcp__rogue", {}, False, "MCP server 'rogue' (tool 'mcp__rogue')"),
    ("mcp__knowledge_graph__query", {}, True, None),
    # 7. anything else is trusted; builtin names match in any spelling, even when listed as trusted
    ("calculator", {}, True, None),
    ("Web_Fetch", {}, False, "web tool 'Web_Fetch'"),
    ("search_docs", {"provenance": {"kind": "function", "source_id": "rogue"}}, True, None),
    # tool errors classify like results
    ("web_search", {"is_error": True}, False, "web tool 'web_search'"),
    ("calculator", {"is_error": True}, True, None),
]


@pytest.fixture(scope="module")
def fw(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from support import start_gateway, write_config

    base = tmp_path_factory.mktemp("fw")
    gw = start_gateway(base / "state", config=write_config(base / "config.toml", POLICY))
    client = Rpc(gw)
    yield client
    client.close()
    gw.stop()


@pytest.mark.parametrize("tool_name,extra,trusted,source", PRECEDENCE)
def test_classification_precedence(fw: Rpc, tool_name: str, extra: dict, trusted: bool, source: str | None) -> None:
    ident, session = uid(), uid("sess")
    out = fw.tool_result(ident, session, tool_name, **extra)
    expected: dict[str, Any] = {"trusted": trusted, "session_tainted": not trusted}
    if source is not None:
        expected["source"] = source
    assert out == expected
    # what the classification did to the session shows in the next LLM write
    text = fw.tool(ident, {"action": "remember", "title": "Probe", "body": f"probe after {tool_name}"}, session)["text"]
    if trusted:
        assert "QUARANTINED" not in text
    else:
        assert f"QUARANTINED pending review (session tainted by {source})" in text


def test_taint_lifecycle(fw: Rpc) -> None:
    ident, s1, s2 = uid(), uid("sess"), uid("sess")

    def write(session: str, n: int) -> str:
        return fw.tool(ident, {"action": "remember", "title": f"Fact {n}", "body": f"lifecycle fact {n}"}, session)["text"]

    assert fw.result("meta/session/note", {"identity": ident, "session_key": s1}) == \
        {"identity": ident, "session_key": s1, "tainted": False, "derived_tainted": False}
    assert "QUARANTINED" not in write(s1, 1)
    assert fw.tool_result(ident, s1, "calculator")["session_tainted"] is False
    assert fw.tool_result(ident, s1, "web_fetch")["session_tainted"] is True
    # sticky: a later trusted result does not clean it; first taint wins
    assert fw.tool_result(ident, s1, "calculator") == {"trusted": True, "session_tainted": True}
    fw.tool_result(ident, s1, "http_request")
    assert "(session tainted by web tool 'web_fetch')" in write(s1, 2)
    # compaction keeps taint
    assert fw.result("meta/session/compacted", {"identity": ident, "session_key": s1})["tainted"] is True
    assert "QUARANTINED" in write(s1, 3)
    # rotating to another session starts clean; the old session stays tainted
    assert fw.result("meta/session/note", {"identity": ident, "session_key": s2})["tainted"] is False
    assert "QUARANTINED" not in write(s2, 4)
    assert fw.result("meta/session/note", {"identity": ident, "session_key": s1})["tainted"] is True
    assert "QUARANTINED" in write(s1, 5)
    # a fresh-context boundary clears it
    assert fw.result("meta/session/reset", {"identity": ident, "session_key": s1})["tainted"] is False
    assert "QUARANTINED" not in write(s1, 6)
    # another identity never inherited any of it
    assert "QUARANTINED" not in fw.tool(uid(), {"action": "remember", "title": "x", "body": "other identity"}, s1)["text"]


def test_taint_events_on_the_timeline(fw: Rpc) -> None:
    ident, s1, s2 = uid(), uid("sess"), uid("sess")
    fw.result("meta/session/note", {"identity": ident, "session_key": s1})
    fw.tool_result(ident, s1, "web_search")
    fw.tool_result(ident, s1, "fetch")  # already tainted: no second transition
    mid = memory_id_of(fw.tool(ident, {"action": "remember", "title": "t", "body": "event probe"}, s1)["text"])
    fw.result("meta/session/note", {"identity": ident, "session_key": s2})
    fw.tool_result(ident, s2, "web_fetch")
    fw.result("meta/session/reset", {"identity": ident, "session_key": s2})
    events = [e for e in fw.result("meta/events/list", {"limit": 1000})["events"] if e["identity"] == ident]
    taint = [(e["data"]["kind"], e["data"]["session_key"], e["data"].get("source")) for e in events
             if e["event_type"] == "memory.taint.transition"]
    assert taint[0] == ("tainted", s1, "web tool 'web_search'")
    assert [k for k, _, _ in taint].count("rotated_clean") == 1  # s1 (tainted) -> s2 (clean)
    assert ("tainted", s2, "web tool 'web_fetch'") in taint
    assert taint[-1][0] == "reset_boundary" and taint[-1][1] == s2
    assert sum(1 for k, s, _ in taint if k == "tainted" and s == s1) == 1
    quarantined = [e["data"] for e in events if e["event_type"] == "memory.write.quarantined"]
    assert quarantined == [{"realm": "default", "record_id": mid, "author": f"agent:{ident}",
                            "reason": "session tainted by web tool 'web_search'"}]


def test_observed_posture_quarantines_only_tainted_sessions(fw: Rpc) -> None:
    ident, session = uid(), uid("sess")
    clean = memory_id_of(fw.tool(ident, {"action": "remember", "title": "Clean", "body": "the owl hoots"}, session)["text"])
    assert fw.record_row(clean)["status_kind"] == "active"
    fw.tool_result(ident, session, "scrape_page")
    text = fw.tool(ident, {"action": "update", "memory_id": clean, "title": "Clean", "body": "the owl screeches"}, session)["text"]
    assert text.startswith("Updated: new record memory ")
    assert text.endswith(" The prior record remains active until review.")
    new = memory_id_of(text)
    assert fw.record_row(new)["status_kind"] == "quarantined"
    assert fw.record_row(new)["supersedes"] == clean
    assert fw.record_row(clean)["status_kind"] == "active"
    assert fw.recall_ids(ident, "owl") == [clean]
    # app writes from the same tainted identity are never quarantined
    app = fw.remember(ident, "App", "the owl was ringed in 2025")["memory_id"]
    assert fw.record_row(app)["status_kind"] == "active"


def test_quarantined_posture_quarantines_every_llm_write(rpc_with) -> None:
    rpc = rpc_with('[agent_memory]\nllm_writes = "quarantined"\n')
    ident, session = uid(), uid("sess")
    assert rpc.tool_result(ident, session, "calculator")["session_tainted"] is False
    text = rpc.tool(ident, {"action": "remember", "title": "Heron", "body": "the heron fishes"}, session)["text"]
    assert "QUARANTINED pending review (llm_writes=quarantined policy)" in text
    assert rpc.record_row(memory_id_of(text))["status_kind"] == "quarantined"
    text = rpc.tool(ident, {"action": "remember", "title": "Heron", "body": "no session either"})["text"]
    assert "QUARANTINED" in text
    assert rpc.recall_ids(ident, "heron") == []
    app = rpc.remember(ident, "Heron", "the heron fishes at dawn")["memory_id"]
    assert rpc.record_row(app)["status_kind"] == "active"
    assert rpc.recall_ids(ident, "heron") == [app]


def test_content_trust_config_is_parsed_strictly(tmp_path) -> None:
    from support import start_gateway, write_config

    for text, needle in [
        ('[agent_memory.content_trust]\ntrusted_servers = ["x"]\n', "unsupported content_trust fields: trusted_servers"),
        ('[agent_memory.content_trust]\nuntrusted_tools = "x"\n', "content_trust.untrusted_tools must be an array"),
        ('[agent_memory.content_trust]\ntrusted_tools = [" "]\n', "content_trust.trusted_tools entries must be non-empty strings"),
    ]:
        config = write_config(tmp_path / "bad.toml", text)
        gw = start_gateway(tmp_path / "state", config=config, expect_failure=True)
        assert gw.proc.returncode == 1
        assert needle in gw.proc.stderr.read()


def test_recorder_tool_false_disables_the_tool(rpc_with) -> None:
    rpc = rpc_with("[agent_memory]\nrecorder_tool = false\n")
    err = rpc.error("meta/agent_memory/tool_schema")
    assert err["code"] == -32601 and err["data"]["kind"] == "method_not_found"
    assert "recorder_tool = false" in err["message"]
    err = rpc.error("meta/agent_memory/tool", {"identity": "agent:x", "arguments": {"action": "recall"}})
    assert err["code"] == -32601 and err["data"]["method"] == "meta/agent_memory/tool"
    methods = rpc.result("meta/capabilities")["methods"]
    assert "meta/agent_memory/tool" not in methods and "meta/agent_memory/tool_schema" not in methods
    assert "meta/agent_memory/remember" in methods
    # the rest of agent memory still works
    mid = rpc.remember("agent:x", "Still", "app writes still work")["memory_id"]
    assert rpc.recall_ids("agent:x", "app writes") == [mid]
