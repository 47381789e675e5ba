"""Fixtures for the end-to-end tests: real gateway subprocesses reached over HTTP."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # e2e_support, under --import-mode=importlib

from e2e_support import Rpc  # noqa: E402
from support import GatewayProcess, serving, start_gateway, write_config  # noqa: E402


@pytest.fixture(scope="module")
def rpc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rpc]:
    """One default-configured gateway per test module (tests use fresh identities)."""
    with serving(tmp_path_factory.mktemp("e2e") / "state", Rpc) as client:
        yield client


@pytest.fixture
def rpc_with(tmp_path: Path) -> Iterator[Callable[[str], Rpc]]:
    """Start a gateway whose config file holds ``toml``; all are stopped at teardown."""
    started: list[tuple[GatewayProcess, Rpc]] = []

    def start(toml: str) -> Rpc:
        n = len(started)
        config = write_config(tmp_path / f"config-{n}.toml", toml)
        gw = start_gateway(tmp_path / f"state-{n}", config=config)
        client = Rpc(gw)
        started.append((gw, client))
        return client

    yield start
    for gw, client in started:
        client.close()
        gw.stop()
