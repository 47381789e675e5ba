"""Classification an attacker cannot sidestep by spelling, and the opt-in ``default = "untrusted"``
posture (property tests over generated spellings)."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from meta_memory.agent_memory.config import parse_content_trust
from meta_memory.errors import ConfigError, echo
from meta_memory.firewall.classify import (
    ALWAYS_UNTRUSTED_TOOLS,
    TRUSTED_UNLISTED,
    ContentTrustPolicy,
    ToolProvenance,
    classify_tool_result,
    mcp_server_of,
    name_key,
)
from meta_memory.firewall.outside_tools import BARE_ONLY_NAMES, DEFAULT_UNTRUSTED_TOOLS, OUTSIDE_CONTENT_SERVERS


def shown(name: str) -> str:
    """``name`` as a taint source shows it: invisible and controlling characters escaped, never cut."""
    return echo(name, len(name))


BUILTIN_WORDS = {"web_search": ["web", "search"], "web_fetch": ["web", "fetch"], "fetch": ["fetch"],
                 "http_request": ["http", "request"]}

_separator = st.sampled_from(["_", "-", "", " ", ".", "__", "\u2010", "\uff3f", "\u200b", "\u200d_"])
_invisible = st.sampled_from(["", "\u200b", "\u2060", "\ufeff", "\u00ad", "\u200c"])
_space = st.sampled_from(["", " ", "\t", "\u3000", "\n"])


@st.composite
def spellings(draw: st.DrawFn, words: list[str]) -> str:
    style = draw(st.sampled_from(["lower", "upper", "camel", "pascal", "random"]))
    parts = []
    for i, word in enumerate(words):
        if style == "upper":
            word = word.upper()
        elif style == "pascal" or (style == "camel" and i > 0):
            word = word.capitalize()
        elif style == "random":
            word = "".join(c.upper() if draw(st.booleans()) else c for c in word)
        if draw(st.booleans()):
            word = "".join(chr(ord(c) + 0xFEE0) for c in word)  # fullwidth
        pos = draw(st.integers(0, len(word)))
        parts.append(word[:pos] + draw(_invisible) + word[pos:])
    body = parts[0] + "".join(draw(_separator) + p for p in parts[1:])
    return draw(_space) + body + draw(_space)


@settings(max_examples=400)
@given(st.data())
def test_every_spelling_of_a_builtin_is_untrusted_under_any_policy(data: st.DataObject) -> None:
    canonical = data.draw(st.sampled_from(sorted(BUILTIN_WORDS)))
    spelled = data.draw(spellings(BUILTIN_WORDS[canonical]))
    policy = ContentTrustPolicy(trusted_tools=frozenset({canonical, spelled.strip() or canonical}),
                                trusted_mcp_servers=frozenset({"kg"}))
    for provenance in (None, ToolProvenance("mcp", "kg"), ToolProvenance("builtin", "core")):
        got = classify_tool_result(spelled, provenance, policy)
        assert not got.trusted, (spelled, provenance)
        assert got.source == f"web tool '{shown(spelled)}'"


@pytest.mark.parametrize("name", ["WebFetch", "WEB_FETCH", "web-fetch", " web_fetch ", "webFetch", "Web.Fetch",
                                  "web\u200bfetch", "ｗｅｂ＿ｆｅｔｃｈ", "HTTPRequest", "HttpRequest", "FETCH",
                                  "web\u2010search", "WebSearch\ufeff"])
def test_the_issue_spellings_are_untrusted(name: str) -> None:
    assert not classify_tool_result(name, None, ContentTrustPolicy()).trusted


def test_names_that_only_contain_a_builtin_stay_trusted() -> None:
    builtins_only = ContentTrustPolicy.from_config({"default_untrusted_tools": []})  # ``web``, ``http``: rule 7
    for name in ("prefetch", "fetch_calendar", "web_fetcher", "http_requests_log", "calculator"):
        assert classify_tool_result(name, None, builtins_only).trusted, name


@settings(max_examples=200)
@given(st.data())
def test_configured_lists_match_in_any_spelling(data: st.DataObject) -> None:
    words = data.draw(st.lists(st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=2, max_size=6),
                               min_size=1, max_size=3))
    if name_key("".join(words)) in {name_key(n) for n in ALWAYS_UNTRUSTED_TOOLS} or "".join(words).startswith("mcp"):
        return
    listed = data.draw(spellings(words))
    called = data.draw(spellings(words))
    untrusting = ContentTrustPolicy.from_config({"untrusted_tools": [listed], "trusted_tools": [called]})
    assert classify_tool_result(called, None, untrusting).source == f"configured untrusted tool '{shown(called)}'"
    strict = ContentTrustPolicy.from_config({"trusted_tools": [listed], "default": "untrusted"})
    assert classify_tool_result(called, None, strict).trusted
    servers = ContentTrustPolicy.from_config({"trusted_mcp_servers": [listed]})
    assert classify_tool_result("query", ToolProvenance("mcp", called), servers).trusted


@settings(max_examples=300)
@given(st.text(max_size=40))
def test_name_key_is_idempotent_and_total(name: str) -> None:
    key = name_key(name)
    assert name_key(key) == key
    assert key == key.casefold()


def test_mcp_prefix_is_recognised_in_any_case_and_servers_compare_by_key() -> None:
    assert mcp_server_of("MCP__Knowledge_Graph__query") == "knowledge_graph"
    assert mcp_server_of("ｍｃｐ__kg__q") == "kg"
    policy = ContentTrustPolicy.from_config({"trusted_mcp_servers": ["Knowledge-Graph"]})
    assert classify_tool_result("MCP__knowledge_graph__query", None, policy).trusted
    assert classify_tool_result("q", ToolProvenance("mcp", " KNOWLEDGE_GRAPH\u200b"), policy).trusted
    assert not classify_tool_result("MCP__rogue__query", None, policy).trusted


def test_default_untrusted_trusts_only_what_is_listed() -> None:
    policy = ContentTrustPolicy.from_config({"default": "untrusted", "trusted_tools": ["calculator", "memory"],
                                             "trusted_mcp_servers": ["kg"]})
    assert classify_tool_result("calculator", None, policy).trusted
    assert classify_tool_result("Memory", None, policy).trusted
    assert classify_tool_result("search", ToolProvenance("mcp", "kg"), policy).trusted
    assert classify_tool_result("mcp__kg__search", None, policy).trusted
    got = classify_tool_result("read_file", None, policy)
    assert got.source == "unlisted tool 'read_file' (content_trust.default = untrusted)"
    assert not classify_tool_result("read_file", ToolProvenance("builtin", "core"), policy).trusted
    assert not classify_tool_result("mcp__rogue__q", None, policy).trusted
    assert not classify_tool_result("web_fetch", None, policy).trusted
    assert classify_tool_result("read_file", None, ContentTrustPolicy()).trusted  # the default stays the seed's


@pytest.mark.parametrize("bad", ["strict", "", 1, True, None.__class__])
def test_default_must_be_trusted_or_untrusted(bad: object) -> None:
    with pytest.raises(ConfigError, match=r"^content_trust.default must be 'trusted' or 'untrusted'$"):
        parse_content_trust({"default": bad})
    with pytest.raises(ValueError):
        ContentTrustPolicy.from_config({"default": bad})


def test_config_default_round_trips_to_the_policy() -> None:
    cfg = parse_content_trust({"default": " Untrusted ", "trusted_tools": ["calc"]})
    assert cfg.default == "untrusted"
    assert ContentTrustPolicy.from_config(cfg).default == "untrusted"
    assert parse_content_trust({}).default == "trusted"


_SERVER_WORDS = {server: server.split("-") for server in OUTSIDE_CONTENT_SERVERS}
_ONLY_SERVERS = ContentTrustPolicy(default_untrusted_tools=frozenset(OUTSIDE_CONTENT_SERVERS))
_tail = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8)
_end = st.sampled_from(["_", "-", "__", "\u2010", "\uff3f", "\u2014", "camel", "2", "10_"])


@settings(max_examples=300)
@given(st.data())
def test_a_listed_servers_name_ended_by_a_separator_or_hump_taints_in_any_spelling(data: st.DataObject) -> None:
    """``<server>_<tool>`` in any spelling of the server (case, its own separators, fullwidth, invisible
    characters) and any marked end (a separator, a dash, a camel-case hump) is the server's tool."""
    server = data.draw(st.sampled_from(sorted(_SERVER_WORDS)))
    spelled = data.draw(spellings(_SERVER_WORDS[server])).strip()
    assume("." not in spelled)  # ``brave.search_x`` is the tool ``search_x`` of a server ``brave``
    end, tail = data.draw(_end), data.draw(_tail)
    name = spelled + (tail.capitalize() if end == "camel" else end + tail)
    if end == "camel" and not spelled[-1:].islower():
        name = spelled + "_" + tail  # a hump needs a lower-case letter before it (or an acronym's end)
    for rules in (ContentTrustPolicy(), _ONLY_SERVERS):
        got = classify_tool_result(name, None, rules)
        assert not got.trusted, (name, rules.default_untrusted_tools)
        assert got.source == f"outside-content tool '{shown(name)}' (content_trust.default_untrusted_tools)"
    assert classify_tool_result(name, None, ContentTrustPolicy.from_config({"trusted_tools": [name]})).trusted


@settings(max_examples=300)
@given(st.data())
def test_a_servers_letters_without_a_marked_end_are_no_prefix(data: st.DataObject) -> None:
    """``slacker``, ``GitHubber``, ``playwrightish``: the server's letters run on into the word, so the
    prefix rule does not read them as the server (only the servers are listed here)."""
    server = data.draw(st.sampled_from(sorted(_SERVER_WORDS)))
    spelled = data.draw(spellings(_SERVER_WORDS[server])).strip()
    name = spelled + data.draw(_tail)
    # the server alone: a random case's humps could cut another server's alias (``playwriGhT``) out of it
    only_it = ContentTrustPolicy(default_untrusted_tools=frozenset({server}))
    assert classify_tool_result(name, None, only_it).trusted, name


@pytest.mark.parametrize("name", ["serper2_search", "github1_issue", "Slack2Read", "tavily10-search"])
def test_a_version_digit_after_a_servers_name_is_a_marked_end(name: str) -> None:
    assert not classify_tool_result(name, None, ContentTrustPolicy()).trusted, name


@pytest.mark.parametrize("name", ["fetch_order", "fetch_calendar", "exa_answer", "Fetch-User", "exa-contents"])
def test_a_verb_and_a_three_letter_server_are_no_prefixes(name: str) -> None:
    """``fetch`` is a verb hosts begin their own tools with and ``exa`` three letters: neither is matched as
    a prefix (their tools are listed by name), so these stay the spec's unlisted trusted tools."""
    assert classify_tool_result(name, None, ContentTrustPolicy()) == TRUSTED_UNLISTED


def test_the_prefix_rule_follows_the_configured_list() -> None:
    assert not classify_tool_result("slack_read_channel", None, ContentTrustPolicy()).trusted
    for replaced in ([], ["crm_reader"], ["slack_read"]):  # no server listed: no prefix
        rules = ContentTrustPolicy.from_config({"default_untrusted_tools": replaced})
        assert classify_tool_result("slack_read_channel", None, rules).trusted, replaced
    rules = ContentTrustPolicy.from_config({"default_untrusted_tools": ["SLACK"]})
    assert not classify_tool_result("slack_read_channel", None, rules).trusted
    mcp = ContentTrustPolicy.from_config({"trusted_mcp_servers": ["kg"]})  # MCP attribution comes first
    assert classify_tool_result("slack_read_channel", ToolProvenance("mcp", "kg"), mcp).trusted


@pytest.mark.parametrize("name, trusted", [
    ("search", False), ("Search", False), ("search_v2", False), ("SearchTool", False), (" SEARCH\u200b", False),
    ("kb.search", True), ("NotesToolSpec.search", True), ("Search my notes", True),
    ("TavilyToolSpec.search", False),  # its spec is listed
])
def test_a_bare_search_taints_and_a_namespaced_one_is_its_namespaces(name: str, trusted: bool) -> None:
    assert classify_tool_result(name, None, ContentTrustPolicy()).trusted is trusted


def test_every_prefix_server_and_bare_name_is_on_the_shipped_list() -> None:
    listed = {name_key(n) for n in DEFAULT_UNTRUSTED_TOOLS}
    assert {name_key(s) for s in OUTSIDE_CONTENT_SERVERS} <= listed
    assert {name_key(s) for s in BARE_ONLY_NAMES} <= listed
    assert all(len(name_key(s)) >= 4 for s in OUTSIDE_CONTENT_SERVERS)  # no short abbreviations as prefixes


_WORDY_BUILTINS = {name: words for name, words in BUILTIN_WORDS.items() if len(words) > 1}
#: heads no rule lists (a server's name would make the running-on spelling untrusted too)
_head = st.sampled_from(["my", "tool", "proxy", "x", "acme", "order", "agent", "safe"])
_wrapper_end = st.sampled_from(["_", "-", "__", "\u2010", "\uff3f", "camel"])
_version = st.sampled_from(["", "_v2", "-2", "Tool", "_tool_v3"])


@settings(max_examples=300)
@given(st.data())
def test_a_builtin_of_two_words_ending_a_name_after_a_marked_end_taints(data: st.DataObject) -> None:
    """``<head>_<builtin>`` in any case of the builtin, after a separator or a camel-case hump, a version or
    ``tool`` suffix allowed, is a host's wrapper of the builtin; with letters running on past the builtin
    (``my_web_fetcher``) it is a name of the host's own (nothing else in it is listed)."""
    builtin = data.draw(st.sampled_from(sorted(_WORDY_BUILTINS)))
    words = _WORDY_BUILTINS[builtin]
    style = data.draw(st.sampled_from(["lower", "upper", "pascal"]))
    spelled = "_".join(w.upper() if style == "upper" else w.capitalize() if style == "pascal" else w for w in words)
    head, end = data.draw(_head), data.draw(_wrapper_end)
    if end == "camel":
        spelled = "".join(w.capitalize() for w in words)  # a hump: a lower-case letter, then a capital
        end = ""
    name = head + end + spelled
    got = classify_tool_result(name + data.draw(_version), None, ContentTrustPolicy())
    assert not got.trusted, name
    running_on = name + data.draw(st.sampled_from(["er", "ed", "x", "ing"]))
    builtins_only = ContentTrustPolicy.from_config({"default_untrusted_tools": []})  # ``web``, ``http``: rule 7
    assert classify_tool_result(running_on, None, builtins_only) == TRUSTED_UNLISTED, running_on


@pytest.mark.parametrize("name, builtin, shipped", [
    ("tool_web_fetch", True, True), ("my_web_fetch", True, True), ("myWebFetch", True, True),
    ("proxy-http-request", True, True), ("x_web_search_tool", True, True), ("my_web_fetch_v2", True, True),
    ("perplexity_ask", False, True), ("PerplexityResearch", False, True),
    # the builtin rule does not read these; the shipped list does (``fetch`` ending a name, ``web`` as a part)
    ("order_fetch", False, True), ("web_fetcher", False, True), ("search_web_fetched", False, True),
    ("webfetchx", False, False), ("fetch_order", False, False),
])
def test_a_hosts_wrapper_of_a_builtin_taints_and_a_word_running_on_does_not(name: str, builtin: bool,
                                                                              shipped: bool) -> None:
    """A builtin of two words ends a host's wrapper of it (``my_web_fetch``) after a marked end; ``fetch`` alone
    does not (``order_fetch``), nor a builtin whose letters run on (``web_fetcher``): the builtin rule alone
    (``builtin``: untrusted with no list); ``shipped``: untrusted under the shipped list (rule 7)."""
    builtins_only = ContentTrustPolicy.from_config({"default_untrusted_tools": []})
    assert classify_tool_result(name, None, builtins_only).trusted is not builtin, name
    assert classify_tool_result(name, None, ContentTrustPolicy()).trusted is not shipped, name


#: Characters that are letters, digits or marks to Unicode but read as a separator: modifier letters (``ˍ``
#: U+02CD, ``˗``, ``ː``), Lisu tone letters (``ꓸ``, ``ꓽ``), N'Ko lajanyalan, Coptic ``Ⲻ``, Katakana ``ノ``, an
#: Arabic-Indic zero, a visarga.
LOOK_ALIKE_SEPARATORS = ["\u02cd", "\u02d7", "\u02d0", "\ua4f8", "\ua4fd", "\u07fa", "\u2cba", "\u30ce", "\u0660",
                         "\u0903", "\u02c9"]


@pytest.mark.parametrize("sep", LOOK_ALIKE_SEPARATORS, ids=[f"U+{ord(s):04X}" for s in LOOK_ALIKE_SEPARATORS])
def test_a_look_alike_separator_neither_hides_nor_joins_an_untrusted_name(sep: str) -> None:
    policy = ContentTrustPolicy.from_config({"untrusted_tools": ["crm_reader"], "trusted_mcp_servers": ["kg"],
                                             "trusted_tools": [f"web{sep}fetch", f"crm{sep}reader"]})
    for canonical, words in BUILTIN_WORDS.items():  # the builtins, their words joined by it
        name = sep.join(words)
        assert classify_tool_result(name, None, policy).source == f"web tool '{name}'", (canonical, name)
    name = f"my{sep}web{sep}fetch"  # a wrapper's name ending in a builtin's
    assert classify_tool_result(name, None, policy).source == f"web tool '{name}'", name
    name = f"functions{sep}fetch"  # a segment (after a look-alike of ``.``), else a name ending in ``fetch``
    assert not classify_tool_result(name, None, policy).trusted, name
    name = f"crm{sep}reader"  # a configured untrusted tool: listed as trusted too, the untrusting rule wins
    assert classify_tool_result(name, None, policy).source == f"configured untrusted tool '{name}'"
    for name in (f"read{sep}slack{sep}channel", f"url{sep}fetch"):  # the shipped list's parts and endings
        assert not classify_tool_result(name, None, policy).trusted, name
    name = f"mcp{sep}{sep}kg{sep}{sep}q"  # an MCP name spelled so; the look-alike never reaches the trusted server
    assert classify_tool_result(name, None, policy).source == f"MCP server 'kg' (tool '{name}')"


#: Those the trusting rules keep as a character of the name (``˗`` is a dash and a visarga a mark to them: they
#: drop both, as they drop ``-``).
KEPT_BY_NAME_KEY = [s for s in LOOK_ALIKE_SEPARATORS if s not in ("\u02d7", "\u0903")]


@pytest.mark.parametrize("sep", KEPT_BY_NAME_KEY, ids=[f"U+{ord(s):04X}" for s in KEPT_BY_NAME_KEY])
def test_a_look_alike_separator_never_trusts(sep: str) -> None:
    strict = ContentTrustPolicy.from_config({"default": "untrusted", "trusted_tools": ["crm_reader"],
                                             "trusted_mcp_servers": ["knowledge_graph"]})
    assert classify_tool_result("crm_reader", None, strict).trusted
    assert not classify_tool_result(f"crm{sep}reader", None, strict).trusted
    assert not classify_tool_result("q", ToolProvenance("mcp", f"knowledge{sep}graph"), strict).trusted
    assert classify_tool_result(f"calendar{sep}today", None, ContentTrustPolicy()) == TRUSTED_UNLISTED


@settings(max_examples=300)
@given(st.data())
def test_every_builtin_joined_by_any_modifier_letter_is_untrusted(data: st.DataObject) -> None:
    import unicodedata
    sep = data.draw(st.characters(categories=["Lm", "Sk"]).filter(lambda c: not c.isascii()))
    words = data.draw(st.sampled_from([w for w in BUILTIN_WORDS.values() if len(w) > 1]))
    name = sep.join(words)
    assume(unicodedata.normalize("NFKC", sep) == sep)  # NFKC turns some into Latin letters (``ʰ``: ``h``)
    assert not classify_tool_result(name, None, ContentTrustPolicy()).trusted, name
