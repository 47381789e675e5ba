"""A gateway that accepts a call and never answers is not "unreachable": the call may have been applied.

A connect failure keeps the advice to start a gateway; a call sent and not answered in time says that it
may or may not have been applied and how to check, through the CLI and the SDK alike."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from meta_memory import shell
from meta_memory.cli import main
from meta_memory.sdk import Meta
from meta_memory.sdk.transport import GatewayUnreachable


@pytest.fixture
def silent_url() -> Iterator[str]:
    """A TCP listener that accepts connections, reads what is sent and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except (TimeoutError, OSError):
                continue
            held.append(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(5)
        for conn in held:
            conn.close()
        server.close()


def test_cli_write_sent_and_unanswered_says_it_may_have_been_applied(silent_url: str,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shell, "GATEWAY_TIMEOUT_S", 0.5)
    out = CliRunner().invoke(main, ["remember", "a fact", "its body", "--identity", "lead:main", "--url", silent_url, "--json"])
    assert out.exit_code == 1
    said = out.stderr
    assert "did not answer within 0.5 s" in said and "may or may not have been applied" in said
    assert "recall" in said
    assert "cannot reach" not in said and "meta-memory serve" not in said and "--state-dir" not in said
    error = json.loads(out.stdout)["error"]
    assert error["data"]["kind"] == "unreachable" and "may or may not have been applied" in error["message"]


def test_cli_connect_failure_keeps_the_start_a_gateway_advice() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    out = CliRunner().invoke(main, ["recall", "x", "--identity", "lead:main", "--url", f"http://127.0.0.1:{port}"])
    assert out.exit_code == 1
    assert "cannot reach the meta-memory gateway" in out.stderr and "meta-memory serve" in out.stderr
    assert "may or may not" not in out.stderr


def test_sdk_unanswered_call_is_told_apart(silent_url: str) -> None:
    with Meta.connect(silent_url, timeout_s=0.3) as handle, pytest.raises(GatewayUnreachable) as caught:
        handle.agent("lead:main").remember("a fact", "its body")
    assert caught.value.unanswered and caught.value.explained
    assert "did not answer within 0.3 s" in str(caught.value)
