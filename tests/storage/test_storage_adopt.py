"""Adopting a predecessor ledger (seed: "The runtime owns the assertion ledger"; spec README)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from meta_memory.clock import ManualClock
from meta_memory.errors import StartupError
from meta_memory.ledger import AssertionLedger, LedgerConfig
from meta_memory.storage import StorageLayout, adopt_predecessor
from meta_memory.storage.lock import LOCK_FILE

PREDECESSOR = {
    "assertions": [
        {
            "assertion_id": "memory-assert-000009",
            "entity": "identity:ops",
            "topic": "deployment",
            "store": "knowledge_graph",
            "fact": "Production deploys require approval.",
            "metadata": None,
            "indexed_at_ms": 1_690_000_000_000,
        }
    ],
    "conflicts": [],
}


@pytest.fixture
def state(tmp_path: Path) -> Path:
    (tmp_path / "elephant-memory-state.json").write_bytes(json.dumps(PREDECESSOR, indent=1).encode() + b"\n  ")
    return tmp_path


def listing(directory: Path) -> dict[str, bytes]:
    """The directory's files but its lock file, which ``--apply`` creates when absent, as any runtime does."""
    return {p.name: p.read_bytes() for p in directory.iterdir() if p.name != LOCK_FILE}


def test_dry_run_reports_and_changes_nothing(state: Path) -> None:
    before = listing(state)
    report = adopt_predecessor(state, apply=False)
    assert report.action == "would_rename" and report.applied is False
    assert report.size_bytes == len(before["elephant-memory-state.json"])
    assert any("--apply" in line for line in report.lines)
    assert listing(state) == before
    assert not (state / LOCK_FILE).exists()


def test_apply_renames_byte_for_byte_and_unblocks_startup(state: Path) -> None:
    original = (state / "elephant-memory-state.json").read_bytes()
    os.chmod(state / "elephant-memory-state.json", 0o640)
    with pytest.raises(StartupError):
        StorageLayout(state).check_startup()
    report = adopt_predecessor(state, apply=True)
    assert report.action == "renamed" and report.applied is True
    assert report.to_dict()["target"] == str(state / "memory-ledger-state.json")
    assert listing(state) == {"memory-ledger-state.json": original}
    assert (state / LOCK_FILE).stat().st_mode & 0o777 == 0o600  # the lock every runtime takes, now free
    assert (state / "memory-ledger-state.json").stat().st_mode & 0o777 == 0o640
    StorageLayout(state).check_startup()
    ledger = AssertionLedger.from_config(LedgerConfig(), state, ManualClock())
    assert [a.assertion_id for a in ledger.query().assertions] == ["memory-assert-000009"]
    assert adopt_predecessor(state, apply=True).action == "nothing_to_adopt"


@pytest.mark.parametrize("stage", ["elephant-memory-state.tmp", "memory-ledger-state.tmp"])
@pytest.mark.parametrize("apply", [False, True])
def test_refuses_a_leftover_stage(state: Path, stage: str, apply: bool) -> None:
    (state / stage).write_text("{")
    before = listing(state)
    with pytest.raises(StartupError, match=f"refusing to adopt: .*{stage} is left over"):
        adopt_predecessor(state, apply=apply)
    assert listing(state) == before


@pytest.mark.parametrize("apply", [False, True])
def test_refuses_when_the_ledger_already_exists(state: Path, apply: bool) -> None:
    (state / "memory-ledger-state.json").write_text('{"assertions": []}')
    before = listing(state)
    with pytest.raises(StartupError, match="memory-ledger-state.json already exists"):
        adopt_predecessor(state, apply=apply)
    assert listing(state) == before


def test_nothing_to_adopt_and_missing_dir(tmp_path: Path) -> None:
    report = adopt_predecessor(tmp_path, apply=True)
    assert report.action == "nothing_to_adopt" and report.applied is False
    with pytest.raises(StartupError, match="does not exist"):
        adopt_predecessor(tmp_path / "absent", apply=False)


@pytest.mark.parametrize("content, why", [(b'{"bad":', "malformed"),
                                          (b'{"assertions": [{"entity": 3}], "conflicts": []}', "malformed")])
def test_the_cli_refuses_a_predecessor_the_ledger_cannot_read(state: Path, content: bytes, why: str) -> None:
    """A predecessor file that is not a readable ledger is reported unadoptable by the dry run and refused by
    ``--apply`` (exit 1, nothing renamed): adopted, it would block every start (doctor: malformed_ledger)."""
    import subprocess
    import sys

    source = state / "elephant-memory-state.json"
    source.write_bytes(content)
    cli = [sys.executable, "-m", "meta_memory.cli", "storage-adopt-predecessor", "--state-dir", str(state)]
    for args in ([], ["--apply"]):
        out = subprocess.run([*cli, *args], capture_output=True, text=True)
        assert out.returncode == 1, out
        assert "refusing to adopt" in out.stderr and why in out.stderr and "nothing was renamed" in out.stderr
        assert source.read_bytes() == content and not (state / "memory-ledger-state.json").exists()
