"""The installation's key files in the state directory: which files they are and how one is read.

A SQLite installation keeps its secrets as key files at the root of its state directory, each 32 random
bytes written as 64 lowercase hexadecimal characters and a newline, owner-only (``0600``), made on first
use (:mod:`meta_memory.portability.signing`):

- ``export.key`` (:data:`EXPORT_KEY_FILE`): signs the installation's exports, so an import verifies a
  file as its own;
- ``session-digest.key`` (:data:`SESSION_DIGEST_KEY_FILE`): keys the session-key digests
  (``key:<8 hex>``) a reader is shown in place of a session key.

Every ``*.key`` file at the root (:func:`is_key_file`) is one: a backup copies them as kind ``key``
(:mod:`.backup`) and the doctor checks them (:func:`key_file_problem`, :func:`key_file_exposed`). With
the PostgreSQL store the same secrets are rows of the schema's ``installation_keys`` table instead.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

__all__ = ["EXPORT_KEY_FILE", "KEY_FILE_SUFFIX", "MAX_KEY_FILE_BYTES", "SESSION_DIGEST_KEY_FILE", "KeyFileError",
           "is_key_file", "key_file_exposed", "key_file_problem", "parse_key_hex", "read_key_text"]

#: The export key's file (SQLite installations).
EXPORT_KEY_FILE = "export.key"
#: The session-digest secret's file (SQLite installations).
SESSION_DIGEST_KEY_FILE = "session-digest.key"
#: The suffix of a key file at the root of a state directory.
KEY_FILE_SUFFIX = ".key"
#: The most a key file is read (a key is 65 bytes): a huge file, a device or a pipe named by mistake is refused.
MAX_KEY_FILE_BYTES = 4096
_HEX64 = re.compile(r"[0-9a-f]{64}")


class KeyFileError(ValueError):
    """A key file that cannot be read, created or parsed; the message names the file and the rule."""


def is_key_file(rel: Path) -> bool:
    """Whether ``rel`` (a path relative to the state directory) is one of the installation's key files:
    a ``*.key`` file at the root."""
    return len(rel.parts) == 1 and rel.name.endswith(KEY_FILE_SUFFIX) and rel.name != KEY_FILE_SUFFIX


def _writers(mode: int) -> str:
    return " and ".join(who for who, bit in (("its group", stat.S_IWGRP), ("other users", stat.S_IWOTH)) if mode & bit)


def read_key_text(path: Path) -> str:
    """The text of a regular file of this user of at most :data:`MAX_KEY_FILE_BYTES` (opened without
    blocking, so a pipe or device named by mistake cannot stall the command; a file another user owns,
    planted where the key was to be made, is refused: they may know the key; so is a file its group or
    other users may write, who could put their own key in it). Raises ``OSError`` or
    :class:`KeyFileError`."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise KeyFileError(f"{path}: not a regular file")
        if hasattr(os, "geteuid") and info.st_uid != os.geteuid():
            raise KeyFileError(f"{path}: the key file belongs to another user (uid {info.st_uid}), who may know the "
                               "key and sign any file with it; make the key yourself (a new path) and carry it")
        if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise KeyFileError(f"{path}: the key file is writable by {_writers(info.st_mode)} (mode "
                               f"{stat.S_IMODE(info.st_mode):04o}), who could replace the key with one they know; "
                               f"make it writable by you alone (chmod go-w)")
        data = fh.read(MAX_KEY_FILE_BYTES + 1)
    if len(data) > MAX_KEY_FILE_BYTES:
        raise KeyFileError(f"{path}: larger than a key file ({MAX_KEY_FILE_BYTES} bytes at most)")
    return data.decode("ascii")


def parse_key_hex(text: str, where: str, what: str = "a key") -> bytes:
    """The 32-byte key in ``text`` (64 hex characters, surrounding whitespace ignored, case folded).
    Raises :class:`KeyFileError` naming ``where`` and the rule (``what``: whose key it is)."""
    value = text.strip().lower()
    if not _HEX64.fullmatch(value):
        raise KeyFileError(f"{where}: {what} is 64 hexadecimal characters (32 bytes)")
    return bytes.fromhex(value)


def key_file_problem(path: Path) -> str | None:
    """Why the installation cannot use the key file ``path`` (the rule :func:`read_key_text` and
    :func:`parse_key_hex` apply when it is read), or ``None`` when it reads as a key. A symbolic link
    is a problem: a key file is the installation's own."""
    if path.is_symlink():
        return f"{path}: a symbolic link, not the installation's own key file"
    try:
        parse_key_hex(read_key_text(path), str(path))
    except KeyFileError as exc:
        return str(exc)
    except (OSError, UnicodeDecodeError) as exc:
        return f"{path}: cannot read the key file: {exc.strerror if isinstance(exc, OSError) else 'not ASCII text'}"
    return None


def key_file_exposed(path: Path) -> bool:
    """Whether the key file ``path`` may be read by its group or other users (its mode is not owner-only)."""
    try:
        return bool(path.lstat().st_mode & (stat.S_IRWXG | stat.S_IRWXO))
    except OSError:
        return False
