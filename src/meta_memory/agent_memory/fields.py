"""Record field caps and normalisation (reference §2B field caps, §3.6 helpers).

One place for the rules every write path shares: the staged-batch validator,
the RPC parameter parsers and the markdown importer call these.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from meta_memory.limits import MAX_TTL_S

__all__ = [
    "MAX_TITLE_BYTES",
    "MAX_DESCRIPTION_BYTES",
    "MAX_BODY_BYTES",
    "MAX_MEMORY_TAGS",
    "MAX_MEMORY_TAG_BYTES",
    "FieldError",
    "compact_whitespace",
    "ascii_lower",
    "normalize_tags",
    "validate_record_fields",
    "MEMORY_ID_RULE",
    "MAX_MEMORY_ID_CHARS",
    "memory_id_ref",
    "is_well_formed_memory_id",
    "check_ttl_s",
]

MAX_TITLE_BYTES = 200
MAX_DESCRIPTION_BYTES = 400
MAX_BODY_BYTES = 65_536
MAX_MEMORY_TAGS = 32
MAX_MEMORY_TAG_BYTES = 64

_ASCII_LOWER = str.maketrans({chr(c): chr(c + 32) for c in range(ord("A"), ord("Z") + 1)})


#: What an explicit record id (markdown import) must look like: 1-128 ASCII letters, digits,
#: ``.``, ``_``, ``:`` or ``-``, starting with a letter or digit (``mem-{ns}-{pid}-{seq}-{fnv}`` fits).
MEMORY_ID_RULE = "memory_id must be 1-128 of [A-Za-z0-9._:-], starting with a letter or digit"
_MEMORY_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}", re.ASCII)


#: The longest memory id any record can have (minted ids are under 64 characters; a restore accepts up
#: to this many). A longer id in a request can name no record.
MAX_MEMORY_ID_CHARS = 200
#: ``provenance.imported_from``: the other memory system's name and the record's id there
#: (``meta-memory import --from``), in characters.
MAX_IMPORTED_SYSTEM_CHARS = 32
MAX_IMPORTED_SOURCE_ID_CHARS = 1024


def memory_id_ref(value: str) -> str:
    """``value`` (a request's ``memory_id``) trimmed. Raises ``ValueError`` for an empty one, or one
    longer than :data:`MAX_MEMORY_ID_CHARS` (no record has such an id; the refusal never echoes it)."""
    text = value.strip()
    if not text:
        raise ValueError("memory_id must not be empty")
    if len(text) > MAX_MEMORY_ID_CHARS:
        raise ValueError(f"memory_id must be at most {MAX_MEMORY_ID_CHARS} characters")
    return text


def is_well_formed_memory_id(value: object) -> bool:
    """True when ``value`` is a string that satisfies :data:`MEMORY_ID_RULE` exactly (no trimming)."""
    return isinstance(value, str) and _MEMORY_ID.fullmatch(value) is not None


class FieldError(ValueError):
    """A record field broke a cap. ``rule`` is the reference's message (e.g.
    ``title must be at most 200 bytes``); ``field`` names the field."""

    def __init__(self, rule: str, field: str) -> None:
        super().__init__(rule)
        self.rule = rule
        self.field = field


def _nbytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def compact_whitespace(text: str) -> str:
    """Split on Unicode whitespace and join with single spaces (also trims)."""
    return " ".join(text.split())


def ascii_lower(text: str) -> str:
    """Lowercase ``A``-``Z`` only; other characters are unchanged."""
    return text.translate(_ASCII_LOWER)


def normalize_tags(tags: Iterable[str]) -> tuple[str, ...]:
    """Trim and ASCII-lowercase each tag, drop empties, sort and dedup.

    Raises :class:`FieldError` ``tags must contain at most 32 entries`` (more
    than 32 given) or ``tags must be at most 64 bytes`` (a trimmed tag over 64
    UTF-8 bytes).
    """
    raw = list(tags)
    if not raw:
        return ()
    if len(raw) > MAX_MEMORY_TAGS:
        raise FieldError(f"tags must contain at most {MAX_MEMORY_TAGS} entries", "tags")
    out: set[str] = set()
    for tag in raw:
        if not isinstance(tag, str):
            raise FieldError("tags must be an array of strings", "tags")
        if "\x00" in tag:
            raise FieldError("tags must not contain NUL characters", "tags")
        norm = ascii_lower(tag.strip())
        if _nbytes(norm) > MAX_MEMORY_TAG_BYTES:
            raise FieldError(f"tags must be at most {MAX_MEMORY_TAG_BYTES} bytes", "tags")
        if norm:
            out.add(norm)
    return tuple(sorted(out))


def validate_record_fields(title: str, description: str, body: str) -> None:
    """Check the caps, in order: title non-empty (trimmed), title <= 200 bytes,
    description <= 400 bytes, body non-empty (trimmed), body <= 65536 bytes,
    and no NUL character in any of them (text is stored the same way on every backend;
    PostgreSQL text cannot hold NUL).

    Raises :class:`FieldError` with the reference message, e.g.
    ``title must not be empty``, or ``<field> must not contain NUL characters``.
    """
    for name, value in (("title", title), ("description", description), ("body", body)):
        if "\x00" in value:
            raise FieldError(f"{name} must not contain NUL characters", name)
    if not title.strip():
        raise FieldError("title must not be empty", "title")
    if _nbytes(title) > MAX_TITLE_BYTES:
        raise FieldError(f"title must be at most {MAX_TITLE_BYTES} bytes", "title")
    if _nbytes(description) > MAX_DESCRIPTION_BYTES:
        raise FieldError(f"description must be at most {MAX_DESCRIPTION_BYTES} bytes", "description")
    if not body.strip():
        raise FieldError("body must not be empty", "body")
    if _nbytes(body) > MAX_BODY_BYTES:
        raise FieldError(f"body must be at most {MAX_BODY_BYTES} bytes", "body")


def check_ttl_s(value: object, name: str = "ttl_s", maximum: int = MAX_TTL_S) -> int | None:
    """The shape rule of a ``ttl_s`` member: absent (``None``) or an integer number of seconds
    ``1..maximum`` (a bool, a float or a string is no integer). Returns the value; raises ``ValueError``
    naming the rule (the params layer answers it as ``-32602`` on the member)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer number of seconds (1 to {maximum})")
    if value < 1 or value > maximum:
        raise ValueError(f"{name} must be between 1 and {maximum} seconds")
    return value
