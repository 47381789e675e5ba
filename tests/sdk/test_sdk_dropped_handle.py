"""An embedded handle dropped without ``close()`` gives its state directory up once it is collected, so a
new handle of the same process opens it; while the first handle lives, a second one is refused with a
message that says how to fix it. Through the SDK (``Meta.builder().persistent_state(...)``)."""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path

import pytest

from meta_memory.errors import StartupError
from meta_memory.sdk import Meta

ME = "agent:concierge"


def test_a_dropped_handle_releases_its_state_directory(tmp_path: Path) -> None:
    state = tmp_path / "state"
    first = Meta.builder().persistent_state(state).build()
    written = first.agent(ME).remember("Diet", "The user only eats vegetarian food.")
    del first
    gc.collect()
    with Meta.builder().persistent_state(state).build() as second:  # no "already in use" refusal
        [only] = second.agent(ME).recall(selection="always")
        assert only.memory_id == written.memory_id


def test_a_dropped_async_handle_releases_its_state_directory(tmp_path: Path) -> None:
    state = tmp_path / "state"

    async def use_and_drop() -> None:
        handle = Meta.builder().persistent_state(state).build_async()
        await handle.agent(ME).remember("Diet", "The user only eats vegetarian food.")

    asyncio.run(use_and_drop())
    gc.collect()
    with Meta.builder().persistent_state(state).build() as again:
        assert [r.title for r in again.agent(ME).recall(selection="always")] == ["Diet"]


def test_a_second_handle_while_the_first_lives_is_refused_with_the_fix(tmp_path: Path) -> None:
    state = tmp_path / "state"
    first = Meta.builder().persistent_state(state).build()
    with pytest.raises(StartupError) as refused:
        Meta.builder().persistent_state(state).build()
    message = str(refused.value)
    assert f"the state directory {state.resolve()} is already in use" in message
    assert "of this process" in message and "close()" in message and "`with` block" in message
    assert "until its close() is called or the handle is garbage-collected" in message
    first.agent(ME).remember("Still", "The first handle still works.")  # the refusal left it untouched
    first.close()
    with Meta.builder().persistent_state(state).build() as third:
        assert [r.title for r in third.agent(ME).recall(selection="always")] == ["Still"]


def test_a_runtime_taken_from_a_handle_is_not_closed_under_its_holder(tmp_path: Path) -> None:
    """``handle.runtime`` is public: a caller that keeps it (and drops the handle) keeps a working runtime,
    never one a collection closed under it."""
    from meta_memory.sdk.handle import MetaHandle
    from meta_memory.sdk.transport import EmbeddedTransport
    from meta_memory.server.gateway import Gateway

    runtime = Meta.builder().persistent_state(tmp_path / "state").build().runtime  # the handle is dropped here
    gc.collect()
    handle = MetaHandle(EmbeddedTransport(Gateway.for_runtime(runtime)))
    written = handle.agent(ME).remember("Diet", "The user only eats vegetarian food.")
    assert [r.memory_id for r in handle.agent(ME).recall(selection="always")] == [written.memory_id]
    handle.close()
