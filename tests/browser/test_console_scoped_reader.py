"""The console signed in as a reader whose grants name one identity.

Records shows that identity's records only. The views that need a grant covering the whole realm
(Overview, Proposals, ...) or one the reader lacks altogether (Quarantine) say which action is missing
in words, never as ``on *``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browser_support import login, open_page, require_chromium
from meta_memory.access.config import hash_token
from support import GatewayProcess, start_gateway, write_config

sync_api = require_chromium()
expect = sync_api.expect

pytestmark = pytest.mark.gateway

WRITER, READER = "writer-token-0001", "reader-token-0001"
CONFIG = f"""
[access]
enabled = true

[[access.tokens]]
sha256 = "{hash_token(WRITER)}"
principal = "writer"

[[access.tokens]]
sha256 = "{hash_token(READER)}"
principal = "reader"

[[access.grants]]
action = "agent.memory.write"
who = {{ principal = "writer" }}

# writing identity memory needs reading it
[[access.grants]]
action = "agent.memory.read"
who = {{ principal = "writer" }}

[[access.grants]]
action = "agent.view"
who = {{ principal = "writer" }}

[[access.grants]]
action = "agent.memory.read"
who = {{ principal = "reader" }}
on = {{ identity = "lead:main" }}

[[access.grants]]
action = "agent.view"
who = {{ principal = "reader" }}
on = {{ identity = "lead:main" }}
"""


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    root: Path = tmp_path_factory.mktemp("scoped-reader")
    gw = start_gateway(root / "state", config=write_config(root / "meta.toml", CONFIG))
    try:
        for identity in ("lead:main", "payroll:bot"):
            gw.result("meta/agent_memory/remember", {"identity": identity, "title": f"Note of {identity}",
                                                     "body": f"Something {identity} knows."}, token=WRITER)
        yield gw
    finally:
        gw.stop()


def test_a_reader_of_one_identity_is_told_in_words_what_a_view_needs(browser: Any, console: GatewayProcess) -> None:
    with open_page(browser) as page:
        login(page, console, READER)
        expect(page.locator("#view")).to_have_attribute("aria-busy", "false")
        text = page.locator("#view").inner_text()
        assert "Note of lead:main" in text and "payroll:bot" not in text
        for view, action in (("Overview", "agent.memory.read"), ("Proposals", "agent.memory.read"),
                             ("Quarantine", "memory.quarantine.review")):
            page.get_by_role("link", name=view, exact=True).click()
            expect(page.locator("#view-title")).to_have_text(view)
            expect(page.locator("#error")).to_contain_text(f"Access denied: you lack {action}")
            error = page.locator("#error").inner_text()
            assert " on *" not in error, error
            assert "no grant of yours covers this view" in error, error
