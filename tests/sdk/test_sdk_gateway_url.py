"""``Meta.connect`` with a URL that cannot name a gateway is refused at once, naming the rule."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from meta_memory import Meta
from meta_memory.errors import ConfigError
from meta_memory.sdk import GatewayUnreachable


@pytest.mark.parametrize("url", ["localhost:8765", "127.0.0.1:8765", "ftp://127.0.0.1:8765", "http://", ""])
def test_a_url_without_http_scheme_and_host_is_a_config_error(url: str) -> None:
    with pytest.raises(ConfigError, match="must start with http:// or https:// and name a host"):
        Meta.connect(url)
    with pytest.raises(ConfigError, match="must start with http:// or https://"):
        Meta.connect_async(url)


def test_a_well_formed_url_is_accepted_without_a_call() -> None:
    Meta.connect(" http://127.0.0.1:1/ ").close()  # nothing is sent until a method is called


@pytest.mark.parametrize("url", ["http://127.0.0.1:notaport", "http://[::1", "http://127.0.0.1:0",
                                 "http://127.0.0.1:1\x00", "http://127.0.0.1:1/r pc"])
def test_a_url_with_a_bad_port_or_control_characters_is_a_config_error(url: str) -> None:
    """Not a raw parser or HTTP-library error at the first call."""
    with pytest.raises(ConfigError, match="gateway URL must"):
        Meta.connect(url)
    with pytest.raises(ConfigError, match="gateway URL must"):
        Meta.connect_async(url)


@pytest.mark.parametrize("url", ["http://127.0.0.1:1?x=1", "http://127.0.0.1:1#f", "http://127.0.0.1:1/?"])
def test_a_url_with_a_query_or_fragment_is_a_config_error(url: str) -> None:
    """``/rpc`` would be appended to the query or fragment, sending the call to another endpoint."""
    with pytest.raises(ConfigError, match="query or fragment"):
        Meta.connect(url)


@pytest.mark.parametrize("url", ["http://bob:hunter2pw@127.0.0.1:1", "http://bob@127.0.0.1:1",
                                 "http://:hunter2pw@127.0.0.1:1", "http://bob:hunter2pw@:1"])
def test_a_url_with_credentials_is_refused_without_repeating_them(url: str) -> None:
    """Credentials in the URL are refused before anything is sent, and the refusal never repeats the
    password (an unreachable-gateway error used to name the whole URL)."""
    with pytest.raises(ConfigError) as caught:
        Meta.connect(url)
    assert "hunter2pw" not in str(caught.value)
    with pytest.raises(ConfigError) as caught:
        Meta.connect_async(url)
    assert "hunter2pw" not in str(caught.value)


@pytest.mark.parametrize("timeout_s", [0, -1, float("nan"), float("inf"), "30", True])
def test_a_timeout_that_is_not_a_positive_number_is_a_config_error(timeout_s: object) -> None:
    """A zero or negative budget would fail every call as 'cannot reach the gateway'; it is refused at once."""
    with pytest.raises(ConfigError, match="timeout_s must be a positive number of seconds"):
        Meta.connect("http://127.0.0.1:1", timeout_s=timeout_s)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="timeout_s must be a positive number of seconds"):
        Meta.connect_async("http://127.0.0.1:1", timeout_s=timeout_s)  # type: ignore[arg-type]


def test_a_fractional_timeout_is_accepted() -> None:
    Meta.connect("http://127.0.0.1:1", timeout_s=0.5).close()


class _OtherService(BaseHTTPRequestHandler):
    """Some other web service on the port the user typed: an HTML error page, or JSON that is not JSON-RPC."""

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        html = self.path.startswith("/html")
        body = b"<html><body>Not Found</body></html>" if html else b'{"detail": "Not Found"}'
        self.send_response(404)
        self.send_header("Content-Type", "text/html" if html else "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def other_service() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _OtherService)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("path", ["/html", "/json"])
def test_a_url_that_is_not_a_gateway_says_so_naming_the_url(other_service: str, path: str) -> None:
    """Not an ``InternalError`` ("gateway answered HTTP 404 without JSON"), which the shell printed as a
    gateway's refusal: the URL answers, but it is not a meta-memory gateway."""
    url = other_service + path
    with Meta.connect(url) as meta, pytest.raises(GatewayUnreachable) as exc:
        meta.agent("lead:main").recall("passport")
    said = str(exc.value)
    assert f"{url}/rpc is not a meta-memory gateway" in said and "HTTP 404" in said and "check the URL" in said
    proc = subprocess.run([sys.executable, "-m", "meta_memory.cli", "recall", "passport", "--identity", "lead:main",
                           "--url", url], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and proc.stdout == ""
    assert f"{url}/rpc is not a meta-memory gateway" in proc.stderr
    assert "refused" not in proc.stderr and "internal" not in proc.stderr and "Traceback" not in proc.stderr


def test_the_async_handle_says_the_same(other_service: str) -> None:
    async def run() -> None:
        meta = Meta.connect_async(other_service + "/html")
        try:
            with pytest.raises(GatewayUnreachable, match="is not a meta-memory gateway"):
                await meta.agent("lead:main").recall("passport")
        finally:
            await meta.aclose()

    asyncio.run(run())
