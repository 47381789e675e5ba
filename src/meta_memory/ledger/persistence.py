"""The ledger's local JSON file: encoding, atomic replace, and the bootstrap load.

Seed: "The runtime owns the assertion ledger"; reference §1.9.

File shape (pretty-printed, two-space indent, UTF-8)::

    {
      "assertions": [ {MemoryAssertion}, ... ],   // insertion order, oldest first
      "conflicts": [ {MemoryConflictSignal}, ... ] // (entity, topic, store) order
    }

Each entry is encoded once into a *fragment* (its pretty JSON already indented
for its place in the file); a persist joins the cached fragments instead of
re-serialising every assertion. :func:`assemble` is byte-identical to
``json.dumps(state, indent=2, ensure_ascii=False)`` (tested).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from meta_memory import strict_json
from meta_memory.errors import StartupError
from meta_memory.ledger.model import MemoryAssertion, MemoryConflictSignal
from meta_memory.ledger.normalise import SUPPORTED_STORES, canonical_text, canonical_token

__all__ = [
    "MAX_RETAINED",
    "load_counted",
    "stage_path",
    "assertion_fragment",
    "conflict_fragment",
    "assemble",
    "dump_state",
    "write_atomic",
    "load",
    "problem",
]

#: The most assertions kept (``MEMORY_ASSERTIONS_MAX_RETAINED``); the oldest are evicted beyond it.
MAX_RETAINED: int = 4096

_U64_MAX = 2**64 - 1
_ENTRY_INDENT = " " * 4  # entries sit two levels deep: {"assertions": [ <here> ]}


def stage_path(path: Path) -> Path:
    """The scratch file of an atomic write: the extension replaced by ``.tmp``.

    ``memory-ledger-state.json`` is staged as ``memory-ledger-state.tmp``.
    """
    return path.with_suffix(".tmp")


def _fragment(obj: dict[str, Any]) -> bytes:
    text = json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False)
    return "\n".join(_ENTRY_INDENT + line for line in text.split("\n")).encode("utf-8")


def assertion_fragment(assertion: MemoryAssertion) -> bytes:
    """The assertion's pretty JSON, indented for the ``assertions`` list, as UTF-8.

    Raises:
        ValueError: ``metadata`` holds NaN/Infinity.
        TypeError: ``metadata`` holds a value JSON cannot encode.
    """
    return _fragment(
        {
            "assertion_id": assertion.assertion_id,
            "entity": assertion.entity,
            "topic": assertion.topic,
            "store": assertion.store,
            "fact": assertion.fact,
            "metadata": assertion.metadata,
            "indexed_at_ms": assertion.indexed_at_ms,
        }
    )


def conflict_fragment(conflict: MemoryConflictSignal) -> bytes:
    """The conflict signal's pretty JSON, indented for the ``conflicts`` list, as UTF-8."""
    return _fragment(
        {
            "entity": conflict.entity,
            "topic": conflict.topic,
            "store": conflict.store,
            "reason": conflict.reason,
            "updated_at_ms": conflict.updated_at_ms,
        }
    )


def _list(name: str, fragments: Iterable[bytes], last: bool) -> list[bytes]:
    tail = b"\n" if last else b",\n"
    items = list(fragments)
    if not items:
        return [b'  "', name.encode(), b'": []', tail]
    body: list[bytes] = [b",\n"] * (2 * len(items))  # fragment, separator, fragment, ... (C-level slicing)
    body[::2] = items
    body[-1] = b"\n  ]"  # the last separator closes the list
    return [b'  "', name.encode(), b'": [\n', *body, tail]


def assemble_parts(assertion_fragments: Iterable[bytes], conflict_fragments: Iterable[bytes]) -> list[bytes]:
    """The whole file as a list of byte pieces, in order, from the cached fragments: what
    :func:`write_atomic` writes with scatter-gather I/O, without first copying 1.5 MB into one buffer."""
    parts = [b"{\n"]
    parts += _list("assertions", assertion_fragments, last=False)
    parts += _list("conflicts", conflict_fragments, last=True)
    parts.append(b"}")
    return parts


def assemble_section_parts(assertions_section: bytes | bytearray,
                           conflict_fragments: Iterable[bytes]) -> list[bytes | bytearray]:
    """Like :func:`assemble_parts`, with the assertions already joined (``fragment,\\nfragment...``)
    into one buffer, so the file is written as a handful of contiguous pieces."""
    if assertions_section:
        parts = [b"{\n", b'  "assertions": [\n', assertions_section, b"\n  ]", b",\n"]
    else:
        parts = [b"{\n", b'  "assertions": []', b",\n"]
    parts += _list("conflicts", conflict_fragments, last=True)
    parts.append(b"}")
    return parts


def assemble(assertion_fragments: Iterable[bytes], conflict_fragments: Iterable[bytes]) -> bytes:
    """The whole file from cached fragments (no trailing newline, like a pretty dump)."""
    return b"".join(assemble_parts(assertion_fragments, conflict_fragments))


def dump_state(assertions: list[MemoryAssertion], conflicts: list[MemoryConflictSignal]) -> bytes:
    """Encode a whole state from scratch (what :func:`assemble` must equal)."""
    return assemble([assertion_fragment(a) for a in assertions], [conflict_fragment(c) for c in conflicts])


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms that cannot open directories
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - file systems without directory fsync
        pass
    finally:
        os.close(fd)


def _write_all(fd: int, pieces: Sequence[bytes | bytearray]) -> None:
    """Write every piece, in order, with ``writev`` (at most ``IOV_MAX`` pieces a call), finishing any
    partial write."""
    limit = getattr(os, "IOV_MAX", 1024) or 1024
    for start in range(0, len(pieces), limit):
        chunk = pieces[start:start + limit]
        total = sum(map(len, chunk))
        written = os.writev(fd, chunk)
        if written < total:  # rare on regular files: finish the rest plainly
            view = memoryview(b"".join(chunk))[written:]
            while view:
                view = view[os.write(fd, view):]


def write_atomic(path: Path, data: bytes | Sequence[bytes | bytearray]) -> None:
    """Durably replace ``path`` with ``data`` (bytes, or a sequence of byte pieces written in order).

    Steps: create the parent directory if missing; write ``stage_path(path)``;
    flush and ``fsync`` it; ``os.replace`` it over ``path``; ``fsync`` the
    directory. Readers see the old bytes or the new, never a mix. On failure
    the stage is removed (best effort) and ``path`` is untouched.

    Raises:
        OSError: any I/O failure.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    stage = stage_path(path)
    fd = os.open(stage, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        try:
            os.fchmod(fd, 0o600)  # a leftover stage keeps its old mode through O_TRUNC
            _write_all(fd, [data] if isinstance(data, (bytes, bytearray)) else data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(stage, path)
    except BaseException:
        try:
            os.unlink(stage)
        except OSError:
            pass
        raise
    _fsync_dir(path.parent)


class _Malformed(Exception):
    pass


def _require(row: dict[str, Any], where: str, key: str, kind: str) -> Any:
    if key not in row:
        raise _Malformed(f"{where}: missing required field '{key}'")
    value = row[key]
    if kind == "str":
        if not isinstance(value, str):
            raise _Malformed(f"{where}.{key}: expected a string")
    elif kind == "u64":
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _U64_MAX:
            raise _Malformed(f"{where}.{key}: expected a non-negative integer (epoch milliseconds)")
    return value


def _rows(state: dict[str, Any], key: str) -> list[dict[str, Any]]:
    if key not in state:
        return []
    rows = state[key]
    if not isinstance(rows, list):
        raise _Malformed(f"'{key}' must be a list")
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise _Malformed(f"{key}[{i}]: expected an object")
    return rows


def _decode(raw: bytes) -> tuple[list[MemoryAssertion], list[MemoryConflictSignal]]:
    try:
        state = strict_json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise _Malformed(f"not UTF-8 ({exc})") from None
    except ValueError as exc:  # not JSON, a repeated key, NaN or Infinity, nesting past the reader's depth
        raise _Malformed(f"invalid JSON ({exc})") from None
    if not isinstance(state, dict):
        raise _Malformed("the top level must be a JSON object with 'assertions' and 'conflicts'")

    assertions: list[MemoryAssertion] = []
    for i, row in enumerate(_rows(state, "assertions")):
        where = f"assertions[{i}]"
        assertion_id = _require(row, where, "assertion_id", "str")
        entity = canonical_token(_require(row, where, "entity", "str"))
        topic = canonical_token(_require(row, where, "topic", "str"))
        store = canonical_token(_require(row, where, "store", "str"))
        fact = canonical_text(_require(row, where, "fact", "str"))
        indexed_at_ms = _require(row, where, "indexed_at_ms", "u64")
        if entity is None or topic is None or store not in SUPPORTED_STORES or fact is None:
            continue  # fails normalisation: dropped silently
        assertions.append(
            MemoryAssertion(
                assertion_id=assertion_id,
                entity=entity,
                topic=topic,
                store=store,
                fact=fact,
                metadata=row.get("metadata"),
                indexed_at_ms=indexed_at_ms,
            )
        )

    conflicts: dict[tuple[str, str, str], MemoryConflictSignal] = {}
    for i, row in enumerate(_rows(state, "conflicts")):
        where = f"conflicts[{i}]"
        entity = canonical_token(_require(row, where, "entity", "str"))
        topic = canonical_token(_require(row, where, "topic", "str"))
        store = canonical_token(_require(row, where, "store", "str"))
        reason = row.get("reason")
        if reason is not None and not isinstance(reason, str):
            raise _Malformed(f"{where}.reason: expected a string or null")
        updated_at_ms = _require(row, where, "updated_at_ms", "u64")
        if entity is None or topic is None or store not in SUPPORTED_STORES:
            continue
        conflicts[(entity, topic, store)] = MemoryConflictSignal(
            entity=entity,
            topic=topic,
            store=store,
            reason=canonical_text(reason),
            updated_at_ms=updated_at_ms,
        )

    return assertions, [conflicts[key] for key in sorted(conflicts)]


def load_counted(path: Path) -> tuple[list[MemoryAssertion], list[MemoryConflictSignal], int]:
    """:func:`load`, plus how many assertions the cap evicted from the file's (oldest first)."""
    assertions, conflicts = _load_all(path)
    evicted = max(0, len(assertions) - MAX_RETAINED)
    return assertions[evicted:], conflicts, evicted


def load(path: Path) -> tuple[list[MemoryAssertion], list[MemoryConflictSignal]]:
    """Read the ledger file once, at bootstrap.

    Returns ``(assertions, conflicts)``: assertions oldest first, at most
    :data:`MAX_RETAINED` (the oldest evicted); conflicts one per
    ``(entity, topic, store)`` (a later duplicate wins), sorted by that key.
    Entity, topic and store are trimmed and ASCII-lowercased, facts and reasons
    trimmed; rows that are empty afterwards or name an unsupported store are
    dropped silently. A missing file is an empty ledger.

    Raises:
        StartupError: the file cannot be read, is not valid JSON (read as
            :func:`meta_memory.strict_json.loads` reads it: a repeated key, NaN or
            Infinity, nesting past about 1,000 levels are refused too), or has an
            entry missing a required field or of the wrong type; the message
            names the file path.
    """
    assertions, conflicts, _evicted = load_counted(path)
    return assertions, conflicts


def problem(path: Path) -> str | None:
    """Why the file at ``path`` is not a ledger :func:`load` reads (it cannot be read, is not valid JSON,
    or has an entry missing a required field or of the wrong type), or ``None`` when it is one. A
    missing file is a problem here (there is nothing to read)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        return f"it cannot be read: {exc.strerror or exc}"
    try:
        _decode(raw)
    except _Malformed as exc:
        return f"it is malformed: {exc}"
    return None


def _load_all(path: Path) -> tuple[list[MemoryAssertion], list[MemoryConflictSignal]]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return [], []
    except OSError as exc:
        raise StartupError(f"memory ledger file '{path}' cannot be read: {exc}") from exc
    try:
        return _decode(raw)
    except _Malformed as exc:
        raise StartupError(
            f"memory ledger file '{path}' is malformed: {exc}; fix what it names in the file, or move the file "
            "aside (the ledger then starts empty), then restart"
        ) from None
