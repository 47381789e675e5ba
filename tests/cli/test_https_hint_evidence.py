"""The CLI suggests ``https://`` for an ``http://`` URL whose connection closed without an answer only when
TLS is spoken there: a plain listener that hangs up, or a gateway restarted in the middle of the call, is a
connection the gateway closed without answering (the call may or may not have been applied)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from support import DroppingFront, GatewayProcess, start_gateway

#: A TLS alert record (fatal, handshake_failure): what a TLS server refusing a handshake sends.
TLS_ALERT = bytes([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28])


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "meta_memory.cli", *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ})


def listener(reply: bytes) -> Iterator[str]:
    """A URL whose listener reads what a connection sends, writes ``reply`` and closes it."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                try:
                    conn.recv(65536)
                    if reply:
                        conn.sendall(reply)
                except OSError:
                    pass

    worker = threading.Thread(target=serve, daemon=True)
    worker.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        stop.set()
        worker.join(timeout=5)
        sock.close()


@pytest.fixture
def hangs_up() -> Iterator[str]:
    yield from listener(b"")


@pytest.fixture
def speaks_tls() -> Iterator[str]:
    yield from listener(TLS_ALERT)


def test_a_plain_listener_that_hangs_up_is_not_said_to_serve_https(hangs_up: str) -> None:
    done = cli("list", "--identity", "x", "--url", hangs_up)
    assert done.returncode == 1
    said = " ".join(done.stderr.split())
    assert "HTTPS" not in said and "https://" not in said, said
    assert "closed the connection without answering" in said, said


def test_a_listener_answering_with_a_tls_record_is_said_to_serve_https(speaks_tls: str) -> None:
    done = cli("list", "--identity", "x", "--url", speaks_tls)
    assert done.returncode == 1
    said = " ".join(done.stderr.split())
    assert f"the gateway may be serving HTTPS: try https://{speaks_tls.removeprefix('http://')}/rpc" in said, said


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[GatewayProcess]:
    with start_gateway(tmp_path / "state") as gw:
        yield gw


def test_a_call_dropped_by_a_gateway_still_listening_is_said_unanswered(gateway: GatewayProcess) -> None:
    """The gateway closed the connection mid-call and listens again (a restart): plain HTTP is spoken there."""
    front = DroppingFront(gateway.url)
    front.drop = True
    try:
        done = cli("remember", "mid-call", "the gateway restarts while answering", "--identity", "lead:main",
                   "--url", front.url)
    finally:
        front.close()
    assert done.returncode == 1
    said = " ".join(done.stderr.split())
    assert "HTTPS" not in said and "https://" not in said, said
    assert "closed the connection without answering" in said and "may or may not have been applied" in said, said
