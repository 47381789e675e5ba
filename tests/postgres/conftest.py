"""What the PostgreSQL tests share: a throw-away schema on the test server (skipped, or a failure
under ``CI``, when it is unreachable) and two ``meta-memory serve`` gateways on that one schema."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from contract.pgsupport import dsn_with_schema, require_postgres, throwaway_schema
from support import GatewayProcess, start_gateway, write_config


@pytest.fixture
def schema() -> Iterator[str]:
    """The name of a fresh schema, dropped at teardown."""
    require_postgres()
    with throwaway_schema() as name:
        yield name


@pytest.fixture
def two_gateways(tmp_path: Path, schema: str) -> Iterator[tuple[GatewayProcess, GatewayProcess, Path]]:
    """``(a, b, config)``: two gateways with their own state directories whose agent memory is the
    PostgreSQL ``schema``, and the config file both run with (to start a replacement); stopped after."""
    config = write_config(
        tmp_path / "gateway.toml", f'[agent_memory]\nstore = "postgres"\ndsn = "{dsn_with_schema(schema)}"\n'
    )
    started: list[GatewayProcess] = []
    try:
        for name in ("a", "b"):
            started.append(start_gateway(tmp_path / f"state-{name}", config=config))
        yield started[0], started[1], config
    finally:
        for gw in started:
            gw.stop()
