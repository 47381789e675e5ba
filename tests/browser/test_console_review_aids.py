"""What a reviewer needs from the console when the memory is large, odd or out of reach (Playwright
driving Debian's chromium, headless, against a real gateway).

* The Quarantine view pages through a queue longer than one page (232 records) and says whether more
  follow; every quarantined record can be reached.
* Bidirectional controls and other invisible characters in a title or body are shown as visible
  escapes (``⟨U+202E⟩``) in isolated spans, so the listing and the record page show the characters the
  model is given, in the order they are stored, and one cell cannot reorder its neighbours.
* The search matches tags as tags: ``[``, ``travel"`` or ``","`` find nothing for the tags' JSON text.
* The view, search, filters and page cursor live in the location hash: reload, Back and Forward
  restore them, and the pager says "Page N" and whether more follow.
* With the gateway out of reach the rows stay on screen with a plain "cannot reach the gateway,
  retrying" message, and the listing comes back by itself; no empty band sits above a heading; a long
  title without spaces is clamped; the sign-in form stands alone and offers "Continue without a token"
  only where an anonymous caller may read memory.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browser_support import (
    IMG,
    console_fixture,
    login,
    open_page,
    remember_quarantined,
    remember_spaced,
    require_chromium,
    tainted_store,
)
from meta_memory.agent_memory import record_writes
from support import access_toml, start_gateway, write_config

sync_api = require_chromium()
expect = sync_api.expect

pytestmark = pytest.mark.gateway

LEAD = "lead:main"
ANN = "console-review-aids-ann-0001"
QUEUE = 232
BIDI_TITLE = "abc \u202e txet desrever"
BIDI_BODY = "pay \u202eylno 01$\u202c now\u200b, hidden \u2060\ufeff marks, blank \u2800\U0001d173\u00ad end \u2764\ufe0f"
LONG_TITLE = "W" * 200
BIDI_TOOL = "evil\u202egnp.exe\u200b"

GRANTS = [("ann", a) for a in ("agent.memory.read", "agent.view", "mob.memory.read", "operator.memory.read",
                               "memory.quarantine.review", "agent.memory.write", "agent.memory.delete")]
CONFIG = access_toml({ANN: "ann"}, GRANTS)


def _seed(state: Path) -> dict[str, str]:
    from meta_memory.clock import ManualClock

    clock = ManualClock(1_766_000_000_000)
    ids: dict[str, str] = {}
    with tainted_store(state, clock, "web_fetch") as store:
        queue = []
        for i in range(QUEUE - 1):  # and the one below, tainted by a tool whose name holds controls
            clock.advance(10)
            queue.append(remember_quarantined(store, LEAD, f"Suspicious note {i:03d}", f"Planted text {i}."))
        remember_spaced(store, clock, ((LEAD, f"Trip note {i:02d}", f"Day {i} of the trip.") for i in range(12)))
        clock.advance(1000)
        ids["one_tag"] = record_writes.remember(store, "default", LEAD, "Packing list", "Socks.",
                                                tags=("travel",))[0].memory_id
        clock.advance(1000)
        ids["two_tags"] = record_writes.remember(store, "default", LEAD, "City break", "Museums.",
                                                 tags=("travel", "paris"))[0].memory_id
        clock.advance(1000)
        ids["long"] = record_writes.remember(store, "default", LEAD, LONG_TITLE, "A long title.")[0].memory_id
        clock.advance(1000)
        ids["bidi"] = record_writes.remember(store, "default", LEAD, BIDI_TITLE, BIDI_BODY)[0].memory_id
    clock.advance(1000)
    with tainted_store(state, clock, BIDI_TOOL) as store:  # a tool (an MCP server) names itself with controls
        ids["bidi_reason"] = remember_quarantined(store, LEAD, "Reason with controls", "Planted by a tool.")
    ids["queue"] = json.dumps([*queue, ids["bidi_reason"]])
    return ids


console = console_fixture("console-review-aids", _seed, CONFIG)


@pytest.fixture
def page(browser: Any, console: Any) -> Iterator[Any]:
    with open_page(browser) as p:
        yield p


def listed_ids(page: Any) -> list[str]:
    return page.locator("#view tbody tr[data-id]").evaluate_all("rows => rows.map(r => r.dataset.id)")


def queue_ids(page: Any) -> list[str]:
    """The ids of the quarantine table's rows (its Id column's full ids)."""
    return page.locator("#view table").first.locator("tbody code.id").evaluate_all("cs => cs.map(c => c.title)")


def settled(page: Any) -> None:
    expect(page.locator("#view")).to_have_attribute("aria-busy", "false")


# ---------------------------------------------------------------------------- quarantine paging


def test_the_quarantine_view_pages_through_every_queued_record(page: Any, console: Any) -> None:
    gw, ids = console
    login(page, gw, ANN)
    page.get_by_role("link", name="Quarantine", exact=True).click()
    settled(page)
    seen: list[str] = []
    pages = 0
    while True:
        pages += 1
        expect(page.locator("#quarantine-page")).to_have_text(f"Page {pages}")
        settled(page)
        seen += queue_ids(page)
        nxt = page.locator("#quarantine-next")
        if nxt.is_disabled():
            expect(page.locator("#quarantine-more")).to_have_text("last page")
            break
        expect(page.locator("#quarantine-more")).to_have_text("more quarantined records follow")
        expect(page.locator("#view caption").first).to_contain_text("(more follow)")
        nxt.click()
    assert len(seen) == QUEUE and set(seen) == set(json.loads(ids["queue"]))  # nobody is left unreviewable
    assert pages == 5
    # the page is in the hash: a reload shows the same page, Back the one before
    last = queue_ids(page)
    assert re.search(r"#quarantine\?page=5&cursor=", page.url)
    page.reload()
    expect(page.locator("#quarantine-page")).to_have_text("Page 5")
    settled(page)
    assert queue_ids(page) == last
    page.go_back()
    expect(page.locator("#quarantine-page")).to_have_text("Page 4")


# ---------------------------------------------------------------------------- invisible characters


_GLYPH_X = """el => {
  const xs = [];
  const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (let i = 0; i < node.length; i++) {
      if (!node.data[i].trim()) continue;
      const range = document.createRange();
      range.setStart(node, i);
      range.setEnd(node, i + 1);
      const rect = range.getBoundingClientRect();
      xs.push([rect.left, rect.top]);
    }
  }
  return xs;
}"""


def _reads_left_to_right(page: Any, locator: Any) -> bool:
    """Whether the visible glyphs of ``locator`` stand left to right in the order they are stored
    (one line, or line by line)."""
    xs = locator.evaluate(_GLYPH_X)
    return all(b[1] > a[1] + 1 or b[0] >= a[0] for a, b in zip(xs, xs[1:], strict=False)) and len(xs) > 3


def test_bidi_and_invisible_characters_are_shown_as_escapes_in_isolated_text(page: Any, console: Any) -> None:
    gw, ids = console
    login(page, gw, ANN)
    link = page.locator(f'#view tbody tr[data-id="{ids["bidi"]}"] a.record-link')
    expect(link).to_have_text("abc ⟨U+202E⟩ txet desrever")
    assert "\u202e" not in link.inner_text()
    assert _reads_left_to_right(page, link)  # "txet desrever" is drawn as stored, not reversed
    escape = link.locator(".invisible-char")
    expect(escape).to_have_text("⟨U+202E⟩")
    assert escape.evaluate("e => getComputedStyle(e).color") != link.evaluate("e => getComputedStyle(e.firstChild).color")
    assert link.locator(".user-text").first.get_attribute("dir") == "auto"
    assert link.locator(".user-text").first.evaluate("e => getComputedStyle(e).unicodeBidi") == "isolate"
    assert link.get_attribute("title") == "abc ⟨U+202E⟩ txet desrever"
    # the record page: heading and body show every invisible character, in stored order
    link.click()
    expect(page.locator("#record-body")).to_be_visible()
    expect(page.locator("#record-title")).to_have_text("abc ⟨U+202E⟩ txet desrever")
    body = page.locator("#record-body")
    expect(body).to_have_text("pay ⟨U+202E⟩ylno 01$⟨U+202C⟩ now⟨U+200B⟩, hidden ⟨U+2060⟩⟨U+FEFF⟩ marks, "
                              "blank ⟨U+2800⟩⟨U+1D173⟩⟨U+00AD⟩ end \u2764\ufe0f")
    assert _reads_left_to_right(page, page.locator("#record-title"))
    assert _reads_left_to_right(page, body)
    # the isolation holds in the timeline and a preview as well: nothing of the raw controls reaches the page
    page.go_back()
    settled(page)
    page.locator(f'#view tbody tr[data-id="{ids["bidi"]}"] button.preview-toggle').click()
    expect(page.locator(".preview-body")).to_contain_text("⟨U+202E⟩ylno")
    text = page.locator("main").inner_text()
    assert not re.search("[\u202a-\u202e\u2066-\u2069\u200b-\u200f]", text)


def test_a_quarantine_reason_shows_its_controls_as_escapes(page: Any, console: Any) -> None:
    """A quarantine reason names a tool or an MCP server the outside chose: its bidirectional and invisible
    characters are escapes on the record page, the preview and the Status column's tooltip."""
    gw, ids = console
    login(page, gw, ANN)
    page.goto(f"{gw.url}/console/#record/default/{ids['bidi_reason']}")
    status = page.locator("#record-status")
    expect(status).to_contain_text("evil⟨U+202E⟩gnp.exe⟨U+200B⟩")
    assert not re.search("[\u202a-\u202e\u200b]", status.inner_text())


# ---------------------------------------------------------------------------- tags search


def test_the_search_matches_tags_not_their_json_text(page: Any, console: Any) -> None:
    gw, ids = console
    for query in ("[", 'travel"', '","', '"paris"'):
        assert gw.result("meta/memory/panel/records", {"query": query}, token=ANN)["records"] == [], query
    found = gw.result("meta/memory/panel/records", {"query": "TRAVEL"}, token=ANN)["records"]
    assert [r["id"] for r in found] == [ids["two_tags"], ids["one_tag"]]
    login(page, gw, ANN)
    for query in ("[", 'travel"', '","'):
        page.get_by_label("Search").fill(query)
        page.get_by_label("Search").press("Enter")
        # this search's own answer, not the last one's: the next fill must land in the form it rendered
        expect(page.locator("#view caption")).to_contain_text(f"0 records matching “{query}”")
        settled(page)
        expect(page.locator("#view tbody")).to_contain_text("No records you may read match this search.")
    page.get_by_label("Search").fill("paris")
    page.get_by_label("Search").press("Enter")
    settled(page)
    expect(page.locator("#view caption")).to_contain_text("1 record matching")
    assert listed_ids(page) == [ids["two_tags"]]


def test_an_answer_arriving_while_the_user_types_keeps_their_words(page: Any, console: Any) -> None:
    gw, ids = console
    login(page, gw, ANN)
    settled(page)
    search = page.get_by_label("Search")
    search.fill("par")
    old = page.locator("#view caption").element_handle()
    # the listing is read again while the field holds unsent words (the live view, a retry, a slow answer)
    page.evaluate("window.dispatchEvent(new HashChangeEvent('hashchange'))")
    page.wait_for_function("caption => !caption.isConnected", arg=old)
    settled(page)
    assert search.input_value() == "par"
    assert page.evaluate("document.activeElement.id") == "f-query"
    search.press("End")
    search.type("is")
    search.press("Enter")
    expect(page.locator("#view caption")).to_contain_text("1 record matching “paris”")
    assert listed_ids(page) == [ids["two_tags"]]
    # a search sent is not an edit in progress: the new view's heading takes the focus as before
    settled(page)
    assert page.evaluate("document.activeElement.id") == "view-title"


# ---------------------------------------------------------------------------- the hash


def test_search_filters_and_page_survive_reload_back_and_forward(page: Any, console: Any) -> None:
    gw, _ = console
    login(page, gw, ANN)
    page.get_by_label("Search").fill("suspicious note")
    page.get_by_label("Status").select_option("quarantined")
    page.get_by_label("Per page").fill("20")
    page.get_by_role("button", name="Apply filters").click()
    settled(page)
    first = listed_ids(page)
    pages = [first]
    for n in (2, 3):
        page.locator("#records-next").click()
        expect(page.locator("#records-page")).to_have_text(f"Page {n}")
        settled(page)
        pages.append(listed_ids(page))
    assert len({i for p in pages for i in p}) == 60
    expect(page.locator("#records-more")).to_have_text("more records follow")
    assert "q=suspicious+note" in page.url and "status=quarantined" in page.url and "page=3" in page.url
    page.reload()
    expect(page.locator("#records-page")).to_have_text("Page 3")
    settled(page)
    assert listed_ids(page) == pages[2]
    assert page.get_by_label("Search").input_value() == "suspicious note"
    assert page.get_by_label("Status").input_value() == "quarantined"
    assert page.get_by_label("Per page").input_value() == "20"
    # Previous page works after the reload too, then Back and Forward walk the pages
    page.locator("#records-prev").click()
    expect(page.locator("#records-page")).to_have_text("Page 2")
    settled(page)
    assert listed_ids(page) == pages[1]
    page.go_back()
    expect(page.locator("#records-page")).to_have_text("Page 3")
    settled(page)
    page.go_back()  # the reload kept page 3; before it came page 2, then page 1
    expect(page.locator("#records-page")).to_have_text("Page 2")
    page.go_back()
    expect(page.locator("#records-page")).to_have_text("Page 1")
    settled(page)
    assert listed_ids(page) == first
    page.go_forward()
    expect(page.locator("#records-page")).to_have_text("Page 2")
    assert page.url.startswith(gw.url + "/console/")
    # the last page says so
    page.goto(gw.url + "/console/#records?q=trip+note")
    settled(page)
    expect(page.locator("#records-more")).to_have_text("last page")
    expect(page.locator("#view caption")).to_contain_text("12 records matching")


def test_a_bookmarked_page_opens_in_a_new_tab_where_the_page_before_is_unknown(page: Any, console: Any) -> None:
    gw, _ = console
    login(page, gw, ANN)
    page.goto(gw.url + "/console/#records?q=suspicious+note&status=quarantined&limit=20")
    settled(page)
    page.locator("#records-next").click()
    expect(page.locator("#records-page")).to_have_text("Page 2")
    page.locator("#records-next").click()
    expect(page.locator("#records-page")).to_have_text("Page 3")
    settled(page)
    bookmark, third = page.url, listed_ids(page)
    with open_page(page.context.browser) as other:
        login(other, gw, ANN)
        other.goto(bookmark)
        expect(other.locator("#records-page")).to_have_text("Page 3")
        settled(other)
        assert listed_ids(other) == third
        assert other.locator("#records-prev").is_disabled()  # this tab never saw page 2's cursor
        other.locator("#records-first").click()
        expect(other.locator("#records-page")).to_have_text("Page 1")
        expect(other.locator("#records-prev")).to_be_disabled()


# ---------------------------------------------------------------------------- errors and layout


def test_an_unreachable_gateway_keeps_the_rows_and_retries(page: Any, console: Any) -> None:
    gw, _ = console
    login(page, gw, ANN)
    settled(page)
    before = listed_ids(page)
    assert before
    page.route("**/rpc", lambda route: route.abort())
    page.get_by_role("button", name="Apply filters").click()
    expect(page.locator("#error")).to_contain_text("Cannot reach the gateway; retrying")
    expect(page.locator("#error")).not_to_contain_text("Failed to fetch")
    assert listed_ids(page) == before  # the last rows stay on screen
    page.unroute("**/rpc")
    expect(page.locator("#error")).to_have_text("", timeout=10_000)  # the retry finds the gateway again
    settled(page)
    assert listed_ids(page) == before
    expect(page.locator("#view")).not_to_have_class(re.compile("stale"))


def test_a_page_of_every_realm_ended_before_its_rows_says_the_next_page_reads_on(page: Any, console: Any) -> None:
    gw, _ = console

    def cut_short(route: Any) -> None:
        """The gateway's answer when a page has read as many realms as one page may and found none of its rows."""
        sent = route.request.post_data_json
        if not (isinstance(sent, dict) and sent.get("method") == "meta/memory/panel/records"):
            route.continue_()
            return
        answer = route.fetch()
        body = answer.json()
        body["result"]["records"], body["result"]["next_cursor"] = [], "1700000000000:mem-next~"
        route.fulfill(response=answer, json=body)

    page.route("**/rpc", cut_short)
    login(page, gw, ANN)
    settled(page)
    expect(page.locator("#view tbody")).to_contain_text("None in the realms read for this page; the next page reads on.")
    expect(page.locator("#view caption")).to_contain_text("(more follow)")
    expect(page.locator("#records-next")).to_be_enabled()


def test_headings_sit_at_the_top_and_long_titles_are_clamped(page: Any, console: Any) -> None:
    gw, ids = console
    login(page, gw, ANN)
    settled(page)
    for view in ("Records", "Quarantine", "Overview"):
        page.get_by_role("link", name=view, exact=True).click()
        settled(page)
        gap = page.evaluate("document.getElementById('view-title').getBoundingClientRect().top"
                            " - document.querySelector('main').getBoundingClientRect().top")
        assert gap <= 24, (view, gap)  # main's padding, no empty band
    page.get_by_role("link", name="Records", exact=True).click()
    settled(page)
    link = page.locator(f'#view tbody tr[data-id="{ids["long"]}"] a.record-link')
    line = float(link.evaluate("e => parseFloat(getComputedStyle(e).lineHeight)"))
    assert link.evaluate("e => e.getBoundingClientRect().height") <= 2 * line + 2
    assert link.get_attribute("title") == LONG_TITLE
    row = page.locator(f'#view tbody tr[data-id="{ids["long"]}"]')
    assert row.evaluate("e => e.getBoundingClientRect().height") < 4 * line
    IMG.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(IMG / "records-review-aids.png"))
    link.click()
    expect(page.locator("#record-title")).to_have_text(LONG_TITLE)  # the full title on the record page


def test_sign_in_stands_alone_and_offers_no_tokenless_visit_where_one_is_needed(page: Any, console: Any) -> None:
    gw, _ = console
    page.goto(gw.url + "/console/")
    expect(page.get_by_label("Bearer token")).to_be_visible()
    expect(page.locator("nav")).to_be_hidden()
    expect(page.locator("aside.timeline")).to_be_hidden()
    expect(page.get_by_role("button", name="Continue without a token")).to_be_hidden()
    box = page.locator("#login").bounding_box()
    assert box is not None and box["y"] < 200  # the form is the first thing under the header
    page.screenshot(path=str(IMG / "sign-in.png"))
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#login-error")).to_have_text("Enter the token the gateway gave you.")


def test_a_gateway_with_anonymous_reads_offers_a_tokenless_visit(browser: Any,
                                                                  tmp_path_factory: pytest.TempPathFactory) -> None:
    root = tmp_path_factory.mktemp("anonymous-reads")
    config = CONFIG + "\n".join(
        f'[[access.grants]]\naction = "{a}"\nwho = {{ anyone = true }}\n' for a in ("agent.memory.read", "agent.view"))
    gw = start_gateway(root / "state", config=write_config(root / "meta.toml", config))
    try:
        gw.result("meta/agent_memory/remember", {"identity": LEAD, "title": "Open to all", "body": "x"}, token=ANN)
        with open_page(browser) as p:
            p.goto(gw.url + "/console/")
            expect(p.get_by_label("Bearer token")).to_be_visible()
            p.get_by_role("button", name="Continue without a token").click()
            expect(p.get_by_role("link", name="Open to all")).to_be_visible()
            expect(p.locator("#who")).to_contain_text("No token")
    finally:
        gw.stop()
