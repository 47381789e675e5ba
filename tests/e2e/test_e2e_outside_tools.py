"""Outside-content tools the spec does not name taint their session by default, through the real
gateway: the shipped ``content_trust.default_untrusted_tools`` list (the frameworks' and MCP servers'
web, mail and chat tools) in any spelling, after the spec's rules (an operator's ``trusted_tools``
still wins; the list can be replaced or emptied); ``meta/status`` reports the tool names trusted only
because no rule names them, with counts, and ``serve`` warns at start when no rule names any tool."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from e2e_support import Rpc, uid
from support import GatewayProcess, start_gateway, write_config

# The names, then the frameworks' and MCP servers' (see firewall/outside_tools.py), then spellings.
OUTSIDE = [
    "browser", "fetch_url", "read_url", "google_search", "tavily_search", "email_read", "slack_read",
    "WebFetch", "WebSearch", "web_search_preview", "file_search", "computer_use_preview",
    "tavily_search_results_json", "duckduckgo_search", "requests_get", "search_gmail", "gmail_search",
    "puppeteer_navigate", "browser_navigate", "brave_web_search", "slack_get_channel_history",
    "puppeteer.navigate", "brave-search/brave_web_search", "playwright:browser_snapshot",
    "Tavily-Search", "ＦＥＴＣＨ＿ＵＲＬ", "brоwser",  # a Cyrillic о
    "webFetch", "Duck Duck Go Search",
    # coding agents', frameworks' and code hosts' names; a `tool` suffix; other hosts' MCP spellings
    "google_web_search", "visit_webpage", "use_mcp_tool", "browser_action", "read_url_content",
    "Read website content", "Search the internet with Serper", "duckduckgo_full_search", "TavilyToolSpec.search",
    "get_issue", "github.get_issue", "get_pull_request_comments", "jira_get_issue", "web_search_exa",
    "web_search_tool", "WebFetchTool", "mcp_github_get_issue", "mcp-fetch-fetch", "Task",
]


# Names a host reported trusted: a listed server's prefix (``<server>_<tool>``), CrewAI's tool classes,
# LangChain's PubMed tool, Slack's Web API method names, the search services' own names and a bare ``search``;
# then other spellings of the prefix (case, separators, camel-case humps, fullwidth, a look-alike letter).
SERVER_PREFIXED_AND_FRAMEWORK = [
    "playwright_navigate", "github_get_issue", "slack_read_channel", "conversations_history", "exa_search",
    "serper", "SerperDevTool", "WebsiteSearchTool", "FirecrawlScrapeWebsiteTool", "pub_med", "search",
    "ScrapeWebsiteTool", "FirecrawlSearchTool", "EXASearchTool", "tavily_search_results_json", "duckduckgo_search",
    "wikipedia", "arxiv", "google_search", "brave_search", "web_search", "browse", "fetch_url",
    "GITHUB_GET_ISSUE", "GithubGetIssue", "gitlab-list-merge-requests", "jira_get_comments",
    "confluence-read-page", "gmail_list_threads", "tavily-map", "firecrawl_map", "puppeteer_click",
    "brave_search_news", "ＳＬＡＣＫ＿get_users", "ѕlack_list_channels",  # fullwidth; a Cyrillic ѕ
    "conversations.history", "search_v2",
    # a server, an alias or a word naming outside content as any part of the name; ``fetch`` ending it
    "get_github_issue", "read_slack_channel", "url_fetch", "urlFetch", "visit_page", "get_webpage", "imap_fetch",
    "browser_use", "gh_issue_view", "discord_read", "notion_search", "rss_read", "download", "youtube_transcript",
    "fetcher", "xweb_fetch", "arxiv_search", "get_page", "GHIssueView", "read_gіthub_issue",  # a Cyrillic і
]
# Ordinary names: a server's letters with no marked end, a verb (``fetch``) leading and a three-letter name
# (``exa``), ``page`` without a reading verb, and a ``search`` namespaced by something else.
ORDINARY = ["calculator", "get_time", "lookup_order", "memory", "playwrightish", "slacker", "githubber",
            "fetch_order", "exa_answer", "kb.search", "NotesToolSpec.search", "fetch_user", "fetcher_of_dates",
            "page_oncall", "list_pages", "myslack", "ghost_mode", "read_file"]


def _taints_and_quarantines(rpc: Rpc, tool: str) -> tuple[dict, dict]:
    ident, session = uid(), uid("sess")
    verdict = rpc.tool_result(ident, session, tool)
    write = rpc.tool(ident, {"action": "remember", "title": "Page claim", "body": "The office moved to pier 9."},
                     session)
    return verdict, write


@pytest.mark.parametrize("tool", OUTSIDE)
def test_an_outside_content_tool_taints_by_default(rpc: Rpc, tool: str) -> None:
    verdict, write = _taints_and_quarantines(rpc, tool)
    assert verdict["trusted"] is False and verdict["session_tainted"] is True, verdict
    assert any(why in verdict["source"] for why in ("default_untrusted_tools", "web tool", "MCP server")), verdict
    assert write["is_error"] is False and "QUARANTINED" in write["text"], write


@pytest.mark.parametrize("tool", SERVER_PREFIXED_AND_FRAMEWORK)
def test_a_listed_servers_prefix_and_the_frameworks_web_tools_taint(rpc: Rpc, tool: str) -> None:
    verdict, write = _taints_and_quarantines(rpc, tool)
    assert verdict["trusted"] is False and verdict["session_tainted"] is True, verdict
    assert any(why in verdict["source"] for why in ("default_untrusted_tools", "web tool")), verdict
    assert write["is_error"] is False and "QUARANTINED" in write["text"], write


@pytest.mark.parametrize("tool", ORDINARY)
def test_a_pure_unlisted_tool_stays_trusted_as_the_spec_says(rpc: Rpc, tool: str) -> None:
    verdict, write = _taints_and_quarantines(rpc, tool)
    assert verdict["trusted"] is True and verdict["session_tainted"] is False
    assert "QUARANTINED" not in write["text"]


def test_the_operator_list_replaces_the_shipped_one_and_trusted_tools_wins(rpc_with: Callable[[str], Rpc]) -> None:
    rpc = rpc_with('[agent_memory.content_trust]\ndefault_untrusted_tools = ["crm_notes_reader"]\n'
                   'trusted_tools = ["tavily_search"]\n')
    assert rpc.tool_result(uid(), uid("sess"), "crm-notes-reader")["trusted"] is False
    assert rpc.tool_result(uid(), uid("sess"), "browser")["trusted"] is True  # replaced, not merged
    assert rpc.tool_result(uid(), uid("sess"), "tavily_search")["trusted"] is True
    assert rpc.tool_result(uid(), uid("sess"), "web_fetch")["trusted"] is False  # the builtins stay
    assert rpc.tool_result(uid(), uid("sess"), "slack_read_channel")["trusted"] is True  # a prefix needs its server
    off = rpc_with("[agent_memory.content_trust]\ndefault_untrusted_tools = []\n")
    assert off.tool_result(uid(), uid("sess"), "browser")["trusted"] is True
    assert off.tool_result(uid(), uid("sess"), "github_get_issue")["trusted"] is True
    mine = rpc_with('[agent_memory.content_trust]\ndefault_untrusted_tools = ["Slack"]\n'
                    'trusted_tools = ["slack_post_message"]\n')
    assert mine.tool_result(uid(), uid("sess"), "slack_read_channel")["trusted"] is False
    assert mine.tool_result(uid(), uid("sess"), "slack_post_message")["trusted"] is True  # the operator's word


def test_a_malformed_list_refuses_to_start(tmp_path) -> None:  # type: ignore[no-untyped-def]
    config = write_config(tmp_path / "bad.toml", "[agent_memory.content_trust]\ndefault_untrusted_tools = \"browser\"\n")
    with pytest.raises(AssertionError, match="default_untrusted_tools must be an array"):
        start_gateway(tmp_path / "state", config=config)


def test_status_reports_tools_trusted_only_because_no_rule_names_them(rpc_with: Callable[[str], Rpc]) -> None:
    rpc = rpc_with("")
    ident, session = uid(), uid("sess")
    before = rpc.result("meta/status", {})["agent_memory"]["content_trust"]
    assert before["names_any_tool"] is False and before["default"] == "trusted"
    assert before["default_untrusted_tools"] > 50 and before["unlisted_trusted_tools"] == []
    assert "names none of the host's tools" in before["warning"]
    for tool in ("calculator", "calculator", "Calculator", "lookup_order", "browser", "web_fetch"):
        rpc.tool_result(ident, session, tool)
    report = rpc.result("meta/status", {})["agent_memory"]["content_trust"]
    assert report["unlisted_trusted_tools"] == [{"name": "calculator", "count": 3},
                                                {"name": "lookup_order", "count": 1}]
    assert "'calculator'" in report["warning"] and "'lookup_order'" in report["warning"]


def test_status_is_quiet_once_rules_name_the_tools(rpc_with: Callable[[str], Rpc]) -> None:
    rpc = rpc_with('[agent_memory.content_trust]\ntrusted_tools = ["calculator"]\nuntrusted_tools = ["crm"]\n')
    rpc.tool_result(uid(), uid("sess"), "calculator")
    report = rpc.result("meta/status", {})["agent_memory"]["content_trust"]
    assert report["names_any_tool"] is True and report["unlisted_trusted_tools"] == []
    assert report["warning"] is None
    strict = rpc_with('[agent_memory.content_trust]\ndefault = "untrusted"\n')
    strict.tool_result(uid(), uid("sess"), "calculator")
    assert strict.result("meta/status", {})["agent_memory"]["content_trust"]["warning"] is None


def test_a_flood_of_tool_names_stays_bounded(rpc_with: Callable[[str], Rpc]) -> None:
    rpc = rpc_with("")
    ident, session = uid(), uid("sess")
    for n in range(300):
        rpc.tool_result(ident, session, f"tool_{n}_" + "x" * 300)
    report = rpc.result("meta/status", {})["agent_memory"]["content_trust"]
    assert len(report["unlisted_trusted_tools"]) == 256 and report["unlisted_trusted_tools_other"] == 44
    assert max(len(r["name"]) for r in report["unlisted_trusted_tools"]) <= 128


def test_serve_warns_at_start_when_no_rule_names_the_hosts_tools(tmp_path) -> None:  # type: ignore[no-untyped-def]
    def log(gw: GatewayProcess) -> str:
        gw.stop()
        time.sleep(0.2)  # the drain threads read the last lines
        return "".join(gw.proc.log_tail)  # type: ignore[attr-defined]

    assert "no [agent_memory.content_trust] rule names the host's tools" in log(start_gateway(tmp_path / "plain"))
    config = write_config(tmp_path / "named.toml", '[agent_memory.content_trust]\ntrusted_tools = ["calculator"]\n')
    assert "content_trust" not in log(start_gateway(tmp_path / "named", config=config))
    useless = write_config(tmp_path / "useless.toml", '[agent_memory.content_trust]\ndefault = "untrusted"\n'
                           'trusted_tools = ["WebFetch", "crm", "calculator"]\nuntrusted_tools = ["CRM"]\n')
    said = log(start_gateway(tmp_path / "useless", config=useless))
    assert "can never trust their tool" in said and "'webfetch'" in said and "'crm'" in said, said
    assert "'calculator'" not in said


def test_status_names_trusted_tools_entries_that_can_never_take_effect(rpc_with: Callable[[str], Rpc]) -> None:
    rpc = rpc_with('[agent_memory.content_trust]\ntrusted_tools = ["web_fetch", "my_tool", "calculator"]\n'
                   'untrusted_tools = ["My-Tool"]\n')
    warning = rpc.result("meta/status", {})["agent_memory"]["content_trust"]["warning"]
    assert "'webfetch' (an always-untrusted builtin web tool)" in warning, warning
    assert "'mytool' (also in untrusted_tools, which wins)" in warning and "calculator" not in warning, warning


def test_a_sub_agents_output_carries_its_taint_to_the_parent(rpc: Rpc) -> None:
    """Another agent's output, reported with typed agent provenance, taints the receiving session when that
    agent has a live taint in any realm, or when no session state knows it; the name rules still apply."""
    sub, parent = uid("sub"), uid("parent")
    assert rpc.tool_result(sub, uid("sess"), "web_fetch")["session_tainted"] is True
    session = uid("sess")
    verdict = rpc.tool_result(parent, session, "ask_researcher", provenance={"kind": "agent", "source_id": sub})
    assert verdict["trusted"] is False and verdict["session_tainted"] is True, verdict
    assert f"output of agent '{sub}'" in verdict["source"] and "web_fetch" in verdict["source"], verdict
    write = rpc.tool(parent, {"action": "remember", "title": "Refunds", "body": "Refunds go to IBAN zq9999x."},
                     session)
    assert "QUARANTINED" in write["text"], write
    # a sub-agent tainted in another realm taints the parent's session here too
    far = uid("sub")
    rpc.tool_result(far, uid("sess"), "web_fetch", realm="r2")
    there = rpc.tool_result(uid("parent"), uid("sess"), "ask_researcher", provenance={"kind": "agent", "source_id": far})
    assert there["trusted"] is False and f"output of agent '{far}'" in there["source"], there
    # a clean sub-agent whose session is known: its output is as trusted as the tool's name allows
    clean = uid("sub")
    assert rpc.tool_result(clean, uid("sess"), "calculator")["session_tainted"] is False
    ok = rpc.tool_result(uid("parent"), uid("sess"), "ask_researcher", provenance={"kind": "agent", "source_id": clean})
    assert ok["trusted"] is True and ok["session_tainted"] is False, ok
    named = rpc.tool_result(uid("parent"), uid("sess"), "Task", provenance={"kind": "agent", "source_id": clean})
    assert named["trusted"] is False and "default_untrusted_tools" in named["source"], named  # the name rule stands


@pytest.mark.parametrize("provenance", [{"kind": "agent"}, {"kind": "agent", "source_id": "never-seen-agent"},
                                        {"kind": "AGENT", "source_id": "rt:never-seen:3"}])
def test_an_agent_of_unknown_taint_never_launders_a_result(rpc_with: Callable[[str], Rpc],
                                                          provenance: dict[str, str]) -> None:
    """Naming an agent no session state knows (or none) cannot make an untrusted name trusted, under either
    default, and its output is untrusted even for a tool no rule names."""
    strict = rpc_with('[agent_memory.content_trust]\ndefault = "untrusted"\ntrusted_mcp_servers = ["kg"]\n')
    for tool in ("fetch_url", "mcp__evil__fetch", "firecrawl_scrape", "some_unlisted_tool", "mcp_kg_evil_fetch"):
        out = strict.tool_result(uid(), uid("sess"), tool, provenance=provenance)
        assert out["trusted"] is False and out["session_tainted"] is True, (tool, out)
    out = rpc_with("").tool_result(uid(), uid("sess"), "some_unlisted_tool", provenance=provenance)
    assert out["trusted"] is False and "unknown taint" in out["source"], out


def test_an_agent_provenance_naming_no_identity_is_refused(rpc: Rpc) -> None:
    err = rpc.error("meta/turn/tool_result", {"identity": uid(), "session_key": uid("sess"), "tool_name": "ask",
                                             "provenance": {"kind": "agent", "source_id": "bob\n"}})
    assert err["code"] == -32602 and "provenance.source_id" in err["message"], err
    huge = rpc.error("meta/turn/tool_result", {"identity": uid(), "session_key": uid("sess"), "tool_name": "ask",
                                              "provenance": {"kind": "agent", "source_id": "a" * 100_000}})
    assert huge["code"] == -32602 and "provenance.source_id" in huge["message"] and "512 bytes" in huge["message"]


def test_a_trusted_delegation_tool_is_judged_by_its_agents_taint(rpc_with: Callable[[str], Rpc]) -> None:
    """``trusted_tools = ["Task"]`` lifts the name rule only: a clean known sub-agent's answer is trusted, a
    tainted one's taints the parent, and an unknown one's is of unknown taint."""
    rpc = rpc_with('[agent_memory.content_trust]\ntrusted_tools = ["Task"]\n')
    clean, dirty = uid("sub"), uid("sub")
    rpc.tool_result(clean, uid("sess"), "calculator")
    rpc.tool_result(dirty, uid("sess"), "web_fetch")
    agent = {"kind": "agent"}
    assert rpc.tool_result(uid(), uid("sess"), "Task", provenance={**agent, "source_id": clean})["trusted"] is True
    out = rpc.tool_result(uid(), uid("sess"), "Task", provenance={**agent, "source_id": dirty})
    assert out["trusted"] is False and f"output of agent '{dirty}'" in out["source"], out
    unknown = rpc.tool_result(uid(), uid("sess"), "Task", provenance={**agent, "source_id": uid("nobody")})
    assert unknown["trusted"] is False and "unknown taint" in unknown["source"], unknown
    assert rpc.tool_result(uid(), uid("sess"), "Task")["trusted"] is True  # the operator's word, no provenance


TOKEN = "ghp_Zx81Qm27Lk93Vb45Nc61Rt08Yu52Wp74Ed36"  # a GitHub token's shape


def test_a_credential_in_a_tool_name_or_server_is_never_recorded(rpc_with: Callable[[str], Rpc]) -> None:
    """An MCP server named by a URL with its token, or a tool whose name carries a key: the verdict, the
    quarantine reason, the timeline and ``meta/status`` never hold the credential."""
    rpc = rpc_with("")
    ident, session = uid(), uid("sess")
    verdict = rpc.tool_result(ident, session, "fetch",
                              provenance={"kind": "mcp", "source_id": f"https://ops:{TOKEN}@mcp.example.com"})
    assert verdict["trusted"] is False and verdict["session_tainted"] is True, verdict
    assert "github-token" in verdict["source"] and TOKEN not in verdict["source"], verdict
    write = rpc.tool(ident, {"action": "remember", "title": "Page claim", "body": "The office moved."}, session)
    assert "QUARANTINED" in write["text"] and TOKEN not in write["text"], write
    stripe = "lookup_sk_live_51HxZq8KLm2Pn4Rt6Vb8Nc0Wq"
    assert rpc.tool_result(uid(), uid("sess"), stripe)["trusted"] is True  # no rule names it: trusted as before
    status = rpc.result("meta/status", {})
    events = rpc.result("meta/events/list", {"limit": 1000})
    for shown in (status, events):
        text = str(shown)
        assert TOKEN not in text and "sk_live_51Hx" not in text
