"""Where everything lives under the persistent state directory.

Seed: Architecture ("The runtime owns the assertion ledger", the predecessor
ledger refusal, agent-memory root), spec README ("Where the seed and the
reference differ"); reference §2B "Layout" and §2C (path-segment encoding).

Layout of ``<state>``::

    memory-ledger-state.json        the assertion ledger (durable: fsync + replace)
    memory-ledger-state.tmp         its stage during a write (only while writing)
    session-state.db                session taint, reset marks, injection budgets, nonces (SQLite, WAL)
    events.sqlite3                  the timeline (SQLite, WAL)
    events.outbox                   timeline events published since the last drain into it (JSON lines)
    panel-summaries.json            the console's per-realm summaries, written at stop, read and removed at start
    agent-memory/                   agent-memory root (legacy spelling: agent-memory-sqlite/)
        <encode(realm)>.sqlite3     one SQLite database per realm (WAL)
        <encode(realm)>/<encode(identity)>.md   legacy markdown, import-only

Realm names are case-sensitive (``Default`` and ``default`` are two realms), and a file system may not be
(macOS, Windows, a casefold ext4 folder): so the encoding writes an upper-case ASCII letter as an escape
(``Default`` -> ``%44efault``), and two realm names never give two file names that differ in case only.
Earlier versions kept upper-case letters; :meth:`AgentMemoryPaths.upgrade_file_names` renames what they
left when the store opens.

Startup refuses (:class:`~meta_memory.errors.StartupError`) while a
predecessor ledger ``elephant-memory-state.json`` sits in ``<state>``, or while
both spellings of the agent-memory root exist ("file-name twins").
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from meta_memory.errors import StartupError
from meta_memory.limits import MAX_FILE_NAME_BYTES, MAX_REALM_FILE_STEM_BYTES

__all__ = [
    "LEDGER_FILE",
    "LEDGER_STAGE_FILE",
    "PREDECESSOR_LEDGER_FILE",
    "PREDECESSOR_STAGE_FILE",
    "AGENT_MEMORY_DIR",
    "LEGACY_AGENT_MEMORY_DIR",
    "REALM_DB_SUFFIX",
    "SQLITE_SIDE_SUFFIXES",
    "MAX_REALM_FILE_STEM_BYTES",
    "SESSION_STATE_FILE",
    "EVENTS_FILE",
    "MAX_FILE_NAME_BYTES",
    "AgentMemoryPaths",
    "RealmPathError",
    "RootResolution",
    "StorageLayout",
    "adopt_command",
    "encode_path_segment",
    "legacy_encode_path_segment",
    "encoded_size",
    "FileNameUpgrade",
    "legacy_stem_realm",
    "realm_file_name_problem",
    "decode_path_segment",
]

LEDGER_FILE = "memory-ledger-state.json"
LEDGER_STAGE_FILE = "memory-ledger-state.tmp"
PREDECESSOR_LEDGER_FILE = "elephant-memory-state.json"
PREDECESSOR_STAGE_FILE = "elephant-memory-state.tmp"
AGENT_MEMORY_DIR = "agent-memory"
LEGACY_AGENT_MEMORY_DIR = "agent-memory-sqlite"
REALM_DB_SUFFIX = ".sqlite3"
#: Files SQLite keeps beside a database: ``<database>-wal``, ``-shm`` and (rollback journal) ``-journal``.
SQLITE_SIDE_SUFFIXES = ("-wal", "-shm", "-journal")
# the longest encoded realm name (limits.py) leaves room for the database file and every file beside it
if MAX_REALM_FILE_STEM_BYTES + len(REALM_DB_SUFFIX) + max(map(len, SQLITE_SIDE_SUFFIXES)) != MAX_FILE_NAME_BYTES:
    raise AssertionError("MAX_REALM_FILE_STEM_BYTES does not match the realm database's file names")
#: The session-state database (not in the realm folder, whose ``*.sqlite3`` files are realms).
SESSION_STATE_FILE = "session-state.db"
#: The timeline database.
EVENTS_FILE = "events.sqlite3"

#: Bytes a file name keeps as they are: lower-case ASCII letters, digits, ``-`` and ``_``. Upper-case letters
#: are escaped, so no two encoded names differ in case only (a case-insensitive file system would make them one).
_KEEP = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789-_")
#: What earlier versions kept (upper-case letters too): the names :meth:`AgentMemoryPaths.upgrade_file_names` renames.
_LEGACY_KEEP = _KEEP | frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_HEX = frozenset(b"0123456789abcdefABCDEF")


def _encode(value: str, keep: frozenset[int]) -> str:
    if not value:
        return "_"
    return "".join(chr(byte) if byte in keep else f"%{byte:02X}" for byte in value.encode("utf-8", "surrogatepass"))


def encode_path_segment(value: str) -> str:
    """Encode ``value`` as one safe file-name segment (reference §2C).

    Every UTF-8 byte that is not a lower-case ASCII letter, digit, ``-`` or ``_``
    becomes ``%XX`` (uppercase hex; ``Default`` -> ``%44efault``); the empty string
    becomes ``_``. The result never contains ``/``, ``\\``, ``.``, NUL or any other
    separator, so it can never name a parent or a nested path; it is ASCII (no
    Unicode normalisation changes it) and holds no upper-case letter outside an
    escape, so two distinct values never encode to names equal under case folding
    (one file on a case-insensitive file system). Lone surrogates are encoded as
    their ``surrogatepass`` bytes, so every ``str`` is accepted.
    """
    return _encode(value, _KEEP)


def legacy_encode_path_segment(value: str) -> str:
    """:func:`encode_path_segment` as earlier versions wrote it: upper-case ASCII letters kept as they are."""
    return _encode(value, _LEGACY_KEEP)


def decode_path_segment(segment: str) -> str:
    """Reverse :func:`encode_path_segment`: ``%XX`` becomes the byte; malformed escapes pass through.

    A segment whose escapes do not decode as UTF-8 is returned unchanged.
    """
    if "%" not in segment:
        return segment  # no escape: every byte passes through unchanged
    raw = segment.encode("utf-8", "surrogatepass")
    out = bytearray()
    i = 0
    while i < len(raw):
        if raw[i] == 0x25 and i + 2 < len(raw) and raw[i + 1] in _HEX and raw[i + 2] in _HEX:
            out.append(int(raw[i + 1 : i + 3], 16))
            i += 3
        else:
            out.append(raw[i])
            i += 1
    try:
        return out.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return segment  # escapes that do not spell UTF-8: not an encoding we produce


def adopt_command(state_dir: Path) -> str:
    """The shell command that adopts a predecessor ledger in ``state_dir``."""
    return f"meta-memory storage-adopt-predecessor --state-dir {shlex.quote(str(state_dir))} --apply"


class RealmPathError(ValueError):
    """A realm name that cannot be a database file name (too long once encoded)."""


def encoded_size(value: str) -> int:
    """Length in bytes of :func:`encode_path_segment` of ``value``, without building it."""
    if not value:
        return 1
    raw = value.encode("utf-8", "surrogatepass")
    return 3 * len(raw) - 2 * sum(1 for byte in raw if byte in _KEEP)


def realm_file_name_problem(realm: str) -> str | None:
    """Why ``realm`` cannot name a realm database, or ``None``: the file-name rule, the one rule for both
    stores (a PostgreSQL realm has no file, but its name must be one a SQLite installation could hold).

    The encoded name (:func:`encode_path_segment`: a byte other than a lower-case ASCII letter, digit, ``-``
    or ``_`` takes three, an upper-case letter too) must be at most :data:`MAX_REALM_FILE_STEM_BYTES` (239)
    bytes, so that ``<name>.sqlite3`` and every file SQLite creates beside it (``-journal``, the longest,
    ``-wal``, ``-shm``) fit :data:`MAX_FILE_NAME_BYTES` (255). ASCII names of at most 79 characters, and any
    of at most 19, always pass."""
    if len(realm) * 12 <= MAX_REALM_FILE_STEM_BYTES or (
            realm.isascii() and len(realm) * 3 <= MAX_REALM_FILE_STEM_BYTES):
        return None  # no character encodes to more than 12 bytes, no ASCII character to more than 3
    size = encoded_size(realm)
    if size <= MAX_REALM_FILE_STEM_BYTES:
        return None
    return (f"realm must be at most {MAX_REALM_FILE_STEM_BYTES} bytes once encoded as a file name (got {size}; "
            "a byte other than a lower-case ASCII letter, digit, '-' or '_' is written as three, '%XX'), so that the "
            f"realm's database file and the files SQLite keeps beside it ('{REALM_DB_SUFFIX}-journal', "
            f"'-wal', '-shm') fit the {MAX_FILE_NAME_BYTES}-byte file-name limit")


def realm_db_file_name(realm: str) -> str:
    """``<encode_path_segment(realm)>.sqlite3``: the realm database's file name.

    Raises:
        RealmPathError: the name breaks the file-name rule (:func:`realm_file_name_problem`: the encoded
            name is longer than 239 bytes, so a file SQLite keeps beside the database would not fit).
    """
    problem = realm_file_name_problem(realm)
    if problem is not None:
        raise RealmPathError(problem)
    return encode_path_segment(realm) + REALM_DB_SUFFIX


def legacy_stem_realm(stem: str) -> str | None:
    """The realm whose file (or markdown folder) an earlier version named ``stem`` and this version names
    otherwise (``Default`` -> realm ``Default``, now ``%44efault``), or ``None``: ``stem`` holds an
    upper-case ASCII letter outside an escape and is that realm's earlier encoding exactly."""
    if not any("A" <= ch <= "Z" for ch in stem):
        return None  # the fast path: only upper-case hex digits of escapes, or none
    realm = decode_path_segment(stem)
    if legacy_encode_path_segment(realm) != stem or encode_path_segment(realm) == stem:
        return None
    return realm


@dataclass(frozen=True, slots=True)
class FileNameUpgrade:
    """The renames :meth:`AgentMemoryPaths.upgrade_file_names` makes (or made) in one agent-memory root.

    Attributes:
        moves: ``{realm: [(old name, new name), ...]}``, in the order they are made: the files SQLite keeps
            beside a database first, the database last, then the legacy markdown folder.
        conflicts: ``{realm: (old name, new name)}``: a realm whose earlier-version name and current name
            both exist (a file of either); nothing of it is renamed and the store refuses the realm until
            one of the two is moved away.
        dropped: ``{realm: [old name, ...]}``: files beside a database being moved that hold nothing (a
            ``-shm``, an empty ``-wal`` or ``-journal``) whose new name another file holds already (what
            a cut-short start moved); they are removed, before the renames.
    """

    moves: dict[str, list[tuple[str, str]]]
    conflicts: dict[str, tuple[str, str]]
    dropped: dict[str, list[str]] = field(default_factory=dict)

    def database_move(self, realm: str) -> tuple[str, str]:
        """``(old name, new name)`` of realm ``realm``'s database in :attr:`moves` (its markdown folder's
        when it has no database)."""
        plan = self.moves[realm]
        return next((move for move in plan if move[0].endswith(REALM_DB_SUFFIX)), plan[-1])

    def conflict_message(self, realm: str) -> str:
        """What is wrong with realm ``realm`` (one of :attr:`conflicts`)."""
        old, new = self.conflicts[realm]
        return (f"realm '{realm}' has two files: {old} (the name an earlier version gave it) and {new} (its name "
                "now, upper-case letters escaped so that no two realms share a file on a case-insensitive file "
                "system); neither is merged into the other, and calls naming the realm are refused")


_SIDE_NAMES = tuple(REALM_DB_SUFFIX + suffix for suffix in SQLITE_SIDE_SUFFIXES)


def _split_realm_entry(name: str) -> tuple[str, str] | None:
    """``(stem, suffix)`` of an agent-memory root's entry: a database (``.sqlite3``), a file SQLite keeps
    beside one (``.sqlite3-wal``...), or a folder name without a dot (``""``: legacy markdown)."""
    for suffix in (REALM_DB_SUFFIX, *_SIDE_NAMES):
        if name.endswith(suffix):
            return name[: -len(suffix)], suffix
    return (name, "") if "." not in name else None


@dataclass(frozen=True, slots=True)
class AgentMemoryPaths:
    """Every path under one agent-memory root: the only place they are computed.

    The SQLite store receives this object and asks it for paths; it never builds a file name itself.

    Attributes:
        root: the agent-memory root (``<state>/agent-memory``, or any directory a caller chose).
    """

    root: Path

    def realm_db_path(self, realm: str) -> Path:
        """``<root>/<encode_path_segment(realm)>.sqlite3``; always a direct child of the root.

        Raises:
            RealmPathError: the name breaks the file-name rule (:func:`realm_file_name_problem`).
        """
        path = self.root / realm_db_file_name(realm)
        if path.parent != self.root:  # unreachable by construction; kept as a guard
            raise RealmPathError("realm name escapes the agent-memory root")
        return path

    def legacy_markdown_dir(self, realm: str) -> Path:
        """``<root>/<encode(realm)>/``: where a realm's legacy markdown files live."""
        return self.root / encode_path_segment(realm)

    def db_file_names(self) -> set[str]:
        """File names of the realm databases under the root (``*.sqlite3``)."""
        return {p.name for p in self.root.glob("*" + REALM_DB_SUFFIX)}

    def list_realms(self) -> list[str]:
        """Realms that have a database: ``*.sqlite3`` regular files in the root, stems decoded, sorted
        (a realm once, though an earlier version's file name and the current one both exist)."""
        return list(self.realm_files())

    def realm_files(self) -> dict[str, Path]:
        """``{realm: database file}``: :meth:`list_realms` with each realm's file, in one directory read
        (the current file name when an earlier version's is there too)."""
        out: dict[str, Path] = {}
        try:
            with os.scandir(self.root) as entries:
                for entry in entries:
                    if entry.name.endswith(REALM_DB_SUFFIX) and entry.is_file():
                        stem = entry.name[: -len(REALM_DB_SUFFIX)]
                        realm = decode_path_segment(stem)
                        if realm not in out or encode_path_segment(realm) == stem:
                            out[realm] = Path(entry.path)
        except (FileNotFoundError, NotADirectoryError):
            return {}
        return dict(sorted(out.items()))

    def plan_file_name_upgrade(self) -> FileNameUpgrade:
        """The renames :meth:`upgrade_file_names` would make, read from one listing of the root; changes nothing.

        An entry is judged by its name as the directory holds it (never by asking whether a name exists
        alone: on a case-insensitive file system ``Default.sqlite3`` "exists" when ``default.sqlite3``,
        another realm's file, does). A realm whose current name would break the file-name rule
        (:func:`realm_file_name_problem`) is left as it is (the doctor's ``unservable_realm_name``); files
        beside a database that is not there are left too (the doctor's ``orphan_wal``).
        """
        try:
            names = sorted(os.listdir(self.root))
        except (FileNotFoundError, NotADirectoryError):
            return FileNameUpgrade({}, {})
        present = set(names)
        found: dict[str, dict[str, str]] = {}
        for name in names:
            split = _split_realm_entry(name)
            if split is None or (realm := legacy_stem_realm(split[0])) is None:
                continue
            if split[1] == "" and not (self.root / name).is_dir():
                continue
            found.setdefault(realm, {})[split[1]] = name
        moves: dict[str, list[tuple[str, str]]] = {}
        conflicts: dict[str, tuple[str, str]] = {}
        dropped: dict[str, list[str]] = {}
        for realm, old in found.items():
            if realm_file_name_problem(realm) is not None:
                continue
            new_stem = encode_path_segment(realm)
            plan: list[tuple[str, str]] = []
            drop: list[str] = []

            def taken(new: str) -> bool:
                return new in present or os.path.lexists(self.root / new)

            if REALM_DB_SUFFIX in old:  # the files beside the database first: a crash between leaves the
                # database under its old name with the rest moved, and the next start moves the rest
                for side in (s for s in _SIDE_NAMES if s in old):
                    if taken(new_stem + side) and self._holds_nothing(old[side]):
                        drop.append(old[side])  # e.g. an empty -wal a reader of the old name made after a
                        # cut-short start had moved the real one
                    else:
                        plan.append((old[side], new_stem + side))
                plan.append((old[REALM_DB_SUFFIX], new_stem + REALM_DB_SUFFIX))
            if "" in old:
                plan.append((old[""], new_stem))
            if not plan:
                continue
            clashes = [(o, n) for o, n in plan if taken(n)]
            clash = next((c for c in clashes if c[1].endswith(REALM_DB_SUFFIX)), clashes[0] if clashes else None)
            if clash is not None:
                conflicts[realm] = clash
            else:
                moves[realm] = plan
                if drop:
                    dropped[realm] = drop
        return FileNameUpgrade(moves, conflicts, dropped)

    def _holds_nothing(self, name: str) -> bool:
        """A file beside a database that holds no data: a ``-shm`` (an index SQLite rebuilds from the
        ``-wal``) or an empty ``-wal``/``-journal``."""
        if name.endswith("-shm"):
            return True
        try:
            return (self.root / name).stat().st_size == 0
        except OSError:
            return False

    def upgrade_file_names(self) -> FileNameUpgrade:
        """Rename what an earlier version named with upper-case letters kept (``Default.sqlite3``, its
        ``-wal``, ``-shm`` and ``-journal``, the legacy markdown folder ``Default/``) to the current names
        (``%44efault.sqlite3``...), and return what was done (:meth:`plan_file_name_upgrade`).

        Each rename is one atomic ``rename`` to a name no entry holds; the files beside a database move
        before it, so after a crash the database is still under its old name, with whatever has not moved
        beside it, and the next call finishes. Nothing is overwritten or merged: a realm both of whose
        names exist is reported in ``conflicts`` and left as it is. Old and new names differ in more than
        case (an escape replaces the letter), so a case-insensitive file system keeps them apart. Run it
        where no other process has the root's databases open (the store runs it when it opens, under
        the state directory's lock).
        """
        upgrade = self.plan_file_name_upgrade()
        for names in upgrade.dropped.values():
            for name in names:
                os.unlink(self.root / name)
        for plan in upgrade.moves.values():
            for i, (old, new) in enumerate(plan):
                if old.endswith(REALM_DB_SUFFIX) and i > 0:
                    self._sync_root()  # the files beside the database are renamed on disk before it is
                if os.path.lexists(self.root / new):  # appeared since the listing: never overwrite
                    raise StartupError(f"cannot rename {old} to {new} in {self.root}: {new} exists")
                os.rename(self.root / old, self.root / new)
        if upgrade.moves:
            self._sync_root()  # the renames are durable before anything is written under the new names
        return upgrade

    def _sync_root(self) -> None:
        fd = os.open(self.root, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    @staticmethod
    def markdown_identity(path: Path) -> str:
        """The identity a legacy markdown file ``<root>/<encode(realm)>/<encode(identity)>.md`` belongs to."""
        return decode_path_segment(path.stem)


@dataclass(frozen=True, slots=True)
class RootResolution:
    """Which agent-memory root is in use: ``path`` and ``resolution`` (``"canonical"`` or ``"legacy"``)."""

    path: Path
    resolution: Literal["canonical", "legacy"]


class StorageLayout:
    """Paths and start-up checks for one persistent state directory.

    Args:
        state_dir: the ``persistent_state`` directory (need not exist yet).

    Nothing here creates files except :meth:`ensure_agent_memory_root`.
    """

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = Path(state_dir)

    # ------------------------------------------------------------------ ledger

    @property
    def ledger_path(self) -> Path:
        """``<state>/memory-ledger-state.json``: the only file the ledger reads or writes."""
        return self.state_dir / LEDGER_FILE

    @property
    def ledger_stage_path(self) -> Path:
        """``<state>/memory-ledger-state.tmp``: the ledger's stage during a write."""
        return self.state_dir / LEDGER_STAGE_FILE

    @property
    def session_state_path(self) -> Path:
        """``<state>/session-state.db`` (the SQLite store's session state)."""
        return self.state_dir / SESSION_STATE_FILE

    @property
    def events_path(self) -> Path:
        """``<state>/events.sqlite3`` (the timeline)."""
        return self.state_dir / EVENTS_FILE

    @property
    def predecessor_ledger_path(self) -> Path:
        """``<state>/elephant-memory-state.json``: a predecessor ledger that must be adopted."""
        return self.state_dir / PREDECESSOR_LEDGER_FILE

    @property
    def predecessor_stage_path(self) -> Path:
        """``<state>/elephant-memory-state.tmp``: a predecessor's interrupted write."""
        return self.state_dir / PREDECESSOR_STAGE_FILE

    # ------------------------------------------------------------------ agent memory root

    @property
    def canonical_agent_memory_root(self) -> Path:
        """``<state>/agent-memory``."""
        return self.state_dir / AGENT_MEMORY_DIR

    @property
    def legacy_agent_memory_root(self) -> Path:
        """``<state>/agent-memory-sqlite`` (legacy spelling, still readable)."""
        return self.state_dir / LEGACY_AGENT_MEMORY_DIR

    def _twins_message(self) -> str:
        return (
            f"file-name twins: both {self.canonical_agent_memory_root} and {self.legacy_agent_memory_root} "
            "exist; the agent-memory root must have one spelling. Run meta/storage/doctor "
            f"(or: meta-memory doctor --state-dir {shlex.quote(str(self.state_dir))}) for details, keep one directory "
            f"(preferably {AGENT_MEMORY_DIR}/) and move the other away"
        )

    def resolve_agent_memory_root(self) -> RootResolution:
        """Pick the agent-memory root: canonical first; the legacy spelling when it is the only one.

        When neither exists the canonical path is returned (it is created on first use).

        Raises:
            StartupError: both spellings exist ("file-name twins"), naming both
                paths and ``meta/storage/doctor``.
        """
        canonical = self.canonical_agent_memory_root
        legacy = self.legacy_agent_memory_root
        if canonical.exists() and legacy.exists():
            raise StartupError(self._twins_message())
        if legacy.exists():
            return RootResolution(legacy, "legacy")
        return RootResolution(canonical, "canonical")

    @property
    def agent_memory_root(self) -> Path:
        """The resolved agent-memory root (see :meth:`resolve_agent_memory_root`)."""
        return self.resolve_agent_memory_root().path

    def ensure_agent_memory_root(self) -> Path:
        """Create the resolved agent-memory root if missing and return it."""
        from .perms import private_dir

        return private_dir(self.agent_memory_root)

    def agent_memory_paths(self) -> AgentMemoryPaths:
        """The path authority over the resolved agent-memory root, created owner-only if missing.

        Raises:
            StartupError: file-name twins (see :meth:`resolve_agent_memory_root`).
        """
        return AgentMemoryPaths(self.ensure_agent_memory_root())

    def realm_db_path(self, realm: str) -> Path:
        """``<root>/<encode_path_segment(realm)>.sqlite3``; always a direct child of the root.

        Raises:
            RealmPathError: the name breaks the file-name rule (:func:`realm_file_name_problem`).
            StartupError: file-name twins (see :meth:`resolve_agent_memory_root`).
        """
        return AgentMemoryPaths(self.agent_memory_root).realm_db_path(realm)

    def legacy_markdown_dir(self, realm: str) -> Path:
        """``<root>/<encode(realm)>/``: where a realm's legacy markdown files live."""
        return AgentMemoryPaths(self.agent_memory_root).legacy_markdown_dir(realm)

    def list_realms(self) -> list[str]:
        """Realms that have a database: ``*.sqlite3`` in the root, stems decoded, sorted."""
        return AgentMemoryPaths(self.agent_memory_root).list_realms()

    # ------------------------------------------------------------------ checks

    def check_startup(self) -> None:
        """Refuse to start on a predecessor ledger or agent-memory file-name twins.

        Runs whether or not memory is configured.

        Raises:
            StartupError: ``elephant-memory-state.json`` exists (the message names
                the directory and the adoption command), or both agent-memory
                root spellings exist.
        """
        if self.predecessor_ledger_path.exists():
            raise StartupError(
                f"a predecessor ledger file {PREDECESSOR_LEDGER_FILE} is in the state directory "
                f"{self.state_dir}; stop every gateway using it and adopt it once with: "
                f"{adopt_command(self.state_dir)}"
            )
        self.resolve_agent_memory_root()

    def _key_findings(self) -> list[dict[str, Any]]:
        """The doctor's key-file checks (:mod:`.keys`): every ``*.key`` at the root reads as a key of this
        user, not writable by others (``unusable_key_file``), and is owner-only (``exposed_key_file``)."""
        from .keys import is_key_file, key_file_exposed, key_file_problem

        findings: list[dict[str, Any]] = []
        try:
            names = sorted(name for name in os.listdir(self.state_dir) if is_key_file(Path(name)))
        except OSError:
            return findings  # an unreadable directory is the other checks' finding
        for path in (self.state_dir / name for name in names):
            if (problem := key_file_problem(path)) is not None:
                findings.append({
                    "kind": "unusable_key_file", "severity": "error", "paths": [str(path)],
                    "message": (f"{problem}: the installation cannot use this key (exports it signed no longer "
                                "verify as its own; session-key digests change on every start)"),
                    "fix": (f"with the gateway stopped, restore {path.name} from a backup (its backup-manifest.json "
                            "lists it as kind key), owner-only: chmod 600; without a backup, move it away and a "
                            "new key is made on first use (older exports then import as untrusted input)"),
                })
            elif key_file_exposed(path):
                findings.append({
                    "kind": "exposed_key_file", "severity": "warning", "paths": [str(path)],
                    "message": f"{path.name} may be read by its group or other users (a copy that lost its mode?)",
                    "fix": f"chmod 600 {shlex.quote(str(path))}",
                })
        return findings

    def _health_findings(self, thorough: bool, min_free_disk_mb: int | None) -> list[dict[str, Any]]:
        """The doctor's store checks: the ledger decodes, every database reads, no ``-wal`` is orphaned,
        the disk has room (see :meth:`doctor`)."""
        from ..errors import StartupError
        from ..ledger import persistence
        from .disk import DEFAULT_MIN_FREE_MB, disk_space, not_writable
        from .integrity import header_problem, orphan_wals, probe

        findings: list[dict[str, Any]] = []
        # SQLite cannot open a WAL database of a directory it may not write (not even to read it): there,
        # only the headers are read, and the directory itself is the finding, never "damaged" databases
        why = not_writable(self.state_dir)
        writable = why is None
        if why is not None:
            findings.append({
                "kind": "state_dir_read_only", "severity": "blocks_startup", "paths": [str(self.state_dir)],
                "message": (f"{self.state_dir} is read-only ({why}): a gateway cannot start on it, nor can a "
                            "command read it with --state-dir; its databases are checked here by their headers "
                            "only, and its disk's free space is not judged (nothing can be written there)"),
                "fix": ("mount it read-write, or run as a user that may write it; to read it meanwhile, copy the "
                        "directory to a writable place (`cp -a`) and give the copy as --state-dir; its files are "
                        "not damaged by this"),
            })

        # on a full disk SQLite cannot create a database's side files, not even to read it: a database that
        # cannot be opened there is judged by its header, and the disk is the finding (low_disk, below)
        space = disk_space(self.state_dir) if writable else None  # read-only is not full (reported above)
        full = space is not None and space.full

        def check(path: Path) -> str | None:
            if not writable:
                return header_problem(path)
            problem = probe(path, full=thorough)
            if full and problem is not None and problem.startswith("cannot be"):
                return header_problem(path)
            return problem

        if self.ledger_path.is_file():
            try:
                persistence.load(self.ledger_path)
            except StartupError as exc:
                findings.append({
                    "kind": "malformed_ledger", "severity": "blocks_startup", "paths": [str(self.ledger_path)],
                    "message": str(exc),
                    "fix": (f"restore {LEDGER_FILE} from a backup, or fix the entry the message names by hand; "
                            "moving the file away starts an empty ledger"),
                })
        own = [(self.session_state_path, "the session state (taint, reset marks, injection budgets)",
                "moving it away starts every session clean"),
               (self.events_path, "the timeline", "moving it away starts an empty timeline; memory is not affected")]
        for path, holds, away in own:
            if path.is_file() and (problem := check(path)) is not None:
                findings.append({
                    "kind": "damaged_database", "severity": "blocks_startup", "paths": [str(path)],
                    "message": f"{path.name} ({holds}) {problem}",
                    "fix": f"with the gateway stopped, restore {path.name} from a backup; {away}",
                })
        roots = [r for r in (self.canonical_agent_memory_root, self.legacy_agent_memory_root) if r.is_dir()]
        for root in roots:
            for db in sorted(p for p in root.iterdir() if p.name.endswith(REALM_DB_SUFFIX) and p.is_file()):
                realm = decode_path_segment(db.name[: -len(REALM_DB_SUFFIX)])
                if (bad_name := realm_file_name_problem(realm)) is not None:
                    findings.append({
                        "kind": "unservable_realm_name", "severity": "error", "paths": [str(db)],
                        "message": (f"{db.name} names a realm the gateway cannot serve: {bad_name}; every call "
                                    "naming it is refused, and the listings of every realm leave it out"),
                        "fix": ("with the gateway stopped, move the file out of the folder (an empty one, "
                                "0 bytes, holds nothing); one with records: rename it to a shorter realm name "
                                "(its encoded name, .sqlite3 kept)"),
                    })
                    continue
                problem = check(db)
                if problem is None:
                    continue
                findings.append({
                    "kind": "damaged_database", "severity": "error", "paths": [str(db)],
                    "message": (f"the database of realm '{realm}' {problem}; the gateway starts, answers "
                                "/v1/ready with 503 and refuses this realm's calls (reason corrupt)"),
                    "fix": (f"with the gateway stopped, restore {db.name} from a backup. A damaged (not overwritten) "
                            f"file may be salvaged with `sqlite3 {shlex.quote(db.name)} .recover`; moving it out of "
                            "the folder starts the realm empty"),
                })
        # a -wal already renamed while its database waits under its earlier name (a start cut short; the
        # next start renames the database to it): earlier_realm_file_name, not an orphan
        renaming = {root / new for root in roots for plan in AgentMemoryPaths(root).plan_file_name_upgrade().moves.values()
                    for _, new in plan}
        for folder, suffix in [(self.state_dir, ".db"), (self.state_dir, ".sqlite3"),
                               *((root, REALM_DB_SUFFIX) for root in roots)]:
            for wal in orphan_wals(folder, suffix):
                if wal.with_name(wal.name[:-4]) in renaming:
                    continue
                findings.append({
                    "kind": "orphan_wal", "severity": "error", "paths": [str(wal)],
                    "message": (f"{wal.name} is a write-ahead log whose database {wal.name[:-4]} is missing: the "
                                "transactions it holds are in no database"),
                    "fix": (f"with the gateway stopped, put {wal.name[:-4]} back beside it if you have it (its "
                            "transactions are then replayed into it at the next start); otherwise move the -wal "
                            "away, accepting the loss of what only it held"),
                })
        floor = DEFAULT_MIN_FREE_MB if min_free_disk_mb is None else min_free_disk_mb
        if space is not None and (space.free_mb < floor or full):
            findings.append({
                "kind": "low_disk", "severity": "error" if full else "warning", "paths": [space.mount],
                "message": (f"{space.describe()}: " + (
                    "full: a running gateway refuses every write (reason disk_full) and keeps answering reads, "
                    "but neither a gateway nor a command with --state-dir can start on the directory (SQLite "
                    "cannot create the databases' side files, not even to read them); a database that cannot "
                    "be opened here is checked by its header only" if full
                    else f"below the floor of {floor} MiB ([gateway] min_free_disk_mb)")),
                "fix": (f"free space on the disk mounted at {space.mount} or grow it"
                        + ("; the databases are not damaged by this" if full else "")),
            })
        return findings

    def slots(self) -> list[dict[str, Any]]:
        """Every storage slot: ``[{slot, path, durability, resolution}, ...]``.

        Slots: ``ledger`` (durability ``durable-fsync-replace``), ``agent-memory-root``
        (``directory``; ``canonical`` or ``legacy``; both listed when twins exist)
        and one ``realm:<name>`` per realm database (``sqlite-wal``, ``derived``).
        Paths are strings. Never raises on twins.
        """
        slots: list[dict[str, Any]] = [
            {
                "slot": "ledger",
                "path": str(self.ledger_path),
                "durability": "durable-fsync-replace",
                "resolution": "canonical",
                "exists": self.ledger_path.is_file(),
            }
        ]
        canonical = self.canonical_agent_memory_root
        legacy = self.legacy_agent_memory_root
        roots: list[tuple[Path, str]]
        if canonical.exists() and legacy.exists():
            roots = [(canonical, "canonical"), (legacy, "legacy")]
        elif legacy.exists():
            roots = [(legacy, "legacy")]
        else:
            roots = [(canonical, "canonical")]
        for root, resolution in roots:
            slots.append(
                {
                    "slot": "agent-memory-root",
                    "path": str(root),
                    "durability": "directory",
                    "resolution": resolution,
                    "exists": root.is_dir(),
                }
            )
            if root.is_dir():
                for db in sorted(p for p in root.iterdir() if p.name.endswith(REALM_DB_SUFFIX)):
                    realm = decode_path_segment(db.name[: -len(REALM_DB_SUFFIX)])
                    slots.append(
                        {
                            "slot": f"realm:{realm}",
                            "path": str(db),
                            "durability": "sqlite-wal",
                            "resolution": "derived",
                            "exists": True,
                        }
                    )
        return slots

    def _partial_backup_findings(self, backup_dirs: list[Path]) -> list[dict[str, Any]]:
        """The working copies killed backups left (:func:`.backup.stale_partials`) in ``backup_dirs`` and
        beside the state directory (where a backup is often written)."""
        from .backup import stale_partials

        findings: list[dict[str, Any]] = []
        seen: set[Path] = set()
        for directory in [self.state_dir.resolve().parent, *backup_dirs]:
            where = Path(os.path.abspath(directory))
            if where in seen:
                continue
            seen.add(where)
            for path in stale_partials(where):
                findings.append({
                    "kind": "partial_backup", "severity": "warning", "paths": [str(path)],
                    "message": (f"{path.name} in {where} is the unfinished working copy of a backup that was "
                                "killed (or whose machine stopped) while it copied: it is not a backup, and it "
                                "holds copies of the installation's data and keys"),
                    "fix": (f"remove it (rm -r {shlex.quote(str(path))}); the next backup written into {where} "
                            "also removes it"),
                })
        return findings

    def doctor(self, *, thorough: bool = False, min_free_disk_mb: int | None = None,
               backup_dirs: list[Path] | None = None) -> dict[str, Any]:
        """Inspect the state directory without changing it (``meta/storage/doctor``, ``meta-memory doctor``;
        reading a database may leave the empty ``-wal``/``-shm`` files SQLite keeps beside it).

        Args:
            thorough: also run ``PRAGMA quick_check`` on every database (reads each whole file; the
                command line does it unless ``--quick``); otherwise header and schema page only.
            min_free_disk_mb: report ``low_disk`` below this much free space (``None``: the default
                ``[gateway] min_free_disk_mb``; ``0``: only a full disk).
            backup_dirs: directories backups are written into (``[gateway] backup_dir``, ``--backup-dir``),
                searched for ``partial_backup`` leftovers besides the state directory's parent.

        Returns:
            ``{state_dir, ok, slots, findings}`` where each finding is
            ``{kind, severity, paths, message, fix}``. Kinds:
            ``predecessor_ledger`` (blocks start-up), ``file_name_twins`` (blocks
            start-up), ``leftover_stage`` (a ``.tmp`` from an interrupted write),
            ``non_canonical_realm_file`` (a ``*.sqlite3`` whose name is not the
            encoding of its decoded realm: it would never be opened),
            ``earlier_realm_file_name`` (``warning``: a realm's database or markdown
            folder under the name an earlier version gave it, upper-case letters
            kept; the next start renames it), ``realm_file_name_conflict``
            (``error``: that name and the current one both exist; the realm is
            refused until one is moved away),
            ``state_dir_missing`` / ``state_dir_not_a_directory`` (severity
            ``error``: there is nothing to inspect; usually a mistyped path),
            ``malformed_ledger`` (blocks start-up), ``damaged_database`` (a realm
            database: ``error``, its realm's calls are refused; the session-state or
            timeline database: blocks start-up) for a file that is not a database,
            truncated, or fails its checks, ``orphan_wal`` (``error``: a ``-wal``
            whose database is missing), ``low_disk`` (``warning`` below the floor,
            ``error`` when full), ``state_dir_read_only`` (blocks start-up: the directory
            is not writable; its databases are then checked by their headers only),
            ``unusable_key_file`` (``error``: an installation key file, :mod:`.keys`, that is not
            a regular file of this user holding a key, or that others may write) and
            ``exposed_key_file`` (``warning``: one its group or other users may read) and
            ``partial_backup`` (``warning``: the working copy ``.<name>.partial-<hex>`` of a backup that
            was killed, no backup holding it: :func:`.backup.stale_partials`).
            ``ok`` is false when any finding blocks start-up or is an ``error``.
        """
        findings: list[dict[str, Any]] = []
        if not self.state_dir.is_dir():
            missing = not self.state_dir.exists()
            findings.append(
                {
                    "kind": "state_dir_missing" if missing else "state_dir_not_a_directory",
                    "severity": "error",
                    "paths": [str(self.state_dir)],
                    "message": f"{self.state_dir} {'does not exist' if missing else 'is not a directory'}",
                    "fix": "check the --state-dir path; a gateway creates the directory on its first start",
                }
            )
            return {"state_dir": str(self.state_dir), "ok": False, "slots": self.slots(), "findings": findings}
        if self.predecessor_ledger_path.exists():
            findings.append(
                {
                    "kind": "predecessor_ledger",
                    "severity": "blocks_startup",
                    "paths": [str(self.predecessor_ledger_path)],
                    "message": f"a predecessor ledger is in {self.state_dir}",
                    "fix": f"stop every gateway using this directory, then run: {adopt_command(self.state_dir)}",
                }
            )
        canonical = self.canonical_agent_memory_root
        legacy = self.legacy_agent_memory_root
        if canonical.exists() and legacy.exists():
            findings.append(
                {
                    "kind": "file_name_twins",
                    "severity": "blocks_startup",
                    "paths": [str(canonical), str(legacy)],
                    "message": "both spellings of the agent-memory root exist",
                    "fix": (
                        f"stop the gateway, keep one directory (preferably {AGENT_MEMORY_DIR}/): move the realm "
                        f"databases you want to keep into it, then move {LEGACY_AGENT_MEMORY_DIR}/ out of "
                        "the state directory"
                    ),
                }
            )
        for stage in (self.ledger_stage_path, self.predecessor_stage_path):
            if stage.exists():
                findings.append(
                    {
                        "kind": "leftover_stage",
                        "severity": "warning",
                        "paths": [str(stage)],
                        "message": f"{stage.name} is left over from an interrupted write",
                        "fix": (
                            f"with the gateway stopped, the committed file is the .json beside it; "
                            f"inspect {stage.name}, then delete it"
                        ),
                    }
                )
        findings.extend(self._key_findings())
        findings.extend(self._health_findings(thorough, min_free_disk_mb))
        findings.extend(self._partial_backup_findings(list(backup_dirs or [])))
        for root in (canonical, legacy):
            if not root.is_dir():
                continue
            upgrade = AgentMemoryPaths(root).plan_file_name_upgrade()
            for realm, (old_name, new_name) in upgrade.conflicts.items():
                findings.append({
                    "kind": "realm_file_name_conflict", "severity": "error",
                    "paths": [str(root / old_name), str(root / new_name)],
                    "message": upgrade.conflict_message(realm),
                    "fix": (f"with the gateway stopped, look into both (each may hold records of realm '{realm}'), "
                            f"keep the one to serve under the name {new_name} (with its -wal beside it) and move "
                            "the other out of the folder; a realm's records can be carried from one state "
                            "directory to another with meta-memory export and import"),
                })
            for realm, plan in upgrade.moves.items():
                old_name, new_name = upgrade.database_move(realm)
                findings.append({
                    "kind": "earlier_realm_file_name", "severity": "warning",
                    "paths": [str(root / name) for name, _ in plan],
                    "message": (f"realm '{realm}' is stored under the name an earlier version gave it "
                                f"({old_name}); the next start renames it to {new_name} "
                                "(upper-case letters escaped, so that no two realms share a file on a "
                                "case-insensitive file system)"),
                    "fix": "nothing to do: start the gateway (or any command on the state directory) once",
                })
            for db in sorted(p for p in root.iterdir() if p.name.endswith(REALM_DB_SUFFIX)):
                stem = db.name[: -len(REALM_DB_SUFFIX)]
                if legacy_stem_realm(stem) is not None:
                    continue  # an earlier version's name: reported above, or unservable_realm_name
                if encode_path_segment(decode_path_segment(stem)) != stem:
                    findings.append(
                        {
                            "kind": "non_canonical_realm_file",
                            "severity": "warning",
                            "paths": [str(db)],
                            "message": f"{db.name} is not the canonical file name of any realm",
                            "fix": (
                                "rename it to "
                                f"{encode_path_segment(decode_path_segment(stem))}{REALM_DB_SUFFIX} "
                                "or move it out of the root"
                            ),
                        }
                    )
        return {
            "state_dir": str(self.state_dir),
            "ok": not any(f["severity"] in ("blocks_startup", "error") for f in findings),
            "slots": self.slots(),
            "findings": findings,
        }
