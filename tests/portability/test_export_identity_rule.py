"""``meta-memory export --state-dir --identity ID`` holds ``ID`` to the identity rule, as
``meta/storage/export`` (``--url``) does: a blank or padded identity is refused, exit 1, naming the
rule, and a roster id (``rt:<name>:<n>``) exports the identity it names.

Before, the offline export took the text as given: ``--identity ""`` wrote an export of 0 records and
exited 0, and ``--identity rt:lead:main:2`` found none of ``lead:main``'s records.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def mm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "meta_memory.cli", *args], capture_output=True, text=True,
                          timeout=120)


def test_an_offline_export_refuses_a_bad_identity_and_reads_a_roster_id(tmp_path: Path) -> None:
    state = str(tmp_path / "state")
    assert mm("remember", "Passport", "Top drawer.", "--identity", "lead:main", "--state-dir", state).returncode == 0
    for bad in ("", "   ", " lead:main"):
        out = tmp_path / "bad.jsonl"
        proc = mm("export", "--state-dir", state, "--identity", bad, "-o", str(out))
        assert proc.returncode == 1, (bad, proc.stdout, proc.stderr)
        assert "identity must" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr
        assert not out.exists()
    out = tmp_path / "roster.jsonl"
    proc = mm("export", "--state-dir", state, "--identity", "rt:lead:main:2", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["record"]["title"] for r in records if r.get("type") == "record"] == ["Passport"], records
