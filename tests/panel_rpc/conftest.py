"""Module-scoped gateways for the panel RPC tests (one gateway per module keeps the suite fast)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

_HERE = str(Path(__file__).resolve().parent)
_ACCESS = str(Path(__file__).resolve().parents[1] / "access")
for _path in (_HERE, _ACCESS):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from seed import World, access_toml, build_world  # noqa: E402
from support import GatewayProcess, start_gateway, write_config  # noqa: E402


class Panel:
    """A gateway serving the fixture world, with per-principal call helpers."""

    def __init__(self, gw: GatewayProcess, world: World) -> None:
        self.gw = gw
        self.world = world

    def call(self, who: str | None, method: str, params: Any = None) -> dict[str, Any]:
        from seed import token_of

        return self.gw.rpc(method, params if params is not None else {}, token=token_of(who) if who else None)

    def result(self, who: str | None, method: str, params: Any = None) -> Any:
        body = self.call(who, method, params)
        assert "error" not in body, body
        return body["result"]

    def error(self, who: str | None, method: str, params: Any = None) -> dict[str, Any]:
        body = self.call(who, method, params)
        assert "error" in body, body
        return body["error"]


@pytest.fixture(scope="module")
def panel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Panel]:
    root = tmp_path_factory.mktemp("panel")
    state = root / "state"
    state.mkdir()
    world = build_world(state)
    config = write_config(root / "meta.toml", access_toml())
    gw = start_gateway(state, config=config)
    try:
        yield Panel(gw, world)
    finally:
        gw.stop()
