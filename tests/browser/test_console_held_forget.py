"""A forget held for review in the console (Playwright driving Debian's chromium, headless): the
quarantine view lists the pending forget, and the reviewer approves one and keeps another."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from browser_support import open_page, require_chromium
from support import GatewayProcess, memory_id_of, start_gateway

sync_api = require_chromium()

pytestmark = pytest.mark.gateway

AGENT, SESSION = "lead:main", "browser-forget-s1"


def _tool(gw: GatewayProcess, **arguments: Any) -> dict[str, Any]:
    return gw.result("meta/agent_memory/tool", {"identity": AGENT, "session_key": SESSION, "arguments": arguments})


@pytest.fixture(scope="module")
def held(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GatewayProcess, dict[str, str]]]:
    gw = start_gateway(tmp_path_factory.mktemp("held-forget") / "state")
    try:
        ids = {}
        for key, title in (("a", "Release checklist"), ("b", "On-call rota")):
            text = _tool(gw, action="remember", title=title, body=f"{title}: kept in the ops wiki.")["text"]
            ids[key] = memory_id_of(text)
        gw.result("meta/turn/tool_result", {"identity": AGENT, "session_key": SESSION, "tool_name": "web_fetch"})
        for key in ("a", "b"):
            assert "HELD pending review" in _tool(gw, action="forget", memory_id=ids[key])["text"]
        yield gw, ids
    finally:
        gw.stop()


def _status(gw: GatewayProcess, memory_id: str) -> str:
    return gw.result("meta/memory/panel/record", {"memory_id": memory_id})["record"]["status"]["status"]


def test_pending_forgets_are_listed_and_decided_in_the_console(browser: Any, held: Any) -> None:
    gw, ids = held
    with open_page(browser) as page:
        page.goto(gw.url + "/console/")
        page.get_by_role("link", name="Quarantine").click()
        table = page.get_by_role("table", name="Pending forgets (held for review), newest first")
        sync_api.expect(table.locator("tbody tr")).to_have_count(2)
        sync_api.expect(table).to_contain_text("session tainted by web tool 'web_fetch'")
        sync_api.expect(table).to_contain_text(f"agent:{AGENT}")
        # both records are still active while their forgets wait
        assert _status(gw, ids["a"]) == "active" and _status(gw, ids["b"]) == "active"
        # the record's own page says a forget is held, and offers the decision too
        page.get_by_role("link", name="On-call rota").click()
        sync_api.expect(page.get_by_role("heading", name="A forget of this record is held for review")).to_be_visible()
        sync_api.expect(page.get_by_role("button", name="Keep On-call rota")).to_be_visible()
        page.get_by_role("link", name="Quarantine").click()
        page.get_by_role("button", name="Approve forget of Release checklist").click()
        sync_api.expect(table.locator(".forget-result").filter(has_text="Forget approved")).to_have_count(1)
        page.get_by_role("button", name="Keep On-call rota").click()
        sync_api.expect(table.locator(".forget-result").filter(has_text="Kept")).to_have_count(1)
        assert _status(gw, ids["a"]) == "tombstoned" and _status(gw, ids["b"]) == "active"
        # reloading the view: the queue is empty
        page.get_by_role("link", name="Records").click()
        page.get_by_role("link", name="Quarantine").click()
        sync_api.expect(page.get_by_role("table", name="Pending forgets (held for review), newest first")
                        ).to_contain_text("No forget is waiting.")
