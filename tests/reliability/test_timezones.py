"""Time: every timestamp is UTC epoch milliseconds whatever the local
zone; the time-sensitive suites pass unchanged under TZ=Asia/Kolkata (+05:30) and
TZ=America/Los_Angeles (-08:00/-07:00); records with equal timestamps are ordered stably by id."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from meta_memory.clock import ManualClock
from meta_memory.panel.store import SqlitePanelStore
from support import raw_rows

REPO = Path(__file__).resolve().parents[2]

#: Suites whose results depend on clocks, ages, day boundaries, cursors or windows.
TIME_SENSITIVE = [
    "tests/review/test_quarantine.py",
    "tests/injection/test_injection_render.py",
    "tests/injection/test_injection_build.py",
    "tests/panel/test_panel_cursor.py",
    "tests/panel/test_panel_paging.py",
    "tests/ledger/test_ledger_behaviour.py",
    "tests/recall/test_lexical.py",
]

ZONES = ["Asia/Kolkata", "America/Los_Angeles"]


@pytest.mark.parametrize("zone", ZONES)
def test_time_sensitive_suites_pass_in_other_zones(zone: str) -> None:
    files = [f for f in TIME_SENSITIVE if (REPO / f).exists()]
    assert len(files) >= 5
    env = {**os.environ, "TZ": zone, "PYTHONPATH": os.pathsep.join(
        [str(REPO / "src"), *filter(None, [os.environ.get("PYTHONPATH")])])}
    # the property tests in them ran with their full example counts in this run's own zone; in the other
    # zones they run under the fast tier's hypothesis profile (the zone, not the breadth, is what changes).
    # One process (-n 0): this test already holds one of the run's workers.
    proc = subprocess.run([sys.executable, "-m", "pytest", *files, "-q", "-p", "no:cacheprovider", "-x", "-n", "0",
                           "--hypothesis-profile", "fast"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    # The zone really was in effect for the child: its local offset differs from UTC.
    probe = subprocess.run([sys.executable, "-c", "import time; print(time.localtime(0).tm_gmtoff)"],
                           env=env, capture_output=True, text=True, check=True)
    assert int(probe.stdout) != 0


@pytest.fixture
def store(tmp_path: Path) -> Iterator[tuple[SqliteAgentMemoryStore, ManualClock]]:
    clock = ManualClock(1_700_000_000_000)
    s = SqliteAgentMemoryStore(tmp_path / "am", clock)
    yield s, clock
    s.close()


@pytest.fixture
def local_zone() -> Iterator[None]:
    """Run the test with the process's local zone set to +05:30, then restore it."""
    old = os.environ.get("TZ")
    os.environ["TZ"] = "Asia/Kolkata"
    time.tzset()
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = old
        time.tzset()


def test_timestamps_are_the_clock_value_in_utc_ms(store: tuple[SqliteAgentMemoryStore, ManualClock],
                                                  local_zone: None) -> None:
    s, clock = store
    rec, _ = record_writes.remember(s, "default", "tz:one", "title", "body")
    assert rec.created_at_ms == rec.updated_at_ms == 1_700_000_000_000
    (row,) = raw_rows(s, "default", "SELECT created_at_ms, updated_at_ms FROM records")
    (audit,) = raw_rows(s, "default", "SELECT applied_at_ms FROM audit")
    assert tuple(row) == (1_700_000_000_000, 1_700_000_000_000) and audit[0] == 1_700_000_000_000


def test_equal_timestamps_are_ordered_stably_by_id(store: tuple[SqliteAgentMemoryStore, ManualClock]) -> None:
    s, clock = store
    ids = [record_writes.remember(s, "default", "tz:tie", f"title {i}", f"body {i}")[0].memory_id for i in range(25)]
    clock.advance(1)
    later = record_writes.remember(s, "default", "tz:tie", "later", "later body")[0].memory_id
    panel = SqlitePanelStore(s)
    from meta_memory.access.policy import AccessPolicy
    from meta_memory.access.principal import ANONYMOUS
    from meta_memory.panel.service import PanelService
    from meta_memory.panel.visibility import Visibility

    every_row = Visibility(AccessPolicy(), ANONYMOUS)  # access control off: every row is visible

    listings = []
    for _ in range(3):
        rows, cursor = [], None
        while True:
            from meta_memory.panel.cursor import parse_cursor

            page = PanelService(panel, every_row).records(realm="default", scope_kind=None, scope_key=None, status=None,
                                                      limit=4, cursor=parse_cursor(cursor))
            rows += [r["id"] for r in page["records"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        listings.append(rows)
    assert listings[0] == listings[1] == listings[2]
    assert listings[0] == [later, *sorted(ids, reverse=True)]  # newest first, ties by id descending
