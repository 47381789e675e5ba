"""One runtime per state directory: an exclusive advisory lock on ``<state-dir>/meta-memory.lock``.

The ledger file is single-writer by design (seed: "Run one runtime per state file"): two runtimes on
one state directory would each hold their own in-memory ledger and overwrite each other's persists,
losing acknowledged writes. The lock makes that mistake a clear start-up refusal instead. It is an
``flock`` on an open file descriptor, so the kernel releases it when the process exits, even on
SIGKILL; no stale lock is ever left behind. Taking it also makes the directory owner-only
(:mod:`meta_memory.storage.perms`).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from ..errors import StartupError
from .perms import PRIVATE_FILE_MODE, private_dir, tighten_state_dir

__all__ = ["StateDirLock", "LOCK_FILE"]

LOCK_FILE = "meta-memory.lock"


class StateDirLock:
    """Hold the state directory for this process until :meth:`release` (or exit).

    Raises:
        StartupError: another process (named by its pid when known) holds the directory.
    """

    def __init__(self, state_dir: Path) -> None:
        private_dir(state_dir)
        self.path = state_dir / LOCK_FILE
        self._fd: int | None = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0),
                                       PRIVATE_FILE_MODE)
        os.fchmod(self._fd, PRIVATE_FILE_MODE)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = self._holder()
            os.close(self._fd)
            self._fd = None
            who = f" (pid {holder})" if holder else ""
            raise StartupError(
                f"the state directory {state_dir.resolve()} is already in use by another meta-memory runtime{who}; "
                "run one runtime per state directory (connect to the running gateway with Meta.connect(url), "
                "or give this one its own --state-dir)"
            ) from None
        os.ftruncate(self._fd, 0)
        os.write(self._fd, f"{os.getpid()}\n".encode())
        tighten_state_dir(state_dir)  # files an older version or a wider umask left readable

    def _holder(self) -> str | None:
        try:
            text = self.path.read_text(encoding="utf-8").strip()
        except OSError:
            return None
        return text if text.isdigit() else None

    def release(self) -> None:
        """Give the directory up (idempotent)."""
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
