"""``benchmarks/remember_split.py`` replays what a public remember sends to the realm's writer: each replay
must write real rows (a record with its full-text row and its audit row), or its "no Python" figure would
time statements that did nothing."""

from __future__ import annotations

import re
import subprocess
import sys

from support import REPO_ROOT


def test_each_replay_leaves_a_record_with_its_full_text_and_audit_rows() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO_ROOT / "benchmarks" / "remember_split.py"), "--size", "40", "--writes", "12",
         "--rounds", "2"], capture_output=True, text=True, timeout=300, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr
    head = re.search(r"(\d+) writes of each, (\d+) statements a remember; the replays left (\d+) records", done.stdout)
    assert head, done.stdout
    timed, statements, replayed = (int(g) for g in head.groups())
    # BEGIN, the duplicate check, the erasure check, four writes, the record-limit read, the audit row, COMMIT
    assert statements == 10
    assert 10 <= timed <= 24 and replayed == timed
    rows = dict(re.findall(r"^(remember|replay|replay COMMIT|raw|raw COMMIT) +([\d.]+) ", done.stdout, re.M))
    assert set(rows) == {"remember", "replay", "replay COMMIT", "raw", "raw COMMIT"} and all(
        float(v) > 0 for v in rows.values()), done.stdout
