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
from support import GatewayProcess, access_toml, jsonrpc_lines, start_gateway, write_config

pytestmark = pytest.mark.gateway

MiB = 1024 * 1024
TOKEN = "tok-reader-0123456789"
OTHER = "tok-writer-0123456789"
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
    ("[gateway]\nmax_buffered_response_bytes = 65536\n", "gateway.max_buffered_response_bytes"),
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
    assert parse_config({}).gateway.max_buffered_response_bytes == 512 * MiB


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


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """Access control on with a token: a caller without one is served under ``anyone`` rules.

    One gateway for the module's tests that use it: they only read (``meta/capabilities``, discover
    batches) and close every connection they open, so none sees another's state."""
    tmp_path = tmp_path_factory.mktemp("guarded")
    text = access_toml({TOKEN: "reader"}, [("reader", "operator.status")])
    gw = start_gateway(tmp_path / "s", config=write_config(tmp_path / "c.toml", text))
    yield gw
    gw.discard()


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
def stalled_bodies(gw: GatewayProcess, count: int, length: int,
                   token: str | None = TOKEN) -> Iterator[list[socket.socket]]:
    """``count`` requests that announce ``length`` bytes, send all but the last and stall; closed when the
    block ends."""
    socks = []
    try:
        for _ in range(count):
            sock = connect(gw)
            sock.sendall(head("/rpc", length, token) + b"[" + b" " * (length - 2))
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


CALL = {"jsonrpc": "2.0", "id": 1, "method": "meta/capabilities"}


def post(gw: GatewayProcess, payload: Any, token: str | None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.post(gw.url + "/rpc", json=payload, headers=headers, timeout=GUARD_S)


def until_refused(gw: GatewayProcess, token: str | None) -> httpx.Response:
    """``CALL`` sent as ``token`` until it is refused 503 (the stalled requests have reached the handler)."""
    deadline = time.monotonic() + 10
    while (resp := post(gw, CALL, token)).status_code != 503:
        assert time.monotonic() < deadline, "never refused"
        time.sleep(0.05)
    return resp


def two_principals(gateway_factory: Any, tmp_path: Path, gateway: str) -> GatewayProcess:
    text = (f"[gateway]\n{gateway}\n"
            + access_toml({TOKEN: "reader", OTHER: "writer"}, [("reader", "operator.status"),
                                                              ("writer", "operator.status")]))
    return gateway_factory(tmp_path / "s", config=write_config(tmp_path / "c.toml", text))


def test_callers_without_a_token_stalling_bodies_fill_only_their_share(gateway_factory: Any,
                                                                      tmp_path: Path) -> None:
    """Seventeen tokenless requests announce 64 KiB each and stall one byte short (more than the whole
    bound): they hold 1/8 of it at most, and a caller with a token is still served."""
    gw = two_principals(gateway_factory, tmp_path, "max_request_bytes = 262144\nmax_buffered_request_bytes = 1048576")
    length = TOKENLESS_MAX_REQUEST_BYTES
    with stalled_bodies(gw, 17, length, token=None):
        refused = until_refused(gw, None)
        assert refused.headers["retry-after"] == "1"
        assert refused.json()["error"]["data"]["resource"] == "buffered_request_bytes"
        served = post(gw, CALL, TOKEN)
        assert served.status_code == 200 and "result" in served.json()
        big = post(gw, [CALL] * 2000, OTHER)  # about 120 KB: more than the tokenless share, and served
        assert big.status_code == 200 and all("result" in r for r in big.json())


def test_one_principal_holds_at_most_half_of_the_bodies_bound(gateway_factory: Any, tmp_path: Path) -> None:
    gw = two_principals(gateway_factory, tmp_path, "max_request_bytes = 262144\nmax_buffered_request_bytes = 1048576")
    with stalled_bodies(gw, 2, 256 * 1024, token=TOKEN):  # half the bound, held by one principal
        err = until_refused(gw, TOKEN).json()["error"]
        assert err["data"] == {"kind": "capacity_exceeded", "resource": "buffered_request_bytes",
                               "limit": MiB, "retry_after_ms": 1000}
        assert "one principal 1/2" in err["message"]
        served = post(gw, CALL, OTHER)
        assert served.status_code == 200 and "result" in served.json()
    deadline = time.monotonic() + GUARD_S
    while (resp := post(gw, CALL, TOKEN)).status_code == 503:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert resp.status_code == 200


def test_slow_bodies_without_a_token_cannot_take_the_connections_of_callers_with_one(gateway_factory: Any,
                                                                                    tmp_path: Path) -> None:
    """Tokenless requests (served under ``anyone`` rules) announce a body and send one byte of it, on more
    connections than the address's cap and the reserve together: each holds its slot until the body
    deadline, yet a caller with a token is served at once (through the reserve, where a request without a
    token is answered 503 from its headers, its body never read)."""
    gw = two_principals(gateway_factory, tmp_path, "max_connections_per_ip = 6\nreserve_connections = 2")
    socks = []
    try:
        for _ in range(12):
            sock = connect(gw)
            sock.sendall(head("/rpc", 1000) + b"[")
            socks.append(sock)
        started = time.monotonic()
        served = post(gw, CALL, TOKEN)
        assert served.status_code == 200 and "result" in served.json()
        assert time.monotonic() - started < 5, "not made to wait for the slow bodies' deadline"
        with contextlib.closing(connect(gw)) as sock:  # without a token, past the caps: refused from its head
            sock.settimeout(5)
            sock.sendall(head("/rpc", 1000) + b"[")
            status, headers, body = read_response(sock)
        assert status == 503 and json.loads(body)["error"]["data"]["resource"] == "connections_per_ip"
    finally:
        for sock in socks:
            sock.close()


def unread_batch(gw: GatewayProcess, calls: int, token: str) -> socket.socket:
    """A batch of ``calls`` ``rpc.discover`` sent on a socket with a small receive buffer; returns once the
    response has begun (its answers are built), its body left unread."""
    host, port = gw.url.split("//", 1)[1].rsplit(":", 1)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)
    sock.settimeout(GUARD_S)
    sock.connect((host, int(port)))
    body = json.dumps(discover_batch(calls)).encode()
    sock.sendall(head("/rpc", len(body), token) + body)
    assert sock.recv(1, socket.MSG_PEEK) == b"H"  # the response has begun
    return sock


def test_unread_answers_past_the_answers_bound_refuse_new_calls_unrun_until_read(gateway_factory: Any,
                                                                                tmp_path: Path) -> None:
    """A client that asks for about 35 MB of answers and does not read them holds at most its share of
    ``max_buffered_response_bytes`` (its later calls refused, unrun); while it does, its next calls are
    refused (a single call 503), another principal is served, and the room comes back once the answers
    are read or the client goes away."""
    bound = 32 * MiB
    gw = two_principals(gateway_factory, tmp_path, f"max_buffered_response_bytes = {bound}")
    refusal = {"kind": "capacity_exceeded", "resource": "buffered_response_bytes", "limit": bound,
               "retry_after_ms": 1000}
    for leave in ("read", "disconnect"):
        sock = unread_batch(gw, 400, TOKEN)
        single = post(gw, {"jsonrpc": "2.0", "id": "s", "method": "rpc.discover"}, TOKEN)
        assert single.status_code == 503 and single.headers["retry-after"] == "1"
        assert single.json()["error"]["data"] == refusal
        assert "max_buffered_response_bytes" in single.json()["error"]["message"]
        batch = post(gw, discover_batch(3), TOKEN).json()
        assert [r["error"]["data"] for r in batch] == [refusal] * 3
        other = post(gw, discover_batch(5), OTHER)
        assert other.status_code == 200 and all("result" in r for r in other.json())
        if leave == "read":
            status, _, data = read_response(sock)
            assert status == 200
            answers = json.loads(data)
            ran = [r for r in answers if "result" in r]
            assert 0 < len(ran) < 300 and answers[:len(ran)] == ran  # cut near half the bound
            assert all(r["error"]["data"] == refusal for r in answers[len(ran):])
        sock.close()
        deadline = time.monotonic() + GUARD_S
        while (resp := post(gw, CALL, TOKEN)).status_code == 503:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert resp.status_code == 200 and "result" in resp.json()


def test_a_client_that_stops_reading_is_dropped_after_the_send_deadline(gateway_factory: Any,
                                                                        tmp_path: Path) -> None:
    """A client that asks for about 35 MB of answers and then reads nothing, its connection left open, holds
    them only until ``send_timeout_s`` has passed with its send buffer full: the gateway then drops the
    connection (the client reads the start of its answer and then the end of the stream, not the whole
    answer) and the room comes back."""
    bound = 32 * MiB
    gw = two_principals(gateway_factory, tmp_path, f"max_buffered_response_bytes = {bound}\nsend_timeout_s = 1")
    sock = unread_batch(gw, 400, TOKEN)
    try:
        assert post(gw, CALL, TOKEN).status_code == 503  # its answers hold its share
        deadline = time.monotonic() + GUARD_S
        while (resp := post(gw, CALL, TOKEN)).status_code == 503:
            assert time.monotonic() < deadline, "the unread answers were never given back"
            time.sleep(0.1)
        assert resp.status_code == 200 and "result" in resp.json()
        received = 0
        with contextlib.suppress(ConnectionResetError):
            while chunk := sock.recv(1 << 20):
                received += len(chunk)
        assert 0 < received < 30 * MiB  # the connection was dropped, its answer not all sent
    finally:
        sock.close()
    assert gw.proc.poll() is None
    assert any("its answer not read for 1 s" in line for line in gw.proc.log_tail)


def test_a_client_reading_a_large_answer_slowly_but_steadily_is_not_dropped(gateway_factory: Any,
                                                                            tmp_path: Path) -> None:
    """A client that reads its answer in small pieces, so its send buffer stays full for several send deadlines
    in a row while it drains, gets the whole answer: the deadline watches a client that reads nothing."""
    gw = two_principals(gateway_factory, tmp_path, "send_timeout_s = 1")
    sock = unread_batch(gw, 60, TOKEN)
    received, started, length = b"", time.monotonic(), None
    try:
        while length is None or len(received) < length:
            chunk = sock.recv(32 * 1024)
            assert chunk, f"dropped after {len(received)} bytes, {time.monotonic() - started:.1f} s"
            received += chunk
            if length is None and b"\r\n\r\n" in received:
                head, _, received = received.partition(b"\r\n\r\n")
                length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            time.sleep(0.02)  # about 1.5 MB/s: the buffer stays above its mark, the client never stops reading
    finally:
        sock.close()
    elapsed = time.monotonic() - started
    answers = json.loads(received)
    assert len(answers) == 60 and all("result" in r for r in answers)
    assert elapsed > 2, f"the answer was read in {elapsed:.1f} s: not slow enough to cross the deadline twice"
    assert not any("its answer not read" in line for line in gw.proc.log_tail)


def test_answers_held_for_clients_that_do_not_read_stay_within_the_bound(gateway_factory: Any,
                                                                        tmp_path: Path) -> None:
    """Eight connections each ask for about 35 MB of answers and never read them: the gateway's memory
    grows by about the bound, not by 280 MB."""
    gw = two_principals(gateway_factory, tmp_path, f"max_buffered_response_bytes = {32 * MiB}")
    assert "result" in post(gw, CALL, TOKEN).json()
    before = peak_rss_bytes(gw)
    socks = [unread_batch(gw, 400, TOKEN if i % 2 else OTHER) for i in range(8)]
    try:
        assert peak_rss_bytes(gw) - before < 120 * MiB, (before, peak_rss_bytes(gw))
    finally:
        for sock in socks:
            sock.close()
