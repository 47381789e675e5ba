"""The console when the gateway stops answering, and when the address names a page it cannot show
(Playwright driving Debian's chromium, headless, against a real gateway).

* A gateway that accepts connections but never answers (its process suspended with ``SIGSTOP``) is
  treated like one that refuses them: after the request timeout the rows loaded before stay on screen
  (never removed while the new page is awaited), the page says it cannot reach the gateway and retries,
  and the timeline says it is reconnecting; once the process resumes the asked-for page arrives and
  the timeline is live again. The browser session sets short waits (``meta-memory-console-timeouts``
  in sessionStorage) so the test takes seconds, not the default 15 s.
* A page size outside 1..200, a page past the first without its cursor, and a cursor without a page
  past the first are refused in words naming the value and the rule, never replaced by page 1 of 50.
"""

from __future__ import annotations

import json
import os
import re
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browser_support import console_fixture, login, open_page, remember_spaced, require_chromium, tainted_store
from meta_memory.clock import ManualClock
from support import access_toml

sync_api = require_chromium()
expect = sync_api.expect

pytestmark = pytest.mark.gateway

LEAD = "lead:main"
ANN = "console-unresponsive-ann-0001"
CONFIG = access_toml({ANN: "ann"}, [("ann", a) for a in ("agent.memory.read", "agent.view", "mob.memory.read",
                                                          "operator.memory.read")])
WAITS = {"request_ms": 1500, "stall_ms": 3000}


def _seed(state: Path) -> dict[str, str]:
    clock = ManualClock(1_767_000_000_000)
    with tainted_store(state, clock, "web_fetch") as store:
        remember_spaced(store, clock, ((LEAD, f"Errand {i:02d}", f"Errand number {i}.") for i in range(12)))
    return {}


console = console_fixture("console-unresponsive", _seed, CONFIG)


@pytest.fixture
def page(browser: Any, console: Any) -> Iterator[Any]:
    with open_page(browser) as p:
        p.add_init_script(f"sessionStorage.setItem('meta-memory-console-timeouts', {json.dumps(json.dumps(WAITS))});")
        yield p


def listed_ids(page: Any) -> list[str]:
    return page.locator("#view tbody tr[data-id]").evaluate_all("rows => rows.map(r => r.dataset.id)")


def settled(page: Any) -> None:
    expect(page.locator("#view")).to_have_attribute("aria-busy", "false")


def test_a_silent_gateway_keeps_the_rows_says_so_and_recovers(page: Any, console: Any) -> None:
    gw, _ = console
    login(page, gw, ANN)
    page.goto(gw.url + "/console/#records?limit=5")
    expect(page.locator("#records-page")).to_have_text("Page 1")
    settled(page)
    expect(page.locator("#timeline-state")).to_have_text("Live.")
    before = listed_ids(page)
    assert len(before) == 5
    # from here on, note whether the listing's table ever leaves the page
    page.evaluate("""() => {
      window.tableGone = false;
      new MutationObserver(() => { if (!document.querySelector('#view table')) window.tableGone = true; })
        .observe(document.getElementById('view'), { childList: true, subtree: true });
    }""")
    os.kill(gw.proc.pid, signal.SIGSTOP)
    try:
        page.locator("#records-next").click()
        expect(page.locator("#error")).to_have_text(
            "Cannot reach the gateway; retrying… Showing the rows loaded before.", timeout=10_000)
        assert listed_ids(page) == before
        expect(page.locator("#view")).to_have_class(re.compile("stale"))
        expect(page.locator("#records-page")).to_have_text("Page 1")
        expect(page.locator("#timeline-state")).to_contain_text("Reconnecting", timeout=10_000)
        page.wait_for_timeout(2000)  # a retry or two more, still unanswered
        assert listed_ids(page) == before
    finally:
        os.kill(gw.proc.pid, signal.SIGCONT)
    expect(page.locator("#records-page")).to_have_text("Page 2", timeout=10_000)
    expect(page.locator("#error")).to_have_text("")
    settled(page)
    after = listed_ids(page)
    assert len(after) == 5 and not set(after) & set(before)
    expect(page.locator("#view")).not_to_have_class(re.compile("stale"))
    expect(page.locator("#timeline-state")).to_have_text("Live.", timeout=10_000)
    assert page.evaluate("window.tableGone") is False


@pytest.mark.parametrize(("fragment", "said"), [
    ("limit=0", "Per page must be a whole number from 1 to 200; “0” is not."),
    ("limit=-5", "Per page must be a whole number from 1 to 200; “-5” is not."),
    ("limit=100000", "Per page must be a whole number from 1 to 200; “100000” is not."),
    ("cursor=garbage", "holds a cursor (“garbage”) but no page: a cursor belongs to a page past the first"),
    ("page=3", "names page 3 without its cursor"),
    ("page=zero", "names page “zero”: a page is a whole number from 1"),
    ("page=2&cursor=garbage", "malformed cursor"),  # the gateway's own refusal, shown as it is
    # a page this far would size the kept chain of cursors (a frozen tab): refused before anything is kept
    ("page=100000001&cursor=x", "names page 100000001: a page is at most 100000"),
], ids=lambda value: value if "=" in value else "")
def test_a_page_the_address_cannot_name_is_refused_in_words(page: Any, console: Any, fragment: str, said: str) -> None:
    gw, _ = console
    login(page, gw, ANN)
    settled(page)
    page.goto(gw.url + "/console/#records?" + fragment)
    expect(page.locator("#error")).to_contain_text(said)
    settled(page)
    assert listed_ids(page) == []  # no page 1 of 50 passed off as the page asked for
    page.goto(gw.url + "/console/#records")  # a good address clears the error
    expect(page.locator("#error")).to_have_text("")
    settled(page)
    assert len(listed_ids(page)) == 12


def test_a_page_the_quarantine_address_cannot_name_is_refused_in_words(page: Any, console: Any) -> None:
    gw, _ = console
    login(page, gw, ANN)
    page.goto(gw.url + "/console/#quarantine?page=4")
    expect(page.locator("#error")).to_contain_text("names page 4 without its cursor")
