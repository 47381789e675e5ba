"""A spawned gateway's handle (``Meta.spawn``) matches each answer to its call by the request id: a call
interrupted after its request was sent (Ctrl-C in a notebook while it waited) leaves its answer in the
pipe, and the next call gets its own answer, never the interrupted one's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from meta_memory.sdk import Meta

ME = "agent:concierge"


class _InterruptOnce:
    """The child's stdout, whose first ``readline`` is interrupted before it reads anything."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._armed = True

    def readline(self) -> bytes:
        if self._armed:
            self._armed = False
            raise KeyboardInterrupt
        line: bytes = self._inner.readline()
        return line

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def test_an_interrupted_calls_answer_is_not_the_next_calls(tmp_path: Path) -> None:
    with Meta.spawn(tmp_path / "state") as meta:
        agent = meta.agent(ME)
        agent.list()  # the gateway is up
        proc = meta._transport._proc  # type: ignore[attr-defined]
        proc.stdout = _InterruptOnce(proc.stdout)
        with pytest.raises(KeyboardInterrupt):
            agent.remember("Diet", "The user only eats vegetarian food.")
        second = agent.remember("Seat", "The user prefers an aisle seat.")
        assert second.title == "Seat"
        assert sorted(r.title for r in agent.list().records) == ["Diet", "Seat"]
