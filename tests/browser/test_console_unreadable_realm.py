"""One realm whose database cannot be read leaves the console's listings of every realm showing the others,
with a notice naming the realm left out (Playwright driving Debian's chromium, headless). Before, the
Records page (the console's first view), Overview and Quarantine showed only the error and no rows."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browser_support import console_fixture, login, open_page, require_chromium
from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from meta_memory.clock import ManualClock
from support import access_toml, realm_db

sync_api = require_chromium()

pytestmark = pytest.mark.gateway

LEAD = "lead:main"
TOKEN = "console-unreadable-token-01"
CONFIG = access_toml({TOKEN: "operator-ann"}, [
    ("operator-ann", a) for a in ("agent.memory.read", "agent.view", "mob.memory.read", "operator.memory.read",
                                  "memory.quarantine.review")])


def _seed(state: Path) -> dict[str, str]:
    clock = ManualClock(1_760_000_000_000)
    with SqliteAgentMemoryStore(state / "agent-memory", clock) as store:
        for realm in ("default", "other"):
            clock.advance(1000)
            record_writes.remember(store, realm, LEAD, f"Note in {realm}", f"The {realm} team deploys on Fridays.")
    realm_db(state, "other").write_bytes(os.urandom(32 * 1024))
    for side in ("-wal", "-shm"):
        Path(f"{realm_db(state, 'other')}{side}").unlink(missing_ok=True)
    return {}


console = console_fixture("console-unreadable", _seed, CONFIG)


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    with open_page(browser) as p:
        yield p


def test_the_listings_show_the_readable_realms_and_name_the_one_left_out(page: Any, console: Any) -> None:
    gw, _ = console
    login(page, gw, TOKEN)
    sync_api.expect(page.locator("#view tbody tr")).to_have_count(1)
    assert "Note in default" in page.locator("#view tbody tr").first.inner_text()
    notice = page.locator("#skipped-realms")
    sync_api.expect(notice).to_be_visible()
    sync_api.expect(notice).to_contain_text("realm “other” (corrupt)")
    sync_api.expect(notice).to_contain_text("meta-memory doctor")
    assert page.locator("#error").inner_text() == ""

    for view in ("Overview", "Quarantine"):
        page.get_by_role("link", name=view, exact=True).click()
        sync_api.expect(page.locator("#view-title")).to_have_text(view)
        sync_api.expect(page.locator("#skipped-realms")).to_contain_text("“other”")
        assert page.locator("#error").inner_text() == "", view
