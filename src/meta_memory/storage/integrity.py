"""Is a SQLite file of the state directory readable: the checks ``/v1/ready`` and the doctor share.

Three depths, cheapest first:

1. **header** (:func:`header_problem`: ``stat`` and the first 100 bytes): the file is a SQLite
   database (its magic string), its page size is valid, and, when no write-ahead log holds pages
   for it, it is not shorter than the page count its header records (a truncated copy, a disk that
   filled mid-copy; with a non-empty ``-wal`` the missing pages may be in the log, which SQLite
   reads through, so the open and the quick check judge instead);
2. **open** (:func:`probe`): a read-only connection reads the schema page (``sqlite_master``), which
   catches a damaged first page and anything SQLite refuses to open;
3. **quick check** (:func:`probe` with ``full=True``): ``PRAGMA quick_check``, which reads every
   page and costs time in proportion to the file (``benchmarks/readiness.py`` measures it). The
   gateway runs it in the background (:class:`IntegrityMonitor`, one file at a time, each file again
   only after its ``[gateway] integrity_check_interval_s``), never inside a readiness request; the
   offline doctor runs it on every file unless asked for ``--quick``.

A ``-wal`` file whose database is missing (:func:`orphan_wals`) holds committed transactions nobody
can read: the doctor reports it with the way out.

Nothing here writes a database: connections are ``mode=ro``, so checking a file a running gateway
has open is safe. Opening a database in WAL mode that no process has open creates the empty ``-wal``
and ``-shm`` files SQLite keeps beside it (any reader does); they hold nothing.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from .sqlite_uri import file_uri

S = TypeVar("S")

__all__ = [
    "SQLITE_MAGIC",
    "database_stats",
    "FileSignature",
    "FileStat",
    "IntegrityMonitor",
    "header_problem",
    "is_corrupt",
    "orphan_wals",
    "probe",
    "signature",
]

log = logging.getLogger("meta_memory.storage.integrity")

SQLITE_MAGIC = b"SQLite format 3\x00"
_SQLITE_CORRUPT = 11
_SQLITE_NOTADB = 26
_HEADER_BYTES = 100
#: A file whose last quick check failed is checked again after at most this many seconds.
RECHECK_FAILED_S = 60.0


def is_corrupt(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite saying a file is damaged or not a database (``SQLITE_CORRUPT``,
    ``SQLITE_NOTADB``), as opposed to busy, locked, missing or full."""
    if not isinstance(exc, sqlite3.Error):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None and code & 0xFF in (_SQLITE_CORRUPT, _SQLITE_NOTADB):
        return True
    text = str(exc)
    return "file is not a database" in text or "malformed" in text


def header_problem(path: Path) -> str | None:
    """What is wrong with ``path`` judged from its size and 100-byte header, or ``None`` when it looks
    like a whole SQLite database (an empty file is one SQLite has not written yet: fine)."""
    try:
        size = path.stat().st_size
        if size == 0:
            return None
        with open(path, "rb") as fh:
            head = fh.read(_HEADER_BYTES)
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}"
    if len(head) < _HEADER_BYTES or not head.startswith(SQLITE_MAGIC):
        return "is not a SQLite database (its header is missing or overwritten)"
    raw_page = int.from_bytes(head[16:18], "big")
    page_size = 65536 if raw_page == 1 else raw_page
    if page_size < 512 or page_size & (page_size - 1):
        return "is not a SQLite database (its header names an invalid page size)"
    change_counter = int.from_bytes(head[24:28], "big")
    pages = int.from_bytes(head[28:32], "big")
    valid_for = int.from_bytes(head[92:96], "big")
    try:
        wal_holds_pages = path.with_name(path.name + "-wal").stat().st_size > 0
    except OSError:
        wal_holds_pages = False
    if pages and valid_for == change_counter and size < pages * page_size and not wal_holds_pages:
        return (f"is truncated: {size} bytes where its header records {pages} pages of {page_size} bytes "
                f"({pages * page_size} bytes)")
    return None


def probe(path: Path, *, full: bool = False, timeout_s: float = 5.0) -> str | None:
    """What is wrong with SQLite database ``path`` (header, then a read-only open reading the schema, then
    with ``full`` ``PRAGMA quick_check``), or ``None`` when it passes. A file that cannot be checked for
    another reason (locked for longer than ``timeout_s``, permissions) is reported as such."""
    problem = header_problem(path)
    if problem is not None:
        return problem
    try:
        conn = sqlite3.connect(file_uri(path, "ro"), uri=True, timeout=timeout_s,
                               check_same_thread=False)
    except sqlite3.Error as exc:
        return f"cannot be opened: {exc}"
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        if full:
            rows = [str(r[0]) for r in conn.execute("PRAGMA quick_check(3)").fetchall()]
            if rows != ["ok"]:
                return "fails PRAGMA quick_check: " + "; ".join(rows)
    except sqlite3.Error as exc:
        return f"is damaged: {exc}" if is_corrupt(exc) else f"cannot be checked: {exc}"
    finally:
        conn.close()
    return None


#: One file's ``(size, modification time ns, inode, change time ns, device)``.
FileStat = tuple[int, int, int, int, int]


@dataclass(frozen=True, slots=True)
class FileSignature:
    """What changes when a database changes: size, modification time, inode, change time and device of
    the file and its ``-wal``.

    The change time (``st_ctime_ns``) is what no process can set back: a rewrite in place that keeps the
    size and resets the modification time (``os.utime``), or a copy or restore that keeps it, still gets
    a new one. So one signature serves within a process and across a restart alike."""

    db: FileStat
    wal: FileStat | None  # None: no -wal, or an empty one (which a reader may create)


def _stat(st: os.stat_result) -> FileStat:
    return st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns, st.st_dev


def database_stats(path: Path, fields: Callable[[os.stat_result], S]) -> tuple[S, S | None] | None:
    """``(fields(stat of path), fields(stat of its -wal))`` for database ``path``: ``None`` when it does not
    exist, the second ``None`` when there is no ``-wal`` or an empty one (which a reader may create)."""
    name = os.fspath(path)
    try:
        db = os.stat(name)
    except OSError:
        return None
    try:
        wal: os.stat_result | None = os.stat(name + "-wal")
    except OSError:
        wal = None
    return fields(db), (fields(wal) if wal is not None and wal.st_size > 0 else None)


def signature(path: Path) -> FileSignature | None:
    """The :class:`FileSignature` of database ``path`` (``None`` when it does not exist)."""
    stats = database_stats(path, _stat)
    return FileSignature(*stats) if stats is not None else None


def orphan_wals(directory: Path, suffix: str) -> list[Path]:
    """``<name><suffix>-wal`` files in ``directory`` whose database ``<name><suffix>`` is missing."""
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.glob(f"*{suffix}-wal") if not p.with_name(p.name[:-4]).exists())


class IntegrityMonitor:
    """The background ``PRAGMA quick_check`` of every realm database, one file at a time.

    Args:
        files: returns ``{name: path}`` of the databases to check (read on each round).
        interval_s: a file is checked again only once this long has passed since its last check
            (a file that changed is not checked sooner: the point is to bound the I/O); a file whose
            last check failed is checked again after at most :data:`RECHECK_FAILED_S` (a failure that
            was passing, such as a checkpoint cut short by a full disk, clears soon after it is fixed).
        pause_s: rest between two files, so a large installation is checked at a gentle pace.

    :meth:`problems` answers from the last results, at once. :attr:`died` says whether the thread
    ended without :meth:`stop` (``/v1/ready`` reports it as a dead worker).
    """

    def __init__(self, files: Callable[[], dict[str, Path]], interval_s: float, *, pause_s: float = 1.0,
                 first_delay_s: float = 5.0) -> None:
        self._files = files
        self.interval_s = interval_s
        self._pause_s = pause_s
        self._first_delay_s = first_delay_s
        self._lock = threading.Lock()
        self._results: dict[str, tuple[float, str | None]] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the thread (idempotent)."""
        with self._lock:
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(target=self._run, name="meta-memory-integrity", daemon=True)
                self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the thread (a check under way finishes first)."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)

    @property
    def died(self) -> bool:
        """True when the thread ended although nobody stopped it."""
        thread = self._thread
        return thread is not None and not thread.is_alive() and not self._stop.is_set()

    def problems(self) -> dict[str, str]:
        """``{name: problem}`` of the files whose last quick check failed (still present)."""
        with self._lock:
            return {name: problem for name, (_, problem) in self._results.items() if problem is not None}

    def checked(self) -> int:
        """How many files have been checked at least once."""
        with self._lock:
            return len(self._results)

    def check_due(self, now: float | None = None) -> int:
        """Check every file whose last check is older than ``interval_s`` (or that was never checked), one
        at a time; returns how many were checked. Files that disappeared are forgotten."""
        now = time.monotonic() if now is None else now
        files = self._files()
        with self._lock:
            for gone in set(self._results) - set(files):
                del self._results[gone]
            due = [name for name in sorted(files) if name not in self._results
                   or now - self._results[name][0] >= (self.interval_s if self._results[name][1] is None
                                                       else min(self.interval_s, RECHECK_FAILED_S))]
        done = 0
        for name in due:
            if self._stop.is_set():
                break
            problem = probe(files[name], full=True, timeout_s=30.0)
            if problem is not None:
                log.error("integrity check: %s %s", files[name].name, problem)
            with self._lock:
                self._results[name] = (time.monotonic(), problem)
            done += 1
            self._stop.wait(self._pause_s)
        return done

    def _run(self) -> None:
        if self._stop.wait(self._first_delay_s):
            return
        while not self._stop.is_set():
            try:
                self.check_due()
            except Exception:  # noqa: BLE001 - a failed round is logged and retried next round
                log.warning("integrity check round failed", exc_info=True)
            self._stop.wait(min(RECHECK_FAILED_S, max(1.0, self.interval_s / 10)))
