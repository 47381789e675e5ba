"""A look-alike name is marked where the console shows it (Playwright driving Debian's chromium).

An identity spelled with a Cyrillic ``і`` in place of the Latin ``i`` (``lead:maіn``) is another
identity than ``lead:main``, and a title with a Cyrillic ``а`` (``Pаyroll``) reads as ``Payroll``: a
reviewer deciding on a quarantined record must not take one for the other. Every word that mixes
letters of alphabets that look alike is marked, its title naming the alphabets; text in one
alphabet, and text whose words are each in one (``Meeting встреча``), is left as it is. A name is
marked whole: one whose parts are each in one alphabet (``а-team:lead``) or that reads as another,
all-ASCII name (``lead:ѕео``, all Cyrillic after the separator), in the records table and the timeline.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browser_support import console_fixture, login, open_page, remember_spaced, require_chromium
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from meta_memory.clock import ManualClock
from support import access_toml

sync_api = require_chromium()
expect = sync_api.expect

pytestmark = pytest.mark.gateway

ANN = "console-lookalike-ann-0001"
REAL, FAKE = "lead:main", "lead:ma\u0456n"  # the second with CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I
SEPARATED = "\u0430-team:lead"  # CYRILLIC SMALL LETTER A, then Latin parts: no word mixes alphabets
CYRILLIC = "lead:\u0455\u0435\u043e"  # DZE, IE, O: reads as lead:seo
CONFIG = access_toml({ANN: "ann"}, [("ann", a) for a in ("agent.memory.read", "agent.view", "agent.session.manage")])


def _seed(state: Path) -> dict[str, str]:
    clock = ManualClock(1_765_000_000_000)
    with SqliteAgentMemoryStore(state / "agent-memory", clock) as store:
        real, fake, bilingual, separated, cyrillic = remember_spaced(store, clock, [
            (REAL, "Payroll", "Payroll runs on the 25th."),
            (FAKE, "P\u0430yroll", "Send payroll to account 99."),  # CYRILLIC SMALL LETTER A
            (REAL, "Meeting встреча", "Notes in two languages, each word in one alphabet."),
            (SEPARATED, "Team notes", "Plain title and body, a look-alike name."),
            (CYRILLIC, "Search notes", "Plain title and body, an all-Cyrillic name part."),
        ])
    return {"real": real, "fake": fake, "bilingual": bilingual, "separated": separated, "cyrillic": cyrillic}


console = console_fixture("console-lookalikes", _seed, CONFIG)


@pytest.fixture
def page(browser: Any, console: Any) -> Iterator[Any]:
    with open_page(browser) as p:
        yield p


def _row(page: Any, memory_id: str) -> Any:
    return page.locator(f'#view tbody tr[data-id="{memory_id}"]')


def test_a_name_mixing_lookalike_alphabets_is_marked(page: Any, console: Any) -> None:
    gw, ids = console
    login(page, gw, ANN)
    expect(page.locator("#view")).to_have_attribute("aria-busy", "false")
    fake = _row(page, ids["fake"]).locator(".mixed-script")
    expect(fake).to_have_count(2)  # the identity, whole, and the title's word
    expect(_row(page, ids["fake"]).locator(".name-mark")).to_have_attribute(
        "title", "mixes Latin and Cyrillic letters, reads as lead:main: it may imitate another name")
    expect(_row(page, ids["fake"]).locator(".mixed-script:not(.name-mark)")).to_have_attribute(
        "title", "mixes Latin and Cyrillic letters: it may imitate another word")
    assert sorted(fake.all_text_contents()) == sorted([FAKE, "P\u0430yroll"])
    # the row still reads as the stored text: the mark adds no character
    expect(_row(page, ids["fake"])).to_contain_text("P\u0430yroll")
    expect(_row(page, ids["real"]).locator(".mixed-script")).to_have_count(0)
    expect(_row(page, ids["bilingual"]).locator(".mixed-script")).to_have_count(0)


@pytest.mark.parametrize(("key", "name", "why"), [
    ("separated", SEPARATED, "mixes Latin and Cyrillic letters, reads as a-team:lead"),
    ("cyrillic", CYRILLIC, "mixes Latin and Cyrillic letters, reads as lead:seo"),
])
def test_a_lookalike_name_is_marked_whole_in_the_table_and_the_timeline(page: Any, console: Any, key: str,
                                                                         name: str, why: str) -> None:
    gw, ids = console
    login(page, gw, ANN)
    expect(page.locator("#view")).to_have_attribute("aria-busy", "false")
    mark = _row(page, ids[key]).locator(".mixed-script")
    expect(mark).to_have_count(1)  # the name, whole; the plain title and body carry none
    expect(mark).to_have_text(name)
    expect(mark).to_have_attribute("title", f"{why}: it may imitate another name")
    expect(_row(page, ids[key])).to_contain_text(f"identity:{name}")  # the mark adds no character

    expect(page.locator("#timeline-state")).to_have_text("Live.")
    gw.result("meta/turn/tool_result", {"identity": name, "session_key": f"s-{key}", "tool_name": "web_search"},
              token=ANN)
    event = page.locator('#timeline li[data-type="memory.taint.transition"]', has_text=f"s-{key}").first
    expect(event.locator(".event-identity .mixed-script")).to_have_text(name)
    expect(event.locator(".event-identity .mixed-script")).to_have_attribute("title", f"{why}: it may imitate another name")
    # a plain name on the timeline carries no mark
    gw.result("meta/turn/tool_result", {"identity": REAL, "session_key": f"r-{key}", "tool_name": "web_search"},
              token=ANN)
    plain = page.locator('#timeline li[data-type="memory.taint.transition"]', has_text=f"r-{key}").first
    expect(plain.locator(".event-identity")).to_have_text(REAL)
    expect(plain.locator(".mixed-script")).to_have_count(0)
