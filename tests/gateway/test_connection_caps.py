"""A flood of connections cannot take the gateway's file descriptors: when every connection held serves a
request, ``[gateway] max_connections`` and ``max_connections_per_ip`` close each connection past them at once
(503, ``Retry-After``), a closed connection gives its slot back, and the log holds one drop line a second of each kind with a count of the lines held back.
Over real sockets; the flood comes from 127.0.0.2, the legitimate caller from 127.0.0.1."""

from __future__ import annotations

import json
import re
import select
import socket
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from meta_memory.config import parse_config
from meta_memory.errors import ConfigError
from meta_memory.server.protocol import connection_budget, peer_key
from meta_memory.server.run import max_connections
from support import GatewayProcess, read_until_closed, write_config

pytestmark = pytest.mark.gateway

GUARD_S = 30  # the longest any socket operation here may block: a bound, not a measured figure
FLOOD_FROM = "127.0.0.2"


def connect(gw: GatewayProcess, source: str = "127.0.0.1") -> socket.socket:
    host, port = gw.url.split("//", 1)[1].rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=GUARD_S, source_address=(source, 0))


def busy_connection(gw: GatewayProcess, source: str = "127.0.0.1") -> socket.socket:
    """A connection serving a request: its head sent, its body (1,000 bytes announced) not yet."""
    sock = connect(gw, source)
    sock.sendall(b"POST /rpc HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
                 b"content-length: 1000\r\n\r\n")
    return sock


def answered(socks: list[socket.socket], expect: int, settle_s: float = 1.0) -> list[socket.socket]:
    """The sockets the server has written to or closed: waits until ``expect`` of them are (at most
    GUARD_S), then ``settle_s`` more for any beyond."""
    ready: set[socket.socket] = set()
    deadline = time.monotonic() + GUARD_S
    settle_at: float | None = None
    while True:
        now = time.monotonic()
        if len(ready) >= expect and settle_at is None:
            settle_at = now + settle_s
        end = settle_at if settle_at is not None else deadline
        if now >= end:
            break
        readable, _, _ = select.select([s for s in socks if s not in ready], [], [], min(0.2, end - now))
        ready.update(readable)
    return [s for s in socks if s in ready]


def drop_lines(gw: GatewayProcess) -> list[str]:
    return [line for line in list(gw.proc.log_tail) if "dropped " in line and " connection" in line]


def dropped_count(lines: list[str]) -> int:
    """Connections the drop lines account for: one per line shown, plus each line's count held back."""
    total = 0
    for line in lines:
        held = re.search(r"dropped (\d+) more connection", line)
        total += int(held.group(1)) if held else 1
    return total


def wait_for_drops(gw: GatewayProcess, n: int) -> list[str]:
    for _ in range(GUARD_S * 10):
        lines = drop_lines(gw)
        if dropped_count(lines) >= n:
            return lines
        time.sleep(0.1)
    raise AssertionError(f"the log accounts for {dropped_count(drop_lines(gw))} drops, not {n}: "
                         f"{list(gw.proc.log_tail)[-20:]}")


def test_connections_past_the_per_address_cap_are_closed_while_others_are_served(
        gateway_factory: Any, tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "g.toml", "[gateway]\nmax_connections_per_ip = 20\nheader_timeout_s = 120\n"
                                            "body_timeout_s = 120\nreserve_connections = 0\n")
    gw = gateway_factory(tmp_path / "s", config=cfg)
    flood = [busy_connection(gw, FLOOD_FROM) for _ in range(20)]  # serving requests: none may be displaced
    assert answered(flood, 0) == []
    flood += [connect(gw, FLOOD_FROM) for _ in range(20)]
    try:
        refused = answered(flood, 20)
        assert len(refused) == 20, f"{len(refused)} of 40 connections closed by the server, not 20"
        answer = read_until_closed(refused[-1])
        assert answer.startswith(b"HTTP/1.1 503 "), answer[:200]
        head, _, body = answer.partition(b"\r\n\r\n")
        assert b"\r\nretry-after: 5\r\n" in head.lower()
        error = json.loads(body)["error"]
        assert error["code"] == -32005
        assert error["data"] == {"kind": "capacity_exceeded", "resource": "connections_per_ip", "limit": 20}
        assert "gateway.max_connections_per_ip" in error["message"]
        # another address is served meanwhile
        assert gw.result("rpc.discover")["openrpc"]
        # closing some gives their slots back
        held = [s for s in flood if s not in refused]
        for sock in held[:5]:
            sock.close()
        time.sleep(0.5)
        again = [busy_connection(gw, FLOOD_FROM) for _ in range(5)]
        flood += again
        assert answered(again, 0) == [], "a slot freed by a closed connection was not given back"
        one_more = connect(gw, FLOOD_FROM)
        flood.append(one_more)
        assert answered([one_more], 1) == [one_more]
        # 21 refusals: one line, and the rest counted, not logged one by one
        lines = wait_for_drops(gw, 21)
        assert len(lines) <= 3, lines
        assert dropped_count(lines) == 21, lines
        assert "gateway.max_connections_per_ip (20) reached" in lines[0]
        assert any("lines suppressed" in line for line in lines), lines
    finally:
        for sock in flood:
            sock.close()


def test_connections_past_the_total_cap_are_closed_until_one_closes(gateway_factory: Any, tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "g.toml", "[gateway]\nmax_connections = 20\nheader_timeout_s = 120\n"
                                            "body_timeout_s = 120\nreserve_connections = 0\n")
    gw = gateway_factory(tmp_path / "s", config=cfg)
    flood = [busy_connection(gw, FLOOD_FROM) for _ in range(20)]
    assert answered(flood, 0) == []
    flood += [connect(gw, FLOOD_FROM) for _ in range(20)]
    try:
        refused = answered(flood, 20)
        assert len(refused) == 20
        answer = read_until_closed(refused[0])
        assert answer.startswith(b"HTTP/1.1 503 ")
        data = json.loads(answer.partition(b"\r\n\r\n")[2])["error"]["data"]
        assert data == {"kind": "capacity_exceeded", "resource": "connections", "limit": 20}
        # every address is refused while the gateway holds its most connections
        with pytest.raises(httpx.HTTPError):
            resp = httpx.post(gw.url + "/rpc", json={"jsonrpc": "2.0", "id": 1, "method": "rpc.discover"},
                              timeout=GUARD_S)
            if resp.status_code == 503:
                raise httpx.HTTPError("refused with 503")
        for sock in [s for s in flood if s not in refused][:5]:
            sock.close()
        time.sleep(0.5)
        assert gw.result("rpc.discover")["openrpc"]
    finally:
        for sock in flood:
            sock.close()


def test_forty_idle_connections_dropped_by_the_header_deadline_are_a_few_log_lines(
        gateway_factory: Any, tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "g.toml", "[gateway]\nheader_timeout_s = 1\n")
    gw = gateway_factory(tmp_path / "s", config=cfg)
    flood = [connect(gw, FLOOD_FROM) for _ in range(40)]
    try:
        assert len(answered(flood, 40, settle_s=0)) == 40
        assert all(read_until_closed(s).startswith(b"HTTP/1.1 408 ") for s in flood)
    finally:
        for sock in flood:
            sock.close()
    lines = wait_for_drops(gw, 40)
    assert dropped_count(lines) == 40, lines
    assert len(lines) <= 4, lines
    assert "request headers not complete within 1 s" in lines[0]
    assert re.search(r"dropped \d+ more connection\(s\) in the last 1 s \(lines suppressed", "".join(lines))
    assert "Traceback" not in "".join(gw.proc.log_tail)


@pytest.mark.parametrize("key", ["max_connections", "max_connections_per_ip"])
@pytest.mark.parametrize("value", [0, -1, 1024 * 1024 + 1, "many", True, 1.5])
def test_connection_caps_out_of_range_are_refused_naming_the_key(key: str, value: Any) -> None:
    with pytest.raises(ConfigError, match=rf"gateway\.{key} must be an integer between 1 and 1048576"):
        parse_config({"gateway": {key: value}})


def test_a_gateway_with_a_bad_cap_does_not_start(gateway_factory: Any, tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "g.toml", "[gateway]\nmax_connections_per_ip = 0\n")
    gw = gateway_factory(tmp_path / "s", config=cfg, expect_failure=True)
    assert gw.proc.wait(timeout=GUARD_S) != 0
    assert "gateway.max_connections_per_ip" in gw.proc.stderr.read()


def test_the_default_total_cap_leaves_a_reserve_of_the_open_file_limit() -> None:
    assert connection_budget(1024) == 768
    assert connection_budget(20_000) == 17_500
    assert connection_budget(256) == 128
    assert connection_budget(1) == 1
    assert 1 <= connection_budget() < 1024 * 1024
    assert max_connections(None, budget=768) == 768
    assert max_connections(100, budget=768) == 100
    assert max_connections(5000, budget=768) == 768  # never above what the descriptors allow


def test_connections_count_per_address_and_per_ipv6_network() -> None:
    assert peer_key("203.0.113.9") == "203.0.113.9"
    assert peer_key("2001:db8::1") == peer_key("2001:db8::ffff:2") == "2001:db8::/64"
    assert peer_key("2001:db8:0:1::1") != peer_key("2001:db8::1")
    assert peer_key("::ffff:203.0.113.9") == "203.0.113.9"


def test_asyncio_accept_errors_are_one_line_a_second_without_traceback(caplog: pytest.LogCaptureFixture) -> None:
    import asyncio
    import logging

    from meta_memory.server.protocol import install_accept_error_filter

    install_accept_error_filter()
    install_accept_error_filter()  # once is enough: a second call adds nothing
    logger = logging.getLogger("asyncio")
    added = [f for f in logger.filters if type(f).__name__ == "_AcceptErrorFilter"]
    assert len(added) == 1
    loop = asyncio.new_event_loop()
    try:
        with caplog.at_level(logging.ERROR, logger="asyncio"):
            for _ in range(500):
                try:
                    raise OSError(24, "Too many open files")
                except OSError as exc:
                    loop.call_exception_handler({"message": "socket.accept() out of system resource",
                                                 "exception": exc})
            loop.call_exception_handler({"message": "something else"})
    finally:
        loop.close()
        logger.removeFilter(added[0])
    accept = [r for r in caplog.records if "socket.accept() out of system resource" in r.getMessage()]
    assert len(accept) == 1
    assert "Too many open files" in accept[0].getMessage() and accept[0].exc_info is None
    assert any(r.getMessage().startswith("something else") for r in caplog.records)
