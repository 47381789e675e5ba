"""The sync and the async remote handle say the same of a gateway they cannot reach: the same error type,
the same flags and the same message, from one rule (``transport_failure``), whichever client and network
backend raised the failure underneath (httpx's sync one says ``[Errno 111] Connection refused`` where its
async one says ``All connection attempts failed``; a deadline the async handle enforces itself ends a
connection never made, not a call sent and unanswered)."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from meta_memory import Meta
from meta_memory.sdk import GatewayUnreachable


def _said(url: str, *, timeout_s: float = 5.0) -> dict[str, Any]:
    """What each handle raises for one call to ``url``: the type, the flags and the message."""

    def seen(exc: BaseException) -> tuple[Any, ...]:
        assert isinstance(exc, GatewayUnreachable), repr(exc)
        return type(exc), str(exc), exc.unanswered, exc.maybe_tls, exc.explained

    said: dict[str, Any] = {}
    with Meta.connect(url, timeout_s=timeout_s) as meta, pytest.raises(GatewayUnreachable) as sync:
        meta.status()
    said["sync"] = seen(sync.value)

    async def call() -> None:
        meta = Meta.connect_async(url, timeout_s=timeout_s)
        try:
            await meta.status()
        finally:
            await meta.aclose()

    with pytest.raises(GatewayUnreachable) as asynchronous:
        asyncio.run(call())
    said["async"] = seen(asynchronous.value)
    return said


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_nothing_listening_is_said_alike() -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    said = _said(url)
    assert said["sync"] == said["async"], said
    assert said["sync"][1] == f"cannot reach the meta-memory gateway at {url}/rpc: connection refused"
    assert said["sync"][2:] == (False, False, False)


@pytest.fixture
def full_backlog() -> Iterator[str]:
    """A URL whose listener never accepts and whose accept queue is full: a connect there hangs (the SYN
    is dropped), as to a firewalled host."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    for _ in range(3):
        filler = socket.socket()
        filler.setblocking(False)
        try:
            filler.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        fillers.append(filler)
    time.sleep(0.2)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            pytest.skip("this system completes connects to a listener with a full accept queue")
    except OSError:
        pass
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        for filler in fillers:
            filler.close()
        listener.close()


def test_a_connection_never_made_in_time_is_said_alike_and_not_as_a_call_sent(full_backlog: str) -> None:
    said = _said(full_backlog, timeout_s=1.0)
    assert said["sync"] == said["async"], said
    # nothing was sent: not "the call may or may not have been applied"
    assert said["sync"][1] == (f"cannot reach the meta-memory gateway at {full_backlog}/rpc: "
                               "no connection within 1 s")
    assert said["sync"][2] is False


@pytest.fixture
def hangs_up() -> Iterator[str]:
    """A URL whose listener reads each request and closes the connection without a word (no TLS spoken
    there: not what a plain-HTTP client meets at a gateway serving HTTPS, whose handshake answers)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                try:
                    conn.recv(65536)
                except OSError:
                    pass
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")

    worker = threading.Thread(target=serve, daemon=True)
    worker.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        worker.join(timeout=5)
        listener.close()


def test_a_connection_closed_without_an_answer_is_said_alike(hangs_up: str) -> None:
    said = _said(hangs_up)
    assert said["sync"] == said["async"], said
    assert said["sync"][1].startswith(f"the meta-memory gateway at {hangs_up}/rpc was sent the call but closed "
                                      "the connection without answering"), said
    assert said["sync"][2] is True and said["sync"][3] is False  # unanswered, and no HTTPS hint without TLS
