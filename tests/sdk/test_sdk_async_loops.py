"""An async HTTP handle (``Meta.connect_async``) serves every event loop it is used under: a script that
calls ``asyncio.run`` twice with one handle, or a test framework that runs each test in a loop of its own,
gets its answers on the second loop too, never ``RuntimeError: Event loop is closed`` from the first
loop's pooled connections. Driven against a real gateway over HTTP."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from meta_memory import Meta


def test_one_async_handle_answers_under_one_loop_after_another(tmp_path: Path, gateway_factory: Any) -> None:
    url = gateway_factory(tmp_path / "state").url
    handle = Meta.connect_async(url)
    agent = handle.agent("lead:main")

    async def first() -> str:
        return (await agent.remember("Passport location", "Top drawer of the desk.")).memory_id

    async def recall() -> list[str]:
        found = await asyncio.gather(*(agent.recall("passport drawer") for _ in range(8)))
        return [records[0].memory_id for records in found]

    memory_id = asyncio.run(first())
    assert asyncio.run(recall()) == [memory_id] * 8  # a second loop, the first one closed
    assert asyncio.run(recall()) == [memory_id] * 8  # and a third

    async def last() -> None:
        assert [r.memory_id for r in await agent.recall("passport")] == [memory_id]
        await handle.aclose()

    asyncio.run(last())


def _open_sockets() -> int:
    fds = Path("/proc/self/fd")
    return sum(1 for fd in fds.iterdir() if _target(fd).startswith("socket:"))


def _target(fd: Path) -> str:
    try:
        return str(fd.readlink())
    except OSError:  # closed while listed (the listing's own descriptor)
        return ""


def test_a_closed_loops_connections_do_not_outlive_it(tmp_path: Path, gateway_factory: Any) -> None:
    """One ``asyncio.run`` after another with one handle keeps no closed loop's client, nor its sockets: a
    script or server that runs each request in a loop of its own holds a bounded number of connections."""
    import gc

    url = gateway_factory(tmp_path / "state").url
    handle = Meta.connect_async(url)
    agent = handle.agent("lead:main")

    async def recall() -> None:
        await agent.recall("passport drawer")

    asyncio.run(recall())
    gc.collect()
    before = _open_sockets()
    for _ in range(25):
        asyncio.run(recall())
    gc.collect()
    assert _open_sockets() <= before + 2  # one loop's connection at most (and the gateway's end of it)

    async def close() -> None:
        await handle.aclose()

    asyncio.run(close())
