"""``benchmarks/recall_phases.py`` times a recall's parts by wrapping the store's, the index's and the provider's
functions: each wrapped part must be one a recall runs (a renamed function would leave its part at 0 and the
benchmark silently measuring nothing)."""

from __future__ import annotations

import re
import subprocess
import sys

from support import REPO_ROOT


def test_every_part_it_names_is_timed_in_a_recall() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO_ROOT / "benchmarks" / "recall_phases.py"), "--records", "2500", "--queries", "12",
         "--index-mb", "64"], capture_output=True, text=True, timeout=300, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr
    assert re.search(r"recall p50 [\d.]+ ms, p99 [\d.]+ ms \(12 queries\)", done.stdout), done.stdout
    slowest = done.stdout.split("slowest recalls (ms):", 1)[1].strip().splitlines()
    assert len(slowest) == 6
    sums: dict[str, float] = {}
    for line in slowest:
        for part, ms in re.findall(r"([a-z_.]+) ([\d.]+)", line):
            sums[part] = sums.get(part, 0.0) + float(ms)
    # a resident realm serves its rows' views from memory (no read: views and the bounded pass may stay at 0)
    assert {"index.top", "index.term_columns", "rank.context", "provider"} <= {p for p, v in sums.items() if v > 0}, sums
