"""Many concurrent recalls of one identity from one handle are answered, not refused: the gateway runs at
most a few provider calls per ``(realm, identity)`` at once and refuses the rest at once (fail closed
against a flood), so the SDK itself keeps a handle's calls of one identity within that cap and queues the
others."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from meta_memory import Meta
from meta_memory.errors import InvalidParams
from meta_memory.limits import DEFAULT_MAX_PER_KEY

pytestmark = pytest.mark.gateway

CALLS = 64


def test_an_async_handle_answers_every_concurrent_recall_of_one_identity(tmp_path: Path,
                                                                         gateway_factory: Any) -> None:
    url = gateway_factory(tmp_path / "state").url

    async def run() -> list[Any]:
        async with Meta.connect_async(url) as h:
            await h.remember_agent_memory("lead:main", title="Elm", body="The elm shades the porch.")
            agent = h.agent("lead:main")
            return await asyncio.gather(*(agent.recall("elm porch", k=3) for _ in range(CALLS)))

    answers = asyncio.run(run())
    assert len(answers) == CALLS and all([r.title for r in a] == ["Elm"] for a in answers)


def test_a_sync_handle_shared_by_threads_answers_every_recall(tmp_path: Path, gateway_factory: Any) -> None:
    url = gateway_factory(tmp_path / "state").url
    with Meta.connect(url) as h:
        h.remember_agent_memory("lead:main", title="Elm", body="The elm shades the porch.")
        with ThreadPoolExecutor(CALLS) as pool:
            answers = list(pool.map(lambda _: h.recall_agent_memory("lead:main", query_text="elm porch"),
                                    range(CALLS)))
    assert all([r.title for r in a] == ["Elm"] for a in answers)


def test_the_slots_never_exceed_the_gateways_cap_and_are_dropped_when_idle() -> None:
    from meta_memory.sdk.handle import _ThreadSlots

    slots = _ThreadSlots(DEFAULT_MAX_PER_KEY)
    inside, most, lock = 0, 0, threading.Lock()
    release = threading.Event()

    def call(i: int) -> None:
        nonlocal inside, most
        with slots.slot((None, "lead:main")):
            with lock:
                inside += 1
                most = max(most, inside)
            release.wait(0.02)
            with lock:
                inside -= 1

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(call, range(48)))
    assert most == DEFAULT_MAX_PER_KEY
    assert slots.idle()



def test_task_slots_bound_each_identity_and_all_of_them() -> None:
    from meta_memory.sdk.handle import _TaskSlots

    slots = _TaskSlots(2, total=5)
    inside: dict[str, int] = {}
    most: dict[str, int] = {}
    in_all, most_all = 0, 0

    async def call(identity: str) -> None:
        nonlocal in_all, most_all
        async with slots.slot((None, identity)):
            inside[identity] = inside.get(identity, 0) + 1
            in_all += 1
            most[identity] = max(most.get(identity, 0), inside[identity])
            most_all = max(most_all, in_all)
            await asyncio.sleep(0.01)
            inside[identity] -= 1
            in_all -= 1

    async def run() -> None:
        await asyncio.gather(*(call(f"member:{i % 3}") for i in range(60)))

    asyncio.run(run())
    assert max(most.values()) == 2 and most_all == 5
    assert slots.idle()  # nothing kept for identities with no call in flight


def test_thread_slots_bound_each_identity_and_all_of_them() -> None:
    from meta_memory.sdk.handle import _ThreadSlots

    slots = _ThreadSlots(2, total=5)
    inside: dict[str, int] = {}
    most: dict[str, int] = {}
    in_all, most_all = 0, 0
    lock = threading.Lock()
    release = threading.Event()

    def call(i: int) -> None:
        nonlocal in_all, most_all
        identity = f"member:{i % 3}"
        with slots.slot((None, identity)):
            with lock:
                inside[identity] = inside.get(identity, 0) + 1
                in_all += 1
                most[identity] = max(most.get(identity, 0), inside[identity])
                most_all = max(most_all, in_all)
            release.wait(0.02)
            with lock:
                inside[identity] -= 1
                in_all -= 1

    with ThreadPoolExecutor(24) as pool:
        list(pool.map(call, range(90)))
    assert max(most.values()) == 2 and most_all == 5
    assert slots.idle()  # nothing kept for identities with no call in flight


def _queued(slots: Any, n: int) -> None:
    """Wait until ``n`` calls wait in ``slots``' queue."""
    for _ in range(2000):
        with slots._lock:
            if len(slots._queue) == n:
                return
        threading.Event().wait(0.005)
    raise AssertionError(f"{n} calls never queued")


def test_thread_slots_serve_waiting_calls_in_the_order_they_came() -> None:
    """A shared sync handle's threads are served in turn: a freed slot goes to the longest-waiting call
    (never to a later one, nor to a new call barging in), and a call of another key whose slot is full
    does not hold up the calls behind it."""
    from meta_memory.sdk.handle import _ThreadSlots

    slots = _ThreadSlots(1, total=1)
    order: list[str] = []
    slots.enter("a")  # the one slot, held
    threads = []
    for i, key in enumerate(("a", "b", "a", "c", "b")):
        def call(name: str = f"{key}{i}", k: str = key) -> None:
            slots.enter(k)
            order.append(name)
            slots.leave(k)
        threads.append(threading.Thread(target=call, daemon=True))
        threads[-1].start()
        _queued(slots, i + 1)
    slots.leave("a")
    for t in threads:
        t.join(10)
    assert order == ["a0", "b1", "a2", "c3", "b4"]
    assert slots.idle()

    # two slots in all, one per key: a waiter whose key is full is passed over, not waited for
    slots = _ThreadSlots(1, total=2)
    order.clear()
    slots.enter("a")
    slots.enter("b")
    waiting = []
    for i, key in enumerate(("a", "a", "c")):
        def call2(name: str = f"{key}{i}", k: str = key) -> None:
            slots.enter(k)
            order.append(name)
            if name == "c2":
                slots.leave(k)
        waiting.append(threading.Thread(target=call2, daemon=True))
        waiting[-1].start()
        _queued(slots, i + 1)
    slots.leave("b")  # a slot of all is free: "a" is still full, so the call of "c" goes, behind no one
    waiting[2].join(10)
    assert order == ["c2"]
    slots.leave("a")  # now the first "a" goes, then (once it leaves) the second
    waiting[0].join(10)
    assert order == ["c2", "a0"]
    slots.leave("a")
    waiting[1].join(10)
    slots.leave("a")
    assert order == ["c2", "a0", "a1"] and slots.idle()


def test_a_failed_call_gives_its_thread_slots_back(tmp_path: Path) -> None:
    with Meta.builder().persistent_state(tmp_path / "state").build() as h:
        for _ in range(DEFAULT_MAX_PER_KEY + 2):
            with pytest.raises(InvalidParams):
                h.call("meta/agent_memory/recall", {"identity": "lead:main", "query_text": "elm", "max_entries": 0})
        assert h.recall_agent_memory("lead:main", query_text="elm") == []
        assert h._slots.idle()
