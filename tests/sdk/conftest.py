"""Fixtures of the SDK suites."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from meta_memory import Meta


@pytest.fixture(params=["embedded", "http", "stdio"])
def handle(request: pytest.FixtureRequest, tmp_path: Path, gateway_factory: Any) -> Iterator[Any]:
    """A handle of each kind: embedded, remote over HTTP, and a spawned stdio gateway."""
    if request.param == "embedded":
        h = Meta.builder().persistent_state(tmp_path / "embedded").build()
    elif request.param == "http":
        h = Meta.connect(gateway_factory(tmp_path / "http").url)
    else:
        h = Meta.spawn(tmp_path / "stdio")
    with h:
        yield h


@pytest.fixture
def async_handle(tmp_path: Path, gateway_factory: Any) -> Callable[[str], Any]:
    """``async_handle(mode)``: an unopened async handle of ``mode`` (``embedded``, ``http`` or ``stdio``)
    on a fresh state directory; the test enters it with ``async with``."""

    def make(mode: str) -> Any:
        if mode == "embedded":
            return Meta.builder().persistent_state(tmp_path / "a").build_async()
        if mode == "http":
            return Meta.connect_async(gateway_factory(tmp_path / "a").url)
        return Meta.spawn_async(tmp_path / "a")

    return make
