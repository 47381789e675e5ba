"""A slow or greedy client cannot hold the gateway: header and body read deadlines (raw sockets),
a client that leaves mid-body, and the cap on concurrent ``/events`` subscribers."""

from __future__ import annotations

import contextlib
import json
import socket
import time
from typing import Any

import httpx
import pytest

from support import GatewayProcess, read_until_closed, write_config

pytestmark = pytest.mark.gateway

LEAD = "lead:main"
GUARD_S = 60  # the longest any socket operation here may block: a bound, not a measured figure


@pytest.fixture
def strict(gateway_factory: Any, tmp_path: Any) -> GatewayProcess:
    cfg = write_config(tmp_path / "slow.toml", "[gateway]\nheader_timeout_s = 1\nbody_timeout_s = 2\n"
                                               "max_event_subscribers = 3\n")
    return gateway_factory(tmp_path / "s", config=cfg)


def connect(gw: GatewayProcess) -> socket.socket:
    host, port = gw.url.split("//", 1)[1].rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=GUARD_S)
    return sock


def trickle(sock: socket.socket, data: bytes, pause_s: float) -> int:
    """Send ``data`` one byte at a time; returns how many bytes went out before the server hung up."""
    sent = 0
    for i in range(len(data)):
        try:
            sock.sendall(data[i:i + 1])
        except (BrokenPipeError, ConnectionResetError):
            return sent
        sent += 1
        time.sleep(pause_s)
        sock.setblocking(False)
        try:
            if sock.recv(65536, socket.MSG_PEEK) == b"":
                return sent
        except BlockingIOError:
            pass
        except ConnectionResetError:
            return sent
        finally:
            sock.setblocking(True)
            sock.settimeout(GUARD_S)
    return sent


def wait_for_log(gw: GatewayProcess, needle: str) -> list[str]:
    for _ in range(GUARD_S * 10):
        lines = [line for line in list(gw.proc.log_tail) if needle in line]
        if lines:
            return lines
        time.sleep(0.1)
    raise AssertionError(f"no log line with {needle!r}: {list(gw.proc.log_tail)[-20:]}")


def nothing_remembered(gw: GatewayProcess) -> None:
    assert gw.result("meta/memory/panel/records", {})["records"] == []


def test_partial_headers_are_dropped_with_408_while_others_are_served(strict: GatewayProcess) -> None:
    sock = connect(strict)
    sock.sendall(b"POST /rpc HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n")
    # the gateway keeps serving everyone else meanwhile
    assert strict.result("meta/memory/query", {})["assertions"] == []
    answer = read_until_closed(sock)
    sock.close()
    assert answer.startswith(b"HTTP/1.1 408 ")
    assert wait_for_log(strict, "request headers not complete within 1 s")


def test_an_idle_connection_is_dropped(strict: GatewayProcess) -> None:
    sock = connect(strict)
    answer = read_until_closed(sock)
    sock.close()
    assert answer.startswith(b"HTTP/1.1 408 ")


def test_headers_sent_one_byte_at_a_time_are_dropped(strict: GatewayProcess) -> None:
    request = (b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"X-Pad: " + b"a" * 64 + b"\r\n\r\n")
    sock = connect(strict)
    sent = trickle(sock, request, 0.1)
    sock.close()
    assert sent < len(request), "the gateway waited for every byte of a trickled header block"
    assert wait_for_log(strict, "request headers not complete")


def test_a_trickling_body_is_dropped_and_nothing_is_executed(strict: GatewayProcess) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "meta/agent_memory/remember",
                       "params": {"identity": LEAD, "title": "Slow note", "body": "x" * 40}}).encode()
    head = (f"POST /rpc HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()
    sock = connect(strict)
    sock.sendall(head)
    sent = trickle(sock, body, 0.1)
    sock.close()
    assert sent < len(body), "the gateway waited for every byte of a trickled body"
    assert wait_for_log(strict, "request body not complete within 2 s")
    nothing_remembered(strict)
    assert not any("Traceback" in line for line in strict.proc.log_tail)


def test_a_client_leaving_mid_body_is_one_log_line(gateway: GatewayProcess) -> None:
    head = (b"POST /rpc HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 5000\r\n\r\n")
    for _ in range(3):
        sock = connect(gateway)
        sock.sendall(head + b'{"jsonrpc": "2.0", "method": "meta/agent_memory/remember", ')
        time.sleep(0.2)
        sock.close()
    lines = wait_for_log(gateway, "went away before its request body was complete")
    for _ in range(50):
        lines = [line for line in gateway.proc.log_tail if "went away before its request body" in line]
        if len(lines) == 3:
            break
        time.sleep(0.1)
    assert len(lines) == 3
    assert gateway.result("meta/memory/query", {})["assertions"] == []
    log = "".join(gateway.proc.log_tail)
    assert "Traceback" not in log and "ClientDisconnect" not in log


def test_event_subscribers_are_capped_with_a_clear_refusal(strict: GatewayProcess) -> None:
    with contextlib.ExitStack() as stack:
        clients = []
        for _ in range(3):
            client = stack.enter_context(httpx.Client(timeout=GUARD_S))
            resp = stack.enter_context(client.stream("GET", strict.url + "/events"))
            assert resp.status_code == 200
            lines = resp.iter_lines()  # kept: a dropped line iterator closes the stream
            assert next(lines).startswith(": meta-memory timeline")
            clients.append((resp, lines))
        refused = httpx.get(strict.url + "/events", timeout=GUARD_S)
        assert refused.status_code == 503
        assert refused.headers["retry-after"].isdigit()
        err = refused.json()["error"]
        assert err["code"] == -32005
        assert err["data"] == {"kind": "capacity_exceeded", "resource": "event_subscribers", "limit": 3}
        assert "3" in err["message"]
        # JSON-RPC is unaffected by the full subscriber table
        assert strict.result("meta/memory/query", {})["assertions"] == []
        clients[0][0].close()
        # the slot comes back once the gateway sees the stream end
        for _ in range(GUARD_S * 10):
            with httpx.stream("GET", strict.url + "/events", timeout=GUARD_S) as again:
                if again.status_code == 200:
                    break
            time.sleep(0.1)
        else:
            raise AssertionError("a closed subscriber's slot never came back")


def open_stream_when_a_slot_is_free(gw: GatewayProcess) -> None:
    for _ in range(GUARD_S * 10):
        with httpx.stream("GET", gw.url + "/events", timeout=GUARD_S) as resp:
            if resp.status_code == 200:
                assert next(resp.iter_lines()).startswith(": meta-memory timeline")
                return
            assert resp.status_code == 503
        time.sleep(0.1)
    raise AssertionError("no subscriber slot came free")


def test_finished_streams_give_their_slots_back(strict: GatewayProcess) -> None:
    for _ in range(9):  # three times the cap, one after the other
        open_stream_when_a_slot_is_free(strict)


def test_under_access_control_streams_need_a_reader_and_one_caller_cannot_take_them_all(
    tmp_path: Any, gateway_factory: Any
) -> None:
    from meta_memory.access.config import hash_token
    from support import write_config

    lines = ["[gateway]", "max_event_subscribers = 8", "", "[access]", "enabled = true", ""]
    for name in ("greedy", "admin"):
        lines += ["[[access.tokens]]", f'sha256 = "{hash_token("tok-" + name + "-0123456789")}"', f'principal = "{name}"',
                  "", "[[access.grants]]", 'action = "agent.memory.read"', f'who = {{ principal = "{name}" }}', ""]
    gw = gateway_factory(tmp_path / "state", config=write_config(tmp_path / "g.toml", "\n".join(lines)))
    anonymous = httpx.get(gw.url + "/events", timeout=GUARD_S)
    assert anonymous.status_code == 403 and anonymous.json()["error"]["code"] == -32030
    greedy = {"Authorization": "Bearer tok-greedy-0123456789"}
    admin = {"Authorization": "Bearer tok-admin-0123456789"}
    with contextlib.ExitStack() as stack:
        held = []
        for _ in range(2):  # a quarter of 8
            client = stack.enter_context(httpx.Client(timeout=GUARD_S, headers=greedy))
            resp = stack.enter_context(client.stream("GET", gw.url + "/events"))
            assert resp.status_code == 200
            held.append(resp.iter_lines())
            assert next(held[-1]).startswith(": meta-memory timeline")
        third = httpx.get(gw.url + "/events", headers=greedy, timeout=GUARD_S)
        assert third.status_code == 503 and third.json()["error"]["data"]["limit"] == 2
        with httpx.stream("GET", gw.url + "/events", headers=admin, timeout=GUARD_S) as other:
            assert other.status_code == 200
