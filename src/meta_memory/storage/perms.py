"""Owner-only permissions for everything under the state directory, whatever the umask.

The state directory holds every memory, the ledger, session taint and the
timeline, so it is the owner's alone: directories ``0700``, files ``0600``
(``docs/security.md``, "Files"). A umask can only take permission bits away,
never add them, so creating with these modes and then setting them explicitly
(an existing file or directory made by an older version, or by a wider umask,
is tightened too) gives the same result under any umask.

SQLite gives a database's ``-wal``, ``-shm`` and ``-journal`` files the
permissions of the database file itself, so :func:`private_file` on the
database before the first connection covers them.
"""

from __future__ import annotations

import os
from pathlib import Path

from .layout import AGENT_MEMORY_DIR, LEGACY_AGENT_MEMORY_DIR, SQLITE_SIDE_SUFFIXES

__all__ = ["PRIVATE_DIR_MODE", "PRIVATE_FILE_MODE", "SQLITE_SIDE_SUFFIXES", "create_private_file", "private_dir",
           "private_file", "private_sqlite", "tighten_state_dir"]

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def private_dir(path: Path) -> Path:
    """Create ``path`` (and missing parents) and make ``path`` itself ``0700``. Returns ``path``.

    Raises ``OSError`` when it cannot be created or changed."""
    path.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
    if (path.stat().st_mode & 0o777) != PRIVATE_DIR_MODE:
        os.chmod(path, PRIVATE_DIR_MODE)
    return path


def private_file(path: Path) -> Path:
    """Create ``path`` empty if missing, and make it ``0600``. Returns ``path``. Raises ``OSError``."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0),
                 PRIVATE_FILE_MODE)
    try:
        if (os.fstat(fd).st_mode & 0o777) != PRIVATE_FILE_MODE:
            os.fchmod(fd, PRIVATE_FILE_MODE)
    finally:
        os.close(fd)
    return path


def create_private_file(path: Path, data: bytes) -> bool:
    """Create ``path`` holding ``data``, ``0600`` from its first byte, written and synced before it is
    used (a secret such as the export key). ``False`` when ``path`` already exists (it is left as it is:
    two writers racing keep the first). Raises ``OSError``; symbolic links are not followed."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
                     | getattr(os, "O_NOFOLLOW", 0), PRIVATE_FILE_MODE)
    except FileExistsError:
        return False
    try:
        os.fchmod(fd, PRIVATE_FILE_MODE)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        path.unlink(missing_ok=True)
        raise
    os.close(fd)
    return True


def private_sqlite(path: Path) -> Path:
    """:func:`private_file` for a SQLite database and any side files it already has. Returns ``path``."""
    private_file(path)
    for suffix in SQLITE_SIDE_SUFFIXES:
        side = path.with_name(path.name + suffix)
        try:
            if (side.stat().st_mode & 0o777) != PRIVATE_FILE_MODE:
                os.chmod(side, PRIVATE_FILE_MODE)
        except FileNotFoundError:
            pass
    return path


def tighten_state_dir(state_dir: Path, subdirs: tuple[str, ...] = (AGENT_MEMORY_DIR, LEGACY_AGENT_MEMORY_DIR)) -> None:
    """Make an existing state directory owner-only: the directory and ``subdirs`` ``0700``, every
    regular file directly inside them ``0600`` (files left by an older version or a wider umask).

    Symbolic links are not followed. Raises ``OSError`` when a mode cannot be changed."""
    for directory in (state_dir, *(state_dir / name for name in subdirs)):
        if not directory.is_dir() or directory.is_symlink():
            continue
        private_dir(directory)
        with os.scandir(directory) as entries:
            for entry in entries:
                if entry.is_file(follow_symlinks=False):
                    if (entry.stat(follow_symlinks=False).st_mode & 0o777) != PRIVATE_FILE_MODE:
                        os.chmod(entry.path, PRIVATE_FILE_MODE, follow_symlinks=False)
