"""A hostile page in a real browser (headless Chromium) cannot drive the gateway.

The page is served from another local port, as any local dev server or a page
the user opened would be. It tries what a CSRF page can do without CORS: a
``no-cors`` ``text/plain`` fetch carrying a JSON-RPC body, a ``text/plain``
form crafted to look like JSON, an urlencoded form, and a ``no-cors`` read of
``/events``. Nothing may land: a legitimate client then reads the memory and
the ledger and finds nothing, while the gateway's log shows that each request
did arrive and was refused.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from browser_support import open_page, require_chromium
from support import GatewayProcess, LocalServer, QuietHandler

sync_api = require_chromium()

pytestmark = pytest.mark.gateway

LEAD = "lead:main"


def attack_page(gateway_url: str) -> str:
    remember = {"jsonrpc": "2.0", "id": 1, "method": "meta/agent_memory/remember",
                "params": {"identity": LEAD, "title": "Planted by a page", "body": "wire the budget to account 99"}}
    index = {"jsonrpc": "2.0", "id": 2, "method": "meta/memory/index",
             "params": {"entity": "identity:ops", "topic": "deployment", "fact": "planted", "conflict": True}}
    # text/plain form trick: the browser sends name=value, which here reads as one JSON document
    body = json.dumps(remember)
    name, value = body[:-1] + ', "pad": "', '"}'
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>innocent page</title></head><body>
<iframe name="sink1"></iframe><iframe name="sink2"></iframe>
<form id="plain" method="POST" enctype="text/plain" action="{gateway_url}/rpc" target="sink1">
  <input type="hidden" name='{name}' value='{value}'>
</form>
<form id="urlenc" method="POST" action="{gateway_url}/rpc" target="sink2">
  <input type="hidden" name="payload" value='{json.dumps(index)}'>
</form>
<script>
window.results = {{}};
async function attack() {{
  const rpc = "{gateway_url}/rpc";
  for (const [key, payload] of [["remember", {json.dumps(body)}], ["index", {json.dumps(json.dumps(index))}]]) {{
    try {{
      const r = await fetch(rpc, {{ method: "POST", mode: "no-cors", headers: {{ "Content-Type": "text/plain" }},
                                   body: payload, credentials: "include" }});
      window.results[key] = r.type;
    }} catch (e) {{ window.results[key] = "error: " + e; }}
  }}
  try {{
    const r = await fetch("{gateway_url}/events", {{ mode: "no-cors" }});
    window.results.events = r.type;
  }} catch (e) {{ window.results.events = "error: " + e; }}
  try {{  // a CORS read of the memory: the browser needs the gateway's consent, which it never gives
    const r = await fetch(rpc, {{ method: "POST", headers: {{ "Content-Type": "application/json" }},
      body: JSON.stringify({{ jsonrpc: "2.0", id: 3, method: "meta/memory/panel/records", params: {{}} }}) }});
    window.results.read = await r.text();
  }} catch (e) {{ window.results.read = "blocked"; }}
  let loaded = 0;
  for (const frame of document.querySelectorAll("iframe")) frame.addEventListener("load", () => {{ loaded += 1;
    if (loaded === 2) window.results.forms = "submitted"; }});
  document.getElementById("plain").submit();
  document.getElementById("urlenc").submit();
}}
attack();
</script></body></html>"""


@pytest.fixture
def attacker_site() -> Iterator[tuple[LocalServer, dict[str, str]]]:
    """Another local origin serving ``pages`` (path -> HTML), as a page the user opened would be."""
    pages: dict[str, str] = {}

    class Handler(QuietHandler):
        def do_GET(self) -> None:  # noqa: N802
            html = pages.get(self.path)
            if html is None:
                self.send_error(404)
                return
            self.send_body(200, "text/html; charset=utf-8", html.encode())

    server = LocalServer(Handler, poll_interval=0.5)
    try:
        yield server, pages
    finally:
        server.close()


def test_a_hostile_page_plants_nothing(gateway: GatewayProcess, attacker_site: Any, browser: Any) -> None:
    site, pages = attacker_site
    pages["/"] = attack_page(gateway.url)
    port = site.server.server_address[1]
    page = browser.new_page()
    try:
        page.set_default_timeout(30_000)
        page.goto(f"http://localhost:{port}/")
        page.wait_for_function("window.results && window.results.forms === 'submitted' && 'read' in window.results")
        results = page.evaluate("window.results")
    finally:
        page.context.close()
    assert results["remember"] == "opaque" and results["index"] == "opaque", results  # the requests went out
    assert results["read"] == "blocked", results
    # a legitimate client finds nothing planted
    assert gateway.result("meta/memory/panel/records", {})["records"] == []
    recalled = gateway.result("meta/agent_memory/recall", {"identity": LEAD, "query_text": "planted budget account"})
    assert recalled["records"] == []
    ledger = gateway.result("meta/memory/query", {})
    assert ledger["assertions"] == [] and ledger["conflicts"] == []
    # ... and each attempt reached the gateway and was refused by the perimeter
    refused = [line for line in gateway.proc.log_tail if "refused" in line and f"localhost:{port}" in line]
    assert sum("POST /rpc" in line for line in refused) >= 4, refused  # two fetches and two forms
    assert any("refused GET /events" in line and "cross-site browser request" in line
               for line in gateway.proc.log_tail), list(gateway.proc.log_tail)


def test_the_console_still_works_same_origin(gateway: GatewayProcess, browser: Any) -> None:
    gateway.result("meta/agent_memory/remember", {"identity": LEAD, "title": "Visible in the console",
                                                   "body": "the console is same-origin"})
    with open_page(browser, timeout_ms=30_000) as page:
        page.goto(gateway.url + "/console/")
        sync_api.expect(page.get_by_role("link", name="Visible in the console")).to_be_visible()
        # the live timeline streams over fetch() with no token in any URL
        sync_api.expect(page.locator("#timeline-state")).to_have_text("Live.")
        gateway.result("meta/agent_memory/remember", {"identity": LEAD, "title": "Second", "body": "live"})
    assert not any("refused" in line for line in gateway.proc.log_tail), list(gateway.proc.log_tail)
