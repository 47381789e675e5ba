"""The overview's expired records, a record's metadata, and the records listing's layout under long or
direction-changing search terms (Playwright driving Debian's chromium against a real gateway).

At 380 px the facts of a record and of the overview wrap between words (a word is cut only when it is
wider than its column), and a record address naming only the id (``#record/ID``, typed or pasted by hand)
opens that record.

The overview draws expired records (active past their expiry, not swept yet) in their own colour with a
matching legend swatch and lists them in an Expired column, so the per-scope table adds up to the
header's total; the record detail shows the record's metadata as text (markup and invisible characters
shown, never run); at 1400 px every row's Copy button stays inside the listing, a very long search term
stays inside its column, and a right-to-left override in the search is shown as an escape; from 380 to
1280 px the listing never scrolls sideways and its caption shows whole.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from browser_support import (
    console_fixture,
    open_page,
    remember_quarantined,
    remember_spaced,
    require_chromium,
    tainted_store,
)
from meta_memory.agent_memory import record_writes
from meta_memory.clock import ManualClock

sync_api = require_chromium()
expect = sync_api.expect

pytestmark = pytest.mark.gateway

LEAD, WORKER = "lead:main", "worker:night-shift-observer"
#: No expiry sweep but the one at start-up within a test run.
CONFIG = "[agent_memory]\nexpiry_sweep_s = 86400\n"
HOSTILE = {"team": "<svg onload=alert(1)>", "label": "abc\u202edef", "nested": {"img": "<img src=x onerror=alert(2)>"}}


def _seed(state: Path) -> dict[str, str]:
    clock = ManualClock(1_765_000_000_000)
    ids: dict[str, str] = {}
    with tainted_store(state, clock, "web_fetch") as store:
        # short titles leave the other columns their full width (the listing is then at its widest)
        remember_spaced(store, clock, ((LEAD if i % 2 else WORKER, f"T{i}", f"Planning note {i} body.")
                                       for i in range(6)))
        clock.advance(1000)
        record_writes.remember(store, "default", LEAD, "rtl\u202egnp.exe", "A title that reads backwards.")
        clock.advance(1000)
        ids["quarantined"] = remember_quarantined(store, LEAD, "MCP note", "Fetched from a tainted session.")
        clock.advance(1000)
        ids["meta"] = record_writes.remember_merging(
            store, "default", LEAD, "Tagged by metadata", "Filtered by team.", metadata=HOSTILE)[0].memory_id
        clock.advance(1000)
        ids["plain"] = record_writes.remember(store, "default", WORKER, "No metadata here", "Just a body.")[0].memory_id
    return ids


console = console_fixture("console-overview-detail", _seed, CONFIG)


@pytest.fixture(scope="module")
def expired(console: Any) -> str:
    """A record remembered with a one-second time to live, once it has expired. The gateway sweeps expired
    records when it starts and then once a day (CONFIG), so it stays expired, not swept, for the module."""
    gw, _ = console
    memory_id = str(gw.result("meta/agent_memory/remember", {
        "identity": LEAD, "title": "Short-lived reminder", "body": "Call the vendor back.", "ttl_s": 1})["memory_id"])
    time.sleep(1.2)
    return memory_id


@pytest.fixture
def page(browser: Any, console: Any) -> Iterator[Any]:
    with open_page(browser) as p:
        p.set_viewport_size({"width": 1400, "height": 900})
        yield p


def _luminance(rgb: str) -> float:
    values = [int(v) / 255 for v in rgb[rgb.index("(") + 1 : rgb.index(")")].split(",")[:3]]
    lin = [v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4 for v in values]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def _contrast(a: str, b: str) -> float:
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def _open(page: Any, gw: Any, hash_: str) -> None:
    page.goto(gw.url + "/console/" + hash_)
    expect(page.locator("#view")).to_have_attribute("aria-busy", "false")


def test_expired_records_have_their_own_colour_and_legend(page: Any, console: Any, expired: str) -> None:
    gw, _ = console
    _open(page, gw, "#overview")
    total = page.locator("#overview-charts .chart-card").first.locator("figure[data-chart='status']")
    segment = total.locator("rect.seg-expired")
    expect(segment).to_have_attribute("data-value", "1")
    fill = segment.evaluate("n => getComputedStyle(n).fill")
    swatch = total.locator("li.legend-item[data-key='expired'] .swatch").evaluate(
        "n => getComputedStyle(n).backgroundColor")
    others = page.evaluate("""() => ["superseded", "active", "quarantined", "tombstoned"].map((k) => {
        const probe = document.createElement("span");
        probe.className = "swatch seg-" + k;
        document.body.append(probe);
        const colour = getComputedStyle(probe).backgroundColor;
        probe.remove();
        return colour;
    })""")
    assert fill == swatch, (fill, swatch)
    assert fill not in ("rgb(0, 0, 0)", *others), (fill, others)
    assert _contrast(fill, "rgb(255, 255, 255)") >= 4.5
    expect(total.locator("li.legend-item[data-key='expired']")).to_contain_text("expired 1")


def test_the_per_scope_table_counts_expired_records_and_adds_up(page: Any, console: Any, expired: str) -> None:
    gw, _ = console
    _open(page, gw, "#overview")
    overview = gw.result("meta/memory/panel/overview", {})
    table = page.locator("#view table").last
    headers = table.locator("thead th").all_inner_texts()
    assert "Expired" in headers
    statuses = ["Active", "Expired", "Superseded", "Quarantined", "Tombstoned"]
    columns = [headers.index(s) for s in statuses]
    shown_total = 0
    for row, scope in zip(table.locator("tbody tr").all(), overview["scopes"], strict=True):
        cells = row.locator("td").all_inner_texts()
        figures = [int(cells[i]) for i in columns]
        assert figures[1] == scope["counts"].get("expired", 0)
        assert sum(figures) == scope["records"]
        shown_total += sum(figures)
    header_total = page.locator("#overview-totals dt:text-is('Records you may read') + dd").inner_text()
    assert shown_total == int(header_total) == overview["totals"]["records"] == 11


def test_the_floors_read_as_figures_and_say_what_they_mean(page: Any, console: Any) -> None:
    """The overview's floors read with separators and binary units, and their title explains them."""
    gw, _ = console
    _open(page, gw, "#overview")
    floors = gw.result("meta/memory/panel/overview", {})["floors"]
    assert floors == {"records": 4000, "bytes": 32 * 1024 * 1024}
    shown = page.locator("#overview-floors")
    expect(shown).to_have_text("4,000 records / 32 MiB")
    title = shown.get_attribute("title") or ""
    assert "retention floors" in title and "4,000 records" in title and "33,554,432 bytes" in title
    assert "only warns" in title
    assert page.locator("#overview-totals dt:text-is('Floors per scope')").get_attribute("title") == title


def test_record_detail_shows_metadata_as_text(page: Any, console: Any) -> None:
    gw, ids = console
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    _open(page, gw, f"#record/default/{ids['meta']}")
    meta = page.locator("#record-metadata")
    expect(meta).to_contain_text('"team": "<svg onload=alert(1)>"')
    expect(meta).to_contain_text("<img src=x onerror=alert(2)>")
    expect(meta).to_contain_text("abc⟨U+202E⟩def")
    assert "\u202e" not in meta.inner_text()
    assert page.locator("#view svg, #view img").count() == 0
    page.wait_for_timeout(200)
    assert not dialogs
    _open(page, gw, f"#record/default/{ids['plain']}")
    expect(page.locator("#record-metadata")).to_have_text("none")


def _inside(page: Any, selector: str, container: str) -> list[dict[str, float]]:
    """The elements matching ``selector`` whose right edge passes ``container``'s visible right edge."""
    return page.evaluate("""([sel, box]) => {
        const edge = document.querySelector(box).getBoundingClientRect().right;
        return [...document.querySelectorAll(sel)].map((n) => n.getBoundingClientRect())
            .filter((r) => r.right > edge + 0.5).map((r) => ({ right: r.right, edge }));
    }""", [selector, container])


def test_at_1400px_every_copy_button_stays_inside_the_listing(page: Any, console: Any, expired: str) -> None:
    gw, _ = console
    _open(page, gw, "#records")
    expect(page.locator("table.records tbody tr")).to_have_count(11)
    assert _inside(page, "table.records button.copy", "#records-holder .table-wrap") == []
    wrap = page.locator("#records-holder .table-wrap")
    assert wrap.evaluate("n => n.scrollWidth <= n.clientWidth"), "the records table scrolls sideways"


def test_a_very_long_search_stays_inside_its_column(page: Any, console: Any) -> None:
    gw, _ = console
    _open(page, gw, "#records?q=" + "x" * 200)  # the longest search the gateway takes, one word
    caption = page.locator("table.records caption")
    expect(caption).to_contain_text("Page 1: 0 records matching")
    expect(caption).to_contain_text("newest updated first")
    assert _inside(page, "table.records caption, table.records caption *", "main") == []
    wrap = page.locator("#records-holder .table-wrap")
    assert wrap.evaluate("n => n.scrollWidth <= n.clientWidth")


def test_a_direction_override_in_the_search_is_shown_as_an_escape(page: Any, console: Any) -> None:
    gw, _ = console
    _open(page, gw, "#records?q=" + quote("\u202e<b>evil</b>"))
    caption = page.locator("table.records caption")
    expect(caption).to_contain_text("matching “⟨U+202E⟩<b>evil</b>”")
    assert caption.locator(".invisible-char").count() == 1
    assert "\u202e" not in caption.inner_text()
    box = page.locator("#f-query")
    assert box.input_value() == "\u202e<b>evil</b>"  # the search itself is kept
    assert box.get_attribute("dir") == "ltr"
    assert box.evaluate("n => getComputedStyle(n).unicodeBidi") == "plaintext"
    expect(page.locator("#f-query-warning")).to_contain_text("⟨U+202E⟩")
    assert page.locator("#view b").count() == 0


def test_at_1280px_the_records_table_fits_and_the_first_copy_button_shows(browser: Any, console: Any,
                                                                          expired: str) -> None:
    """At 1280x800 (a laptop) the listing beside the navigation and the timeline fits without a sideways
    scroll, and the first row's Copy button is on screen at first: before, the table was about 80 px too wide
    and the Id column started past the listing's right edge."""
    gw, _ = console
    with open_page(browser) as page:
        page.set_viewport_size({"width": 1280, "height": 800})
        _open(page, gw, "#records")
        expect(page.locator("table.records tbody tr")).to_have_count(11)
        wrap = page.locator("#records-holder .table-wrap")
        widths = page.evaluate("""() => [...document.querySelectorAll('table.records thead th')]
            .map((th) => [th.textContent, Math.round(th.getBoundingClientRect().width)])""")
        assert wrap.evaluate("n => n.scrollWidth <= n.clientWidth"), ("the records table scrolls sideways", widths)
        assert _inside(page, "table.records button.copy", "#records-holder .table-wrap") == []
        copy = page.locator("table.records tbody tr").first.locator("button.copy")
        box, holder = copy.bounding_box(), wrap.bounding_box()
        assert box is not None and holder is not None
        assert box["x"] >= 0 and box["y"] >= 0 and box["x"] + box["width"] <= 1280 and box["y"] + box["height"] <= 800
        assert box["x"] + box["width"] <= holder["x"] + holder["width"]
        # the updated time is whole, on one line or as date over clock time, and the page does not scroll sideways
        when = page.locator("table.records tbody tr").first.locator("time.when")
        assert when.get_attribute("datetime", timeout=1000) is not None
        assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")


#: The words of the text inside the element a JS function is given whose letters sit on more than one line.
_SPLIT_WORDS = """(node) => {
    const split = [];
    const walker = document.createTreeWalker(node, NodeFilter.SHOW_TEXT);
    for (let text = walker.nextNode(); text; text = walker.nextNode()) {
        for (const m of text.data.matchAll(/\\S+/g)) {
            const range = document.createRange();
            range.setStart(text, m.index);
            range.setEnd(text, m.index + m[0].length);
            const tops = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)));
            if (tops.size > 1) split.push(m[0]);
        }
    }
    return split;
}"""


def test_at_380px_a_record_s_facts_wrap_between_words(page: Any, console: Any) -> None:
    gw, ids = console
    page.set_viewport_size({"width": 380, "height": 900})
    _open(page, gw, f"#record/default/{ids['quarantined']}")
    status = page.locator("#view dl.facts dt:text-is('Status') + dd")
    expect(status).to_contain_text("session tainted by web tool 'web_fetch'")
    assert status.evaluate("n => n.getClientRects().length && n.getBoundingClientRect().height > 30"), \
        "the reason is expected to need more than one line at 380 px"
    assert status.evaluate(_SPLIT_WORDS) == []
    _open(page, gw, "#overview")
    assert page.locator("#overview-totals").evaluate(_SPLIT_WORDS) == []


def test_a_record_address_naming_only_the_id_opens_the_record(page: Any, console: Any) -> None:
    gw, ids = console
    _open(page, gw, f"#record/{ids['plain']}")
    expect(page.locator("#record-title")).to_have_text("No metadata here")
    expect(page.locator("#error")).to_have_text("")
    for empty in ("#record/", "#record//", "#record/default/"):  # no id: said in words, not as the RPC's refusal
        _open(page, gw, empty)
        expect(page.locator("#error")).to_contain_text("The address names no record")
        expect(page.locator("#error")).not_to_contain_text("-32602")


@pytest.mark.parametrize("width", [380, 900, 1000, 1210, 1280])
def test_the_records_listing_never_scrolls_sideways_and_its_caption_shows_whole(browser: Any, console: Any,
                                                                                 expired: str, width: int) -> None:
    """From a phone's 380 px to a laptop's 1280 the listing fits its column: before, its eight columns (about
    755 px) scrolled sideways at 380 px, where the caption ran on past the listing's edge, and from 901 to
    about 1230 px, between the navigation and the timeline. In less room than the columns need, each record is
    a card of labelled lines; every value, the Copy buttons included, stays inside the listing."""
    gw, _ = console
    with open_page(browser) as page:
        page.set_viewport_size({"width": width, "height": 800})
        _open(page, gw, "#records")
        expect(page.locator("table.records tbody tr")).to_have_count(11)
        wrap = page.locator("#records-holder .table-wrap")
        assert wrap.evaluate("n => n.scrollWidth <= n.clientWidth"), "the records listing scrolls sideways"
        assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth"), "the page does"
        caption = page.locator("table.records caption")
        expect(caption).to_have_text("Page 1: 11 records, newest updated first")
        assert caption.evaluate("n => n.scrollWidth <= n.clientWidth && n.scrollHeight <= n.clientHeight")
        box, holder = caption.bounding_box(), wrap.bounding_box()
        assert box is not None and holder is not None
        assert holder["x"] - 0.5 <= box["x"] and box["x"] + box["width"] <= holder["x"] + holder["width"] + 0.5
        assert 0 <= box["x"] and box["x"] + box["width"] <= width
        assert _inside(page, "table.records caption, table.records tbody td, table.records button.copy",
                       "#records-holder .table-wrap") == []
        # a narrow listing names each value's column beside it
        if page.locator("table.records thead").evaluate("n => n.getBoundingClientRect().height") < 2:
            first = page.locator("table.records tbody tr").first.locator("td").nth(3)
            assert first.evaluate("n => getComputedStyle(n, '::before').content") == '"Scope"'
