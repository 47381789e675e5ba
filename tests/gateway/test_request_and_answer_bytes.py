"""What one request may cost the gateway in memory, over a real socket: the bytes of answers a request may
produce (``[gateway] max_response_bytes``, counted as each answer is encoded), a token judged from the
headers before any of the body is read, the smaller caps of a caller that sent no token, and the bytes of
request bodies held at once over every connection (``[gateway] max_buffered_request_bytes``)."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from meta_memory.config import parse_config
from meta_memory.errors import ConfigError
from meta_memory.limits import TOKENLESS_MAX_REQUEST_BYTES, TOKENLESS_MAX_RESPONSE_BYTES
from support import GatewayProcess, access_toml, jsonrpc_lines, write_config

pytestmark = pytest.mark.gateway

MiB = 1024 * 1024
TOKEN = "tok-reader-0123456789"
GUARD_S = 30  # the longest any socket operation here may block: a bound, not a measured figure


def discover_batch(n: int) -> list[dict[str, Any]]:
    return [{"jsonrpc": "2.0", "id": i, "method": "rpc.discover"} for i in range(n)]


def peak_rss_bytes(gw: GatewayProcess) -> int:
    """The gateway process's high-water resident set (``VmHWM``), read from outside it."""
    for line in Path(f"/proc/{gw.proc.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM line")


def connect(gw: GatewayProcess) -> socket.socket:
    host, port = gw.url.split("//", 1)[1].rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=GUARD_S)


def head(path: str, length: int, token: str | None = None) -> bytes:
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{auth}"
            f"Content-Length: {length}\r\n\r\n").encode()


def read_response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 response (status, lower-cased headers, body) read off ``sock``."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"connection closed before a response: {data!r}"
        data += chunk
    raw_head, _, body = data.partition(b"\r\n\r\n")
    lines = raw_head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    while len(body) < int(headers.get("content-length", "0")):
        chunk = sock.recv(65536)
        assert chunk
        body += chunk
    return int(lines[0].split()[1]), headers, body


# ---------------------------------------------------------------- answers: [gateway] max_response_bytes


def test_a_tokenless_batch_of_ten_thousand_discovers_is_answered_within_the_answer_cap(
        gateway_factory: Any, tmp_path: Path) -> None:
    """The amplification: 10,000 ``rpc.discover`` calls (about 580 KB asked, about 88 KB answered each)
    without a token. The answers stop at the cap, every later call is refused in its place, unrun, and
    the gateway's peak memory stays near where it was."""
    cap = 2 * MiB
    gw = gateway_factory(tmp_path / "s", config=write_config(tmp_path / "c.toml",
                                                              f"[gateway]\nmax_response_bytes = {cap}\n"))
    one = httpx.post(gw.url + "/rpc", json=discover_batch(1)[0], timeout=GUARD_S)
    assert one.status_code == 200 and "result" in one.json()
    before = peak_rss_bytes(gw)
    resp = httpx.post(gw.url + "/rpc", json=discover_batch(10_000), timeout=GUARD_S)
    assert resp.status_code == 200
    body = resp.json()
    assert [r["id"] for r in body] == list(range(10_000))  # every call answered, in order
    ran = [r for r in body if "result" in r]
    assert 0 < len(ran) < 40 and body[:len(ran)] == ran
    refused = body[len(ran):]
    for r in refused:
        assert r["error"]["code"] == -32005
        assert r["error"]["data"] == {"kind": "capacity_exceeded", "resource": "response_bytes", "limit": cap}
        assert "max_response_bytes" in r["error"]["message"]
    answered = sum(len(json.dumps(r, separators=(",", ":"), ensure_ascii=False).encode()) + 1 for r in ran)
    assert answered <= cap + len(one.content) + 1  # the answer that passed the cap is the last one sent
    refusal = max(len(json.dumps(r, separators=(",", ":"), ensure_ascii=False)) for r in refused)
    assert len(resp.content) <= answered + len(refused) * (refusal + 1) + 2
    assert peak_rss_bytes(gw) - before < 150 * MiB, (before, peak_rss_bytes(gw))


def test_a_single_answer_over_the_cap_is_replaced_by_an_error_naming_it(gateway_factory: Any,
                                                                       tmp_path: Path) -> None:
    cap = 64 * 1024
    gw = gateway_factory(tmp_path / "s", config=write_config(tmp_path / "c.toml",
                                                              f"[gateway]\nmax_response_bytes = {cap}\n"))
    resp = httpx.post(gw.url + "/rpc", json={"jsonrpc": "2.0", "id": "d", "method": "rpc.discover"},
                      timeout=GUARD_S)
    assert resp.status_code == 200  # sending it again would not help: no 503, no Retry-After
    err = resp.json()["error"]
    assert resp.json()["id"] == "d" and err["code"] == -32005
    assert err["data"] == {"kind": "capacity_exceeded", "resource": "response_bytes", "limit": cap}
    assert f"cap of {cap} bytes" in err["message"] and "max_response_bytes" in err["message"]
    assert len(resp.content) < 1024
    assert "result" in gw.rpc("meta/capabilities")  # a smaller answer still goes out


def test_stdio_counts_the_same_answer_bytes(tmp_path: Path) -> None:
    config = write_config(tmp_path / "c.toml", "[gateway]\nmax_response_bytes = 65536\n")
    proc = subprocess.Popen([sys.executable, "-m", "meta_memory.cli", "gateway", "--stdio", "--state-dir",
                             str(tmp_path / "s"), "--config", str(config)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        [batch] = jsonrpc_lines(proc, [[*discover_batch(2), {"jsonrpc": "2.0", "id": 9,
                                                               "method": "meta/capabilities"}]])
        assert [r["id"] for r in batch] == [0, 1, 9]
        assert [r["error"]["data"]["resource"] for r in batch[:2]] == ["response_bytes"] * 2
        assert "result" in batch[2]
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        assert proc.wait(timeout=GUARD_S) == 0


@pytest.mark.parametrize(("text", "key"), [
    ("[gateway]\nmax_response_bytes = 1024\n", "gateway.max_response_bytes"),
    ("[gateway]\nmax_buffered_request_bytes = 0\n", "gateway.max_buffered_request_bytes"),
    ("[gateway]\nmax_request_bytes = 2097152\nmax_buffered_request_bytes = 1048576\n",
     "gateway.max_buffered_request_bytes"),
])
def test_out_of_range_byte_bounds_are_refused_naming_the_key(text: str, key: str) -> None:
    import tomllib

    with pytest.raises(ConfigError) as err:
        parse_config(tomllib.loads(text))
    assert key in str(err.value)


def test_an_unset_buffered_bound_makes_room_for_one_body_of_the_largest_size() -> None:
    settings = parse_config({"gateway": {"max_request_bytes": 100 * MiB}}).gateway
    assert settings.max_buffered_request_bytes == 100 * MiB
    assert parse_config({}).gateway.max_buffered_request_bytes == 64 * MiB
    assert parse_config({}).gateway.max_response_bytes == 256 * MiB


# ---------------------------------------------------------------- the token, before the body


@pytest.fixture
def tokens_only(gateway_factory: Any, tmp_path: Path) -> GatewayProcess:
    """Tokens are the only guard (access control off): a request without a valid one is refused."""
    text = access_toml({TOKEN: "reader"}, [], header=False)
    return gateway_factory(tmp_path / "s", config=write_config(tmp_path / "c.toml", text))


@pytest.mark.parametrize("token", [None, "not-a-token"])
def test_a_refused_token_is_answered_401_before_the_body_is_sent(tokens_only: GatewayProcess,
                                                                 token: str | None) -> None:
    """The headers announce 8 MiB and no byte of it follows: the 401 comes at once, nothing waits for
    (or holds) the body."""
    with contextlib.closing(connect(tokens_only)) as sock:
        sock.settimeout(5)
        sock.sendall(head("/rpc", 8 * MiB, token))
        status, headers, body = read_response(sock)
    assert status == 401 and headers["www-authenticate"].startswith("Bearer")
    assert json.loads(body)["error"]["data"]["action"] == "authenticate"


@pytest.fixture
def guarded(gateway_factory: Any, tmp_path: Path) -> GatewayProcess:
    """Access control on with a token: a caller without one is served under ``anyone`` rules."""
    text = access_toml({TOKEN: "reader"}, [("reader", "operator.status")])
    return gateway_factory(tmp_path / "s", config=write_config(tmp_path / "c.toml", text))


def test_a_caller_without_a_token_has_a_small_body_cap_judged_before_reading(guarded: GatewayProcess) -> None:
    with contextlib.closing(connect(guarded)) as sock:
        sock.settimeout(5)
        sock.sendall(head("/rpc", TOKENLESS_MAX_REQUEST_BYTES + 1))
        status, _, body = read_response(sock)
    assert status == 413
    err = json.loads(body)["error"]
    assert err["data"]["field"] == "request" and f"cap of {TOKENLESS_MAX_REQUEST_BYTES} bytes" in err["message"]
    assert "without a token" in err["message"]
    # with the token, the same size is read and served
    big = [{"jsonrpc": "2.0", "id": i, "method": "meta/capabilities"} for i in range(2000)]
    assert len(json.dumps(big)) > TOKENLESS_MAX_REQUEST_BYTES
    served = httpx.post(guarded.url + "/rpc", json=big, headers={"Authorization": f"Bearer {TOKEN}"},
                        timeout=GUARD_S)
    assert served.status_code == 200 and all("result" in r for r in served.json())


def test_a_caller_without_a_token_gets_fewer_answer_bytes(guarded: GatewayProcess) -> None:
    resp = httpx.post(guarded.url + "/rpc", json=discover_batch(300), timeout=GUARD_S)
    body = resp.json()
    assert resp.status_code == 200 and [r["id"] for r in body] == list(range(300))
    ran = [r for r in body if "result" in r]
    assert 0 < len(ran) < 20
    assert body[len(ran)]["error"]["data"] == {"kind": "capacity_exceeded", "resource": "response_bytes",
                                               "limit": TOKENLESS_MAX_RESPONSE_BYTES}
    assert "without a token" in body[len(ran)]["error"]["message"]
    full = httpx.post(guarded.url + "/rpc", json=discover_batch(30), headers={"Authorization": f"Bearer {TOKEN}"},
                      timeout=GUARD_S).json()
    assert all("result" in r for r in full)  # a caller with a token has the gateway's cap


# ---------------------------------------------------------------- bodies held at once


@contextlib.contextmanager
def stalled_bodies(gw: GatewayProcess, count: int, length: int) -> Iterator[list[socket.socket]]:
    """``count`` requests that announce ``length`` bytes, send all but the last and stall; closed when the
    block ends."""
    socks = []
    try:
        for _ in range(count):
            sock = connect(gw)
            sock.sendall(head("/rpc", length, TOKEN) + b"[" + b" " * (length - 2))
            socks.append(sock)
        yield socks
    finally:
        for sock in socks:
            sock.close()


def test_bodies_past_the_buffered_bound_are_refused_503_until_room_is_made(gateway_factory: Any,
                                                                          tmp_path: Path) -> None:
    text = ("[gateway]\nmax_request_bytes = 1048576\nmax_buffered_request_bytes = 2097152\n"
            + access_toml({TOKEN: "reader"}, [], header=False))
    gw = gateway_factory(tmp_path / "s", config=write_config(tmp_path / "c.toml", text))
    auth = {"Authorization": f"Bearer {TOKEN}"}
    call = {"jsonrpc": "2.0", "id": 1, "method": "meta/capabilities"}
    with contextlib.closing(connect(gw)) as one, contextlib.closing(connect(gw)) as two:
        for idle in (one, two):  # the whole bound announced and not sent: that holds nothing
            idle.sendall(head("/rpc", MiB, TOKEN))
        time.sleep(0.3)
        announced = httpx.post(gw.url + "/rpc", json=call, headers=auth, timeout=GUARD_S)
    assert announced.status_code == 200
    with stalled_bodies(gw, 2, MiB):
        deadline = time.monotonic() + GUARD_S
        while True:  # the stalled requests reach the handler and hold their bytes
            resp = httpx.post(gw.url + "/rpc", json=call, headers=auth, timeout=GUARD_S)
            if resp.status_code == 503 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert resp.status_code == 503 and resp.headers["retry-after"] == "1"
        err = resp.json()["error"]
        assert err["code"] == -32005
        assert err["data"] == {"kind": "capacity_exceeded", "resource": "buffered_request_bytes",
                               "limit": 2 * MiB, "retry_after_ms": 1000}
        assert "max_buffered_request_bytes" in err["message"]
    deadline = time.monotonic() + GUARD_S  # the clients left: their bytes are given back
    while (resp := httpx.post(gw.url + "/rpc", json=call, headers=auth, timeout=GUARD_S)).status_code == 503:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert resp.status_code == 200 and "result" in resp.json()
