"""The shipped list of tools that bring outside content into a model's context (beyond the spec).

The spec trusts every tool it does not name (its rule 7), so a host whose web tool is called
``browser`` or ``tavily_search`` would get no taint at all, while the README promises that a web page
cannot poison memory. :data:`DEFAULT_UNTRUSTED_TOOLS` names the outside-content tools of the
frameworks and MCP servers people use. A tool result under one of these names, or under a namespaced
name with one of them as a segment (``puppeteer.navigate``, ``brave-search/brave_web_search``), taints
its session like an ``untrusted_tools`` entry, after the spec's own rules (the builtins,
``untrusted_tools``, ``trusted_tools``, MCP attribution): an operator's ``trusted_tools`` entry or
``trusted_mcp_servers`` server still wins. The configuration key
``[agent_memory.content_trust] default_untrusted_tools`` replaces the whole list (``[]`` turns it off).

A name is also read as its *parts* -- split at separators, whitespace, camel-case humps, an acronym's end and
between letters and digits (``read_slack_channel``, ``getGithubIssue``, ``GHIssueView``, ``rss2json``: the
parts are ``read slack channel``, ``get github issue``, ``gh issue view``, ``rss 2 json``) -- and taints when
consecutive parts spell, after the untrusting rules' folding, one of these while the active list holds it:

* a product-named server of :data:`OUTSIDE_CONTENT_SERVERS` (``slack``, ``github``, ``youtube``,
  ``brave-search`` as ``brave search``), anywhere in the name: servers and the hosts that wrap them name
  their tools ``<server>_<tool>`` or ``<verb>_<server>_<thing>`` (``slack_read_channel``,
  ``read_slack_channel``, ``get_github_issue``, ``FirecrawlScrapeWebsiteTool``). A name that only *contains*
  a server's letters, with no boundary (``slacker``, ``githubber``, ``playwrightish``, ``myslack``), is not
  a match. ``fetch`` (a verb hosts begin their own tools with: ``fetch_order``) and ``exa`` (three letters,
  an abbreviation as readily as the product) are no servers here; their tools are listed by name;
* an alias of :data:`OUTSIDE_CONTENT_ALIASES` (``gh`` for GitHub, ``yt`` for YouTube), as a part only:
  ``gh_issue_view``, ``yt_transcript``. Two letters are a product's name only when a boundary marks them;
  other short names (``gl``, ``x``, ``wa``) mean too many other things and are not aliases;
* a word of :data:`OUTSIDE_CONTENT_WORDS`, which names outside content whatever tool it is part of
  (``url_fetch``, ``get_webpage``, ``browser_use``, ``imap_fetch``, ``rss_read``, ``download_file``,
  ``youtube_transcript``, ``send_email``), or a verb-and-page phrase of it (``get_page``, ``visit_page``;
  ``page`` alone also pages a person, ``page_oncall``, and is not a word here). Each was judged by its
  false-positive risk: a host's own tool that one catches (a ``send_email`` notifier, a ``build_url``
  helper) has its session's later writes quarantined -- kept and reviewable, never lost -- until the
  operator lists it in ``trusted_tools``; an injection it let through would be active memory;
* an ending of :data:`OUTSIDE_CONTENT_ENDINGS` (``fetch``, ``fetcher``), only as a segment's last part, a
  version or ``tool`` suffix allowed: ``url_fetch``, ``xweb_fetch``, ``urlFetch``, ``fetcher``,
  ``FetcherTool`` taint; ``fetch_order``, ``fetch_user`` and ``fetcher_of_dates`` (a host's own data tools
  lead with the verb) stay trusted, while a host's ``order_fetch`` is read as a fetcher and taints.

A name of :data:`BARE_ONLY_NAMES` (``search``) is matched only as the whole name (a version or ``tool``
suffix allowed: ``search_v2``), never as a segment: ``kb.search`` or ``NotesToolSpec.search`` names a search
of whatever its namespace is.

Names are matched after the untrusting rules' folding
(:func:`meta_memory.firewall.classify.deny_key`: case, separators, fullwidth, zero-width and look-alike
letters), so ``WebFetch``, ``web-fetch`` and ``webFetch`` are one entry. Each group says where its
names come from.
"""

from __future__ import annotations

__all__ = [
    "BARE_ONLY_NAMES",
    "DEFAULT_UNTRUSTED_SOURCES",
    "DEFAULT_UNTRUSTED_TOOLS",
    "OUTSIDE_CONTENT_ALIASES",
    "OUTSIDE_CONTENT_ENDINGS",
    "OUTSIDE_CONTENT_SERVERS",
    "OUTSIDE_CONTENT_WORDS",
]

#: Each source and the tool (or MCP server) names it uses for outside content.
DEFAULT_UNTRUSTED_SOURCES: dict[str, tuple[str, ...]] = {
    # Claude Code's built-in tools that read the web.
    "Claude Code": ("WebFetch", "WebSearch"),
    # The Anthropic API's tools that show a model web pages or a screen (server tools are also marked
    # ``server_tool`` by hosts; these are the names when they are reported as plain tool results).
    "Anthropic API tools": ("web_search", "web_fetch", "computer"),
    # The OpenAI Agents SDK's hosted tools (WebSearchTool, FileSearchTool, ComputerTool) and the
    # Responses API tool types behind them.
    "OpenAI Agents SDK / Responses API": ("web_search_preview", "file_search", "computer_use",
                                          "computer_use_preview", "computer"),
    # LangChain community and partner tools (their ``name`` attributes): Tavily, DuckDuckGo, requests,
    # Google, Bing, Brave, Serper, SearxNG, Exa, Wikipedia, arXiv, PubMed, the Playwright browser toolkit,
    # Gmail, Office 365 mail and Slack.
    "LangChain": (
        "tavily_search_results_json", "tavily_search", "tavily_extract", "tavily_crawl",
        "duckduckgo_search", "duckduckgo_results_json",
        "requests_get", "requests_post",
        "google_search", "google_search_results_json", "google_serper", "google_serper_results_json",
        "bing_search", "bing_search_results_json", "brave_search", "searx_search", "searx_search_results",
        "exa_search_results_json", "exa_find_similar_results_json", "wikipedia", "arxiv", "pub_med",
        "navigate_browser", "extract_text", "extract_hyperlinks", "current_webpage",
        "search_gmail", "gmail_search", "get_gmail_message", "get_gmail_thread",
        "messages_search", "slack_get_message",
    ),
    # The reference MCP servers (as server names, for namespaced tool names, and their tools):
    # fetch, puppeteer, Playwright (Microsoft's @playwright/mcp), Brave Search, Gmail and Slack.
    "MCP reference servers": (
        "fetch", "puppeteer", "playwright", "brave-search", "gmail", "slack",
        "puppeteer_navigate", "puppeteer_screenshot", "puppeteer_evaluate",
        "browser_navigate", "browser_snapshot", "browser_take_screenshot", "browser_console_messages",
        "browser_network_requests",
        "brave_web_search", "brave_local_search",
        "search_emails", "read_email",
        "slack_get_channel_history", "slack_get_thread_replies", "slack_get_user_profile",
    ),
    # Issue trackers, code hosts and wikis, whose issues, pull requests, comments and pages anyone with an
    # account can write: GitHub's MCP server (github/github-mcp-server, and the reference server it replaced),
    # GitLab's, Atlassian's (Jira and Confluence: the Atlassian MCP server and mcp-atlassian), as server names
    # for namespaced tool names and their reading tools.
    "issue trackers and code hosts (MCP)": (
        "github", "gitlab", "atlassian", "jira", "confluence",
        "get_issue", "list_issues", "search_issues", "get_issue_comments",
        "get_pull_request", "list_pull_requests", "get_pull_request_comments", "get_pull_request_reviews",
        "get_pull_request_files", "get_pull_request_diff", "get_file_contents", "search_code",
        "get_discussion", "get_discussion_comments", "list_discussions",
        "jira_get_issue", "jira_search", "confluence_get_page", "confluence_search",
        "getJiraIssue", "searchJiraIssuesUsingJql", "getConfluencePage", "searchConfluenceUsingCql",
    ),
    # Other MCP servers that read the web or a mailbox: Exa, Firecrawl (firecrawl-mcp-server, tools
    # ``firecrawl_scrape``, ``firecrawl_search``, ...), Tavily (tavily-mcp, ``tavily-search``,
    # ``tavily-extract``, ...), Gmail servers' message readers; and Slack's community server
    # (slack-mcp-server), whose tools are named after the Slack Web API methods they call; Perplexity's server
    # (perplexity-ask: ``perplexity_ask``, ``perplexity_research``, ``perplexity_reason``: answers composed from
    # web pages).
    "web and mail MCP servers": (
        "exa", "web_search_exa", "crawling_exa", "gmail_read_message", "gmail_get_message",
        "gmail_search_messages", "firecrawl", "tavily",
        "conversations_history", "conversations_replies", "conversations_search_messages",
        "perplexity", "perplexity_ask", "perplexity_research", "perplexity_reason",
    ),
    # Coding agents' and agent frameworks' own web and MCP tools: Gemini CLI, smolagents, Cline, Windsurf,
    # LlamaIndex's tool specs (by function name, and by spec class: the LlamaIndex integration reports a
    # spec's tool as ``<SpecClass>.<function>``; an MCP server's tool, from ``McpToolSpec``, without a
    # named server, as ``McpToolSpec.<tool>``), LangChain's YouTube, Reddit, Jina, You.com and SearchApi tools.
    "coding agents and agent frameworks": (
        "google_web_search", "visit_webpage", "wikipedia_search",
        "browser_action", "use_mcp_tool", "access_mcp_resource",
        "read_url_content", "view_web_document_content_chunk",
        "duckduckgo_full_search", "duckduckgo_instant_search",
        "TavilyToolSpec", "DuckDuckGoSearchToolSpec", "RequestsToolSpec", "PlaywrightToolSpec",
        "BraveSearchToolSpec", "BingSearchToolSpec", "GoogleSearchToolSpec", "WikipediaToolSpec", "ExaToolSpec",
        "ArxivToolSpec", "GmailToolSpec", "SlackToolSpec", "McpToolSpec",
        "youtube_search", "reddit_search", "jina_search", "you_search", "searchapi", "searchapi_results_json",
    ),
    # CrewAI's tools (crewai_tools), whose names are phrases: the ones that read the web, a video site or a
    # code host.
    "CrewAI": (
        "Read website content", "Read a website content", "Search the internet with Serper",
        "Search in a specific website", "Brave Web Search the internet", "Tavily Search", "TavilyExtractorTool",
        "EXASearchTool", "Firecrawl web crawl tool", "Firecrawl web scrape tool", "Firecrawl web search tool",
        "Browserbase web load tool", "Hyperbrowser web load tool", "JinaScrapeWebsiteTool", "Linkup Search Tool",
        "Multion Browse Tool", "News Search", "Scholar Search", "Parallel Web Search Tool",
        "Oxylabs Google Search Scraper tool", "Oxylabs Universal Scraper tool", "Scrapegraph website scraper",
        "Scrapfly web scraping API tool", "SpiderTool", "Web Automation Tool", "Webpage to Markdown",
        "serper_scrape_website", "Bright Data SERP Search", "Bright Data Web Unlocker Scraping",
        "Search a Youtube Channels content", "Search a Youtube Video content", "Search a github repo's content",
        "Arxiv Paper Fetcher and Downloader",
    ),
    # CrewAI's tool classes (crewai_tools' exports) that read the web, a video site or a code host: hosts
    # that report a tool by its class name rather than its phrase.
    "CrewAI (class names)": (
        "SerperDevTool", "SerperScrapeWebsiteTool", "ScrapeWebsiteTool", "ScrapeElementFromWebsiteTool",
        "WebsiteSearchTool", "CodeDocsSearchTool", "FirecrawlScrapeWebsiteTool", "FirecrawlSearchTool",
        "FirecrawlCrawlWebsiteTool", "EXASearchTool", "BraveSearchTool", "TavilySearchTool",
        "TavilyExtractorTool", "SeleniumScrapingTool", "ScrapflyScrapeWebsiteTool", "ScrapegraphScrapeTool",
        "SpiderTool", "JinaScrapeWebsiteTool", "BrowserbaseLoadTool", "HyperbrowserLoadTool", "StagehandTool",
        "MultiOnTool", "LinkupSearchTool", "ArxivPaperTool", "SerpApiGoogleSearchTool",
        "SerpApiGoogleShoppingTool", "SerplyWebSearchTool", "SerplyNewsSearchTool", "SerplyScholarSearchTool",
        "SerplyJobSearchTool", "SerplyWebpageToMarkdownTool", "OxylabsGoogleSearchScraperTool",
        "OxylabsUniversalScraperTool", "OxylabsAmazonSearchScraperTool", "OxylabsAmazonProductScraperTool",
        "BrightDataSearchTool", "BrightDataWebUnlockerTool", "BrightDataDatasetTool", "GithubSearchTool",
        "YoutubeChannelSearchTool", "YoutubeVideoSearchTool", "ApifyActorsTool",
    ),
    # Tools whose result is another agent's output: Claude Code's sub-agent tool and CrewAI's delegation
    # tools. Its taint cannot be known from the name, so the name taints. A host that reports the result with
    # typed agent provenance (``{"kind": "agent", "source_id": <the sub-agent's identity>}``) and lists the
    # name in ``trusted_tools`` has it judged by that agent's taint alone (the provenance only adds taint).
    "agent delegation": (
        "Task", "Agent", "dispatch_agent", "Delegate work to coworker", "Ask question to coworker",
    ),
    # Common names hosts give their own outside-content tools (the ones a generic agent loop defines),
    # the search services' own names among them (``serper``, ``exa_search``, ``duckduckgo``), and a bare
    # ``search``, which in an agent loop is most often the web (a host whose ``search`` reads only its own
    # documents lists it in ``trusted_tools``).
    "common host tool names": (
        "search", "serper", "exa_search", "duckduckgo",
        "browser", "browse", "web_browser", "browse_web", "open_url", "fetch_url", "read_url", "visit_url",
        "get_url", "scrape", "scrape_url", "scrape_website", "scrape_page", "scrape_webpage", "fetch_page",
        "fetch_webpage", "read_webpage", "crawl", "search_web", "internet_search",
        "email_read", "read_inbox", "slack_read", "firecrawl_scrape", "firecrawl_search", "firecrawl_crawl",
        "jina_reader", "serpapi", "perplexity_search", "http_get", "http_post", "curl", "wget", "gmail_read",
        "brave",
    ),
    # Chat, video, social, note and help-desk services whose messages, pages, videos and tickets people outside
    # the host write (Discord, Telegram and WhatsApp bots' readers, Notion's MCP server, YouTube transcript
    # tools, Reddit and Twitter readers, Zendesk's ticket tools), and search services hosts wrap (Bing,
    # SearxNG, SerpApi, Jina): as server names, matched as a part of a name (:data:`OUTSIDE_CONTENT_SERVERS`).
    "chat, video, social and help-desk services": (
        "discord", "telegram", "whatsapp", "notion", "youtube", "reddit", "twitter", "zendesk",
        "bing", "searx", "jina", "google", "outlook", "hackernews", "stackoverflow",
    ),
    # Shared-document stores, CRMs, support inboxes and team chat, whose files, leads, tickets and messages
    # people outside the host share or write (SharePoint, OneDrive, Google Drive, Dropbox, Box's search,
    # Salesforce, HubSpot, Intercom, Freshdesk, Microsoft Teams, Linear, X): their names as servers, matched
    # as a part where the name means only the product; ``teams`` (a host's ``list_teams``) and ``linear``
    # (``linear_regression``) only as a whole name or a namespace segment, with their readers by name.
    "documents, CRM, support and team chat": (
        "sharepoint", "onedrive", "gdrive", "google_drive", "dropbox", "salesforce", "hubspot", "intercom",
        "freshdesk", "msteams", "microsoft_teams",
        "teams", "teams_read", "teams_read_messages", "teams_get_messages", "teams_list_messages",
        "teams_search_messages", "linear", "linear_get_issue", "linear_search_issues", "linear_list_issues",
        "linear_get_comments", "x_search", "x_get_posts", "box_search",
    ),
}

#: The servers on the list that are also matched as a part of a name (module docstring), each with where
#: its ``<server>_<tool>`` names come from. Matched by :func:`~meta_memory.firewall.classify.deny_key`, and
#: only while the active ``default_untrusted_tools`` list holds the server.
OUTSIDE_CONTENT_SERVERS: dict[str, str] = {
    "puppeteer": "the reference puppeteer server (puppeteer_navigate, puppeteer_screenshot, ...)",
    "playwright": "Playwright MCP servers (mcp-playwright: playwright_navigate, playwright_screenshot, ...)",
    "brave-search": "the Brave Search server, as hosts prefix its tools",
    "gmail": "Gmail servers and toolkits (gmail_read_message, gmail_search_messages, ...)",
    "slack": "the reference Slack server (slack_get_channel_history, slack_get_thread_replies, ...)",
    "github": "GitHub's server and toolkits, as hosts prefix its tools (github_get_issue, ...)",
    "gitlab": "GitLab's server, as hosts prefix its tools",
    "atlassian": "Atlassian's server, as hosts prefix its tools",
    "jira": "mcp-atlassian's Jira tools (jira_get_issue, jira_search, ...)",
    "confluence": "mcp-atlassian's Confluence tools (confluence_get_page, confluence_search, ...)",
    "firecrawl": "firecrawl-mcp-server (firecrawl_scrape, firecrawl_search, ...) and CrewAI's Firecrawl tools",
    "tavily": "tavily-mcp (tavily-search, tavily-extract, ...) and LangChain's Tavily tools",
    "serper": "hosts' Serper tools and CrewAI's SerperDevTool",
    "duckduckgo": "LangChain's and hosts' DuckDuckGo tools (duckduckgo_search, duckduckgo_results_json)",
    "perplexity": "Perplexity's server (perplexity_ask, perplexity_research, perplexity_reason)",
    "arxiv": "arXiv search and paper tools (arxiv_search, ArxivPaperTool, get_arxiv_paper)",
    "wikipedia": "Wikipedia tools (wikipedia_search, get_wikipedia_page)",
    "discord": "Discord bots' and servers' readers (discord_read, read_discord_messages, ...)",
    "telegram": "Telegram bots' readers (telegram_get_updates, ...)",
    "whatsapp": "WhatsApp servers' readers (whatsapp_list_messages, ...)",
    "notion": "Notion's server (notion_search, notion_fetch, ...): pages anyone in a workspace writes",
    "youtube": "YouTube search and transcript tools (youtube_transcript, YoutubeVideoSearchTool, ...)",
    "reddit": "Reddit readers (reddit_search, get_reddit_posts, ...)",
    "twitter": "Twitter/X readers (twitter_search, get_twitter_timeline, ...)",
    "zendesk": "Zendesk's ticket tools (zendesk_get_ticket, ...): tickets customers write",
    "bing": "hosts' Bing search tools (bing_search, bing_news, ...)",
    "searx": "hosts' SearxNG tools (searx_search, searx_search_results)",
    "serpapi": "hosts' SerpApi tools (serpapi_search, SerpApiGoogleSearchTool)",
    "jina": "Jina's reader and search tools (jina_reader, jina_search)",
    "google": "hosts' Google search tools (google_search, search_google, a bare google) and Google's workspace "
              "readers (mail, documents and invitations people outside write)",
    "outlook": "Outlook mail and calendar readers (outlook_read_mail, ...): mail anyone can send",
    "hackernews": "Hacker News readers (hackernews_top_stories, get_hackernews_comments, ...)",
    "stackoverflow": "Stack Overflow search tools (stackoverflow_search, ...): posts people outside wrote",
    "sharepoint": "SharePoint readers (sharepoint_search, read_sharepoint_file, ...): documents others share",
    "onedrive": "OneDrive readers (onedrive_read_file, ...): files others share",
    "gdrive": "Google Drive servers (gdrive_search, gdrive_read_file, ...): documents anyone can share",
    "google_drive": "Google Drive tools spelled out (google_drive_search, read_google_drive_file)",
    "dropbox": "Dropbox readers (dropbox_read, dropbox_search, ...): files others share",
    "salesforce": "Salesforce queries (salesforce_query, ...): cases, leads and notes customers write",
    "hubspot": "HubSpot readers (hubspot_get_contact, ...): form fills and mail prospects write",
    "intercom": "Intercom readers (intercom_get_conversation, ...): conversations customers write",
    "freshdesk": "Freshdesk's ticket tools (freshdesk_get_ticket, ...): tickets customers write",
    "msteams": "Microsoft Teams readers (msteams_read_messages, ...): messages guests and bots write",
    "microsoft_teams": "Microsoft Teams readers spelled out (microsoft_teams_get_messages, ...)",
}

#: Short names of servers matched as a part of a name like the server itself (module docstring), each with
#: its server: only while the active list holds that server.
OUTSIDE_CONTENT_ALIASES: dict[str, str] = {
    "gh": "github",  # the GitHub CLI, which hosts wrap as gh_issue_view, gh_pr_view, run_gh, ...
    "yt": "youtube",  # yt-dlp and hosts' yt_transcript, yt_search
}

#: Words of the list that name outside content, matched as a part of a name (module docstring), each with
#: the false-positive risk it was judged by. Multi-word entries match as consecutive parts.
OUTSIDE_CONTENT_WORDS: dict[str, str] = {
    **{w: "a web address or page: the tool reads what it points at (a URL builder is the rare own tool)"
       for w in ("url", "urls", "web", "www", "webpage", "webpages", "website", "websites", "internet")},
    **{w: "a raw HTTP client reads whatever a server returns (an own API's health check is the rare exception)"
       for w in ("http", "https", "curl", "wget")},
    **{w: "a browser, crawler or scraper reads pages" for w in (
        "browser", "browsers", "browse", "browsing", "crawl", "crawler", "crawling", "scrape", "scraper",
        "scraping")},
    **{w: "a downloaded file comes from outside" for w in ("download", "downloads", "downloader")},
    **{w: "a feed's items and news are written elsewhere" for w in ("rss", "news")},
    **{w: "mail is the classic carrier: anyone can send it (a send-only tool goes in trusted_tools)"
       for w in ("imap", "pop3", "inbox", "mailbox", "email", "emails", "mail", "mails")},
    **{w: "a transcript is what people said in a video or call" for w in ("transcript", "transcripts")},
    **{w: "posts people outside wrote" for w in ("tweet", "tweets")},
    **{f"{verb}_{noun}": "a page read by a verb (``page`` alone is also a pager's verb: ``page_oncall``)"
       for verb in ("get", "read", "fetch", "visit", "open", "load", "view") for noun in ("page", "pages", "html")},
    **{w: "a site or link opened" for w in ("visit_site", "open_site", "read_site", "open_link", "follow_link",
                                             "click_link")},
    **{w: "a browser's navigation opens a page (puppeteer_navigate, browser_navigate, a bare navigate)"
       for w in ("navigate",)},
    **{w: "a page's content read by a tool (get_page_content, page_content)" for w in ("page_content",)},
}

#: Words of the list matched only as the last part of a segment (a version or ``tool`` suffix allowed):
#: ``url_fetch``, ``xweb_fetch``, ``page_fetch``, ``fetcher`` name a fetch of a source, while a host's own data
#: tools lead with the verb (``fetch_order``, ``fetch_user``, ``fetcher_of_dates``), which stay the spec's
#: unlisted trusted tools.
OUTSIDE_CONTENT_ENDINGS: tuple[str, ...] = ("fetch", "fetcher", "fetchers")

#: Names of the list matched only as the whole name, never as a segment of a namespaced one (module docstring).
BARE_ONLY_NAMES: tuple[str, ...] = ("search",)

#: The shipped default of ``content_trust.default_untrusted_tools`` (every name above, in order: the sources'
#: names, then the words and endings).
DEFAULT_UNTRUSTED_TOOLS: tuple[str, ...] = tuple(dict.fromkeys(
    [*(name for names in DEFAULT_UNTRUSTED_SOURCES.values() for name in names), *OUTSIDE_CONTENT_WORDS,
     *OUTSIDE_CONTENT_ENDINGS]
))
