"""A refused ``meta-memory replay`` prints its one line on stderr and nothing on stdout, so a script
reading the figures from stdout sees no stray output. Before, the progress display left an empty line on
stdout (the transient bar's erase, written when stdout is not a terminal)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_a_refused_replay_leaves_stdout_empty(tmp_path: Path) -> None:
    samples = tmp_path / "locomo.json"
    samples.write_text("{}")
    proc = subprocess.run([sys.executable, "-m", "meta_memory.cli", "replay", str(samples), "--url",
                           "http://127.0.0.1:1"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert proc.stdout == "", repr(proc.stdout)
    assert "expected a JSON list of LoCoMo samples" in proc.stderr, proc.stderr
