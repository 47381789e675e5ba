"""A ``ttl_s`` the gateway refuses is refused naming the range this installation takes,
``1..[agent_memory] max_ttl_s``, not the 100-year ceiling the setting itself is bounded by: on a gateway
capped at a day, ``ttl_s: 0`` says "between 1 and 86400", as ``ttl_s: 86401`` says "at most 86400". Driven
through the SDK on an embedded runtime (the same params and service as RPC) for remember, remember_batch and
update; each refusal is ``InvalidParams`` naming the member."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from meta_memory import Meta
from meta_memory.errors import InvalidParams

DAY = 86_400


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[Any]:
    with Meta.builder().persistent_state(tmp_path / "state").agent_memory(max_ttl_s=DAY).build() as meta:
        yield meta.agent("lead:main")


def refusal(call: Callable[[], Any]) -> InvalidParams:
    with pytest.raises(InvalidParams) as info:
        call()
    return info.value


@pytest.mark.parametrize("ttl_s", [0, -5])
def test_a_ttl_below_one_names_the_configured_range(agent: Any, ttl_s: int) -> None:
    prior = agent.remember("Kept", "Kept for a while.").memory_id
    for call, field in ((lambda: agent.remember("Note", "Kept a while.", ttl_s=ttl_s), "ttl_s"),
                        (lambda: agent.remember_batch([{"title": "Note", "body": "b", "ttl_s": ttl_s}]),
                         "records.0.ttl_s"),
                        (lambda: agent.update(prior, body="Changed.", ttl_s=ttl_s), "ttl_s")):
        err = refusal(call)
        assert err.field == field, err
        assert str(err) == f"Invalid params: {field} must be between 1 and {DAY} seconds", err


@pytest.mark.parametrize("ttl_s", [DAY + 1, 36_500 * DAY + 1, 10**30])
def test_a_ttl_above_the_cap_names_the_cap_and_its_key(agent: Any, ttl_s: int) -> None:
    err = refusal(lambda: agent.remember("Note", "Kept a while.", ttl_s=ttl_s))
    assert err.field == "ttl_s"
    assert str(err) == f"Invalid params: ttl_s must be at most {DAY} seconds (agent_memory.max_ttl_s)", err


@pytest.mark.parametrize("ttl_s", ["60", 1.5, True])
def test_a_ttl_that_is_no_integer_is_refused_as_one(agent: Any, ttl_s: object) -> None:
    err = refusal(lambda: agent.remember("Note", "Kept a while.", ttl_s=ttl_s))
    assert err.field == "ttl_s"
    assert str(err).startswith("Invalid params: ttl_s must be an integer number of seconds"), err
    assert agent.list().records == []


def test_a_ttl_within_the_cap_sets_the_expiry(agent: Any) -> None:
    record = agent.remember("Note", "Kept a while.", ttl_s=DAY)
    assert record.expires_at_ms is not None
    assert abs(record.expires_at_ms - record.created_at_ms - DAY * 1000) < 60_000  # read a moment before the write
