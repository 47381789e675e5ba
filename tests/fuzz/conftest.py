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
#: File descriptors a module may leave open beyond the start. What stays open is bounded by the work's
#: shape, not by the number of inputs: each open realm holds a writer and per-thread reader connections
#: (its database, WAL and shared-memory files each), and under load the time box runs calls on more
#: worker threads, each with its own reader (27 alone, up to 35 in a loaded full run). A leak grows with
#: the inputs (thousands per module) and passes any such bound at once.
FD_GROWTH_BOUND = 32


def _settled(pid: int, before: dict[str, int], wait_s: float = 15.0) -> dict[str, int]:
    """The gateway's stats once its file descriptors are back within the bound, or after ``wait_s``:
    background work still running when the module ends (a full-text merge, the recall index's build,
    the usage-mark writer, a client connection being closed) holds a connection for a moment, which
    is no leak; a leak stays past the wait and fails the bound."""
    import time

    deadline = time.monotonic() + wait_s
    while True:
        stats = proc_stats(pid)
        if stats["fds"] <= before["fds"] + FD_GROWTH_BOUND or time.monotonic() >= deadline:
            return stats
        time.sleep(0.2)


@pytest.fixture(scope="module")
def fz(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Fuzzed]:
    """One gateway for the whole module; at teardown it must still be alive and within its bounds."""
    f = start_fuzzed(tmp_path_factory.mktemp("fuzz") / "state")
    f.alive()
    before = proc_stats(f.pid)
    yield f
    try:
        f.alive()
        after = _settled(f.pid, before)
        growth_mib = (after["rss_kib"] - before["rss_kib"]) / 1024
        print(f"\n{request.module.__name__}: inputs tried={f.inputs} rss {before['rss_kib'] // 1024} -> "
              f"{after['rss_kib'] // 1024} MiB, threads {before['threads']} -> {after['threads']}, "
              f"fds {before['fds']} -> {after['fds']}")
        assert growth_mib < RSS_GROWTH_BOUND_MIB, f"RSS grew by {growth_mib:.0f} MiB"
        assert after["fds"] <= before["fds"] + FD_GROWTH_BOUND, (before, after)
        assert after["threads"] <= before["threads"] + 48, (before, after)
    finally:
        f.client.close()
        f.gw.stop()
