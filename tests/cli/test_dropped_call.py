"""A gateway that stops or restarts in the middle of a call, after the call was sent: the connection closes
without an answer, and the call may have been applied. The CLI and the SDK (sync and async) say so and how
to check, instead of suggesting the gateway serves HTTPS (which an ``http://`` URL that has answered the
handle, or where nothing listens any more, cannot be); the call is indeed found applied."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from meta_memory.cli import main
from meta_memory.sdk import Meta
from meta_memory.sdk.transport import GatewayUnreachable
from support import DroppingFront, GatewayProcess, start_gateway


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[GatewayProcess]:
    with start_gateway(tmp_path / "state") as gw:
        yield gw


def _titles(gw: GatewayProcess) -> list[str]:
    with Meta.connect(gw.url) as handle:
        return [record.title for record in handle.agent("lead:main").list().records]


def test_sdk_call_dropped_by_a_gateway_that_answered_before_may_have_been_applied(gateway: GatewayProcess) -> None:
    """A handle that has had answers over http:// from its gateway knows it speaks plain HTTP: a call whose
    connection closes unanswered (the gateway killed or restarted meanwhile) may have been applied, and the
    error says so instead of suggesting HTTPS."""
    front = DroppingFront(gateway.url)
    try:
        with Meta.connect(front.url, timeout_s=10) as handle:
            agent = handle.agent("lead:main")
            agent.remember("answered", "the first call is answered")
            front.drop = True
            with pytest.raises(GatewayUnreachable) as caught:
                agent.remember("dropped", "the second call is applied, then its connection closes")
    finally:
        front.close()
    said = str(caught.value)
    assert caught.value.unanswered and caught.value.explained and not caught.value.maybe_tls, said
    assert "closed the connection without answering" in said and "may or may not have been applied" in said, said
    assert "HTTPS" not in said and "cannot reach" not in said, said
    assert sorted(_titles(gateway)) == ["answered", "dropped"]


def test_cli_write_dropped_by_a_gateway_that_then_stopped_may_have_been_applied(gateway: GatewayProcess) -> None:
    """A one-shot command's first call whose connection closes unanswered, where nothing listens any more
    (the gateway stopped in the middle of the call): the write may have been applied, not "try https"."""
    front = DroppingFront(gateway.url)
    front.drop = front.gone = True
    try:
        out = CliRunner().invoke(main, ["remember", "mid-call", "the gateway stops while answering",
                                        "--identity", "lead:main", "--url", front.url, "--json"])
    finally:
        front.close()
    assert out.exit_code == 1, out.output
    said = out.stderr
    assert "closed the connection without answering" in said and "may or may not have been applied" in said, said
    assert "HTTPS" not in said and "https://" not in said and "meta-memory serve" not in said, said
    error = json.loads(out.stdout)["error"]
    assert error["data"]["kind"] == "unreachable" and "may or may not have been applied" in error["message"]
    assert _titles(gateway) == ["mid-call"]


def test_async_handle_call_dropped_by_a_gateway_that_then_stopped_may_have_been_applied(
        gateway: GatewayProcess) -> None:
    """The async handle tells the same apart on its first call: nothing listens any more, so not HTTPS."""
    front = DroppingFront(gateway.url)
    front.drop = front.gone = True

    async def remember() -> None:
        handle = Meta.connect_async(front.url, timeout_s=10)
        try:
            await handle.agent("lead:main").remember("async mid-call", "the gateway stops while answering")
        finally:
            await handle.aclose()

    try:
        with pytest.raises(GatewayUnreachable) as caught:
            asyncio.run(remember())
    finally:
        front.close()
    said = str(caught.value)
    assert caught.value.unanswered and not caught.value.maybe_tls and "may or may not have been applied" in said, said
    assert _titles(gateway) == ["async mid-call"]
