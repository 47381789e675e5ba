"""Fuzz suites: one long-lived gateway per module; its health and resource use are checked at the end."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fuzz_support import Fuzzed, proc_stats, start_fuzzed  # noqa: E402

#: RSS growth allowed over one fuzz module (MiB): 10,000-call batches and 1-16 MB bodies pass through.
RSS_GROWTH_BOUND_MIB = 256


@pytest.fixture(scope="module")
def fz(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Fuzzed]:
    """One gateway for the whole module; at teardown it must still be alive and within its bounds."""
    f = start_fuzzed(tmp_path_factory.mktemp("fuzz") / "state")
    f.alive()
    before = proc_stats(f.pid)
    yield f
    try:
        f.alive()
        after = proc_stats(f.pid)
        growth_mib = (after["rss_kib"] - before["rss_kib"]) / 1024
        print(f"\n{request.module.__name__}: inputs tried={f.inputs} rss {before['rss_kib'] // 1024} -> "
              f"{after['rss_kib'] // 1024} MiB, threads {before['threads']} -> {after['threads']}, "
              f"fds {before['fds']} -> {after['fds']}")
        assert growth_mib < RSS_GROWTH_BOUND_MIB, f"RSS grew by {growth_mib:.0f} MiB"
        assert after["fds"] <= before["fds"] + 16, (before, after)
        assert after["threads"] <= before["threads"] + 48, (before, after)
    finally:
        f.client.close()
        f.gw.stop()
