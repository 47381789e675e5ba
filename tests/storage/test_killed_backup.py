"""A backup killed mid-copy (``kill -9``) leaves its working copy ``.DEST.partial-<hex>/`` beside DEST: it
cannot remove it itself. The next backup into the same directory removes such copies, but never the one a
backup still writing holds (each holds a lock on its working copy while it writes); ``meta-memory doctor``
reports them. Before, the copy stayed, unreported, holding the installation's data and keys.

The backups run as real ``meta-memory backup --state-dir`` processes; the one to be killed copies one page
per step with a long pause between steps, so that it is caught mid-copy.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from meta_memory.storage.backup import STALE_PARTIAL_AGE_S

#: ``meta-memory`` with the backup slowed to a page per step and a long pause after each.
SLOW = ("import sys; import meta_memory.storage.backup as b; b._PAGES_PER_STEP = 1; b._STEP_PAUSE_S = 600.0; "
        "from meta_memory.cli import main; sys.argv[0] = 'meta-memory'; main()")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "meta_memory.cli", *args], capture_output=True, text=True,
                          timeout=300)


def _state(path: Path) -> Path:
    made = cli("remember", "Apples", "apples are red", "--identity", "a:b", "--state-dir", str(path))
    assert made.returncode == 0, made.stderr
    return path


def _slow_backup(state: Path, dest: Path) -> tuple[subprocess.Popen[bytes], Path]:
    """A backup of ``state`` into ``dest``, caught mid-copy: its process and its working copy."""
    proc = subprocess.Popen([sys.executable, "-c", SLOW, "backup", "--state-dir", str(state), str(dest)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        partials = [p for p in dest.parent.iterdir() if p.name.startswith(f".{dest.name}.partial-")]
        if partials and any(partials[0].iterdir()):
            return proc, partials[0]
        assert proc.poll() is None, "the backup ended before it was caught"
        time.sleep(0.02)
    raise AssertionError("the backup never started copying")


def _killed_backup(state: Path, backups: Path) -> Path:
    """The working copy a backup of ``state`` into ``backups/monday`` leaves when killed mid-copy."""
    backups.mkdir(exist_ok=True)
    killed, left = _slow_backup(state, backups / "monday")
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    return left


def _age(path: Path) -> None:
    """As if ``path`` had been left untouched for longer than a backup takes to lock its working copy."""
    old = time.time() - STALE_PARTIAL_AGE_S - 5
    os.utime(path, (old, old))


def _doctor(state: Path, *extra: str) -> list[dict[str, object]]:
    out = cli("doctor", "--quick", "--state-dir", str(state), *extra)
    return [f for f in json.loads(out.stdout)["findings"] if f["kind"] == "partial_backup"]


def test_the_next_backup_removes_a_killed_backups_working_copy_but_not_a_live_one(tmp_path: Path) -> None:
    first, second = _state(tmp_path / "first"), _state(tmp_path / "second")
    backups = tmp_path / "backups"
    backups.mkdir()

    killed, left = _slow_backup(first, backups / "monday")
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    live, writing = _slow_backup(second, backups / "tuesday")  # another backup, still copying
    try:
        assert left.is_dir() and (backups / "monday").exists() is False
        _age(left)
        _age(writing)  # old or not, a working copy a backup holds is never taken

        found = _doctor(first, "--backup-dir", str(backups))
        assert [f["paths"] for f in found] == [[str(left)]], found
        assert found[0]["severity"] == "warning" and "killed" in str(found[0]["message"])
        assert "rm -r" in str(found[0]["fix"])
        assert cli("doctor", "--quick", "--state-dir", str(first), "--backup-dir", str(backups)).returncode == 0

        done = cli("backup", "--state-dir", str(first), str(backups / "wednesday"), "--json")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["removed_partials"] == [str(left)]
        assert f"removed {left}" in done.stderr
        assert not left.exists() and (backups / "wednesday" / "backup-manifest.json").is_file()
        assert writing.is_dir() and any(writing.iterdir()) and live.poll() is None
        assert _doctor(first, "--backup-dir", str(backups)) == []
    finally:
        live.send_signal(signal.SIGKILL)
        live.wait()
    # killed in turn, the second is left too: the doctor finds it beside a state directory's parent
    _age(writing)
    sibling = _state(backups / "state")
    assert [f["paths"] for f in _doctor(sibling)] == [[str(writing)]]


def test_a_fresh_working_copy_is_left_alone_whoever_holds_it(tmp_path: Path) -> None:
    """A working copy younger than STALE_PARTIAL_AGE_S may be one a backup has just made and not yet locked:
    it is neither removed nor reported."""
    state = _state(tmp_path / "state")
    backups = tmp_path / "backups"
    left = _killed_backup(state, backups)
    assert _doctor(state, "--backup-dir", str(backups)) == []
    done = cli("backup", "--state-dir", str(state), str(backups / "tuesday"))
    assert done.returncode == 0, done.stderr
    assert left.is_dir()


def test_a_directory_that_only_looks_like_a_working_copy_is_never_emptied(tmp_path: Path) -> None:
    """A directory named like a working copy but holding no backup's marker (a user's own folder named
    ``.proj.partial-0badcafe``) is reported by doctor and left in place by the next backup."""
    state = _state(tmp_path / "state")
    backups = tmp_path / "backups"
    lookalike = backups / ".proj.partial-0badcafe"
    (lookalike / "src").mkdir(parents=True)
    (lookalike / "src" / "main.py").write_text("print('mine')\n")
    _age(lookalike)
    done = cli("backup", "--state-dir", str(state), str(backups / "monday"), "--json")
    assert done.returncode == 0, done.stderr
    assert "removed_partials" not in json.loads(done.stdout)
    assert (lookalike / "src" / "main.py").read_text() == "print('mine')\n"
    assert [f["paths"] for f in _doctor(state, "--backup-dir", str(backups))] == [[str(lookalike)]]


def test_a_leftover_that_cannot_be_removed_never_fails_the_backup(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Removing a killed backup's copy can fail (an immutable file, a read-only subdirectory): the backup
    skips it, says nothing was removed, and writes its own copy."""
    import shutil

    import meta_memory.storage.backup as backup

    state = _state(tmp_path / "state")
    backups = tmp_path / "backups"
    left = _killed_backup(state, backups)
    _age(left)

    def refuse(path: object, *a: object, **k: object) -> None:
        raise PermissionError(1, "Operation not permitted", str(path))

    monkeypatch.setattr(shutil, "rmtree", refuse)
    report = backup.backup_state(state, backups / "tuesday")
    assert report.removed_partials == [] and left.is_dir()
    assert (backups / "tuesday" / "backup-manifest.json").is_file()
