"""A busy identity: recalls beyond its slots wait for one within their own budget, then are refused as
``capacity_exceeded`` (-32005, ``retry_after_ms``, HTTP 503 with ``Retry-After``), never as a timeout.

Before, 28 of 40 simultaneous recalls from separate clients were refused at once ("timeout", "provider
calls still running"). No timing is asserted: a recall's provider is held on an event where a test
needs slots to stay taken.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from meta_memory.errors import CapacityExceeded
from meta_memory.injection.timebox import ProviderSaturated, TimeBox
from meta_memory.sdk import Meta
from support import ServedRuntime, run_together, write_config

IDENT = "agent:busy"


def _recall(url: str) -> httpx.Response:
    with httpx.Client(timeout=120) as client:  # a separate client (and connection) per caller
        return client.post(url + "/rpc", json={"jsonrpc": "2.0", "id": 1, "method": "meta/agent_memory/recall",
                                               "params": {"identity": IDENT, "query_text": "harbour ferry timetable"}})


def test_forty_simultaneous_recalls_from_separate_clients_are_all_answered(gateway_factory: Any,
                                                                          tmp_path: Path) -> None:
    config = write_config(tmp_path / "meta.toml", "[agent_memory]\nrecall_timeout_ms = 20000\n")
    gw = gateway_factory(config=config)
    gw.result("meta/agent_memory/remember_batch", {"identity": IDENT, "records": [
        {"title": f"Ferry {i}", "body": f"the harbour ferry timetable changes on day {i} of the season"}
        for i in range(400)]})
    answers = run_together(lambda _: _recall(gw.url), 40, timeout_s=300)
    bodies = [a.json() for a in answers]
    refused = [b["error"] for b in bodies if "error" in b]
    assert refused == [], f"{len(refused)} of 40 refused, e.g. {refused[:1]}"
    assert all(a.status_code == 200 and len(b["result"]["records"]) == 8 for a, b in zip(answers, bodies))


class _HeldProvider:
    """A recall provider whose calls for ``IDENT`` wait until the test releases them (the slots stay taken
    meanwhile); other identities are answered at once."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.release = threading.Event()
        self.entered = threading.Semaphore(0)

    def recall(self, request: Any, reader: Any) -> Any:
        if request.identity == IDENT:
            self.entered.release()
            self.release.wait(60)
        return self.inner.recall(request, reader)


class _Served:
    """An embedded runtime served over HTTP in this process, its recall provider held for ``IDENT``."""

    def __init__(self, state: Path, **agent_memory: Any) -> None:
        self.handle = Meta.builder().persistent_state(state).agent_memory(**agent_memory).build()
        self.handle.remember_agent_memory(IDENT, title="Ferry", body="the harbour ferry timetable")
        service = self.handle.runtime.agent_memory.service
        self.provider = _HeldProvider(service.provider)
        service.provider = self.provider
        self.served = ServedRuntime(self.handle.runtime)
        self.url = self.served.url

    def hold_slots(self, n: int) -> list[threading.Thread]:
        """``n`` recalls of the identity, started and held inside the provider."""
        threads = [threading.Thread(target=_recall, args=(self.url,), daemon=True) for _ in range(n)]
        for t in threads:
            t.start()
        for _ in range(n):
            assert self.provider.entered.acquire(timeout=60), "a held recall never reached the provider"
        return threads

    def close(self) -> None:
        self.provider.release.set()
        self.served.close()
        self.handle.close()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Any]:
    made: list[_Served] = []

    def make(**agent_memory: Any) -> _Served:
        s = _Served(tmp_path / f"state-{len(made)}", **agent_memory)
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


def test_a_recall_past_the_slots_is_refused_as_capacity_with_retry_after(served: Any) -> None:
    s = served(recall_timeout_ms=300)
    held = s.hold_slots(4)  # the identity's four slots, taken for longer than any budget
    answer = _recall(s.url)
    err = answer.json()["error"]
    assert answer.status_code == 503 and answer.headers["Retry-After"] == "1"
    assert err["code"] == -32005 and err["data"] == {"kind": "capacity_exceeded", "resource": "recall_slots_per_identity",
                                                     "limit": 4, "retry_after_ms": 300}
    assert "still running" in err["message"] and "timeout" not in err["message"]
    # another identity still has its slots
    other = httpx.post(s.url + "/rpc", json={"jsonrpc": "2.0", "id": 2, "method": "meta/agent_memory/recall",
                                             "params": {"identity": "agent:other", "query_text": "ferry"}}, timeout=60)
    assert other.status_code == 200 and "result" in other.json()
    # the SDK raises the typed refusal, with its retry hint
    with Meta.connect(s.url) as handle, pytest.raises(CapacityExceeded) as info:
        handle.recall_agent_memory(IDENT, query_text="harbour ferry timetable")
    assert info.value.retry_after_ms == 300 and info.value.resource == "recall_slots_per_identity"
    s.provider.release.set()
    for t in held:
        t.join(60)


def test_a_waiting_recall_takes_the_first_slot_that_frees(served: Any) -> None:
    s = served(recall_timeout_ms=30_000)
    held = s.hold_slots(4)
    waiting: list[httpx.Response] = []
    waiter = threading.Thread(target=lambda: waiting.append(_recall(s.url)), daemon=True)
    waiter.start()
    time.sleep(0.3)  # the fifth recall is waiting for a slot, not refused
    assert waiting == []
    s.provider.release.set()  # the held recalls finish; the waiting one runs in a freed slot
    waiter.join(60)
    for t in held:
        t.join(60)
    assert waiting and waiting[0].status_code == 200
    assert [r["title"] for r in waiting[0].json()["result"]["records"]] == ["Ferry"]


def test_automatic_injection_waits_too_and_follows_its_failure_policy(served: Any) -> None:
    strict = served(recall_timeout_ms=300, recall_failure_policy="fail")
    held = strict.hold_slots(4)
    body = httpx.post(strict.url + "/rpc", json={"jsonrpc": "2.0", "id": 1, "method": "meta/turn/inject", "params": {
        "identity": IDENT, "query_text": "harbour ferry timetable"}}, timeout=60)
    assert body.status_code == 503 and body.json()["error"]["data"]["kind"] == "capacity_exceeded"
    strict.provider.release.set()
    for t in held:
        t.join(60)

    lenient = served(recall_timeout_ms=300)
    held = lenient.hold_slots(4)
    body = httpx.post(lenient.url + "/rpc", json={"jsonrpc": "2.0", "id": 1, "method": "meta/turn/inject", "params": {
        "identity": IDENT, "query_text": "harbour ferry timetable"}}, timeout=60)
    assert body.status_code == 200 and body.json()["result"]["skip_reason"] == "recall_failed"
    lenient.provider.release.set()
    for t in held:
        t.join(60)


def test_time_box_waits_within_the_budget_then_refuses() -> None:
    box = TimeBox(max_in_flight=16, max_per_key=2)
    release = threading.Event()
    held = [box.start(release.wait, key="k") for _ in range(2)]
    with pytest.raises(ProviderSaturated) as info:
        box.call(lambda: "never", 50, key="k")
    assert info.value.per_key and info.value.waited_ms >= 1 and info.value.retry_after_ms == 50
    refusal = info.value.refusal("recall")
    assert (refusal.code, refusal.resource, refusal.limit, refusal.retry_after_ms) == (
        -32005, "recall_slots_per_identity", 2, 50)
    # a slot freeing during the wait is taken, and the call answers within its budget
    threading.Timer(0.05, release.set).start()
    assert box.call(lambda: "answered", 30_000, key="k") == "answered"
    for p in held:
        p.wait(30, 30_000)
    assert box.running == 0


def test_one_identity_s_waiting_recalls_take_freed_slots_in_arrival_order() -> None:
    box = TimeBox(max_in_flight=16, max_per_key=1)
    release = threading.Event()
    held = box.start(release.wait, key="k")
    order: list[int] = []
    waiters = []
    for i in range(4):
        # the work records its turn while it holds the identity's only slot
        t = threading.Thread(target=lambda i=i: box.call(lambda i=i: order.append(i), 60_000, key="k"), daemon=True)
        t.start()
        waiters.append(t)
        while len(box._waiting.get("k", ())) < i + 1:  # this one is queued before the next arrives
            time.sleep(0.001)
    release.set()
    held.wait(30, 30_000)
    for t in waiters:
        t.join(30)
    assert order == [0, 1, 2, 3]


def test_a_call_never_overtakes_one_of_its_key_already_queued() -> None:
    from collections import deque

    box = TimeBox(max_in_flight=16, max_per_key=1)
    box._waiting["k"] = deque([object()])  # a call of "k" queued for the slot, not yet woken
    with pytest.raises(ProviderSaturated):  # a slot is free, but the queued call goes first
        box.call(lambda: "overtook", 50, key="k", inline=True)
    assert box.call(lambda: "other key", 50, key="j", inline=True) == "other key"
    del box._waiting["k"]
    assert box.call(lambda: "its turn", 50, key="k", inline=True) == "its turn"


def test_inline_calls_give_their_slots_back_whatever_they_end_with() -> None:
    box = TimeBox(max_in_flight=2, max_per_key=1)

    def fails() -> None:
        raise RuntimeError("provider bug")

    for _ in range(3):
        assert box.call(lambda: 1, 1_000, key="k", inline=True) == 1
        with pytest.raises(RuntimeError):
            box.call(fails, 1_000, key="k", inline=True)
    assert box.running == 0 and box._per_key == {} and box._waiting == {}
