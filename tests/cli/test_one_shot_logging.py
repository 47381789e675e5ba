"""A one-shot command on a state directory prints its answer, not the runtime's background INFO lines
(an expiry sweep's): it logs warnings and above only. Serving commands keep their INFO lines
(tests/gateway/test_slow_clients.py reads one from ``serve``)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ID = "lead:main"


def mm(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "meta_memory.cli", *args], capture_output=True, text=True,
                          timeout=120, env=env)


def test_recall_on_a_state_dir_prints_no_info_lines(tmp_path: Path) -> None:
    at = ["--identity", ID, "--state-dir", str(tmp_path / "state")]
    made = mm("remember", "Standup", "Standup moved to ten", "--ttl-s", "1", *at)
    assert made.returncode == 0, made.stderr
    time.sleep(1.2)  # the record expires: opening the state directory sweeps it (an INFO line)
    recalled = mm("recall", "standup", *at, "--json")
    assert recalled.returncode == 0, recalled.stderr
    assert "INFO" not in recalled.stderr and "expiry sweep" not in recalled.stderr, recalled.stderr
    assert recalled.stderr == ""

