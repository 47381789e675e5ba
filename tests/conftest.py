"""Shared fixtures: real gateways on free ports (see ``support.py`` for the helpers)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from support import GatewayProcess, start_gateway

# Property tests assert behaviour, not speed (speed is the benchmarks' job): no per-example deadline, so
# a loaded machine cannot fail them. A test that needs a deadline sets its own.
settings.register_profile("behaviour", deadline=None)
settings.load_profile("behaviour")


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




def pytest_terminal_summary(terminalreporter: Any) -> None:
    """One line per missing optional extra, instead of one per skipped test."""
    from extras import INSTALL_HINT

    counts: dict[str, int] = {}
    for report in terminalreporter.stats.get("skipped", []):
        reason = str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else str(report.longrepr)
        for extra in INSTALL_HINT:
            if f"needs the {extra!r} extra" in reason:
                counts[extra] = counts.get(extra, 0) + 1
    for extra, n in sorted(counts.items()):
        terminalreporter.write_line(f"skipped {n} test(s) or module(s) that need the {extra!r} extra: {INSTALL_HINT[extra]}")
