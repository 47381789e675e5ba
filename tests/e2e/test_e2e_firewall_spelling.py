"""Through the real gateway: a builtin web tool taints in any spelling, the opt-in
``content_trust.default = "untrusted"`` posture, and sessions whose tool results are unreported."""

from __future__ import annotations

from typing import Any, Callable

import pytest

from e2e_support import Rpc, uid
from meta_memory.errors import echo

SPELLINGS = ["WebFetch", "WEB_FETCH", "web-fetch", " web_fetch ", "web\u200bfetch", "ｗｅｂ＿ｆｅｔｃｈ", "HttpRequest",
             "Web.Search",
             # letters of other scripts that look Latin: Cyrillic e, Cyrillic s/e/a/c, Greek capitals
             "w\u0435b_fetch", "web_\u0455\u0435\u0430r\u0441h", "\u0397TTP_REQUEST"]


@pytest.mark.parametrize("name", SPELLINGS)
def test_a_builtin_in_any_spelling_taints_and_quarantines(rpc: Rpc, name: str) -> None:
    ident, session = uid(), uid("sess")
    out = rpc.tool_result(ident, session, name)
    assert out["trusted"] is False and out["session_tainted"] is True
    # the RPC trims the name; the source shows its invisible characters escaped (a zero-width space as \u200b)
    assert out["source"] == f"web tool '{echo(name.strip(), len(name))}'"
    text = rpc.tool(ident, {"action": "remember", "title": "Probe", "body": "after a web page"}, session)["text"]
    assert "QUARANTINED pending review (session tainted by web tool" in text


def test_a_listed_trusted_name_cannot_launder_a_builtin_spelling(rpc_with: Callable[[str], Rpc]) -> None:
    fw = rpc_with('[agent_memory.content_trust]\ntrusted_tools = ["WebFetch", "web-fetch"]\n')
    ident, session = uid(), uid("sess")
    assert fw.tool_result(ident, session, "WebFetch")["trusted"] is False


def test_strict_default_trusts_only_listed_tools_and_servers(rpc_with: Callable[[str], Rpc]) -> None:
    fw = rpc_with('[agent_memory.content_trust]\ndefault = "untrusted"\ntrusted_tools = ["Calculator"]\n'
                  'trusted_mcp_servers = ["knowledge_graph"]\n')
    cases: list[tuple[str, dict[str, Any], bool]] = [
        ("calculator", {}, True),
        ("CALCULATOR", {}, True),
        ("search_docs", {"provenance": {"kind": "mcp", "source_id": "knowledge_graph"}}, True),
        ("mcp__knowledge_graph__query", {}, True),
        ("read_file", {}, False),
        ("read_file", {"provenance": {"kind": "builtin", "source_id": "core"}}, False),
        ("mcp__rogue__query", {}, False),
        # a look-alike of a trusted server or tool is not trusted; a look-alike MCP prefix is still MCP
        ("mcp__kn\u043ewledge_graph__query", {}, False),
        ("search_docs", {"provenance": {"kind": "mcp", "source_id": "kn\u043ewledge_graph"}}, False),
        ("\u0441alculator", {}, False),
        ("web_fetch", {}, False),
    ]
    for name, extra, trusted in cases:
        ident, session = uid(), uid("sess")
        out = fw.tool_result(ident, session, name, **extra)
        assert out["trusted"] is trusted, (name, out)
        text = fw.tool(ident, {"action": "remember", "title": "Probe", "body": f"after {name}"}, session)["text"]
        assert ("QUARANTINED" in text) is (not trusted), (name, text)
    assert fw.tool_result(uid(), uid("sess"), "read_file")["source"] == \
        "unlisted tool 'read_file' (content_trust.default = untrusted)"


def test_a_bad_default_refuses_to_start(tmp_path: Any) -> None:
    from support import start_gateway, write_config

    config = write_config(tmp_path / "bad.toml", '[agent_memory.content_trust]\ndefault = "paranoid"\n')
    gw = start_gateway(tmp_path / "state", config=config, expect_failure=True)
    assert gw.proc.returncode != 0
    assert "content_trust.default must be 'trusted' or 'untrusted'" in gw.proc.stderr.read()


def test_a_session_with_unreported_tool_results_is_tainted_from_the_start(rpc: Rpc) -> None:
    ident, session = uid(), uid("sess")
    noted = rpc.result("meta/session/note", {"identity": ident, "session_key": session, "tool_results": "unreported"})
    assert noted["tainted"] is True
    text = rpc.tool(ident, {"action": "remember", "title": "Editor", "body": "the user edits in helix"}, session)["text"]
    assert "QUARANTINED pending review (session tainted by unreported tool results" in text
    # noting it again as reported does not launder it, and neither does a reset: its tool results are
    # still unreported after a fresh-context boundary, so it is tainted again at once
    assert rpc.result("meta/session/note", {"identity": ident, "session_key": session,
                                            "tool_results": "reported"})["tainted"] is True
    assert rpc.result("meta/session/reset", {"identity": ident, "session_key": session})["tainted"] is True
    # application writes are never quarantined by this machinery
    assert rpc.remember(ident, "App write", "written by the application")["memory_id"]


def test_tool_results_takes_only_the_two_values(rpc: Rpc) -> None:
    err = rpc.error("meta/session/note", {"identity": uid(), "session_key": "s", "tool_results": "none"})
    assert err["code"] == -32602 and err["data"]["field"] == "tool_results"
