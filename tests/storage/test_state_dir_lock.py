"""The state-directory lock's check that the directory is still the runtime's (``StateDirLock.problem``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from meta_memory.storage.lock import LOCK_FILE, StateDirLock


def test_the_held_lock_file_is_the_directorys_until_it_is_removed_or_replaced(tmp_path: Path) -> None:
    state = tmp_path / "state"
    lock = StateDirLock(state)
    try:
        assert lock.problem() is None
        assert lock.problem() is None  # asked again: still the same file
        # another file put in its place (a directory restored over the running one): not ours any more
        replacement = state / "replacement"
        replacement.write_text("4242\n", encoding="utf-8")
        os.replace(replacement, state / LOCK_FILE)
        problem = lock.problem()
        assert problem is not None and "removed or replaced" in problem
        (state / LOCK_FILE).unlink()
        problem = lock.problem()
        assert problem is not None and "is gone or is another file" in problem
    finally:
        lock.release()
    assert lock.problem() is None  # released: nothing to check


def test_the_check_asks_the_file_system_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every state-changing call runs the check: one ``stat`` of the path, the held file's identity kept."""
    lock = StateDirLock(tmp_path / "state")
    calls: list[str] = []
    real_stat, real_fstat = os.stat, os.fstat

    def counted_stat(*args: Any, **kwargs: Any) -> os.stat_result:
        calls.append("stat")
        return real_stat(*args, **kwargs)

    def counted_fstat(fd: int) -> os.stat_result:
        calls.append("fstat")
        return real_fstat(fd)

    monkeypatch.setattr(os, "stat", counted_stat)
    monkeypatch.setattr(os, "fstat", counted_fstat)
    try:
        assert lock.problem() is None
        assert calls == ["stat"]
    finally:
        monkeypatch.undo()
        lock.release()
