"""The export file's integrity check: an HMAC-SHA256 per line under an installation's export key.

Every line of a signed export (format version 2) ends with ``"mac": "<64 hex>"``: the HMAC-SHA256,
under the export key, of the format tag, the header's random ``export_id``, the line's number in the
file and the SHA-256 of the line's bytes without its ``mac`` member. The header names the export and
its key (``export_id``, ``key_id``); a closing line ``{"type": "end", "lines": N}`` states how many
lines precede it. So a line edited, moved, dropped, added or spliced in from another export, a file
cut short, or a file signed with another key does not verify.

The key (32 random bytes, stored as 64 hex characters) is the installation's:

- with the SQLite store (or without agent memory), ``<state-dir>/export.key``, created owner-only
  (``0600``) by the first export;
- with the PostgreSQL store, in the store's schema (``installation_keys``), created by the first
  export through any gateway's configuration: every state directory on that database is one installation.

A read-only gateway (``[access] read_only = true``) never creates it: its exports sign with an existing key
or are refused (``portability/remote.py``).

``--key-file PATH`` names a key file instead (created owner-only when an export names one that does
not exist): the way to move exports between installations (``docs/security.md``, "Exports").
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import AgentMemoryError
from ..storage.keys import EXPORT_KEY_FILE, SESSION_DIGEST_KEY_FILE, KeyFileError, parse_key_hex, read_key_text
from ..storage.perms import create_private_file

if TYPE_CHECKING:
    from ..runtime import Runtime

__all__ = ["DIGEST_KEY_FILE", "KEY_FILE", "ExportKey", "KeyFileError", "LineSigner", "installation_key", "key_file", "split_mac",
           "line_digest", "session_digest_secret"]

#: The installation's key file in the state directory (SQLite installations; :mod:`meta_memory.storage.keys`).
KEY_FILE = EXPORT_KEY_FILE
#: The name of the export key among the PostgreSQL store's installation keys.
_SECRET_NAME = "export"
_TAG = b"meta-memory-export/2"
_log = logging.getLogger(__name__)
_SIGNED = re.compile(rb'(.*),"mac":"([0-9a-f]{64})"\}')


@dataclass(frozen=True, slots=True)
class ExportKey:
    """An export key: ``secret`` (32 bytes) and its public ``key_id`` (16 hex characters, named in the
    header so an import can say which key a file was signed with)."""

    secret: bytes
    where: str

    @property
    def key_id(self) -> str:
        return hashlib.sha256(b"meta-memory export key id\0" + self.secret).hexdigest()[:16]

    @classmethod
    def parse(cls, text: str, where: str) -> ExportKey:
        """The key in ``text`` (64 lowercase hex characters, surrounding whitespace ignored). Raises
        :class:`KeyFileError` naming ``where``."""
        return cls(parse_key_hex(text, where, "an export key"), where)

    @classmethod
    def new(cls, where: str) -> ExportKey:
        return cls(secrets.token_bytes(32), where)

    def text(self) -> str:
        return self.secret.hex() + "\n"


def key_file(path: Path, *, create: bool, label: str | None = None) -> ExportKey:
    """The key in ``path``; with ``create``, a new key written there owner-only (``0600``) when the
    file does not exist. ``label`` says whose key it is in reports (default: ``the key file <path>``).
    Raises :class:`KeyFileError` naming the file and the rule."""
    where = label or f"the key file {path}"
    try:
        key = ExportKey.parse(read_key_text(path), str(path))
        return ExportKey(key.secret, where)
    except FileNotFoundError:
        if not create:
            raise KeyFileError(f"{path}: no such key file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise KeyFileError(f"{path}: cannot read the key file: {exc.strerror if isinstance(exc, OSError) else exc}") from None
    key = ExportKey.new(where)
    try:
        created = create_private_file(path, key.text().encode("ascii"))
    except OSError as exc:
        raise KeyFileError(f"{path}: cannot create the key file: {exc.strerror}") from None
    return key if created else key_file(path, create=False, label=label)  # another export made it meanwhile


def installation_key(runtime: Runtime, *, create: bool) -> ExportKey | None:
    """The installation's export key (see the module doc); ``None`` when it has none yet and ``create``
    is false. Raises :class:`KeyFileError`, or ``AgentMemoryError`` from the PostgreSQL store."""
    feature = runtime.agent_memory
    store = feature.store if feature is not None else None
    if store is not None and store.keeps_installation_secrets:
        text = store.installation_secret(_SECRET_NAME, ExportKey.new("").secret.hex() if create else None)
        if text is None:
            return None
        key = ExportKey.parse(text, "the export key in the agent-memory database")
        return ExportKey(key.secret, "this installation's export key (in the agent-memory database)")
    if runtime.state_dir is None:
        raise KeyFileError("this runtime has no state directory to keep an export key in (pass --key-file)")
    path = runtime.state_dir / KEY_FILE
    if not create and not path.exists():
        return None
    return key_file(path, create=create, label=f"this installation's export key ({path})")


#: The session-digest secret's file in the state directory (SQLite installations).
DIGEST_KEY_FILE = SESSION_DIGEST_KEY_FILE
#: Its name among the PostgreSQL store's installation keys.
_DIGEST_SECRET_NAME = "session_digest"


def session_digest_secret(runtime: Runtime) -> bytes:
    """The installation's session-digest secret, the key of every session-key digest a reader is shown
    (:func:`~meta_memory.session_ref.session_key_digest`), made on first use like the export key (a
    separate one: an export key may be carried to other installations) and kept beside it: in the
    PostgreSQL store's ``installation_keys`` (``session_digest``), else ``<state-dir>/session-digest.key``
    (owner-only). So a session's digest stays the same across restarts of one installation. Without a
    state directory, or when it cannot be read or made, a random secret of this process (digests then
    change on restart; logged): :func:`installation_session_digest_secret` tells the two apart."""
    secret = installation_session_digest_secret(runtime)
    return secret if secret is not None else secrets.token_bytes(32)


def installation_session_digest_secret(runtime: Runtime) -> bytes | None:
    """:func:`session_digest_secret` when it is the installation's (stable across restarts), else ``None``:
    no state directory, or the secret could not be read or made (logged)."""
    feature = runtime.agent_memory
    store = feature.store if feature is not None else None
    try:
        if store is not None and store.keeps_installation_secrets:
            text = store.installation_secret(_DIGEST_SECRET_NAME, ExportKey.new("").secret.hex())
            if text is not None:
                return ExportKey.parse(text, "the session-digest secret in the agent-memory database").secret
        elif runtime.state_dir is not None:
            return key_file(runtime.state_dir / DIGEST_KEY_FILE, create=True).secret
        else:
            return None
    except (KeyFileError, AgentMemoryError, OSError) as exc:
        _log.warning("session-key digests use a secret of this process (they change on restart): %s", exc)
    return None


def line_digest(signed: bytes) -> bytes:
    """The SHA-256 of a line's bytes without its ``mac`` member (what the MAC covers)."""
    return hashlib.sha256(signed).digest()


def _mac(key: ExportKey, export_id: str, number: int, digest: bytes) -> str:
    message = b"\0".join((_TAG, export_id.encode("ascii"), str(number).encode("ascii"), digest))
    return hmac.new(key.secret, message, hashlib.sha256).hexdigest()


def split_mac(raw: bytes) -> tuple[bytes, str] | None:
    """``(the line without its mac member, the mac)`` of a signed line, or ``None`` when it carries none
    (the ``mac`` member is always written last)."""
    m = _SIGNED.fullmatch(raw.rstrip(b"\r"))
    return (m.group(1) + b"}", m.group(2).decode("ascii")) if m else None


class LineSigner:
    """Signs the lines of one export: :meth:`sign` line ``number`` (1-based, as it will stand in the file)."""

    def __init__(self, key: ExportKey, export_id: str | None = None) -> None:
        self.key = key
        self.export_id = export_id or secrets.token_hex(16)

    def sign(self, number: int, line: str) -> str:
        """``line`` (compact JSON of an object, ending in ``}``) with its ``mac`` member appended."""
        mac = _mac(self.key, self.export_id, number, line_digest(line.encode("utf-8")))
        return f'{line[:-1]},"mac":"{mac}"}}'

    def verifies(self, number: int, digest: bytes, mac: str) -> bool:
        """Whether ``mac`` is line ``number``'s MAC of a line with SHA-256 ``digest``."""
        return hmac.compare_digest(_mac(self.key, self.export_id, number, digest), mac)
