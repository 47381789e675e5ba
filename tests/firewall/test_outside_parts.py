"""Rule 7 reads a tool name as its parts: a product-named server, a short alias of one, or a word naming
outside content anywhere in the name, and ``fetch``/``fetcher`` as a name's last part, taint its session;
ordinary names of a host's own tools stay the spec's unlisted trusted tools (property tests over
generated spellings and neutral words)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meta_memory.firewall.classify import TRUSTED_UNLISTED, ContentTrustPolicy, classify_tool_result
from meta_memory.firewall.outside_tools import (
    DEFAULT_UNTRUSTED_TOOLS,
    OUTSIDE_CONTENT_ALIASES,
    OUTSIDE_CONTENT_ENDINGS,
    OUTSIDE_CONTENT_SERVERS,
    OUTSIDE_CONTENT_WORDS,
)

SHIPPED = ContentTrustPolicy()

#: Names a review found trusted before parts were read: each reads outside content.
REVIEWED = ["get_github_issue", "read_slack_channel", "url_fetch", "urlFetch", "visit_page", "get_webpage",
            "imap_fetch", "browser_use", "gh_issue_view", "discord_read", "notion_search", "rss_read", "download",
            "youtube_transcript", "fetcher", "xweb_fetch", "arxiv_search", "get_page"]
#: More spellings: camel case, acronyms, digits, versions, a look-alike letter, fullwidth, a space.
SPELLED = ["GetGithubIssue", "GHIssueView", "URLFetch", "getURL", "rss2json", "xweb_fetch_v2", "FetcherTool",
           "yt_transcript", "run_gh", "read_gіthub_issue",  # a Cyrillic і
           "ｒｅａｄ＿ｓｌａｃｋ＿ｃｈａｎｎｅｌ", "list discord messages", "send_email", "ReadInbox", "zendesk_get_ticket",
           "download_attachment", "open_link", "VisitPage", "get_html", "web_browser_v2", "MyWebScraper",
           "tools.url_fetch", "order_fetch", "get_email_thread", "brave search_news",
           # names a review found trusted: search services, mail, forums, a browser's navigation
           "google", "search_google", "google_search", "brave", "outlook", "outlook_read_mail", "hackernews",
           "stackoverflow", "navigate", "browser_navigate", "page_content", "get_page_content",
           # shared documents, CRMs, support inboxes and team chat
           "teams_read", "linear_get_issue", "sharepoint", "read_sharepoint_file", "dropbox_read", "gdrive_read",
           "GoogleDriveSearch", "salesforce_query", "hubspot", "intercom_get_conversation", "x_search",
           "teams.read_messages", "linear/get_issue", "MSTeamsReadMessages", "freshdesk_get_ticket"]
#: A host's own tools: no part names outside content (``fetch`` leads; ``page`` alone; a server's letters
#: running on; ``search`` namespaced; ``gh``/``yt`` inside a word).
ORDINARY = ["calculator", "get_time", "lookup_order", "memory", "read_file", "write_file", "fetch_order",
            "fetch_user", "fetcher_of_dates", "prefetch_cache", "list_pages", "page_oncall", "next_page",
            "slacker", "githubber", "myslack", "playwrightish", "exa_answer", "kb.search", "NotesToolSpec.search",
            "get_weather", "create_ticket", "query_db", "run_sql", "high_score", "ghost_mode", "mythical",
            "payout", "get_user_profile", "schedule_meeting", "sum 2", "webhooks_list", "urlencode",
            "list_teams", "get_teams", "linear_regression", "fit_linear", "x_axis", "dropboxes_count"]


@pytest.mark.parametrize("name", REVIEWED + SPELLED)
def test_a_name_with_an_outside_content_part_taints(name: str) -> None:
    got = classify_tool_result(name, None, SHIPPED)
    assert not got.trusted, name
    assert got.source == f"outside-content tool '{name}' (content_trust.default_untrusted_tools)"


@pytest.mark.parametrize("name", ORDINARY)
def test_a_hosts_own_tool_stays_the_specs_unlisted_trusted_tool(name: str) -> None:
    assert classify_tool_result(name, None, SHIPPED) == TRUSTED_UNLISTED, name


@pytest.mark.parametrize("name", ["read_slack_channel", "send_email", "url_fetch", "gh_issue_view"])
def test_trusted_tools_still_trusts_a_name_a_part_catches(name: str) -> None:
    rules = ContentTrustPolicy.from_config({"trusted_tools": [name]})
    assert classify_tool_result(name, None, rules).trusted
    lookalike = name.replace("e", "\u0435", 1)  # a Cyrillic е: the trusting rules never read look-alikes
    assert not classify_tool_result(lookalike, None, rules).trusted, lookalike


def test_every_part_alias_and_ending_is_on_the_shipped_list_and_follows_the_configured_one() -> None:
    listed = set(DEFAULT_UNTRUSTED_TOOLS)
    assert set(OUTSIDE_CONTENT_WORDS) <= listed and set(OUTSIDE_CONTENT_ENDINGS) <= listed
    assert set(OUTSIDE_CONTENT_ALIASES.values()) <= set(OUTSIDE_CONTENT_SERVERS)
    assert not (set(OUTSIDE_CONTENT_WORDS) & set(OUTSIDE_CONTENT_SERVERS))
    for name, entry in [("read_slack_channel", "slack"), ("gh_issue_view", "github"), ("get_webpage", "webpage"),
                        ("url_fetch", "fetch"), ("visit_page", "visit_page")]:
        assert not classify_tool_result(name, None, ContentTrustPolicy.from_config(
            {"default_untrusted_tools": [entry]})).trusted, (name, entry)
        assert classify_tool_result(name, None, ContentTrustPolicy.from_config(
            {"default_untrusted_tools": ["crm_reader"]})).trusted, name
    # an alias is read only while the list holds its server
    assert classify_tool_result("gh_issue_view", None, ContentTrustPolicy.from_config(
        {"default_untrusted_tools": ["gh"]})).trusted


#: words that name no outside content (no verb that reads a page: ``get`` + ``page_oncall`` is ``get_page``)
_neutral = st.sampled_from(["my", "acme", "internal", "tool", "order", "user", "team", "list", "v2", "x",
                            "calc", "data", "run", "safe"])
_joint = st.sampled_from(["_", "-", ".", "camel"])


def _join(left: str, right: str, joint: str) -> str:
    return left + right[:1].upper() + right[1:] if joint == "camel" else left + joint + right


@settings(max_examples=300)
@given(st.sampled_from(ORDINARY), _neutral, _joint, st.booleans())
def test_an_ordinary_name_stays_trusted_between_neutral_words(name: str, word: str, joint: str,
                                                              before: bool) -> None:
    """Neither a neutral word before nor after a host's own tool name makes a part naming outside content."""
    joined = _join(word, name, joint) if before else _join(name, word, joint)
    assert classify_tool_result(joined, None, SHIPPED).trusted, joined


#: the reviewed names whose only outside part is an ending: a word after them ends the name instead
_ENDING_ONLY = {"fetcher", "xweb_fetch"}


@settings(max_examples=300)
@given(st.sampled_from(REVIEWED), _neutral, _joint, st.booleans())
def test_a_reviewed_name_still_taints_between_neutral_words(name: str, word: str, joint: str, before: bool) -> None:
    if name in _ENDING_ONLY:
        before = True  # ``fetcher_x``: ``fetch`` leads, as in a host's ``fetch_order``
    joined = _join(word, name, joint) if before else _join(name, word, joint)
    assert not classify_tool_result(joined, None, SHIPPED).trusted, joined


_case = st.sampled_from(["lower", "upper", "pascal"])
_separator = st.sampled_from(["_", "-", " ", "\u2010", "\uff3f", "\u200b_", "camel"])


def _spell(words: list[str], case: str) -> list[str]:
    return [w.upper() if case == "upper" else w.capitalize() if case == "pascal" else w for w in words]


@settings(max_examples=400)
@given(st.sampled_from(sorted({*OUTSIDE_CONTENT_SERVERS, *OUTSIDE_CONTENT_ALIASES, *OUTSIDE_CONTENT_WORDS})),
       _neutral, _neutral, _case, _separator)
def test_a_server_alias_or_word_anywhere_in_a_name_taints_in_any_spelling(entry: str, head: str, tail: str,
                                                                           case: str, separator: str) -> None:
    """``<head>_<entry>_<tail>`` with the entry's own words in any case and any separator, camel-case humps
    included: the entry is a bounded part, so the name taints."""
    words = [head, *entry.replace("-", "_").split("_"), tail]
    if separator == "camel":
        name = words[0] + "".join(w.upper() if case == "upper" else w.capitalize() for w in words[1:])
        if case == "upper":
            name = words[0] + "_" + "_".join(w.upper() for w in words[1:])  # an acronym run needs a boundary
    else:
        name = separator.join([words[0], *_spell(words[1:-1], case), words[-1]])
    assert not classify_tool_result(name, None, SHIPPED).trusted, name


@settings(max_examples=200)
@given(st.sampled_from(OUTSIDE_CONTENT_ENDINGS), _neutral, _case, st.sampled_from(["", "_v2", "Tool", "-2"]))
def test_an_ending_taints_last_and_not_first(ending: str, word: str, case: str, version: str) -> None:
    spelled = _spell([ending], case)[0]
    assert not classify_tool_result(f"{word}_{spelled}{version}", None, SHIPPED).trusted
    # a host's own data tool leads with the verb; ``order``-like neutral words name no outside content
    assert classify_tool_result(f"{spelled}_{word}_records", None, SHIPPED).trusted
