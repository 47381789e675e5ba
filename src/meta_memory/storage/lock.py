"""One runtime per state directory: an exclusive advisory lock on ``<state-dir>/meta-memory.lock``.

The ledger file is single-writer by design (seed: "Run one runtime per state file"): two runtimes on
one state directory would each hold their own in-memory ledger and overwrite each other's persists,
losing acknowledged writes. The lock makes that mistake a clear start-up refusal instead. It is an
``flock`` on an open file descriptor, so the kernel releases it when the process exits, even on
SIGKILL; no stale lock is ever left behind. Taking it also makes the directory owner-only
(:mod:`meta_memory.storage.perms`).

A *one-shot* holder (a shell command such as ``meta-memory remember --state-dir``, which opens the
directory, does one thing and exits) marks itself in the lock file. Another one-shot that finds the
directory held by one waits its turn (up to :data:`ONE_SHOT_WAIT_S`), so two shell commands run at once
on one directory both succeed; a directory held by a long-lived runtime (a gateway, an SDK handle) is
refused at once.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import StartupError
from .perms import PRIVATE_FILE_MODE, private_dir, tighten_state_dir

__all__ = ["StateDirLock", "LOCK_FILE", "ONE_SHOT_WAIT_S", "held_in_place"]

LOCK_FILE = "meta-memory.lock"
#: How long a one-shot command waits for another one-shot command to release the directory.
ONE_SHOT_WAIT_S = 10.0
_ONE_SHOT_MARK = "one-shot"


class StateDirLock:
    """Hold the state directory for this process until :meth:`release` (or exit).

    Raises:
        StartupError: another process (named by its pid when known) holds the directory.
    """

    def __init__(self, state_dir: Path, *, one_shot: bool = False, in_place: bool = False) -> None:
        """Take the directory's lock, creating ``<state_dir>/meta-memory.lock`` (``0600``) when absent.

        Args:
            state_dir: the state directory; created ``0700`` when missing, unless ``in_place``.
            one_shot: mark this holder a one-shot command, and wait up to :data:`ONE_SHOT_WAIT_S` for another
                one-shot to finish instead of being refused at once.
            in_place: change nothing else in the directory (it must exist): no directory created, no mode
                tightened, a symbolic link at the lock file's name not followed (see :func:`held_in_place`).
        """
        if not in_place:
            private_dir(state_dir)
        self.path = state_dir / LOCK_FILE
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | (getattr(os, "O_NOFOLLOW", 0) if in_place else 0)
        self._fd: int | None = os.open(self.path, flags, PRIVATE_FILE_MODE)
        if not in_place:
            os.fchmod(self._fd, PRIVATE_FILE_MODE)
        deadline = time.monotonic() + (ONE_SHOT_WAIT_S if one_shot else 0.0)
        while True:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                pid, holder_one_shot = self._holder()
                # a one-shot waits for another one-shot (or a holder still writing its mark) to finish
                if time.monotonic() < deadline and (holder_one_shot or pid is None):
                    time.sleep(0.05)
                    continue
                os.close(self._fd)
                self._fd = None
                waited = one_shot and (holder_one_shot or pid is None)  # behind other commands, past the wait
                raise StartupError(self._busy(state_dir, pid) if waited else self._refusal(state_dir, pid, one_shot)
                                   ) from None
        os.ftruncate(self._fd, 0)
        os.write(self._fd, f"{os.getpid()}{' ' + _ONE_SHOT_MARK if one_shot else ''}\n".encode())
        held = os.fstat(self._fd)  # an open descriptor's file never changes: its identity is read once
        self._held = (held.st_dev, held.st_ino)
        if not in_place:
            tighten_state_dir(state_dir)  # files an older version or a wider umask left readable

    @staticmethod
    def _refusal(state_dir: Path, pid: str | None, one_shot: bool) -> str:
        if pid == str(os.getpid()):  # this process holds it: a handle built on it, still referenced, not closed
            return (f"the state directory {state_dir.resolve()} is already in use by another meta-memory runtime "
                    f"of this process (pid {pid}): a handle built on it holds it until its close() is called or the "
                    "handle is garbage-collected; close() the first handle (or build it in a `with` block) before "
                    "building another, or share the one handle")
        who = f" (pid {pid})" if pid else ""
        instead = ("if it is a gateway, call it with --url instead of --state-dir, or stop it first for a command "
                   "that has no --url (import, storage-adopt-predecessor); if it is an MCP server "
                   "(`meta-memory mcp --state-dir`), stop its client first" if one_shot else
                   "serve it once with `meta-memory serve` and reach that gateway by URL: --url on the command "
                   "line (mcp, remember, ...), Meta.connect(url) in an SDK; or give this one its own --state-dir")
        return (f"the state directory {state_dir.resolve()} is already in use by another meta-memory runtime{who}; "
                f"run one runtime per state directory ({instead})")

    @staticmethod
    def _busy(state_dir: Path, pid: str | None) -> str:
        who = f" (pid {pid})" if pid else ""
        return (f"the state directory {state_dir.resolve()} is busy: another meta-memory command{who} held it for "
                f"the whole {ONE_SHOT_WAIT_S:g} s this one waits its turn; retry when it is done (for many commands "
                "at once, serve the directory with `meta-memory serve` and pass --url)")

    def _holder(self) -> tuple[str | None, bool]:
        """The holder's pid (``None`` when unknown) and whether it marked itself a one-shot."""
        try:
            words = self.path.read_text(encoding="utf-8", errors="replace").split()
        except OSError:
            return None, False
        pid = words[0] if words and words[0].isdigit() else None
        return pid, pid is not None and words[1:] == [_ONE_SHOT_MARK]

    def problem(self) -> str | None:
        """Why the held directory is no longer this runtime's, or ``None``: the lock file was removed or
        replaced since it was taken (the state directory deleted, moved away or restored over while the
        runtime ran). Open databases then keep taking writes no restart will see, and another runtime
        could take the directory. One ``stat``, compared with the held file's identity (read once, when the
        lock was taken: an open descriptor's file never changes); ``None`` once released."""
        if self._fd is None:
            return None
        try:
            there = os.stat(self.path)
        except OSError:
            there = None
        if there is not None and (there.st_dev, there.st_ino) == self._held:
            return None
        return (f"the state directory {self.path.parent.resolve()} was removed or replaced while this runtime ran "
                f"(its lock file {LOCK_FILE} is gone or is another file): what it writes now does not reach "
                "that directory")

    def release(self) -> None:
        """Give the directory up (idempotent)."""
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


@contextmanager
def held_in_place(state_dir: Path) -> Iterator[None]:
    """Hold ``state_dir`` for a one-shot change that leaves the directory as it found it otherwise (no file's
    mode tightened, no directory created), e.g. adopting a predecessor's ledger byte for byte.

    It is the lock every runtime takes (:class:`StateDirLock`, as a one-shot: another one-shot is waited for up
    to :data:`ONE_SHOT_WAIT_S`), so a runtime starting while the change runs is refused. A missing
    ``<state_dir>/meta-memory.lock`` is created (``0600``), as a runtime would create it, and stays after
    the lock is released (removing a lock file another process may have opened would let two hold the
    directory at once).

    Raises:
        StartupError: another process holds the directory (the refusal :class:`StateDirLock` gives).
        OSError: the lock file cannot be opened or created (``state_dir`` missing, or not writable).
    """
    lock = StateDirLock(state_dir, one_shot=True, in_place=True)
    try:
        yield
    finally:
        lock.release()
