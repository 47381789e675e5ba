"""Fixtures for the size-cap suite: one gateway per module, reached over raw JSON-RPC, the remote
SDK and the MCP bridge; and one embedded SDK runtime."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # caps_support, under --import-mode=importlib

from caps_support import Raw  # noqa: E402
from meta_memory.sdk import Meta
from support import GatewayProcess, start_gateway  # noqa: E402


@pytest.fixture(scope="module")
def gateway_proc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    gw = start_gateway(tmp_path_factory.mktemp("caps") / "state")
    yield gw
    gw.stop()


@pytest.fixture(scope="module")
def raw(gateway_proc: GatewayProcess) -> Iterator[Raw]:
    client = Raw(gateway_proc)
    yield client
    client.close()


@pytest.fixture(scope="module")
def remote(gateway_proc: GatewayProcess) -> Iterator[Any]:
    """The Python SDK connected to the gateway over HTTP."""
    handle = Meta.connect(gateway_proc.url)
    yield handle
    handle.close()


@pytest.fixture(scope="module")
def spawned(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The Python SDK over a spawned stdio gateway (``Meta.spawn``)."""
    handle = Meta.spawn(tmp_path_factory.mktemp("spawned") / "state")
    yield handle
    handle.close()


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The Python SDK with the runtime embedded in this process."""
    handle = Meta.builder().persistent_state(tmp_path_factory.mktemp("embedded") / "state").build()
    yield handle
    handle.close()
