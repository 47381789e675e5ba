"""The disk under the state directory: how much room is left, and recognising a full one.

Three users, one set of rules:

* a write that fails because the disk is full is refused as ``AgentMemoryError("disk_full")``
  (-32040, reason ``disk_full``), naming the disk (its mount point) and what is free, never as a
  generic I/O error: :func:`is_disk_full` recognises SQLite's ``SQLITE_FULL``, the OS's ``ENOSPC`` /
  ``EDQUOT`` and PostgreSQL's ``disk_full`` (SQLSTATE 53100); :func:`disk_full_error` builds the
  refusal (:func:`refuse_if_disk_full` does both);
* ``GET /v1/ready`` answers 503 while free space is below ``[gateway] min_free_disk_mb``;
* ``meta-memory doctor`` reports the same floor offline.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from meta_memory.errors import AgentMemoryError

__all__ = ["DiskSpace", "disk_space", "is_disk_full", "disk_full_error", "refuse_if_disk_full", "DEFAULT_MIN_FREE_MB",
           "not_writable", "read_only_refusal", "full_disk", "full_disk_refusal"]

#: Default readiness floor of free space under the state directory (``[gateway] min_free_disk_mb``).
DEFAULT_MIN_FREE_MB = 256

_SQLITE_FULL = 13
_PG_DISK_FULL = "53100"
_MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class DiskSpace:
    """The filesystem holding a path: its mount point, and bytes free (to an unprivileged writer) and in all."""

    mount: str
    free_bytes: int
    total_bytes: int

    @property
    def free_mb(self) -> int:
        """Free space in whole MiB (rounded down)."""
        return self.free_bytes // _MIB

    @property
    def full(self) -> bool:
        """Less than 1 MiB free: SQLite cannot even create a database's side files there (every write is
        refused as ``disk_full``, and no gateway or command can open a state directory on it). A file system
        that reports no size at all (``/proc``, ``/sys``, some FUSE mounts: 0 blocks) is no disk that could
        fill, so it is never full: a failure there has another cause, and saying "free space" would mislead."""
        return self.total_bytes > 0 and self.free_bytes < _MIB

    def describe(self) -> str:
        """``the disk mounted at /var (12 MiB free of 2048 MiB)``."""
        return f"the disk mounted at {self.mount} ({self.free_mb} MiB free of {self.total_bytes // _MIB} MiB)"


def _existing(path: Path) -> Path:
    """``path`` or its nearest existing ancestor (a state directory not created yet is on its parent's disk)."""
    path = Path(os.path.abspath(path))
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _mount_point(path: Path) -> Path:
    """The mount point of the filesystem holding the existing ``path``."""
    current = path if path.is_dir() else path.parent
    device = current.stat().st_dev
    while current != current.parent:
        parent = current.parent
        try:
            if parent.stat().st_dev != device:
                break
        except OSError:
            break
        current = parent
    return current


def disk_space(path: Path) -> DiskSpace | None:
    """The :class:`DiskSpace` of the filesystem holding ``path`` (or its nearest existing ancestor);
    ``None`` when it cannot be read (no ``statvfs``, no permission)."""
    try:
        where = _existing(path)
        info = os.statvfs(where)
        mount = _mount_point(where)
    except (OSError, AttributeError):
        return None
    return DiskSpace(str(mount), info.f_bavail * info.f_frsize, info.f_blocks * info.f_frsize)


def is_disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` says the disk (or the writer's quota) is full: SQLite ``SQLITE_FULL``,
    ``OSError`` ``ENOSPC``/``EDQUOT``, PostgreSQL SQLSTATE ``53100``."""
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)
        if code is not None and code & 0xFF == _SQLITE_FULL:
            return True
        return "database or disk is full" in str(exc)
    if isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, errno.EDQUOT)
    return getattr(exc, "sqlstate", None) == _PG_DISK_FULL


def disk_full_error(path: Path | None, what: str) -> AgentMemoryError:
    """The refusal of a write (``what``, e.g. ``"remember"``) that found the disk holding ``path`` full:
    ``AgentMemoryError("disk_full", ...)`` naming the disk and saying that reads keep working. ``path``
    ``None``: the database server's disk (PostgreSQL)."""
    space = disk_space(path) if path is not None else None
    disk = space.describe() if space is not None else (
        "the database server's disk" if path is None else f"the disk holding {path.name}")
    return AgentMemoryError(
        "disk_full",
        f"{what} refused: no space left on {disk}; nothing was written. Reads keep working; free space on "
        "that disk, then retry",
    )


def refuse_if_disk_full(exc: BaseException, path: Path | None, what: str) -> None:
    """Raise :func:`disk_full_error` (from ``None``) when ``exc`` is a full disk; otherwise return."""
    if is_disk_full(exc):
        raise disk_full_error(path, what) from None


def not_writable(path: Path) -> str | None:
    """Why the existing directory ``path`` cannot be written, or ``None`` when it can:
    ``"a read-only file system"`` (mounted read-only: ``EROFS``) or ``"no write permission for this user"``
    (``EACCES``). A full disk is writable here (it is :func:`is_disk_full`'s case)."""
    try:
        read_only = bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):
        read_only = False
    if read_only:
        return "a read-only file system"
    if not os.access(path, os.W_OK):
        return "no write permission for this user"
    return None


def full_disk(path: Path) -> DiskSpace | None:
    """The :class:`DiskSpace` of the disk holding ``path`` when it is full (less than 1 MiB free: SQLite
    cannot even create a database's side files there), else ``None``."""
    space = disk_space(path)
    return space if space is not None and space.full else None


def full_disk_refusal(state_dir: Path, space: DiskSpace, detail: str) -> str:
    """The one-line refusal of a command that cannot open ``state_dir`` because its disk (``space``,
    :func:`full_disk`) is full (``detail``: the failure as the OS or SQLite put it)."""
    return (f"{space.describe()} is full ({detail}): meta-memory writes the state directory {state_dir} even "
            "to read it (its lock, the databases' side files), so nothing was read and nothing was changed; its "
            "files are not damaged by this. Free space on that disk, then retry (or copy the directory to a "
            "disk with room, `cp -a`, and give the copy as --state-dir)")


def read_only_refusal(state_dir: Path, why: str, detail: str) -> str:
    """The one-line refusal of a command that cannot open ``state_dir`` because it cannot be written
    (``why``: :func:`not_writable`; ``detail``: the failure as the OS or SQLite put it)."""
    return (f"the state directory {state_dir} is read-only ({why}; {detail}); meta-memory writes it even to "
            "read it (its lock, the databases' side files), so nothing was read. To read it, copy the directory "
            "to a writable place (`cp -a`) and give the copy as --state-dir, or make it writable (mount it "
            "read-write, or run as its owner)")
