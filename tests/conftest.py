"""Shared fixtures: real gateways on free ports (see ``support.py`` for the helpers)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support import GatewayProcess, start_gateway


@pytest.fixture
def gateway_factory(tmp_path: Path) -> Iterator[Any]:
    """Start gateways on demand; all are stopped at teardown."""
    started: list[GatewayProcess] = []

    def factory(state_dir: Path | None = None, *extra: str, **kw: Any) -> GatewayProcess:
        gw = start_gateway(state_dir or (tmp_path / "state"), *extra, **kw)
        started.append(gw)
        return gw

    yield factory
    for gw in started:
        gw.stop()


@pytest.fixture
def gateway(gateway_factory: Any) -> GatewayProcess:
    """One running gateway on a fresh state dir."""
    return gateway_factory()


