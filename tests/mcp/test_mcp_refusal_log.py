"""``meta-memory mcp`` answers every bad line but logs only the first few of them, then at most one
count per interval: a client sending a flood of bad lines cannot fill the log."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from meta_memory.mcp_server import RefusalLog
from support import REPO_ROOT

BAD_LINES = 5000


def test_a_flood_of_bad_lines_is_answered_line_by_line_and_logged_in_a_few_lines(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(REPO_ROOT / "src"), os.environ.get("PYTHONPATH", "")) if p)}
    flood = "".join(f"not json {i}\n" for i in range(BAD_LINES)).encode()
    done = subprocess.run(
        [sys.executable, "-m", "meta_memory.cli", "mcp", "--identity", "agent:x", "--state-dir", str(tmp_path / "s")],
        input=flood, capture_output=True, env=env, timeout=300, check=False)
    answers = [line for line in done.stdout.splitlines() if b'"code":-32700' in line.replace(b" ", b"")]
    assert len(answers) == BAD_LINES
    stderr = done.stderr.decode()
    assert stderr.count("refused an MCP message") == 10, stderr[-2000:]
    counted = [line for line in stderr.splitlines() if "more bad MCP message lines answered" in line]
    assert 1 <= len(counted) <= 2, stderr[-2000:]
    assert sum(int(line.split(" more bad")[0].rsplit(" ", 1)[-1]) for line in counted) == BAD_LINES - 10
    assert len(stderr.splitlines()) < 40


def test_the_refusal_log_logs_the_first_then_one_count_per_interval(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    refusals = RefusalLog(first=3, interval_s=60.0, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="meta_memory.mcp"):
        for i in range(3):
            refusals.refused("line %d", i)
        for _ in range(100):  # within the interval: counted, not logged
            now[0] += 0.1
            refusals.refused("line")
        now[0] = 61.0
        refusals.refused("line")  # the interval passed: one count of all 101
        refusals.refused("line")
        refusals.refused("line")
        refusals.close()  # the input ended: the 2 still counted
    messages = [r.getMessage() for r in caplog.records]
    assert messages[:3] == [f"refused an MCP message: line {i}" for i in range(3)]
    counts = [m for m in messages if "more bad MCP message lines answered" in m]
    assert counts == ["101 more bad MCP message lines answered (not logged one by one)",
                      "2 more bad MCP message lines answered (not logged one by one)"]
    assert len(messages) == 6  # the 3, the note that more are counted, the 2 counts
