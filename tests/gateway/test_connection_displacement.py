"""Connections that have sent no request cannot lock callers out of a gateway under ``[access]``.

Every loopback client shares one address, so the per-address cap (512) is one pool for an attacker and
every legitimate caller. At a cap a new connection displaces the oldest connection still waiting for a
request head that showed no accepted token; a connection serving a request, or a kept-alive one that
showed an accepted token, is never displaced (the newcomer is refused with 503 then); a 401 or 403
closes its connection. Requests without an accepted token run at most ``max_tokenless_requests`` at once
(one more is refused 503 unrun), so a flood of tokenless calls that ``[access]`` lets run cannot queue
ahead of an authenticated caller's. Over real sockets against ``meta-memory serve``; the attacker and the
legitimate caller both come from 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
import re
import select
import socket
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meta_memory.server.connections import ConnectionTable
from support import GatewayProcess, access_toml, read_until_closed, write_config

pytestmark = pytest.mark.gateway

GUARD_S = 30  # the longest any socket operation here may block: a bound, not a measured figure
OPS = "tok-ops-0123456789abcdef"
DISCOVER = b'{"jsonrpc":"2.0","id":1,"method":"rpc.discover"}'


def address(gw: GatewayProcess) -> tuple[str, int]:
    host, port = gw.url.split("//", 1)[1].rsplit(":", 1)
    return host, int(port)


def connect(gw: GatewayProcess) -> socket.socket:
    return socket.create_connection(address(gw), timeout=GUARD_S)


def request(token: str | None = None, body: bytes = DISCOVER) -> bytes:
    auth = f"authorization: Bearer {token}\r\n".encode() if token else b""
    return (b"POST /rpc HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n" + auth
            + b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


def read_answer(sock: socket.socket) -> bytes:
    """One whole answer (head and a ``content-length`` body) from a kept-alive connection."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"closed before an answer: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    size = int(re.search(rb"content-length: (\d+)", head, re.I).group(1))  # type: ignore[union-attr]
    while len(body) < size:
        chunk = sock.recv(65536)
        assert chunk
        body += chunk
    return head + b"\r\n\r\n" + body


def closed_by_server(socks: list[socket.socket], wait_s: float) -> list[socket.socket]:
    """The sockets the server has closed (or written to) within ``wait_s``."""
    poller = select.poll()
    by_fd = {s.fileno(): s for s in socks}
    for fd in by_fd:
        poller.register(fd, select.POLLIN)
    ready: set[socket.socket] = set()
    end = time.monotonic() + wait_s
    while time.monotonic() < end:
        for fd, _ in poller.poll(100):
            ready.add(by_fd[fd])
            poller.unregister(fd)
    return [s for s in socks if s in ready]


def authenticated_call(gw: GatewayProcess) -> tuple[int, float]:
    """One call on a fresh connection with the operator's token: its HTTP status and its seconds."""
    start = time.monotonic()
    with httpx.Client(timeout=GUARD_S, headers={"Authorization": f"Bearer {OPS}"}) as client:
        answer = client.post(gw.url + "/rpc", content=DISCOVER, headers={"content-type": "application/json"})
    return answer.status_code, time.monotonic() - start


def call_with_retries(gw: GatewayProcess, bound_s: float = 45.0) -> tuple[int, float, int]:
    """:func:`authenticated_call` again after each 503 (0.2 s apart) until ``bound_s`` has passed: the last
    status, the seconds in all and the attempts refused."""
    start = time.monotonic()
    refused = 0
    while True:
        status, _ = authenticated_call(gw)
        if status != 503 or time.monotonic() - start > bound_s:
            return status, time.monotonic() - start, refused
        refused += 1
        time.sleep(0.2)


def access_config(tmp_path: Path, gateway: str = "", enabled: bool = True) -> Path:
    return write_config(tmp_path / "c.toml", f"[gateway]\nheader_timeout_s = 120\n{gateway}\n"
                        + access_toml({OPS: "ops"}, [("ops", "operator.status")], header=enabled))


def test_two_thousand_idle_connections_leave_room_for_an_authenticated_call(
        gateway_factory: Any, tmp_path: Path) -> None:
    gw = gateway_factory(tmp_path / "s", config=access_config(tmp_path))
    flood: list[socket.socket] = []
    try:
        start = time.monotonic()
        flood = [connect(gw) for _ in range(2000)]
        opened_s = time.monotonic() - start
        status, seconds = authenticated_call(gw)
        assert status == 200
        assert httpx.get(gw.url + "/v1/health", timeout=GUARD_S).status_code == 200
        # the oldest were displaced (closed without a byte), the newest still held: 512 from this address
        displaced = closed_by_server(flood[:1000], 2.0)
        assert len(displaced) == 1000 and all(read_until_closed(s) == b"" for s in displaced[:20])
        assert closed_by_server(flood[-400:], 0.5) == []
        print(f"2000 idle connections opened in {opened_s:.2f} s; the authenticated call took {seconds:.3f} s")
    finally:
        for sock in flood:
            sock.close()
    assert any("no request head yet, its slot given to a new connection" in line for line in gw.proc.log_tail)


class Flood:
    """``n`` connections from 127.0.0.1, each sending ``payload`` (a whole request) and reading its
    answer in a loop, reconnecting when the gateway closes it, on an event loop of its own thread."""

    def __init__(self, gw: GatewayProcess, n: int, payload: bytes) -> None:
        self.target = address(gw)
        self.n = n
        self.payload = payload
        self.statuses: Counter[int] = Counter()
        self.reconnects = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)

    def __enter__(self) -> "Flood":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(GUARD_S)

    async def _run(self) -> None:
        await asyncio.gather(*(self._one() for _ in range(self.n)))

    async def _one(self) -> None:
        while not self._stop.is_set():
            writer = None
            try:
                reader, writer = await asyncio.wait_for(asyncio.open_connection(*self.target), 5)
                while not self._stop.is_set():
                    writer.write(self.payload)
                    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
                    size = re.search(rb"content-length: (\d+)", head, re.I)
                    await reader.readexactly(int(size.group(1)) if size else 0)
                    self.statuses[int(head.split(b" ", 2)[1])] += 1
                    if b"connection: close" in head.lower():
                        break
            except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError, asyncio.LimitOverrunError):
                await asyncio.sleep(0.01)
            finally:
                self.reconnects += 1
                if writer is not None:
                    writer.close()


@pytest.mark.parametrize("enabled", [pytest.param(True, id="access_enabled"), pytest.param(False, id="tokens_only")])
def test_six_hundred_connections_looping_requests_without_a_token_leave_room_for_an_authenticated_call(
        gateway_factory: Any, tmp_path: Path, enabled: bool) -> None:
    gw = gateway_factory(tmp_path / "s", config=access_config(tmp_path, enabled=enabled))
    with Flood(gw, 600, request()) as flood:
        time.sleep(3)  # every slot of the address taken, the rest reconnecting
        calls = [call_with_retries(gw) for _ in range(5)]
        busy = sum(flood.statuses.values())
    assert [status for status, _, _ in calls] == [200] * 5, calls
    assert max(seconds for _, seconds, _ in calls) < 45, calls  # measured 0.2-2.5 s; a loaded CI machine is slower
    assert busy > 600, flood.statuses  # the flood was answered meanwhile: it was not idle
    expected = 200 if enabled else 401
    assert flood.statuses[expected] > 0, flood.statuses
    print(f"flood answers {dict(flood.statuses)}, reconnects {flood.reconnects}; "
          f"authenticated calls (seconds, attempts refused) {[(round(s, 3), n) for _, s, n in calls]}")


def discover_calls(gw: GatewayProcess) -> int:
    """How many ``rpc.discover`` calls the gateway has run, as ``/metrics`` counts them (read with the operator's token)."""
    text = httpx.get(gw.url + "/metrics", headers={"Authorization": f"Bearer {OPS}"}, timeout=GUARD_S).text
    found = re.search(r'^meta_memory_rpc_calls_total\{[^}]*method="rpc\.discover"[^}]*\} (\S+)$', text, re.M)
    return int(float(found.group(1))) if found else 0


def test_past_the_tokenless_bound_a_request_without_a_token_is_refused_unrun_and_a_token_is_served(
        gateway_factory: Any, tmp_path: Path) -> None:
    gw = gateway_factory(tmp_path / "s", config=access_config(tmp_path, "max_tokenless_requests = 2\n"
                                                                    "body_timeout_s = 120\n"
                                                                    'metrics_bind = "127.0.0.1:0"\n'))
    held = [connect(gw) for _ in range(2)]
    try:
        for sock in held:  # two requests without a token in progress: their bodies never come
            sock.sendall(b"POST /rpc HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
                         b"content-length: 1000\r\n\r\n")
        deadline = time.monotonic() + GUARD_S
        while True:  # until the gateway has read both heads (a loaded machine may take a while)
            before = discover_calls(gw)
            with connect(gw) as sock:
                sock.sendall(request())
                answer = read_until_closed(sock)  # returns once the gateway closes it
            if answer.startswith(b"HTTP/1.1 503 ") or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert answer.startswith(b"HTTP/1.1 503 ") and b"\r\nretry-after: 1\r\n" in answer.lower(), answer
        assert b"\r\nconnection: close\r\n" in answer.lower()
        error = json.loads(answer.partition(b"\r\n\r\n")[2])["error"]
        assert error["code"] == -32005
        assert error["data"] == {"kind": "capacity_exceeded", "resource": "tokenless_requests", "limit": 2,
                                 "retry_after_ms": 1000}
        assert "gateway.max_tokenless_requests" in error["message"]
        assert discover_calls(gw) == before  # refused unrun
        status, _ = authenticated_call(gw)  # a token is never counted
        assert status == 200
        assert httpx.get(gw.url + "/v1/health", timeout=GUARD_S).status_code == 200
        scrape = httpx.get(f"http://127.0.0.1:{metrics_port(gw)}/metrics", timeout=GUARD_S)  # the operator's monitoring
        assert scrape.status_code == 200 and "meta_memory_" in scrape.text
        held.pop().close()  # its client gone, its request ends: room for one more
        deadline = time.monotonic() + GUARD_S
        while True:
            with connect(gw) as sock:
                sock.sendall(request())
                answer = read_until_closed(sock)
            if not answer.startswith(b"HTTP/1.1 503 ") or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert answer.startswith(b"HTTP/1.1 200 "), answer[:300]
        assert discover_calls(gw) == before + 2
    finally:
        for sock in held:
            sock.close()
    # the operator can see the bound being hit (one line a second at most, the rest counted)
    assert any("gateway.max_tokenless_requests (2) reached" in line for line in gw.proc.log_tail)


def metrics_port(gw: GatewayProcess) -> int:
    """The port of the gateway's ``metrics_bind`` listener, from its start-up lines."""
    line = next(line for line in list(gw.proc.log_tail) if "metrics: http" in line)
    found = re.search(r":(\d+)/metrics", line)
    assert found, line
    return int(found.group(1))


@pytest.mark.parametrize("headers", [b"authorization: Bearer tok-not-a-token-000000\r\n",
                                     b"authorization: Basic Zm9vOmJhcg==\r\n"])
def test_a_request_refused_for_its_token_closes_its_connection(
        gateway_factory: Any, tmp_path: Path, headers: bytes) -> None:
    gw = gateway_factory(tmp_path / "s", config=access_config(tmp_path))
    with connect(gw) as sock:
        sock.sendall(b"POST /rpc HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n" + headers
                     + b"content-length: " + str(len(DISCOVER)).encode() + b"\r\n\r\n" + DISCOVER + request())
        answer = read_until_closed(sock)  # returns once the gateway closes it
    assert answer.startswith(b"HTTP/1.1 401 "), answer[:200]
    assert b"\r\nconnection: close\r\n" in answer.lower()
    assert answer.count(b"HTTP/1.1 ") == 1  # the request sent after it was never answered


def test_a_request_refused_for_its_access_closes_its_connection(gateway_factory: Any, tmp_path: Path) -> None:
    gw = gateway_factory(tmp_path / "s", config=access_config(tmp_path))
    with connect(gw) as sock:
        sock.sendall(b"GET /metrics HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n" + request(OPS))
        answer = read_until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 403 ") and b"\r\nconnection: close\r\n" in answer.lower(), answer[:300]
    assert answer.count(b"HTTP/1.1 ") == 1


def test_kept_alive_connections_with_an_accepted_token_are_not_displaced(
        gateway_factory: Any, tmp_path: Path) -> None:
    gw = gateway_factory(tmp_path / "s", config=access_config(tmp_path, "max_connections_per_ip = 4\n"
                                                                    "reserve_connections = 0\n"))
    socks = [connect(gw) for _ in range(4)]
    try:
        for sock in socks[:3]:
            sock.sendall(request(OPS))
            assert read_answer(sock).startswith(b"HTTP/1.1 200 ")
        socks[3].sendall(request())  # no token: served (access enabled), kept alive, displaceable
        assert read_answer(socks[3]).startswith(b"HTTP/1.1 200 ")
        newcomer = connect(gw)
        socks.append(newcomer)
        assert closed_by_server(socks[:4], 1.0) == [socks[3]]  # the tokenless one gave its slot
        assert read_until_closed(socks[3]) == b""
        newcomer.sendall(request(OPS))
        assert read_answer(newcomer).startswith(b"HTTP/1.1 200 ")
        refused = connect(gw)  # four connections with an accepted token: nothing to displace
        socks.append(refused)
        assert read_until_closed(refused).startswith(b"HTTP/1.1 503 ")
        assert closed_by_server(socks[:3] + [newcomer], 0.5) == []
        for sock in socks[:3]:  # still served on the same connections
            sock.sendall(request(OPS))
            assert read_answer(sock).startswith(b"HTTP/1.1 200 ")
    finally:
        for sock in socks:
            sock.close()


class Fake:
    """A connection of ``peer`` for :class:`ConnectionTable`; ``displaced`` once it was displaced."""

    def __init__(self, peer: str) -> None:
        self.peer = peer
        self.displaced = False
        self.busy_reading = False

    def unread(self) -> bool:
        return self.busy_reading

    def displace(self, reason: str) -> None:
        assert not self.displaced
        self.displaced = True


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["open", "wait", "busy", "close"]), st.integers(0, 2),
                          st.integers(0, 30)), max_size=120),
       st.integers(1, 6), st.integers(1, 4))
def test_the_table_never_passes_a_cap_and_displaces_only_the_oldest_waiting(
        ops: list[tuple[str, int, int]], total: int, per_ip: int) -> None:
    table = ConnectionTable(total, per_ip)
    held: list[Fake] = []
    waiting: list[Fake] = []  # oldest first, as the table must order them
    for op, peer_no, pick in ops:
        peer = f"10.0.0.{peer_no}"
        if op == "open":
            by_peer = sum(c.peer == peer for c in held)
            mine = [c for c in waiting if c.peer == peer]
            victim = None
            if by_peer >= per_ip:
                victim = mine[0] if mine else None
                expect_refused = victim is None
            else:
                expect_refused = len(held) >= total and not waiting
                victim = waiting[0] if len(held) >= total and waiting else None
            conn = Fake(peer)
            refused = table.admit(peer)
            assert (refused is not None) == expect_refused
            if victim is not None:
                assert victim.displaced
                held.remove(victim)
                waiting.remove(victim)
            assert sum(c.displaced for c in held) == 0
            if refused is None:
                held.append(conn)
        elif held:
            conn = held[pick % len(held)]
            if op == "wait":
                table.waiting(conn, conn.peer)
                if conn not in waiting:
                    waiting.append(conn)
            elif op == "busy":
                table.busy(conn)
                if conn in waiting:
                    waiting.remove(conn)
            else:
                table.release(conn, conn.peer)
                held.remove(conn)
                if conn in waiting:
                    waiting.remove(conn)
        assert table.open == len(held) <= total
        assert all(n <= per_ip for n in table.by_peer.values())
        assert table.by_peer == dict(Counter(c.peer for c in held))


def test_past_the_caps_a_connection_in_reserve_serves_only_a_token_or_health(
        gateway_factory: Any, tmp_path: Path) -> None:
    gw = gateway_factory(tmp_path / "s", config=access_config(tmp_path, "max_connections_per_ip = 2\n"
                                                                    "reserve_connections = 2\nbody_timeout_s = 120\n"))
    socks = [connect(gw) for _ in range(2)]
    try:
        for sock in socks:  # both slots serving requests: nothing to displace
            sock.sendall(b"POST /rpc HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
                         b"content-length: 1000\r\n\r\n")
        tokenless, health, third = connect(gw), connect(gw), connect(gw)
        socks += [tokenless, health, third]
        assert closed_by_server([third], 1.0) == []  # the third displaced the oldest waiting in reserve
        assert read_until_closed(tokenless) == b""
        health.sendall(b"GET /v1/health HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
        answer = read_until_closed(health)
        assert answer.startswith(b"HTTP/1.1 200 ") and b"\r\nconnection: close\r\n" in answer.lower(), answer
        third.sendall(request())  # no token: not run
        answer = read_until_closed(third)
        assert answer.startswith(b"HTTP/1.1 503 ") and b"\r\nretry-after: 5\r\n" in answer.lower(), answer
        error = json.loads(answer.partition(b"\r\n\r\n")[2])["error"]
        assert error["data"] == {"kind": "capacity_exceeded", "resource": "connections_per_ip", "limit": 2}
        assert "reserve" in error["message"]
        status, _ = authenticated_call(gw)  # with the operator's token: served in reserve
        assert status == 200
        assert closed_by_server(socks[:2], 0.2) == []
    finally:
        for sock in socks:
            sock.close()


def test_the_table_passes_over_unread_connections_and_keeps_its_reserve_bounded() -> None:
    table = ConnectionTable(max_connections=100, max_per_ip=2, reserve=1)
    first, second = Fake("a"), Fake("a")
    for conn in (first, second):
        assert table.admit("a") is None
        table.waiting(conn, "a")
    first.busy_reading = True  # its head may be complete in bytes not read yet
    assert table.admit("a") is None
    assert second.displaced and not first.displaced  # the younger one, with nothing unread, gave its slot
    newcomer = Fake("a")
    table.busy(first)
    table.busy(newcomer)  # both serving: nothing to displace
    assert table.admit("a") == "connections_per_ip"
    spare, spare_2 = Fake("a"), Fake("a")
    assert table.admit_in_reserve(spare, "a")
    table.waiting(spare, "a")
    assert table.admit_in_reserve(spare_2, "a") and spare.displaced  # the reserve's oldest waiting one
    table.busy(spare_2)
    assert not table.admit_in_reserve(Fake("a"), "a")  # the reserve serves a request: nothing displaced
    assert table.in_reserve == {spare_2} and table.open == 2 and table.by_peer == {"a": 2}
    table.release(spare_2, "a")
    assert table.in_reserve == set() and table.open == 2
