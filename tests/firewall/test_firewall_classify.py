"""Content-trust classification precedence (seed: Content trust and session taint)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from meta_memory.errors import echo
from meta_memory.firewall.classify import (
    ALWAYS_UNTRUSTED_TOOLS,
    Classification,
    ContentTrustPolicy,
    ProvenanceError,
    ToolProvenance,
    classify_tool_result,
    mcp_server_of,
    name_key,
)

EMPTY = ContentTrustPolicy()
MCP_KG = ToolProvenance("mcp", "kg")


def policy(**names: list[str]) -> ContentTrustPolicy:
    return ContentTrustPolicy.from_config(names)


@pytest.mark.parametrize("name", sorted(ALWAYS_UNTRUSTED_TOOLS))
def test_builtin_web_tools_are_untrusted_with_web_tool_source(name: str) -> None:
    assert classify_tool_result(name, None, EMPTY) == Classification(False, f"web tool '{name}'")


@pytest.mark.parametrize("name", sorted(ALWAYS_UNTRUSTED_TOOLS))
def test_trusted_tools_cannot_override_a_builtin_web_tool(name: str) -> None:
    p = policy(trusted_tools=[name], trusted_mcp_servers=["kg"])
    got = classify_tool_result(name, ToolProvenance("mcp", "kg"), p)
    assert not got.trusted
    assert got.source == f"web tool '{name}'"


def test_builtin_names_are_matched_by_key_not_by_prefix() -> None:
    assert not classify_tool_result("Web_Fetch", None, EMPTY).trusted
    builtins_only = policy(default_untrusted_tools=[])  # ``web`` is a part the shipped list reads (rule 7)
    assert classify_tool_result("web_fetcher", None, builtins_only).trusted
    assert classify_tool_result("prefetch", None, EMPTY).trusted
    assert not classify_tool_result("web_fetch2", None, EMPTY).trusted  # a version of the tool, not a prefix


def test_untrusted_tools_beat_trusted_tools() -> None:
    p = policy(untrusted_tools=["scrape_page"], trusted_tools=["scrape_page"])
    assert classify_tool_result("scrape_page", None, p) == Classification(
        False, "configured untrusted tool 'scrape_page'"
    )


def test_untrusted_tools_beat_a_trusted_mcp_server() -> None:
    p = policy(untrusted_tools=["lookup"], trusted_mcp_servers=["kg"])
    assert not classify_tool_result("lookup", MCP_KG, p).trusted


def test_trusted_tools_beat_an_untrusted_mcp_server() -> None:
    p = policy(trusted_tools=["lookup", "mcp__scraper__get"])
    assert classify_tool_result("lookup", ToolProvenance("mcp", "scraper"), p).trusted
    assert classify_tool_result("mcp__scraper__get", None, p).trusted


def test_unqualified_name_with_typed_mcp_provenance_from_untrusted_server() -> None:
    got = classify_tool_result("query", ToolProvenance("mcp", "scraper"), policy(trusted_mcp_servers=["kg"]))
    assert got == Classification(False, "MCP server 'scraper' (tool 'query')")


def test_unqualified_name_with_typed_mcp_provenance_from_trusted_server() -> None:
    assert classify_tool_result("query", MCP_KG, policy(trusted_mcp_servers=["kg"])).trusted


def test_typed_provenance_wins_over_the_name_shape() -> None:
    # Name says server "kg", provenance says "evil": provenance decides.
    got = classify_tool_result("mcp__kg__q", ToolProvenance("mcp", "evil"), policy(trusted_mcp_servers=["kg"]))
    assert got == Classification(False, "MCP server 'evil' (tool 'mcp__kg__q')")


@pytest.mark.parametrize("provenance", [None, ToolProvenance("builtin", "core"), ToolProvenance("function", "")])
def test_qualified_name_fallback_when_provenance_absent_or_not_mcp(provenance: ToolProvenance | None) -> None:
    assert classify_tool_result("mcp__kg__q", provenance, policy(trusted_mcp_servers=["kg"])).trusted
    got = classify_tool_result("mcp__kg__q", provenance, EMPTY)
    assert got == Classification(False, "MCP server 'kg' (tool 'mcp__kg__q')")


def test_qualified_name_without_second_separator_uses_the_rest_as_server() -> None:
    assert mcp_server_of("mcp__kg") == "kg"
    assert mcp_server_of("mcp__kg__a__b") == "kg"
    assert mcp_server_of("kg__q") is None
    assert classify_tool_result("mcp__kg", None, policy(trusted_mcp_servers=["kg"])).trusted


def test_everything_else_is_trusted() -> None:
    assert classify_tool_result("calculator", None, EMPTY) == Classification(True, None)
    assert classify_tool_result("calculator", ToolProvenance("builtin", "x"), EMPTY).trusted


def test_provider_server_tool_content_is_always_untrusted() -> None:
    p = policy(trusted_tools=["google_search"], trusted_mcp_servers=["google_search"])
    got = classify_tool_result("google_search", ToolProvenance("mcp", "google_search"), p, server_tool=True)
    assert got == Classification(False, "provider server tool 'google_search'")


def test_policy_accepts_config_objects_and_trims_entries() -> None:
    cfg = SimpleNamespace(trusted_mcp_servers=[" kg "], untrusted_tools=["scrape"], trusted_tools=[])
    p = ContentTrustPolicy.from_config(cfg)
    assert p.trusted_mcp_servers == frozenset({"kg"})
    assert classify_tool_result("lookup", MCP_KG, cfg).trusted  # type: ignore[arg-type]
    assert ContentTrustPolicy.from_config(None) == EMPTY


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"trusted_tools": "x"}, "content_trust.trusted_tools must be an array"),
        ({"untrusted_tools": [""]}, "content_trust.untrusted_tools entries must be non-empty strings"),
        ({"trusted_mcp_servers": [3]}, "content_trust.trusted_mcp_servers entries must be non-empty strings"),
        ({"stores": [], "allow": []}, "unsupported content_trust fields: allow, stores"),
    ],
)
def test_policy_refuses_bad_shapes(config: dict, message: str) -> None:
    with pytest.raises(ValueError) as info:
        ContentTrustPolicy.from_config(config)
    assert str(info.value) == message


def test_provenance_wire_parsing() -> None:
    assert ToolProvenance.parse(None) is None
    assert ToolProvenance.parse({"kind": "MCP", "source_id": " kg "}) == ToolProvenance("MCP", "kg")
    assert ToolProvenance.parse({"kind": "MCP", "source_id": "kg"}).is_mcp  # type: ignore[union-attr]
    for bad, field in [
        ("mcp", "provenance"),
        ({"kind": ""}, "provenance.kind"),
        ({"kind": "mcp"}, "provenance.source_id"),
        ({"kind": "mcp", "source_id": 5}, "provenance.source_id"),
        ({"kind": "mcp", "source_id": "kg", "x": 1}, "provenance"),
    ]:
        with pytest.raises(ProvenanceError) as info:
            ToolProvenance.parse(bad)
        assert info.value.field == field


names = st.text(min_size=0, max_size=20)
name_sets = st.frozensets(st.text(min_size=1, max_size=12), max_size=4)


@given(
    tool=st.sampled_from(sorted(ALWAYS_UNTRUSTED_TOOLS)),
    trusted=name_sets,
    servers=name_sets,
    kind=st.sampled_from(["mcp", "builtin", None]),
)
def test_builtins_are_untrusted_under_any_policy(tool: str, trusted, servers, kind) -> None:
    p = ContentTrustPolicy(servers, frozenset(), trusted | {tool})
    prov = ToolProvenance(kind, next(iter(servers), "s")) if kind else None
    assert classify_tool_result(tool, prov, p) == Classification(False, f"web tool '{tool}'")


@given(tool=names, servers=name_sets, untrusted=name_sets, trusted=name_sets, source=names)
def test_classification_is_total_and_sources_only_on_untrusted(tool, servers, untrusted, trusted, source) -> None:
    p = ContentTrustPolicy(servers, untrusted, trusted)
    for prov in (None, ToolProvenance("mcp", source), ToolProvenance("builtin", source)):
        got = classify_tool_result(tool, prov, p)
        assert (got.source is None) == got.trusted
        key = name_key(tool)
        builtin = key in {name_key(n) for n in ALWAYS_UNTRUSTED_TOOLS}
        if key in p.untrusted_tools and not builtin:
            assert got.source == f"configured untrusted tool '{echo(tool, len(tool))}'"
        if prov is not None and prov.is_mcp and not builtin and key not in p.untrusted_tools | p.trusted_tools:
            assert got.trusted == (name_key(source) in p.trusted_mcp_servers)


@pytest.mark.parametrize("name, server", [
    ("mcp_github_get_issue", "github"), ("mcp-fetch-fetch", "fetch"), ("mcp.kg.query", "kg"),
    ("mcp/kg/query", "kg"), ("mcp:kg:query", "kg"), ("MCP_Kg_Query", "kg"), ("\uff4dcp_kg_q", "kg"),
])
def test_other_hosts_spellings_of_a_qualified_mcp_name_are_mcp_names(name: str, server: str) -> None:
    """``mcp`` and one separator is an MCP tool, always untrusted: where its server ends is not marked, so no
    listed server can vouch for it (``kg`` would vouch for ``kg_evil`` too); typed provenance or
    ``trusted_tools`` can."""
    assert classify_tool_result(name, None, EMPTY) == Classification(False, f"MCP server '{server}' (tool '{name}')")
    assert not classify_tool_result(name, None, policy(trusted_mcp_servers=[server])).trusted
    assert classify_tool_result(name, ToolProvenance("mcp", server), policy(trusted_mcp_servers=[server])).trusted
    assert classify_tool_result(name, None, policy(trusted_tools=[name])).trusted


def test_a_loosely_qualified_name_is_never_trusted_by_a_server_prefix() -> None:
    listed = policy(trusted_mcp_servers=["kg", "brave-search", "my"], default="untrusted")  # type: ignore[arg-type]
    for name in ("mcp_kg_query", "mcp_kg_evil_fetch", "mcp-kg-anything", "mcp_kg__evil__x", "mcp_my_evil_fetch",
                 "mcp_brave_search_web", "mcp_kgevil_query"):
        assert not classify_tool_result(name, None, listed).trusted, name
    for plain in ("mcp", "mcp_", "mcpx_kg_q", "lookup"):  # not MCP names: the default rule
        assert classify_tool_result(plain, None, EMPTY) == Classification(True, unlisted=True)


@pytest.mark.parametrize("name", ["WebFetchTool", "webfetch_tool", "web_fetch_tool_v2", "fetch-tools"])
def test_a_tool_suffix_does_not_hide_a_web_tool(name: str) -> None:
    assert classify_tool_result(name, None, policy(trusted_tools=[name])) == Classification(False, f"web tool '{name}'")


@pytest.mark.parametrize("name", [
    "get_issue", "list_issues", "get_pull_request_comments", "get_file_contents", "github.get_issue",
    "gitlab/get_issue", "jira_get_issue", "getJiraIssue", "confluence_get_page", "web_search_exa",
    "gmail_read_message",
])
def test_issue_trackers_code_hosts_and_mail_readers_are_outside_content(name: str) -> None:
    got = classify_tool_result(name, None, EMPTY)
    assert not got.trusted and got.source == f"outside-content tool '{name}' (content_trust.default_untrusted_tools)"
    assert classify_tool_result(name, None, policy(trusted_tools=[name])).trusted  # the operator's word wins


@pytest.mark.parametrize("name", ["web_fetch\x1b[2J", "mcp__kg__q\u202e", "fetch\U000e0049\U000e0047\U000e004e",
                                  "read_slack\u200b_channel\x07"])
def test_a_taint_source_shows_a_names_hidden_and_controlling_characters_escaped(name: str) -> None:
    got = classify_tool_result(name, None, ContentTrustPolicy.from_config({"default": "untrusted"}))
    assert not got.trusted and got.source is not None
    assert got.source.isprintable() and got.source.isascii(), got.source
    assert echo(name, len(name)) in got.source
