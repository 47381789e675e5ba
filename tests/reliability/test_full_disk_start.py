"""A state directory on a full disk, opened afresh: a command with ``--state-dir``, a gateway starting on
it, and ``meta-memory doctor``.

SQLite needs room for its side files (``-shm``, ``-wal``) even to read a database, so nothing can open
the directory until space is freed. Before, a read command said only ``cannot start: agent memory I/O
error: cannot open the session-state database: disk I/O error`` (after the write before it had said
"Reads keep working"), ``serve`` said ``cannot open the timeline database events.sqlite3: disk I/O
error``, and ``doctor`` reported the healthy timeline as a ``damaged_database`` that blocks start-up and
told the operator to restore it from a backup or move it away (losing the timeline for nothing).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from support import meta_memory_cli

IDENT = "lead:main"


@pytest.fixture
def full_state(tmp_path: Path) -> Iterator[Path]:
    """A state directory holding a record, on a 4 MiB tmpfs then filled to the last byte."""
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode(errors='replace').strip()}")
    try:
        state = mount / "state"
        out = meta_memory_cli("remember", "Passport location", "Top drawer of the desk.", "--identity", IDENT,
                              "--state-dir", str(state))
        assert out.returncode == 0, out.stderr
        fd = os.open(mount / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            while True:
                os.write(fd, b"\0" * 4096)
        except OSError as exc:
            assert exc.errno == 28, exc  # ENOSPC
        finally:
            os.close(fd)
        yield state
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _says_the_disk_is_full(stderr: str, state: Path) -> None:
    assert f"the disk mounted at {state.parent}" in stderr, stderr
    assert "is full" in stderr and "Free space on that disk, then retry" in stderr, stderr
    assert "Traceback" not in stderr, stderr


def test_a_read_command_on_a_full_disk_says_the_disk_is_full(full_state: Path) -> None:
    out = meta_memory_cli("list", "--identity", IDENT, "--state-dir", str(full_state))
    assert out.returncode == 1
    _says_the_disk_is_full(out.stderr.decode(), full_state)


def test_a_gateway_starting_on_a_full_disk_says_the_disk_is_full(full_state: Path) -> None:
    out = meta_memory_cli("serve", "--state-dir", str(full_state), "--port", "0", timeout=60)
    assert out.returncode == 1
    _says_the_disk_is_full(out.stderr.decode(), full_state)


def test_doctor_on_a_full_disk_calls_no_healthy_database_damaged(full_state: Path) -> None:
    out = meta_memory_cli("doctor", "--state-dir", str(full_state))
    report = json.loads(out.stdout)
    kinds = [f["kind"] for f in report["findings"]]
    assert "damaged_database" not in kinds, report["findings"]
    assert "low_disk" in kinds
    low = next(f for f in report["findings"] if f["kind"] == "low_disk")
    assert "neither a gateway nor a command" in low["message"] and "not damaged" in low["fix"], low

    # and once there is room again, every record is there
    (full_state.parent / "filler").unlink()
    listed = meta_memory_cli("list", "--identity", IDENT, "--state-dir", str(full_state), "--json")
    assert listed.returncode == 0, listed.stderr
    assert [r["title"] for r in json.loads(listed.stdout)] == ["Passport location"]


def test_an_embedded_handle_on_a_full_disk_says_the_disk_is_full(full_state: Path) -> None:
    from meta_memory import Meta
    from meta_memory.errors import StartupError

    with pytest.raises(StartupError) as refused:
        Meta.builder().persistent_state(full_state).build()
    _says_the_disk_is_full(str(refused.value), full_state)
