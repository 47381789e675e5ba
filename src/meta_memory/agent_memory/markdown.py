"""Parser for legacy per-identity markdown memory files (import-only; reference §2C).

A file ``<root>/<encode(realm)>/<encode(identity)>.md`` holds records laid out as::

    ## <title>
    <!-- mobkit-agent-memory {"memory_id": "...", "tags": [...], "created_at_ms": 1, "updated_at_ms": 2} -->
    body lines...
    <!-- /mobkit-agent-memory -->

The predecessor's ``mobkit-agent-memory`` markers and our ``meta-agent-memory``
markers are both read. A body line that starts with ``\\`` followed by a
structural line (an end marker or a metadata line) is unescaped. A record ends
at its end marker or at end of file; while a record's heading has no valid
metadata line, the next ``## `` heading starts over. Records with an empty
body, missing/invalid metadata, or a ``memory_id`` that is not well-formed
(:data:`~meta_memory.agent_memory.fields.MEMORY_ID_RULE`: no spaces, markup,
path separators or control characters) are dropped with a warning — never
promoted. :func:`read_legacy_file` opens a file without following symlinks.

Timestamps must be integers in :data:`IMPORT_TIMESTAMP_RANGE_MS` (1970-01-01
to 2099-12-31 UTC, epoch ms); a record outside it is dropped with a warning naming the field and the range.
At import the store also holds each record to the validator's rule for times a write brings itself
(:func:`~meta_memory.agent_memory.validator.stamps_problem`: no later than now + 24 h), record by record.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from meta_memory import strict_json
from meta_memory.agent_memory.fields import MEMORY_ID_RULE, is_well_formed_memory_id

__all__ = ["MAX_MARKDOWN_FILE_BYTES", "IMPORT_TIMESTAMP_RANGE_MS", "IMPORTED_SUFFIX", "LegacyFileRefused",
           "ParsedRecord", "ParseResult", "parse_markdown", "read_legacy_file", "strip_markdown_records"]

MAX_MARKDOWN_FILE_BYTES = 8 * 1024 * 1024
#: What an imported file is renamed with (``<identity>.md.imported``); an erase cuts erased records out of it.
IMPORTED_SUFFIX = ".imported"
#: Accepted imported timestamps, inclusive: 1970-01-01T00:00:00Z .. 2099-12-31T23:59:59.999Z (epoch ms).
IMPORT_TIMESTAMP_RANGE_MS = (0, 4_102_444_799_999)

_MARKERS = ("mobkit-agent-memory", "meta-agent-memory")
_META_PREFIXES = tuple(f"<!-- {m} " for m in _MARKERS)
_END_MARKERS = tuple(f"<!-- /{m} -->" for m in _MARKERS)


@dataclass(frozen=True, slots=True)
class ParsedRecord:
    """One record read from a markdown file (fields unvalidated beyond shape)."""

    memory_id: str
    title: str
    body: str
    tags: tuple[str, ...]
    created_at_ms: int
    updated_at_ms: int
    #: the record's lines in the file: ``[first, end)`` (0-based), heading to end marker
    lines: tuple[int, int] = (0, 0)


@dataclass(slots=True)
class ParseResult:
    """Parsed records in file order, and one warning per dropped record."""

    records: list[ParsedRecord] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _is_meta_line(line: str) -> bool:
    s = line.strip()
    return s.startswith(_META_PREFIXES) and s.endswith("-->")


def _is_structural(line: str) -> bool:
    return line.strip() in _END_MARKERS or line.strip().startswith(_META_PREFIXES)


def _parse_meta(line: str) -> dict[str, object] | None:
    s = line.strip()
    for prefix in _META_PREFIXES:
        if s.startswith(prefix):
            payload = s[len(prefix) : -len("-->")].strip()
            try:
                value = strict_json.loads(payload)
            except ValueError:
                return None
            return value if isinstance(value, dict) else None
    return None


def _meta_fields(meta: dict[str, object]) -> tuple[str, tuple[str, ...], int, int] | str:
    """The metadata's fields, or the reason they are invalid."""
    memory_id = meta.get("memory_id")
    tags = meta.get("tags", [])
    if not isinstance(memory_id, str) or not memory_id.strip():
        return "invalid metadata (memory_id must be a non-empty string)"
    if not is_well_formed_memory_id(memory_id.strip()):
        return f"a malformed memory_id ({MEMORY_ID_RULE})"
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        return "invalid metadata (tags must be an array of strings)"
    low, high = IMPORT_TIMESTAMP_RANGE_MS
    stamps: list[int] = []
    for key in ("created_at_ms", "updated_at_ms"):
        ts = meta.get(key)
        if isinstance(ts, bool) or not isinstance(ts, int):
            return f"invalid metadata ({key} must be an integer)"
        if not low <= ts <= high:
            return f"invalid metadata ({key} {ts} is outside the accepted range {low}..{high} (1970-01-01 to 2099-12-31 UTC))"
        stamps.append(ts)
    return memory_id.strip(), tuple(tags), stamps[0], stamps[1]


def parse_markdown(text: str) -> ParseResult:
    """Parse a legacy markdown memory file (see module doc). Never raises for bad content."""
    result = ParseResult()
    lines = text.splitlines()
    i = 0
    n = len(lines)
    while i < n:
        line = lines[i]
        if not line.startswith("## "):
            i += 1
            continue
        title = line[3:].strip()
        first = i
        heading_line = i + 1
        i += 1
        if i >= n or not _is_meta_line(lines[i]):
            result.warnings.append(f"line {heading_line}: record '{title}' has no metadata line; skipped")
            continue
        meta = _parse_meta(lines[i])
        fields = _meta_fields(meta) if meta is not None else "invalid metadata"
        if isinstance(fields, str):
            result.warnings.append(f"line {heading_line}: record '{title}' has {fields}; skipped")
            i += 1
            continue
        i += 1
        body_lines: list[str] = []
        while i < n and lines[i].strip() not in _END_MARKERS:
            body_line = lines[i]
            if body_line.startswith("\\") and _is_structural(body_line[1:]):
                body_line = body_line[1:]
            body_lines.append(body_line)
            i += 1
        i += 1  # past the end marker (or EOF)
        body = "\n".join(body_lines).strip()
        memory_id, tags, created, updated = fields
        if not title or not body:
            result.warnings.append(f"line {heading_line}: record '{memory_id}' has an empty title or body; skipped")
            continue
        result.records.append(ParsedRecord(memory_id, title, body, tags, created, updated, (first, min(i, n))))
    return result


def strip_markdown_records(text: str, memory_ids: set[str]) -> str | None:
    """``text`` without the records whose ``memory_id`` is in ``memory_ids`` (heading, metadata, body and
    end marker), or ``None`` when it holds none of them. Lines outside those records are kept as they are."""
    lines = text.splitlines()
    cut = [r.lines for r in parse_markdown(text).records if r.memory_id in memory_ids]
    if not cut:
        return None
    drop = {i for first, end in cut for i in range(first, end)}
    kept = [line for i, line in enumerate(lines) if i not in drop]
    return "\n".join(kept) + ("\n" if kept else "")


class LegacyFileRefused(Exception):
    """A legacy markdown file that is not read: ``reason`` says why (kept in the import's audit summary)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def read_legacy_file(path: Path) -> str:
    """The text of the legacy markdown file ``path``, read under a shared ``flock``. Never follows a
    symbolic link (``O_NOFOLLOW``: no check-then-open race) and reads only a regular file (``O_NONBLOCK``:
    a FIFO planted under the name cannot stall the realm's first open). Raises :class:`LegacyFileRefused`
    (a symbolic link, not a regular file, over :data:`MAX_MARKDOWN_FILE_BYTES`, not UTF-8) and
    ``FileNotFoundError`` when the file is gone."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise LegacyFileRefused("file is a symbolic link; not followed") from None
        raise
    too_big = f"agent memory file exceeds bundled retention cap of {MAX_MARKDOWN_FILE_BYTES} bytes"
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise LegacyFileRefused("file is not a regular file")
        if info.st_size > MAX_MARKDOWN_FILE_BYTES:
            raise LegacyFileRefused(too_big)
        fcntl.flock(fh.fileno(), fcntl.LOCK_SH)
        try:
            raw = fh.read(MAX_MARKDOWN_FILE_BYTES + 1)
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
    if len(raw) > MAX_MARKDOWN_FILE_BYTES:
        raise LegacyFileRefused(too_big)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise LegacyFileRefused("file is not valid UTF-8") from None
