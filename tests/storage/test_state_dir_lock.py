"""The state-directory lock's check that the directory is still the runtime's (``StateDirLock.problem``)."""

from __future__ import annotations

import os
from pathlib import Path

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
