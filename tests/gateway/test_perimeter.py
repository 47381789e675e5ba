"""The HTTP perimeter through a real gateway: media type, Origin, Host (DNS rebinding), fetch
metadata and CORS, on ``/rpc``, ``/events``, ``/v1/health`` and ``/console/``."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from support import GatewayProcess, access_toml, start_gateway, write_config

pytestmark = pytest.mark.gateway

LEAD = "lead:main"
REMEMBER = {"jsonrpc": "2.0", "id": 1, "method": "meta/agent_memory/remember",
            "params": {"identity": LEAD, "title": "Planted note", "body": "wire the budget to account 99"}}
INDEX = {"jsonrpc": "2.0", "id": 2, "method": "meta/memory/index",
         "params": {"entity": "identity:ops", "topic": "deployment", "fact": "planted"}}


def post(gw: GatewayProcess, body: Any, headers: dict[str, str], path: str = "/rpc") -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(gw.url + path, content=content, headers=headers, timeout=30)


def nothing_landed(gw: GatewayProcess) -> None:
    """A legitimate client sees no planted memory and no planted ledger assertion."""
    recalled = gw.result("meta/agent_memory/recall", {"identity": LEAD, "query_text": "planted budget account"})
    assert recalled["records"] == []
    listed = gw.result("meta/memory/panel/records", {})
    assert listed["records"] == []
    assert gw.result("meta/memory/query", {})["assertions"] == []


def refusal(resp: httpx.Response, status: int, field: str) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    err = resp.json()["error"]
    assert err["code"] == -32600 and err["data"] == {"kind": "invalid_request", "field": field}
    return err


@pytest.fixture(scope="module")
def shared_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """One gateway for the tests whose requests are all refused or only read: each checks that nothing
    landed, so on one gateway each also checks that no refusal before it wrote anything (one start, not 24)."""
    gw = start_gateway(tmp_path_factory.mktemp("perimeter") / "state")
    try:
        yield gw
    finally:
        gw.stop()


@pytest.fixture(scope="module")
def planted_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """One gateway for the forged-Host tests: each writes the one legitimate note, then checks that the forged
    requests read nothing and wrote nothing beside it."""
    gw = start_gateway(tmp_path_factory.mktemp("perimeter-planted") / "state")
    try:
        yield gw
    finally:
        gw.stop()


# ------------------------------------------------------------------ media type

@pytest.mark.parametrize("content_type", [None, "text/plain", "text/plain;charset=UTF-8",
                                          "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
                                          "application/json-patch+json", "application/json; charset=latin-1"])
def test_rpc_body_that_is_not_application_json_is_refused_and_not_executed(shared_gateway: GatewayProcess,
                                                                          content_type: str | None) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    for body in (REMEMBER, INDEX):
        resp = httpx.post(shared_gateway.url + "/rpc", content=json.dumps(body).encode(), headers=headers, timeout=30)
        err = refusal(resp, 415, "content-type")
        assert "Content-Type" in err["message"]
    nothing_landed(shared_gateway)


@pytest.mark.parametrize("content_type", ["application/json", "Application/JSON", "application/json; charset=utf-8"])
def test_application_json_is_served(gateway: GatewayProcess, content_type: str) -> None:
    resp = post(gateway, REMEMBER, {"Content-Type": content_type})
    assert resp.status_code == 200 and "result" in resp.json(), resp.text


# ------------------------------------------------------------------ Origin

@pytest.mark.parametrize("origin", ["http://evil.example", "null", "http://localhost:1", "https://127.0.0.1",
                                    "http://127.0.0.1.evil.example", "file://", "not an origin"])
def test_foreign_origin_is_refused_on_every_endpoint(shared_gateway: GatewayProcess, origin: str) -> None:
    json_post = {"Content-Type": "application/json", "Origin": origin}
    for body in (REMEMBER, INDEX):
        refusal(post(shared_gateway, body, json_post), 403, "origin")
    for path in ("/events", "/console/", "/v1/health", "/console/static/console.js"):
        refusal(httpx.get(shared_gateway.url + path, headers={"Origin": origin}, timeout=30), 403, "origin")
    nothing_landed(shared_gateway)
    assert any("refused POST /rpc" in line and "Origin" in line for line in shared_gateway.proc.log_tail)


GUARD_TOKEN = "perimeter-token-0003"


@pytest.fixture(scope="module")
def guarded_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """A gateway with ``[access]`` whose one token holds every grant the probed methods need (a token a
    page on another origin may hold too: leaked, or typed into it), one record written, and a backup
    directory."""
    root = tmp_path_factory.mktemp("perimeter-guarded")
    (root / "backups").mkdir()
    grants = [("ops", a) for a in ("agent.memory.read", "agent.view", "agent.memory.write", "operator.status",
                                   "operator.backup")]
    cfg = write_config(root / "c.toml", access_toml({GUARD_TOKEN: "ops"}, grants)
                       + f'\n[gateway]\nbackup_dir = "{root / "backups"}"\n')
    gw = start_gateway(root / "state", config=cfg)
    gw.backups = root / "backups"  # type: ignore[attr-defined]
    try:
        gw.record = gw.result("meta/agent_memory/remember",  # type: ignore[attr-defined]
                              {"identity": LEAD, "title": "Real note", "body": "kept"}, token=GUARD_TOKEN)["memory_id"]
        yield gw
    finally:
        gw.stop()


def _probed_calls(gw: GatewayProcess) -> list[dict[str, Any]]:
    """The reads and writes a page on another origin would most like to make: a record's detail, the
    timeline, an export of the whole store, the status, a backup to a path, a batch of planted records."""
    calls = [("meta/memory/panel/record", {"memory_id": gw.record}),  # type: ignore[attr-defined]
             ("meta/events/list", {}), ("meta/storage/export", {}), ("meta/status", {}),
             ("meta/storage/backup", {"dest": str(gw.backups / "taken")}),  # type: ignore[attr-defined]
             ("meta/agent_memory/remember_batch",
              {"identity": LEAD, "records": [{"title": "Planted note", "body": "wire the budget to account 99"}]})]
    return [{"jsonrpc": "2.0", "id": n, "method": method, "params": params} for n, (method, params) in enumerate(calls)]


@pytest.mark.parametrize("origin", ["http://evil.example", "null", "http://127.0.0.1.evil.example"])
@pytest.mark.parametrize("credentials", ["none", "token", "token and cookie"])
def test_a_page_on_another_origin_is_refused_on_every_method_with_or_without_credentials(
        guarded_gateway: GatewayProcess, origin: str, credentials: str) -> None:
    """Refused by the perimeter (403, ``field: "origin"``) before authentication: the same answer whether
    the page holds a valid token or sends cookies (``credentials: "include"``), no CORS header lets the
    page read it, and nothing was read into a response or written."""
    gw = guarded_gateway
    held = {"none": {}, "token": {"Authorization": f"Bearer {GUARD_TOKEN}"},
            "token and cookie": {"Authorization": f"Bearer {GUARD_TOKEN}", "Cookie": "session=stolen"}}[credentials]
    headers = {"Content-Type": "application/json", "Origin": origin, **held}
    for body in _probed_calls(gw):
        resp = post(gw, body, headers)
        refusal(resp, 403, "origin")
        assert "access-control-allow-origin" not in resp.headers and "result" not in resp.json(), body["method"]
    for path in ("/events", "/events?after=0", "/console/", "/console/static/console.js"):
        resp = httpx.get(gw.url + path, headers={"Origin": origin, "Accept": "text/event-stream", **held}, timeout=30)
        refusal(resp, 403, "origin")
        assert "access-control-allow-origin" not in resp.headers
    preflight = {"Origin": origin, "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "authorization,content-type"}
    resp = httpx.options(gw.url + "/rpc", headers=preflight, timeout=30)
    refusal(resp, 403, "origin")
    assert not any(k.lower().startswith("access-control-") for k in resp.headers)
    # nothing landed: no backup directory, no planted record, one record as before
    assert not (gw.backups / "taken").exists()  # type: ignore[attr-defined]
    listed = gw.result("meta/memory/panel/records", {}, token=GUARD_TOKEN)["records"]
    assert [r["id"] for r in listed] == [gw.record]  # type: ignore[attr-defined]


def test_the_probed_methods_are_served_to_the_token_without_a_foreign_origin(guarded_gateway: GatewayProcess) -> None:
    """The control: the refusals above are the perimeter's, not the access policy's (every probed read is
    served to the token's own client, without an Origin or from the gateway's own)."""
    gw = guarded_gateway
    reads = [body for body in _probed_calls(gw) if body["method"] not in ("meta/storage/backup",
                                                                           "meta/agent_memory/remember_batch")]
    for headers in ({}, {"Origin": gw.url}):
        for body in reads:
            resp = post(gw, body, {"Content-Type": "application/json", "Authorization": f"Bearer {GUARD_TOKEN}",
                                   **headers})
            assert resp.status_code == 200 and "result" in resp.json(), (body["method"], resp.text)
        assert httpx.get(gw.url + "/console/", headers=headers, timeout=30).status_code == 200
        with httpx.stream("GET", gw.url + "/events", timeout=30,
                          headers={"Authorization": f"Bearer {GUARD_TOKEN}", **headers}) as stream:
            assert stream.status_code == 200


def test_own_origin_is_served(gateway: GatewayProcess) -> None:
    port = gateway.url.rsplit(":", 1)[1]
    for origin in (gateway.url, f"http://localhost:{port}"):
        host = origin.split("//", 1)[1]
        resp = post(gateway, REMEMBER, {"Content-Type": "application/json", "Origin": origin, "Host": host})
        assert resp.status_code == 200 and "result" in resp.json(), resp.text
    # the same origin under another name is another origin
    resp = post(gateway, REMEMBER, {"Content-Type": "application/json", "Origin": f"http://localhost:{port}"})
    refusal(resp, 403, "origin")


def test_cross_site_browser_request_without_origin_is_refused_but_navigation_is_served(shared_gateway: GatewayProcess) -> None:
    # a no-cors GET from another site carries fetch metadata but no Origin
    for site in ("cross-site", "same-site"):
        resp = httpx.get(shared_gateway.url + "/events", headers={"Sec-Fetch-Site": site, "Sec-Fetch-Mode": "no-cors"},
                         timeout=30)
        refusal(resp, 403, "sec-fetch-site")
    # following a link to the console from another page is a harmless navigation
    resp = httpx.get(shared_gateway.url + "/console/", headers={"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"},
                     timeout=30)
    assert resp.status_code == 200 and "<html" in resp.text.lower()
    # a hidden frame of another site navigates too, but is no top-level navigation: it may not hold a stream
    for dest in ("iframe", "embed", "object"):
        resp = httpx.get(shared_gateway.url + "/events", headers={"Sec-Fetch-Site": "cross-site",
                                                                  "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": dest},
                         timeout=30)
        refusal(resp, 403, "sec-fetch-site")
    # same-origin and user-typed requests are served
    for site in ("same-origin", "none"):
        resp = httpx.get(shared_gateway.url + "/v1/health", headers={"Sec-Fetch-Site": site}, timeout=30)
        assert resp.status_code == 200


def test_no_cors_preflight_is_answered_without_a_configured_origin(shared_gateway: GatewayProcess) -> None:
    preflight = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type,authorization"}
    resp = httpx.options(shared_gateway.url + "/rpc", headers={"Origin": "http://app.example", **preflight}, timeout=30)
    refusal(resp, 403, "origin")
    assert not any(k.lower().startswith("access-control-") for k in resp.headers)
    # even a same-origin preflight gets no CORS answer
    resp = httpx.options(shared_gateway.url + "/rpc", headers={"Origin": shared_gateway.url, **preflight}, timeout=30)
    assert resp.status_code == 405
    assert not any(k.lower().startswith("access-control-") for k in resp.headers)


def test_a_configured_origin_gets_a_correct_cors_answer(gateway_factory: Any, tmp_path: Any) -> None:
    cfg = write_config(tmp_path / "cors.toml", '[gateway]\nallowed_origins = ["http://App.Example:3000"]\n')
    gw = gateway_factory(tmp_path / "s", config=cfg)
    origin = "http://app.example:3000"
    preflight = {"Origin": origin, "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "content-type, authorization"}
    resp = httpx.options(gw.url + "/rpc", headers=preflight, timeout=30)
    assert resp.status_code == 200
    assert resp.headers["access-control-allow-origin"] == origin
    assert "POST" in resp.headers["access-control-allow-methods"]
    allowed = {h.strip().lower() for h in resp.headers["access-control-allow-headers"].split(",")}
    assert {"authorization", "content-type"} <= allowed
    assert "access-control-allow-credentials" not in resp.headers
    resp = post(gw, REMEMBER, {"Content-Type": "application/json", "Origin": origin})
    assert resp.status_code == 200 and "result" in resp.json()
    assert resp.headers["access-control-allow-origin"] == origin
    # another origin still gets nothing
    resp = httpx.options(gw.url + "/rpc", headers={**preflight, "Origin": "http://app.example:3001"}, timeout=30)
    refusal(resp, 403, "origin")
    assert "access-control-allow-origin" not in resp.headers
    # the media-type rule still holds for the allowed origin
    refusal(post(gw, INDEX, {"Content-Type": "text/plain", "Origin": origin}), 415, "content-type")
    # its pages may read the timeline (an EventSource sends Origin)
    with httpx.stream("GET", gw.url + "/events", headers={"Origin": origin}, timeout=30) as stream:
        assert stream.status_code == 200
        assert stream.headers["access-control-allow-origin"] == origin


# ------------------------------------------------------------------ Host (DNS rebinding)

@pytest.mark.parametrize("host", ["rebind.attacker.example", "attacker.example:8765", "0.0.0.0", "10.0.0.7",
                                  "[2001:db8::1]:80", "localhost.attacker.example", "", "a b", "127.0.0.1:99999"])
def test_forged_host_is_refused_before_anything_is_read_or_written(planted_gateway: GatewayProcess, host: str) -> None:
    planted_gateway.result("meta/agent_memory/remember", {"identity": LEAD, "title": "Secret plan", "body": "launch on friday"})
    # a DNS-rebinding page reaches the port under its own name: it may read nothing and write nothing
    read = {"jsonrpc": "2.0", "id": 3, "method": "meta/agent_memory/recall",
            "params": {"identity": LEAD, "query_text": "secret plan launch"}}
    for body in (read, REMEMBER, INDEX):
        refusal(post(planted_gateway, body, {"Content-Type": "application/json", "Host": host}), 421, "host")
    for path in ("/events", "/console/", "/v1/health"):
        refusal(httpx.get(planted_gateway.url + path, headers={"Host": host}, timeout=30), 421, "host")
    assert planted_gateway.result("meta/memory/query", {})["assertions"] == []
    titles = {r["title"] for r in planted_gateway.result("meta/memory/panel/records", {})["records"]}
    assert titles == {"Secret plan"}  # the legitimate note alone: nothing a refused request carried


@pytest.mark.parametrize("host", ["localhost", "LOCALHOST:1234", "127.0.0.1", "127.9.8.7:80", "[::1]:5", "app.localhost"])
def test_loopback_hosts_are_served(shared_gateway: GatewayProcess, host: str) -> None:
    resp = httpx.get(shared_gateway.url + "/v1/health", headers={"Host": host}, timeout=30)
    assert resp.status_code == 200, resp.text


def test_allowed_hosts_extend_the_served_names(gateway_factory: Any, tmp_path: Any) -> None:
    cfg = write_config(tmp_path / "hosts.toml", '[gateway]\nallowed_hosts = ["memory.internal", "*.corp.example"]\n')
    gw = gateway_factory(tmp_path / "s", config=cfg)
    for host in ("memory.internal", "memory.internal:443", "a.corp.example", "b.a.corp.example"):
        assert httpx.get(gw.url + "/v1/health", headers={"Host": host}, timeout=30).status_code == 200
    for host in ("corp.example", "memory.internal.evil", "evilcorp.example"):
        refusal(httpx.get(gw.url + "/v1/health", headers={"Host": host}, timeout=30), 421, "host")
    # the Origin of an allowed host is its own origin
    resp = post(gw, REMEMBER, {"Content-Type": "application/json", "Host": "memory.internal:8080",
                               "Origin": "http://memory.internal:8080"})
    assert resp.status_code == 200 and "result" in resp.json()


@pytest.mark.parametrize("text, needle", [
    ('allowed_hosts = ["*"]', "gateway.allowed_hosts[0]"),
    ('allowed_hosts = ["http://x.example"]', "gateway.allowed_hosts[0]"),
    ('allowed_hosts = ["x.example:80"]', "gateway.allowed_hosts[0]"),
    ('allowed_hosts = "x.example"', "gateway.allowed_hosts must be an array"),
    ('allowed_origins = ["*"]', "gateway.allowed_origins[0]"),
    ('allowed_origins = ["http://x.example/"]', "no path"),
    ('allowed_origins = ["null"]', "gateway.allowed_origins[0]"),
    ('allowed_origins = ["ftp://x.example"]', "http or https"),
    ('header_timeout_s = 0', "gateway.header_timeout_s"),
    ('body_timeout_s = true', "gateway.body_timeout_s"),
    ('send_timeout_s = -1', "gateway.send_timeout_s"),
    ('max_event_subscribers = 0', "gateway.max_event_subscribers"),
])
def test_bad_perimeter_config_stops_start_up_naming_the_key(gateway_factory: Any, tmp_path: Any, text: str,
                                                              needle: str) -> None:
    cfg = write_config(tmp_path / "bad.toml", f"[gateway]\n{text}\n")
    gw = gateway_factory(tmp_path / "s", config=cfg, expect_failure=True)
    assert gw.proc.returncode == 1
    err = gw.proc.stderr.read()
    assert needle in err and "Traceback" not in err


# ------------------------------------------------------------------ tokens never in URLs

def test_events_refuses_a_token_in_the_url(gateway_factory: Any, tmp_path: Any) -> None:
    from meta_memory.access.config import hash_token

    token = "perimeter-token-0001"
    cfg = write_config(tmp_path / "a.toml", f'[access]\nenabled = true\n\n[[access.tokens]]\nsha256 = "{hash_token(token)}"\n'
                                            'principal = "ann"\n\n[[access.grants]]\naction = "agent.memory.read"\n'
                                            'who = { principal = "ann" }\n')
    gw = gateway_factory(tmp_path / "s", config=cfg)
    for query in (f"token={token}", f"access_token={token}", "token=", f"TOKEN={token}", f"Access_Token={token}"):
        refusal(httpx.get(f"{gw.url}/events?{query}", timeout=30), 400, query.split("=")[0].lower())
    assert not any(token in line for line in gw.proc.log_tail)
    # the header works: the stream opens
    with httpx.stream("GET", gw.url + "/events", headers={"Authorization": f"Bearer {token}"}, timeout=30) as resp:
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/event-stream")
        assert next(resp.iter_lines()).startswith(": meta-memory timeline")


def test_rpc_ready_and_metrics_refuse_a_token_in_the_url_too(gateway_factory: Any, tmp_path: Any) -> None:
    """The quickstart's promise ("a ``?token=`` in the URL is refused") on every route that takes a
    token: before, ``POST /rpc?access_token=...`` with a valid header was served (the token sat in the URL
    for every proxy log) and ``POST /rpc?token=...`` alone was a bare "a bearer token is required"."""
    from meta_memory.access.config import hash_token

    token = "perimeter-token-0002"
    cfg = write_config(tmp_path / "a.toml", f'[[access.tokens]]\nsha256 = "{hash_token(token)}"\nprincipal = "ops"\n')
    gw = gateway_factory(tmp_path / "s", config=cfg)
    header = {"Authorization": f"Bearer {token}"}
    for query in (f"token={token}", f"access_token={token}", "token=", f"TOKEN={token}", f"Access_Token={token}"):
        for headers in ({}, header):
            said = refusal(post(gw, REMEMBER, {**headers, "Content-Type": "application/json"}, path=f"/rpc?{query}"),
                           400, query.split("=")[0].lower())
            assert "only in the Authorization header" in said["message"]
            refusal(httpx.get(f"{gw.url}/v1/ready?{query}", headers=headers, timeout=30), 400, query.split("=")[0].lower())
            refusal(httpx.get(f"{gw.url}/metrics?{query}", headers=headers, timeout=30), 400, query.split("=")[0].lower())
    assert gw.result("meta/memory/panel/records", {}, token=token)["records"] == []  # nothing landed
    assert not any(token in line for line in gw.proc.log_tail)
    served = post(gw, REMEMBER, {**header, "Content-Type": "application/json"})  # the header alone is served
    assert served.json()["result"]["created"] is True


def test_a_websocket_upgrade_is_never_accepted(shared_gateway: GatewayProcess) -> None:
    import socket

    host, port = shared_gateway.url.split("//", 1)[1].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(b"GET /events HTTP/1.1\r\nHost: rebind.attacker.example\r\nUpgrade: websocket\r\n"
                     b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                     b"Sec-WebSocket-Version: 13\r\nOrigin: http://evil.example\r\n\r\n")
        answer = sock.recv(4096)
    assert not answer.startswith(b"HTTP/1.1 101"), answer
    assert answer.startswith(b"HTTP/1.1 421"), answer


def test_huge_perimeter_headers_are_refused_and_the_gateway_stays_up(shared_gateway: GatewayProcess) -> None:
    for name in ("Origin", "Host", "Content-Type"):
        try:
            resp = httpx.post(shared_gateway.url + "/rpc", content=json.dumps(REMEMBER).encode(),
                              headers={"Content-Type": "application/json", name: "http://x" + "a" * 200_000},
                              timeout=30)
            assert resp.status_code in (400, 403, 415, 421, 431), resp.status_code
        except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError):
            pass  # the server closed the connection on an oversized header block
    nothing_landed(shared_gateway)


# ------------------------------------------------------------------ log lines

FORGED = "2026-01-01 00:00:00,000 INFO meta_memory.access: operator token accepted"
REFUSED_REQUESTS = [("GET", {"Host": "rebound.evil.example"}),
                    ("POST", {"Origin": "http://evil.example", "Content-Type": "application/json"}),
                    ("GET", {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"})]


def test_a_refused_path_cannot_forge_a_log_line(gateway: GatewayProcess) -> None:
    """A page can send any path; the server decodes its percent escapes, so a refusal logging the path as
    decoded would let the page write lines of its choosing into the gateway's log."""
    port = int(gateway.url.rsplit(":", 1)[1])
    for n, (breaker, (method, headers)) in enumerate(
            (b, r) for b in ("%0A", "%0D", "%0D%0A", "%E2%80%A8", "%C2%85", "%1B[2K") for r in REFUSED_REQUESTS):
        path = f"/rpc{breaker}{n:02d} " + FORGED
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            lines = [f"{method} {path.replace(' ', '%20')} HTTP/1.1",
                     f"Host: {headers.get('Host', f'127.0.0.1:{port}')}", "Content-Length: 0", "Connection: close"]
            lines += [f"{k}: {v}" for k, v in headers.items() if k != "Host"]
            sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
            answer = sock.recv(4096)
        assert answer.split(b" ", 2)[1] in (b"403", b"421"), answer
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and sum("refused " in line for line in gateway.proc.log_tail) < n + 1:
        time.sleep(0.05)
    mine = [line for line in gateway.proc.log_tail if "operator token accepted" in line]
    assert len(mine) == n + 1, list(gateway.proc.log_tail)[-8:]
    for line in mine:  # each path stays inside its own refusal line, its breaks shown escaped
        assert line.startswith("20") and "refused " in line.split("operator token", 1)[0], repr(line)
        assert not any(ch in line.rstrip("\n") for ch in ("\r", "\n", "\u2028", "\x85", "\x1b")), repr(line)


def test_a_wildcard_bind_prints_a_console_url_that_answers(tmp_path: Any) -> None:
    """``serve --host 0.0.0.0`` shows a loopback console URL that is served, says other names need
    ``[gateway] allowed_hosts``, and the refusal of ``Host: 0.0.0.0`` does not claim the bind address is served."""
    import os
    import subprocess
    import sys

    from support import _drain

    args = [sys.executable, "-m", "meta_memory.cli", "serve", "--host", "0.0.0.0", "--port", "0",
            "--state-dir", str(tmp_path / "state")]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ})
    gw = GatewayProcess(proc, "", tmp_path / "state", args)
    try:
        assert proc.stdout is not None and proc.stderr is not None
        listening = proc.stdout.readline()
        assert "listening on http://0.0.0.0:" in listening, listening
        port = int(listening.split("listening on ", 1)[1].split()[0].rsplit(":", 1)[1])
        console = proc.stderr.readline()
        _drain(proc)
        assert console.startswith(f"console: http://127.0.0.1:{port}/console/ "), console
        assert "[gateway] allowed_hosts" in console
        url = console.split()[1]
        deadline = time.monotonic() + 30
        while True:
            try:
                resp = httpx.get(url, timeout=5)
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        assert resp.status_code == 200 and "text/html" in resp.headers["content-type"]
        err = refusal(httpx.get(f"http://127.0.0.1:{port}/console/", headers={"Host": f"0.0.0.0:{port}"},
                                timeout=30), 421, "host")
        assert "the bind address and" not in err["message"]
        assert "wildcard bind address '0.0.0.0' is not a host name" in err["message"], err["message"]
        assert "loopback names and [gateway] allowed_hosts are" in err["message"]
    finally:
        gw.stop()
