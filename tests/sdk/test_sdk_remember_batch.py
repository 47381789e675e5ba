"""``remember_agent_memory_batch`` on every handle: embedded and remote, sync and async."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from meta_memory import Meta
from meta_memory.errors import InvalidParams
from meta_memory.sdk.models import RememberBatchResult

ME = "sdk:importer"
RECORDS: list[Any] = [
    {"title": "Trip", "body": "Flight to Lisbon, seat 12A", "tags": ["travel"]},
    ("Diet", "Prefers green tea over coffee"),
    ("Diet", "Prefers green tea over coffee", ["food"]),  # same content as the previous item, a new tag
    ("", "no title here"),
]


def _check(out: RememberBatchResult) -> None:
    assert isinstance(out, RememberBatchResult)
    assert (out.created, out.existing, out.refused) == (2, 1, 1)
    assert [r.op_index for r in out.results] == [0, 1, 2, 3]
    # merged as a single remember would: a new version carrying the tag supersedes the previous item's record
    merged = out.results[2]
    assert merged.created is False and merged.memory_id != out.results[1].memory_id
    assert (merged.supersedes, merged.tags_added) == (out.results[1].memory_id, ["food"])
    assert (out.results[1].supersedes, out.results[1].tags_added) == (None, [])
    assert not out.results[3].ok and out.results[3].error["code"] == -32602


def _exercise(handle: Any) -> None:
    _check(handle.remember_agent_memory_batch(ME, RECORDS))
    found = handle.recall_agent_memory(ME, query_text="Lisbon")
    assert [r.title for r in found] == ["Trip"]
    with pytest.raises(InvalidParams) as exc:
        handle.remember_agent_memory_batch(ME, [])
    assert exc.value.data["field"] == "records"


async def _exercise_async(handle: Any) -> None:
    _check(await handle.remember_agent_memory_batch(ME, RECORDS))
    found = await handle.recall_agent_memory(ME, query_text="Lisbon")
    assert [r.title for r in found] == ["Trip"]


def test_embedded_sync(tmp_path: Any) -> None:
    with Meta.builder().persistent_state(tmp_path).build() as handle:
        _exercise(handle)


def test_embedded_async(tmp_path: Any) -> None:
    async def run() -> None:
        async with Meta.builder().persistent_state(tmp_path).build_async() as handle:
            await _exercise_async(handle)

    asyncio.run(run())


def test_remote_sync_and_async(gateway: Any) -> None:
    with Meta.connect(gateway.url) as handle:
        _exercise(handle)

    async def run() -> None:
        async with Meta.connect_async(gateway.url) as handle:
            out = await handle.remember_agent_memory_batch("sdk:other", RECORDS)
            assert (out.created, out.existing, out.refused) == (2, 1, 1)

    asyncio.run(run())


OVER = [(f"Note {i}", f"Body {i}.") for i in range(1025)]
CLIENT_SIDE = "records must contain at most 1024 records (got 1025); the batch commits in one transaction, so it is not split"


def _refused_before_sending(call: Any) -> None:
    with pytest.raises(InvalidParams) as info:
        call()
    assert info.value.field == "records" and CLIENT_SIDE in info.value.message


@pytest.mark.parametrize("mode", ["embedded", "http"])
def test_more_than_1024_records_are_refused_before_sending_never_split(mode: str, tmp_path: Any, gateway: Any) -> None:
    if mode == "embedded":
        h = Meta.builder().persistent_state(tmp_path / "e").build()
    else:
        h = Meta.connect(gateway.url)
    with h:
        _refused_before_sending(lambda: h.remember_agent_memory_batch(ME, OVER))
        _refused_before_sending(lambda: h.agent(ME).remember_batch(OVER))
        assert h.agent(ME).list().records == []  # nothing of it written, no first chunk either
        # exactly the cap is one call, committed together
        assert h.agent(ME).remember_batch(OVER[:1024]).created == 1024


def test_the_refusal_needs_no_gateway_and_holds_on_async_handles(tmp_path: Any) -> None:
    # nothing listens on port 9: a refusal that reached the network would be GatewayUnreachable
    with Meta.connect("http://127.0.0.1:9") as h:
        _refused_before_sending(lambda: h.remember_agent_memory_batch(ME, OVER))

    async def run() -> None:
        async with Meta.connect_async("http://127.0.0.1:9") as ah:
            with pytest.raises(InvalidParams) as info:
                await ah.remember_agent_memory_batch(ME, OVER)
            assert info.value.field == "records" and CLIENT_SIDE in info.value.message
        async with Meta.builder().persistent_state(tmp_path / "a").build_async() as ah:
            with pytest.raises(InvalidParams):
                await ah.agent(ME).remember_batch(OVER)

    asyncio.run(run())


@pytest.mark.parametrize("bad, shape", [(("only",), "a tuple of 1 item"), (("t", "b", ["x"], "extra"), "a tuple of 4 items"),
                                        ("title only", "str")])
def test_a_malformed_batch_item_is_invalid_params_naming_it(tmp_path: Any, bad: Any, shape: str) -> None:
    """An item that is neither a dict nor a ``(title, body[, tags])`` tuple is refused as the gateway
    refuses a bad item (``InvalidParams``, ``records.<i>``), before anything is sent or written."""
    with Meta.builder().persistent_state(tmp_path).build() as handle:
        agent = handle.agent(ME)
        with pytest.raises(InvalidParams) as exc:
            agent.remember_batch([("Fine", "a good item"), bad])
        assert exc.value.field == "records.1" and exc.value.data["field"] == "records.1"
        assert exc.value.message.startswith("Invalid params: records.1 must be a dict or a (title, body[, tags]) tuple, not ")
        assert shape in exc.value.message
        assert agent.list().records == []  # nothing of the call was written
