"""``benchmarks/index_top.py`` times the recall index's candidate query by recording what a recall asks of it:
a renamed ``top`` or a recall that stops asking the index would leave it measuring nothing, which it must refuse
rather than print figures."""

from __future__ import annotations

import re
import subprocess
import sys

from support import REPO_ROOT


def test_it_times_the_candidate_queries_recalls_ask_and_checks_their_answers() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO_ROOT / "benchmarks" / "index_top.py"), "--records", "2500", "--queries", "12",
         "--index-mb", "64", "--rounds", "2"], capture_output=True, text=True, timeout=300, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr
    found = re.search(r"thread CPU ms over (\d+) calls: p50 [\d.]+, p90 [\d.]+, p99 [\d.]+, sum \d+", done.stdout)
    assert found, done.stdout
    assert int(found.group(1)) == 2 * 12  # every recall asked the index once, timed in each round
