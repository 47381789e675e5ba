"""The console's per-realm summaries kept across a restart: ``<state>/panel-summaries.json``.

Seed: "Console Memory panel" (every read of every realm). The first every-realm read after a start would
otherwise open every realm once (seconds at a thousand realms); with this file it opens only the realms
whose files changed since the previous process read them.

* Written when the gateway stops (after the store has closed), atomically: a stage file, ``fsync``, rename,
  ``fsync`` of the directory. It holds, per served realm, the
  :class:`~meta_memory.storage.integrity.FileSignature` of its files (size, modification time,
  inode, change time and device of each) and the summaries read from exactly
  those files: newest keys ``(time, memory id)``, scope rows (counts and bytes), scopes, whether quarantine
  evidence exists, the newest injection-ledger row, and "none" answers. Never a record's title, body or
  other text: what an erase removes from a realm is not left here (a newest row holding text is read again
  after a restart instead). At most :data:`MAX_FILE_BYTES`; realms past it are left out (read as before).
* Read once when the gateway starts, then removed: while the gateway runs nothing of it stays on disk, and a
  gateway that stops without writing it (killed) starts the next time with every realm read.
* Used for a realm only when the realm's files have exactly the stored signature when first asked for
  (:meth:`~meta_memory.panel.realm_memo.RealmMemo.restore`); a realm written by anyone in between is read.
* A file that is damaged, cut short, of another format version or another package version, of another
  agent-memory root, or of any unexpected shape is ignored whole, with a warning: every realm is read.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
from collections.abc import Callable, Hashable, Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

from .. import __version__
from ..agent_memory.store.panel_reads import InjectionLedgerRow, ScopeOverviewRow
from ..storage.integrity import FileSignature, FileStat
from .cursor import Cursor
from .paging import RealmHead

__all__ = ["FILE_NAME", "FORMAT", "MAX_FILE_BYTES", "VERSION", "decode", "encode", "load", "save"]

log = logging.getLogger("meta_memory.panel")

#: The file's name in the state directory.
FILE_NAME = "panel-summaries.json"
FORMAT = "meta-memory.panel-summaries"
#: The file's format version: a file of another version is ignored.
VERSION = 1
#: The file is never larger: realms past it are left out when writing, and a larger file is ignored.
MAX_FILE_BYTES = 64 * 1024 * 1024
#: Bounds a file's shape must keep (larger lists are a tampered file): keys of a head, rows of a realm.
_MAX_KEYS = 1000
_MAX_ROWS = 100_000

_SCOPE_INTS = ("body_bytes", "floor_records", "floor_bytes", "quarantined_body_bytes", "quarantined_floor_records",
               "quarantined_floor_bytes")
_SCOPE_COUNTS = ("counts", "quarantined_counts", "trust_counts", "quarantined_trust_counts")


class _Shape(ValueError):
    """The file is not of the expected shape."""


def _int(value: Any) -> int:
    if type(value) is not int:
        raise _Shape("expected an integer")
    return value


def _str(value: Any) -> str:
    if type(value) is not str:
        raise _Shape("expected a string")
    return value


def _list(value: Any, most: int) -> list[Any]:
    if type(value) is not list or len(value) > most:
        raise _Shape("expected a list")
    return value


def _dict(value: Any, keys: set[str] | frozenset[str]) -> dict[str, Any]:
    if type(value) is not dict or set(value) != keys:
        raise _Shape(f"expected an object with {sorted(keys)}")
    return value


# --------------------------------------------------------------------------- summaries


def _head_out(head: RealmHead) -> dict[str, Any]:
    return {"keys": [[k.updated_at_ms, k.memory_id] for k in head.keys], "complete": head.complete}


def _head_in(value: Any) -> RealmHead:
    d = _dict(value, {"keys", "complete"})
    keys = []
    for k in _list(d["keys"], _MAX_KEYS):
        pair = _list(k, 2)
        if len(pair) != 2:
            raise _Shape("a key is [time, id]")
        keys.append(Cursor(_int(pair[0]), _str(pair[1])))
    if type(d["complete"]) is not bool:
        raise _Shape("complete is a boolean")
    return RealmHead(tuple(keys), d["complete"])


def _scope_row_out(row: ScopeOverviewRow) -> dict[str, Any]:
    out: dict[str, Any] = {"scope_kind": row.scope_kind, "scope_key": row.scope_key}
    out.update({name: getattr(row, name) for name in _SCOPE_INTS})
    out.update({name: dict(getattr(row, name)) for name in _SCOPE_COUNTS})
    return out


_SCOPE_KEYS = frozenset({"scope_kind", "scope_key", *_SCOPE_INTS, *_SCOPE_COUNTS})


def _counts_in(value: Any) -> dict[str, int]:
    if type(value) is not dict or len(value) > _MAX_KEYS:
        raise _Shape("counts are an object")
    return {_str(k): _int(v) for k, v in value.items()}


def _scope_row_in(realm: str, value: Any) -> ScopeOverviewRow:
    d = _dict(value, _SCOPE_KEYS)
    return ScopeOverviewRow(
        realm=realm, scope_kind=_str(d["scope_kind"]), scope_key=_str(d["scope_key"]),
        counts=_counts_in(d["counts"]), body_bytes=_int(d["body_bytes"]), floor_records=_int(d["floor_records"]),
        floor_bytes=_int(d["floor_bytes"]), quarantined_counts=_counts_in(d["quarantined_counts"]),
        quarantined_body_bytes=_int(d["quarantined_body_bytes"]),
        quarantined_floor_records=_int(d["quarantined_floor_records"]),
        quarantined_floor_bytes=_int(d["quarantined_floor_bytes"]), trust_counts=_counts_in(d["trust_counts"]),
        quarantined_trust_counts=_counts_in(d["quarantined_trust_counts"]))


def _injection_out(row: InjectionLedgerRow) -> dict[str, Any]:
    return {"injection_id": row.injection_id, "record_id": row.record_id, "identity": row.identity,
            "session_key": row.session_key, "surface": row.surface, "at_ms": row.at_ms}


def _injection_in(realm: str, value: Any) -> InjectionLedgerRow:
    d = _dict(value, _INJECTION_KEYS)
    session = d["session_key"]
    return InjectionLedgerRow(realm, _int(d["injection_id"]), _str(d["record_id"]), _str(d["identity"]),
                              None if session is None else _str(session), _str(d["surface"]), _int(d["at_ms"]))


_INJECTION_KEYS = frozenset({"injection_id", "record_id", "identity", "session_key", "surface", "at_ms"})


def _fields(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in fields(cls))


#: A row type whose fields are not exactly those this file writes (a later field) is not kept here at all,
#: so a row read back is never short of a field.
_SHAPES_KNOWN = (_fields(ScopeOverviewRow) == {"realm", *_SCOPE_KEYS}
                 and _fields(InjectionLedgerRow) == {"realm", *_INJECTION_KEYS}
                 and _fields(RealmHead) == {"keys", "complete"} and _fields(Cursor) == {"updated_at_ms", "memory_id"})


def _summary_out(realm: str, key: Hashable, value: Any) -> tuple[str, Any] | None:
    """``(name, JSON)`` of one summary, or ``None`` for one this file does not keep (it holds text, or is
    not of a known shape)."""
    if not _SHAPES_KNOWN:
        return None
    if key == "problem" and value is None:
        return "problem", None
    if key in ("records_head", "quarantine_head") and isinstance(value, RealmHead):
        return str(key), _head_out(value)
    if key == "quarantine_evidence" and type(value) is bool:
        return "quarantine_evidence", value
    if key == "realm_scopes" and isinstance(value, frozenset):
        if all(isinstance(s, tuple) and len(s) == 2 and all(type(p) is str for p in s) for s in value):
            return "realm_scopes", sorted([list(s) for s in value])
        return None
    if key == "scope_overview" and isinstance(value, tuple) and len(value) == 2:
        rows, until = value
        if (all(isinstance(r, ScopeOverviewRow) and r.realm == realm for r in rows)
                and (until is None or type(until) is int)):
            return "scope_overview", {"rows": [_scope_row_out(r) for r in rows], "until": until}
        return None
    if isinstance(key, tuple) and len(key) == 2 and key[0] == "newest" and type(key[1]) is str:
        if value is None:
            return f"newest:{key[1]}", None
        if key[1] == "injections" and isinstance(value, InjectionLedgerRow) and value.realm == realm:
            return "newest:injections", _injection_out(value)
    return None


def _summary_in(realm: str, name: str, value: Any, listings: frozenset[str]) -> tuple[Hashable, Any]:
    if name == "problem":
        if value is not None:
            raise _Shape("only a realm without a problem is kept")
        return "problem", None
    if name in ("records_head", "quarantine_head"):
        return name, _head_in(value)
    if name == "quarantine_evidence":
        if type(value) is not bool:
            raise _Shape("quarantine_evidence is a boolean")
        return name, value
    if name == "realm_scopes":
        scopes = []
        for s in _list(value, _MAX_ROWS):
            pair = _list(s, 2)
            if len(pair) != 2:
                raise _Shape("a scope is [kind, key]")
            scopes.append((_str(pair[0]), _str(pair[1])))
        return name, frozenset(scopes)
    if name == "scope_overview":
        d = _dict(value, {"rows", "until"})
        until = None if d["until"] is None else _int(d["until"])
        return name, (tuple(_scope_row_in(realm, r) for r in _list(d["rows"], _MAX_ROWS)), until)
    if name.startswith("newest:") and name[len("newest:"):] in listings:
        listing = name[len("newest:"):]
        if value is None:
            return ("newest", listing), None
        if listing == "injections":
            return ("newest", listing), _injection_in(realm, value)
    raise _Shape(f"unexpected summary {name!r}")


def _stat_out(st: FileStat | None) -> list[int] | None:
    return list(st) if st is not None else None


def _stat_in(value: Any) -> FileStat | None:
    if value is None:
        return None
    parts = _list(value, 5)
    if len(parts) != 5:
        raise _Shape("a file's signature has five parts")
    a, b, c, d, e = (_int(p) for p in parts)
    return a, b, c, d, e


# --------------------------------------------------------------------------- the file


def encode(root: Path, entries: Mapping[str, tuple[FileSignature, Mapping[Hashable, Any]]],
           max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The file's bytes: ``entries`` (realm -> signature and summaries), each summary that holds no text;
    realms in name order until ``max_bytes`` would be passed (the rest are left out)."""
    head = json.dumps({"format": FORMAT, "version": VERSION, "package": __version__, "root": os.fspath(root)},
                      separators=(",", ":"))
    parts: list[str] = []
    size = len(head) + 16
    for realm in sorted(entries):
        sig, summaries = entries[realm]
        kept = dict(filter(None, (_summary_out(realm, k, v) for k, v in summaries.items())))
        if not kept:
            continue
        part = (json.dumps(realm) + ":"
                + json.dumps({"db": _stat_out(sig.db), "wal": _stat_out(sig.wal), "kept": kept},
                             separators=(",", ":"), allow_nan=False))
        if size + len(part.encode()) + 1 > max_bytes:
            break
        size += len(part.encode()) + 1
        parts.append(part)
    return (head[:-1] + ',"realms":{' + ",".join(parts) + "}}").encode()


def decode(data: bytes, root: Path, listings: frozenset[str], known: Callable[[str], bool]
           ) -> dict[str, tuple[FileSignature, dict[Hashable, Any]]]:
    """The entries of a file's bytes, for the realms ``known`` accepts (the served realms: others are left
    out). Raises ``ValueError`` for a file of any other format, version, root or shape."""
    try:
        doc = json.loads(data.decode("utf-8"), parse_constant=lambda name: _reject(name))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _Shape(f"not JSON ({exc})") from None
    d = _dict(doc, {"format", "version", "package", "root", "realms"})
    if d["format"] != FORMAT or d["version"] != VERSION:
        raise _Shape(f"format {d['format']!r} version {d['version']!r}, not {FORMAT!r} version {VERSION}")
    if d["package"] != __version__ or d["root"] != os.fspath(root):
        raise _Shape("written by another version or for another agent-memory root")
    realms = d["realms"]
    if type(realms) is not dict:
        raise _Shape("realms is an object")
    out: dict[str, tuple[FileSignature, dict[Hashable, Any]]] = {}
    for realm, entry in realms.items():
        e = _dict(entry, {"db", "wal", "kept"})
        db = _stat_in(e["db"])
        if db is None:
            raise _Shape("a realm's database signature is missing")
        sig = FileSignature(db, _stat_in(e["wal"]))
        if type(e["kept"]) is not dict:
            raise _Shape("kept is an object")
        summaries = dict(_summary_in(realm, _str(n), v, listings) for n, v in e["kept"].items())
        if known(realm):
            out[realm] = (sig, summaries)
    return out


def _reject(name: str) -> Any:
    raise _Shape(f"invalid JSON number {name}")


def load(path: Path, root: Path, listings: frozenset[str], known: Callable[[str], bool]
         ) -> dict[str, tuple[FileSignature, dict[Hashable, Any]]]:
    """The entries of the file at ``path``, which is then removed; ``{}`` when there is none, or (with a
    warning) when it cannot be read or used."""
    try:
        data = _read_regular(path)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        log.warning("the console's kept realm summaries in %s cannot be read (%s): every realm is read", path, exc)
        data = None
    try:
        os.unlink(path)
    except OSError:
        pass
    if data is None:
        return {}
    if len(data) > MAX_FILE_BYTES:
        log.warning("the console's kept realm summaries in %s are larger than %d bytes: ignored, every realm is read",
                    path, MAX_FILE_BYTES)
        return {}
    try:
        return decode(data, root, listings, known)
    except (ValueError, RecursionError) as exc:  # RecursionError: nesting deeper than the JSON reader goes
        log.warning("the console's kept realm summaries in %s are not usable (%s): ignored, every realm is read",
                    path, exc)
        return {}


def _read_regular(path: Path) -> bytes:
    """At most ``MAX_FILE_BYTES + 1`` bytes of ``path``, which must be a regular file: a symbolic link is not
    followed and a FIFO or device is not waited on (``OSError`` for either)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path.name} is not a regular file")
        chunks: list[bytes] = []
        left = MAX_FILE_BYTES + 1
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def save(path: Path, root: Path, entries: Mapping[str, tuple[FileSignature, Mapping[Hashable, Any]]]) -> None:
    """Write ``entries`` to ``path`` atomically (stage file, ``fsync``, rename, ``fsync`` of the directory).
    A failure is logged (the next start reads every realm), never raised."""
    stage = path.with_name(path.name + ".tmp")
    try:
        data = encode(root, entries)
        with contextlib.suppress(FileNotFoundError):  # a stage a killed stop left (or anything planted there)
            os.unlink(stage)
        fd = os.open(stage, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0),
                     0o600)
        try:
            os.fchmod(fd, 0o600)  # whatever the umask
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(stage, path)
        dfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except (OSError, ValueError) as exc:
        log.warning("the console's realm summaries could not be kept in %s (%s): the next start reads every realm",
                    path, exc)
        try:
            os.unlink(stage)
        except OSError:
            pass
