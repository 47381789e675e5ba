"""Fixtures for the memory tool tests: a fake store behind the real firewall."""

from __future__ import annotations

import pytest

from meta_memory.clock import ManualClock
from meta_memory.firewall import Firewall
from meta_memory.tool import RecorderTool
from tool.memory_tool_fakes import FakeStore


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(1_700_000_000_000)


@pytest.fixture
def firewall(clock: ManualClock) -> Firewall:
    return Firewall({"untrusted_tools": ["scrape_page"]}, clock)


@pytest.fixture
def store(firewall: Firewall, clock: ManualClock) -> FakeStore:
    return FakeStore(firewall, clock)


@pytest.fixture
def tool(store: FakeStore) -> RecorderTool:
    return RecorderTool(store, max_entries=8)
