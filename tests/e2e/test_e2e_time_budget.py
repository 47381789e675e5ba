"""The injection time budget with a provider that sleeps and one that raises. A gateway cannot load a custom provider from its config, so the runtime is built
embedded (``Meta.builder()``), its recall provider replaced, and it is served over a real
HTTP socket in this process as well as called through the handle."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from meta_memory.errors import AgentMemoryError
from meta_memory.sdk import Meta
from meta_memory.server.gateway import Gateway
from meta_memory.server.http import create_app

IDENT = "agent:slowpoke"


class SleepingProvider:
    """Sleeps, then answers like the default provider would have."""

    def __init__(self, inner: Any, seconds: float) -> None:
        self.inner, self.seconds = inner, seconds

    def recall(self, request: Any, reader: Any) -> Any:
        time.sleep(self.seconds)
        return self.inner.recall(request, reader)


class RaisingProvider:
    def recall(self, request: Any, reader: Any) -> Any:
        raise RuntimeError("recall backend is down")


class Served:
    """An embedded handle plus the same runtime served over HTTP on a free port."""

    def __init__(self, state: Path, **agent_memory: Any) -> None:
        self.handle = Meta.builder().persistent_state(state).agent_memory(**agent_memory).build()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}/rpc"
        config = uvicorn.Config(create_app(Gateway.for_runtime(self.handle.runtime)), log_level="warning",
                                lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]}, daemon=True)
        self.thread.start()
        self.http = httpx.Client(timeout=30)
        deadline = time.monotonic() + 10
        while not self.server.started and time.monotonic() < deadline:
            time.sleep(0.01)
        self.handle.remember_agent_memory(IDENT, title="Tortoise", body="the tortoise wins the race")

    @property
    def service(self) -> Any:
        return self.handle.runtime.agent_memory.service

    def use(self, provider: Any) -> None:
        self.service.provider = provider

    def rpc(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return self.http.post(self.url, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).json()

    def close(self) -> None:
        self.http.close()
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.handle.close()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Any]:
    made: list[Served] = []

    def make(**agent_memory: Any) -> Served:
        s = Served(tmp_path / f"state-{len(made)}", **agent_memory)
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


INJECT = {"identity": IDENT, "session_key": "s-1", "query_text": "tortoise race"}
RECALL = {"identity": IDENT, "query_text": "tortoise race"}


def test_baseline_without_a_failing_provider(served) -> None:
    s = served(recall_timeout_ms=200)
    assert s.rpc("meta/turn/inject", INJECT)["result"]["skip_reason"] is None
    assert len(s.rpc("meta/agent_memory/recall", RECALL)["result"]["records"]) == 1


def test_sleeping_provider_skip_policy_delivers_the_turn_without_a_block_in_time(served) -> None:
    s = served(recall_timeout_ms=150, recall_failure_policy="skip")
    s.use(SleepingProvider(s.service.provider, 2.0))
    started = time.monotonic()
    out = s.rpc("meta/turn/inject", INJECT)
    elapsed = time.monotonic() - started
    assert out["result"]["text"] is None
    assert out["result"]["skip_reason"] == "recall_failed"
    assert elapsed < 1.0, elapsed  # cut at the budget, not at the provider's 2 s
    started = time.monotonic()
    assert s.handle.turn_inject(IDENT, query_text="tortoise", session_key="s-2").skip_reason == "recall_failed"
    assert time.monotonic() - started < 1.0
    # explicit recall always returns the provider's failure
    err = s.rpc("meta/agent_memory/recall", RECALL)["error"]
    assert err["code"] == -32040 and err["data"] == {"kind": "agent_memory", "reason": "timeout"}
    assert "150 ms" in err["message"]
    with pytest.raises(AgentMemoryError) as info:
        s.handle.recall_agent_memory(IDENT, query_text="tortoise")
    assert info.value.data["reason"] == "timeout"


def test_sleeping_provider_fail_policy_returns_the_timeout(served) -> None:
    s = served(recall_timeout_ms=150, recall_failure_policy="fail")
    s.use(SleepingProvider(s.service.provider, 2.0))
    started = time.monotonic()
    err = s.rpc("meta/turn/inject", INJECT)["error"]
    assert time.monotonic() - started < 1.0
    assert err["code"] == -32040 and err["data"]["reason"] == "timeout"
    assert "automatic recall exceeded 150 ms" in err["message"]
    build = s.rpc("meta/turn/inject", {**INJECT, "surface": "build"})["error"]
    assert build["code"] == -32040 and build["data"]["reason"] == "timeout"
    with pytest.raises(AgentMemoryError, match="automatic recall exceeded 150 ms"):
        s.handle.turn_inject(IDENT, query_text="tortoise")


def test_raising_provider_skip_and_fail_policies(served) -> None:
    skip = served(recall_failure_policy="skip")
    skip.use(RaisingProvider())
    assert skip.rpc("meta/turn/inject", INJECT)["result"]["skip_reason"] == "recall_failed"
    assert skip.rpc("meta/turn/inject", {**INJECT, "surface": "build"})["result"]["text"] is not None  # index still renders
    err = skip.rpc("meta/agent_memory/recall", RECALL)["error"]
    assert err["code"] == -32040 and err["data"]["kind"] == "agent_memory"
    assert "RuntimeError" in err["message"] or "recall backend is down" in err["message"]

    fail = served(recall_failure_policy="fail")
    fail.use(RaisingProvider())
    err = fail.rpc("meta/turn/inject", INJECT)["error"]
    assert err["code"] == -32040 and err["data"]["kind"] == "agent_memory"
    assert "automatic recall failed" in err["message"]
    assert "mem-token" not in err["message"]
    # the memory tool's recall reports the failure to the model as a tool error
    tool = fail.rpc("meta/agent_memory/tool", {"identity": IDENT, "arguments": {"action": "recall", "query_text": "tortoise"}})
    assert tool["result"]["is_error"] is True


def test_provider_recovers_after_an_outage(served) -> None:
    s = served(recall_timeout_ms=150)
    original = s.service.provider
    s.use(RaisingProvider())
    assert s.rpc("meta/turn/inject", INJECT)["result"]["skip_reason"] == "recall_failed"
    s.use(original)
    assert s.rpc("meta/turn/inject", INJECT)["result"]["skip_reason"] is None
