"""Online backup of a state directory: a consistent copy, taken while the gateway keeps serving.

:func:`backup_state` copies every SQLite database under the state directory (each realm's agent
memory, ``session-state.db``, ``events.sqlite3``) with SQLite's online backup API, the ledger file
under the ledger's own lock, the installation's key files (``export.key``, ``session-digest.key``,
every ``*.key`` at the root: :mod:`.keys`), and the other files the directory holds (legacy markdown,
for one), into a new directory. The copy is consistent at one moment, *the moment the backup began*:
first a read transaction is opened on every database (in WAL mode it blocks no writer), the ledger's
bytes and the key files are read, and only then are pages copied, from those pinned snapshots. So
every write acknowledged before the backup began is in the copy, and none that began after it is half
there; and the copy keeps the installation's keys, so restored it still verifies the exports it signed
as its own and shows a reader the same session-key digests.

The copy is written to a hidden sibling (``.<name>.partial-<hex>``) and renamed to ``dest`` once
every file is written, checked (``PRAGMA quick_check``) and synced: a failed backup leaves nothing
at ``dest``, and removes its working copy. A database that cannot be copied (a file where one is kept without
SQLite's header, or one SQLite finds malformed) fails the backup, naming the file (:class:`DamagedSource`). A backup that is killed (``kill -9``, a machine that stops)
cannot remove it: the working copy stays beside ``dest``. So a backup holds an exclusive ``flock`` on
its working directory for as long as it writes it (the kernel drops it when the process dies), and
every backup first removes, from the directory it writes into, the working copies no backup holds any
longer (:func:`remove_stale_partials`: a ``.<name>.partial-<8 hex>`` directory of this user, not
locked, untouched for :data:`STALE_PARTIAL_AGE_S`; the age covers the instant between a backup's
``mkdir`` and its lock; removed whole only when it holds the :data:`PARTIAL_MARKER` a backup writes first
into its copy, else only when empty; one that cannot be removed is skipped, never failing the backup).
``meta-memory doctor`` reports them (:func:`stale_partials`). Directories are ``0700`` and files ``0600``, whatever the umask. The copied databases
are in rollback-journal mode (one self-contained file each; the store turns WAL back on when it
opens them). ``backup-manifest.json`` lists what was copied (a key file as kind ``key``).
``meta-memory serve --state-dir DEST`` serves the copy as it is.

Where the stores live in PostgreSQL, the databases and the installation's keys (the schema's
``installation_keys``) are not files here: :func:`backup_state` copies what the directory holds (the
ledger, the timeline) and the report says the rest needs ``pg_dump`` (``docs/deployment.md``, "Backup
and restore").
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import shutil
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ValueRuleBroken
from ..limits import MAX_FILE_NAME_BYTES, MAX_PATH_BYTES
from ..textfold import is_invisible
from .keys import is_key_file
from .layout import (
    AGENT_MEMORY_DIR,
    LEDGER_FILE,
    LEDGER_STAGE_FILE,
    LEGACY_AGENT_MEMORY_DIR,
    PREDECESSOR_STAGE_FILE,
    REALM_DB_SUFFIX,
    decode_path_segment,
)
from .lock import LOCK_FILE
from .perms import PRIVATE_DIR_MODE, PRIVATE_FILE_MODE, SQLITE_SIDE_SUFFIXES, create_private_file
from .sqlite_uri import file_uri

if TYPE_CHECKING:  # pragma: no cover
    from ..ledger.ledger import AssertionLedger

__all__ = ["MANIFEST_FILE", "MAX_DEST_NAME_BYTES", "STALE_PARTIAL_AGE_S", "BackupError", "BackupReport", "DamagedSource", "backup_state",
           "check_backup_dest", "check_dest_text", "remove_stale_partials", "stale_partials"]

MANIFEST_FILE = "backup-manifest.json"
_SQLITE_MAGIC = b"SQLite format 3\x00"
#: Files never copied: the runtime's lock, interrupted ledger writes, SQLite's side files.
_SKIPPED_NAMES = frozenset({LOCK_FILE, LEDGER_STAGE_FILE, PREDECESSOR_STAGE_FILE, MANIFEST_FILE})
#: Pages copied per step of the online backup API (a step holds the source's read snapshot only).
_PAGES_PER_STEP = 1024
#: Pause between steps (seconds): the serving gateway's writers get the disk and a core between them.
_STEP_PAUSE_S = 0.005
#: What the hidden working name ``.<name>.partial-<8 hex>`` adds to the new directory's name (bytes).
_PARTIAL_EXTRA = len(".") + len(".partial-") + 8
#: The longest name of the new backup directory (bytes): its working name must also be a file name.
MAX_DEST_NAME_BYTES = MAX_FILE_NAME_BYTES - _PARTIAL_EXTRA
#: the control characters a destination may not hold: C0, DEL and C1
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
#: The working name of a backup being written: ``.<name>.partial-<8 hex>``.
_PARTIAL_NAME = re.compile(r"\..+\.partial-[0-9a-f]{8}")
#: The file a backup writes first into its working copy (and removes just before renaming it): a later
#: backup removes a leftover whole only when it holds this file, so a directory that merely has the name
#: of a working copy is never emptied.
PARTIAL_MARKER = ".meta-memory-backup-in-progress"
#: How long a working copy no backup holds must be untouched before it counts as left by a killed backup
#: (seconds): longer than the instant between a backup's ``mkdir`` of it and its lock on it.
STALE_PARTIAL_AGE_S = 60.0
#: The names a database has at the root of the state directory (``session-state.db``, ``events.sqlite3``).
_ROOT_DB_SUFFIXES = (".db", ".sqlite3")
#: The longest suffix SQLite adds to a database's name while the copy is written (its rollback journal).
_JOURNAL_SUFFIX = "-journal"


class DamagedSource(OSError):
    """A database of the state directory that cannot be copied: its header is not SQLite's, or SQLite finds
    it malformed. The message names the file (and the realm whose database it is); nothing is written."""


class BackupError(ValueRuleBroken):
    """A backup destination that breaks a rule (``field`` = ``dest``): it exists, its parent does not,
    or it lies outside the allowed backup directory. Nothing is written."""

    def __init__(self, rule: str) -> None:
        super().__init__(f"dest {rule}", "dest")


@dataclass
class BackupReport:
    """What a backup wrote: ``dest``, ``began_at_ms`` (the consistency point), ``files`` (relative
    path, kind ``sqlite``/``ledger``/``key``/``file``, bytes), ``elsewhere`` (stores not in the directory,
    e.g. ``"postgres"``), ``seconds`` and ``removed_partials`` (the working copies of killed backups it
    removed beside ``dest``; in the dictionary only when there were some)."""

    dest: str
    began_at_ms: int
    files: list[dict[str, Any]] = field(default_factory=list)
    elsewhere: list[str] = field(default_factory=list)
    seconds: float = 0.0
    removed_partials: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out = {"dest": self.dest, "began_at_ms": self.began_at_ms, "files": self.files,
               "bytes": sum(int(f["bytes"]) for f in self.files), "elsewhere": self.elsewhere,
               "seconds": round(self.seconds, 3)}
        if self.removed_partials:
            out["removed_partials"] = self.removed_partials
        return out


def _utf8_bytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogateescape"))


def check_dest_text(dest: str) -> None:
    """The rules on ``dest`` as written, checked before anything on disk is read or written: no NUL, no
    ``..`` component (a backup names its directory plainly), a name (not ``""``, ``.`` or ``/``), at most :data:`~meta_memory.limits.MAX_PATH_BYTES`
    (4095) bytes in all, each component at most :data:`~meta_memory.limits.MAX_FILE_NAME_BYTES` (255) and
    the new directory's own name at most :data:`MAX_DEST_NAME_BYTES` (237: its hidden working name
    ``.<name>.partial-<8 hex>`` must fit 255), no control character (C0, DEL, C1) and no invisible or
    direction-changing one (:func:`~meta_memory.textfold.is_invisible`, the rule names follow:
    a right-to-left override would show the name reversed). Lengths are UTF-8 bytes. Raises
    :class:`BackupError` (``-32602``, ``field: dest``)."""
    if "\x00" in dest:
        raise BackupError("must not contain a NUL character")
    parts = dest.split(os.sep)
    if ".." in parts:
        raise BackupError("must not contain a '..' component: name the new directory by its plain path")
    if _utf8_bytes(dest) > MAX_PATH_BYTES:
        raise BackupError(f"must be at most {MAX_PATH_BYTES} bytes (UTF-8)")
    if any(_utf8_bytes(part) > MAX_FILE_NAME_BYTES for part in parts):
        raise BackupError(f"must not hold a path component longer than {MAX_FILE_NAME_BYTES} bytes (UTF-8)")
    name = next((part for part in reversed(parts) if part not in ("", ".")), "")
    if not name:  # '', '.', '/': the directory the path resolves to exists, so no new one is named
        raise BackupError(f"must name the new directory to write (got {dest!r}, which names none)")
    if _utf8_bytes(name) > MAX_DEST_NAME_BYTES:
        raise BackupError(f"must name a directory of at most {MAX_DEST_NAME_BYTES} bytes (UTF-8; the copy is "
                          f"written under a longer hidden name first)")
    hidden = next((ch for ch in dest if _CONTROL.match(ch) or is_invisible(ch)), None)
    if hidden is not None:
        raise BackupError(f"must not contain control, invisible or direction-changing characters (U+{ord(hidden):04X}: "
                          "a directory's name must show as it is)")


def check_backup_dest(dest: Path, root: Path | None = None) -> Path:
    """``dest`` checked as written (:func:`check_dest_text`), made absolute and checked: it must not exist,
    its parent must be a directory, and with ``root`` (``[gateway] backup_dir``) it must lie strictly
    inside ``root`` once symbolic links in its parent are resolved (links cannot lead out). Returns the
    path to write. Raises :class:`BackupError`."""
    check_dest_text(str(dest))
    dest = Path(os.path.abspath(dest))
    parent = dest.parent.resolve()
    if root is not None:
        base = root.resolve()
        if not (parent == base or base in parent.parents):
            raise BackupError(f"must lie inside the backup directory {base} ([gateway] backup_dir)")
    if not parent.is_dir():
        raise BackupError(f"must be a new directory in an existing one; {parent} does not exist")
    target = parent / dest.name
    if dest.name in ("", ".", "..") or os.path.lexists(target):
        raise BackupError(f"must not exist yet: {target} does, and a backup never overwrites (name a new directory)")
    return target


def _open_dir(path: Path) -> int:
    """A descriptor of the directory ``path`` itself (a link there is not followed)."""
    return os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
                   | getattr(os, "O_CLOEXEC", 0))


def _stale(directory: Path, remove: bool) -> list[Path]:
    """The working copies in ``directory`` no backup holds (see the module docstring), removed with
    ``remove`` (each under its lock, so no other backup or doctor takes it meanwhile)."""
    found: list[Path] = []
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return found
    now = time.time()
    for name in names:
        if not _PARTIAL_NAME.fullmatch(name):
            continue
        path = directory / name
        try:
            fd = _open_dir(path)
        except OSError:
            continue  # not a directory (or a link to one), or removed meanwhile
        try:
            info = os.fstat(fd)
            if info.st_uid != os.geteuid() or now - info.st_mtime < STALE_PARTIAL_AGE_S:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # a backup is writing it
            try:
                there = os.lstat(path)
            except OSError:
                continue  # removed by another backup before this one took the lock
            if (there.st_dev, there.st_ino) != (info.st_dev, info.st_ino):
                continue
            if remove:
                try:
                    if os.path.lexists(path / PARTIAL_MARKER):  # a working copy a backup made: removed whole
                        shutil.rmtree(path)
                    else:  # only an empty one (a backup killed before it marked its copy) is taken
                        os.rmdir(path)
                except OSError:
                    continue  # cannot be removed (not ours, not empty, immutable): left for doctor to report
            found.append(path)
        finally:
            os.close(fd)
    return found


def stale_partials(directory: Path) -> list[Path]:
    """The working copies (``.<name>.partial-<8 hex>``) in ``directory`` left by killed backups: directories
    of this user that no backup holds locked, untouched for :data:`STALE_PARTIAL_AGE_S`. Nothing is
    changed (``meta-memory doctor``)."""
    return _stale(directory, remove=False)


def remove_stale_partials(directory: Path) -> list[Path]:
    """Remove the working copies :func:`stale_partials` finds in ``directory`` (each under its lock: a
    backup still writing one holds it, and is never touched). Returns what was removed."""
    return _stale(directory, remove=True)


def _is_sqlite(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == _SQLITE_MAGIC
    except OSError:
        return False


def _database_name(rel: Path) -> str | None:
    """What ``rel`` (relative to the state directory) is when it lies where the state directory keeps a
    database: ``"the database of realm 'ops' (agent-memory/ops.sqlite3)"``, ``"the database
    session-state.db"``; ``None`` elsewhere."""
    parts = rel.parts
    if len(parts) == 1 and rel.name.endswith(_ROOT_DB_SUFFIXES):
        return f"the database {rel.as_posix()}"
    if len(parts) == 2 and parts[0] in (AGENT_MEMORY_DIR, LEGACY_AGENT_MEMORY_DIR) and rel.name.endswith(REALM_DB_SUFFIX):
        realm = decode_path_segment(rel.name[:-len(REALM_DB_SUFFIX)])
        return f"the database of realm {realm!r} ({rel.as_posix()})"
    return None


def _damaged(rel: Path, what: str) -> DamagedSource:
    """The refusal of a backup whose source database ``rel`` is damaged (``what``: SQLite's word, or the header)."""
    name = _database_name(rel) or f"the database {rel.as_posix()}"
    return DamagedSource(f"{name} cannot be copied ({what}): it is damaged or not a SQLite database, and a backup "
                         "copies only databases that pass SQLite's checks. Nothing was written. Run `meta-memory "
                         "doctor` on the state directory and restore the file from an earlier backup")


def _source_error(rel: Path, exc: sqlite3.DatabaseError) -> OSError:
    """SQLite's error on the source database ``rel``, naming it: damage (malformed, not a database) is
    :func:`_damaged`; an operational failure (locked, I/O, disk full) says so as it is."""
    if isinstance(exc, sqlite3.OperationalError):
        name = _database_name(rel) or f"the database {rel.as_posix()}"
        return OSError(f"copying {name} failed: {exc}")
    return _damaged(rel, str(exc))


def _inventory(state_dir: Path) -> tuple[list[Path], list[Path], list[Path]]:
    """``(databases, key files, other files)`` under ``state_dir`` (relative paths; links are not followed).

    Raises :class:`DamagedSource` for a file where a database is kept (a realm's, ``session-state.db``,
    ``events.sqlite3``) that is not empty and lacks SQLite's header: it would otherwise be copied as a
    plain file, and the backup would hold the damage as if it were data."""
    databases: list[Path] = []
    keys: list[Path] = []
    others: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(state_dir):
        dirnames[:] = sorted(d for d in dirnames if not os.path.islink(os.path.join(dirpath, d)))
        for name in sorted(filenames):
            path = Path(dirpath) / name
            rel = path.relative_to(state_dir)
            if (name in _SKIPPED_NAMES and len(rel.parts) == 1) or name.endswith(SQLITE_SIDE_SUFFIXES):
                continue
            if path.is_symlink() or not path.is_file():
                continue
            if rel == Path(LEDGER_FILE):
                continue  # read under the ledger's lock
            if is_key_file(rel):
                keys.append(rel)
            elif _is_sqlite(path):
                databases.append(rel)
            elif _database_name(rel) is not None and _size(path) > 0:  # an empty file is an empty database
                raise _damaged(rel, "its header is not SQLite's: the file is not a database")
            else:
                others.append(rel)
    return databases, keys, others


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _read_key(path: Path) -> bytes:
    """The bytes of the key file ``path`` (not followed if it became a link since the inventory)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as fh:
        return fh.read()


def _pin(path: Path) -> sqlite3.Connection:
    """A connection to ``path`` holding a read transaction: the snapshot the backup copies."""
    conn = sqlite3.connect(file_uri(path, "rw"), uri=True, isolation_level=None, check_same_thread=False,
                           timeout=30.0)
    conn.execute("BEGIN")
    conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
    return conn


def _private_write(path: Path, data: bytes) -> None:
    """Write ``data`` to the new file ``path``, ``0600`` and synced (:func:`create_private_file`);
    ``FileExistsError`` when something is already there (a copy never overwrites)."""
    if not create_private_file(path, data):
        raise FileExistsError(errno.EEXIST, "exists", str(path))


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _yield_to_writers(status: int, remaining: int, total: int) -> None:
    """The backup API's progress callback: pause between steps while pages remain."""
    if remaining:
        time.sleep(_STEP_PAUSE_S)


def _copy_database(src: sqlite3.Connection, target: Path) -> int:
    """Copy the pinned snapshot of ``src`` to ``target`` (owner-only, rollback journal, checked); its size."""
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), PRIVATE_FILE_MODE)
    os.fchmod(fd, PRIVATE_FILE_MODE)
    os.close(fd)
    dst = sqlite3.connect(target, isolation_level=None)
    try:
        src.backup(dst, pages=_PAGES_PER_STEP, progress=_yield_to_writers)
        dst.execute("PRAGMA journal_mode=DELETE").fetchone()
        verdict = dst.execute("PRAGMA quick_check").fetchone()
        if verdict is None or verdict[0] != "ok":
            raise sqlite3.DatabaseError(f"its copy fails SQLite's quick check: {verdict[0] if verdict else '?'}")
    finally:
        dst.close()
    _fsync(target)
    return target.stat().st_size


def backup_state(state_dir: Path, dest: Path, *, ledger: "AssertionLedger | None" = None,
                 root: Path | None = None, elsewhere: list[str] | None = None) -> BackupReport:
    """Copy ``state_dir`` into the new directory ``dest`` (see the module docstring).

    ``ledger``: the running runtime's ledger (its file is read under its lock); ``None`` for a stopped
    installation (the file is read as it is). ``root``: the allowed backup directory (a remote call's
    ``[gateway] backup_dir``). ``elsewhere``: stores this directory does not hold (``"postgres"``).

    Raises :class:`BackupError` for a refused ``dest`` (nothing written) and ``OSError`` or
    ``sqlite3.Error`` when copying fails (the partial copy is removed).
    """
    target = check_backup_dest(dest, root)
    state = state_dir.resolve()
    if target == state or state in target.parents:
        raise BackupError(f"must lie outside the state directory {state} (a backup inside it would copy itself)")
    started = time.monotonic()
    databases, keys, others = _inventory(state_dir)
    _check_room(target, [*databases, *keys, *others, Path(LEDGER_FILE), Path(MANIFEST_FILE)])
    removed = [str(p) for p in remove_stale_partials(target.parent)]  # the leftovers of killed backups
    pinned: list[tuple[Path, sqlite3.Connection]] = []
    partial = target.parent / f".{target.name}.partial-{os.urandom(4).hex()}"
    held: int | None = None  # the lock on the working copy: held until it is renamed or removed
    try:
        for rel in databases:
            try:
                pinned.append((rel, _pin(state_dir / rel)))
            except sqlite3.DatabaseError as exc:
                raise _source_error(rel, exc) from None
        if ledger is not None:
            ledger_bytes = ledger.file_snapshot()
        else:
            path = state_dir / LEDGER_FILE
            ledger_bytes = path.read_bytes() if path.exists() else None
        # the keys belong to the same moment: a key missing from the copy would leave the restored
        # installation unable to verify its own exports, so a key that cannot be read fails the backup
        key_bytes = [(rel, _read_key(state_dir / rel)) for rel in keys]
        report = BackupReport(str(target), int(time.time() * 1000), elsewhere=list(elsewhere or []),
                              removed_partials=removed)
        os.mkdir(partial, PRIVATE_DIR_MODE)
        held = _open_dir(partial)
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # new: no one else holds it
        os.chmod(partial, PRIVATE_DIR_MODE)
        _private_write(partial / PARTIAL_MARKER, b"")
        for rel, conn in pinned:
            _private_parents(partial, rel)
            try:
                size = _copy_database(conn, partial / rel)
            except sqlite3.DatabaseError as exc:
                raise _source_error(rel, exc) from None
            conn.close()
            report.files.append({"path": rel.as_posix(), "kind": "sqlite", "bytes": size})
        pinned.clear()
        if ledger_bytes is not None:
            _private_write(partial / LEDGER_FILE, ledger_bytes)
            report.files.append({"path": LEDGER_FILE, "kind": "ledger", "bytes": len(ledger_bytes)})
        for rel, data in key_bytes:  # owner-only and synced, as the installation made them
            _private_write(partial / rel, data)
            report.files.append({"path": rel.as_posix(), "kind": "key", "bytes": len(data)})
        for rel in others:
            try:
                data = (state_dir / rel).read_bytes()
            except FileNotFoundError:
                continue  # removed since the inventory (a legacy file adopted meanwhile)
            _private_parents(partial, rel)
            _private_write(partial / rel, data)
            report.files.append({"path": rel.as_posix(), "kind": "file", "bytes": len(data)})
        report.seconds = time.monotonic() - started
        _private_write(partial / MANIFEST_FILE, json.dumps(report.to_dict(), indent=2).encode("utf-8"))
        for directory in sorted({(partial / f["path"]).parent for f in report.files}, reverse=True):
            _fsync(directory)
        os.unlink(partial / PARTIAL_MARKER)
        _fsync(partial)
        os.rename(partial, target)
        _fsync(target.parent)
        return report
    except BaseException:
        for _, conn in pinned:
            conn.close()
        shutil.rmtree(partial, ignore_errors=True)
        raise
    finally:
        if held is not None:
            os.close(held)  # releases the lock


def _check_room(target: Path, rels: list[Path]) -> None:
    """Refuse ``target`` (before anything is written) when a file the copy writes under its working name
    (a database's journal included) would have a path longer than :data:`~meta_memory.limits.MAX_PATH_BYTES`."""
    longest = max(_utf8_bytes(rel.as_posix()) for rel in rels) + len(_JOURNAL_SUFFIX)
    room = MAX_PATH_BYTES - _PARTIAL_EXTRA - len("/") - longest
    if _utf8_bytes(str(target)) > room:
        raise BackupError(f"must be at most {room} bytes (UTF-8) here: the copy writes files of up to {longest} "
                          f"bytes of path under it, and a path holds at most {MAX_PATH_BYTES} bytes")


def _private_parents(root: Path, rel: Path) -> None:
    """Create the directories of ``rel`` under ``root`` owner-only."""
    current = root
    for part in rel.parts[:-1]:
        current = current / part
        if not current.exists():
            os.mkdir(current, PRIVATE_DIR_MODE)
            os.chmod(current, PRIVATE_DIR_MODE)
