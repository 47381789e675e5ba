"""Small text helpers for rendering injected memory (reference §3.6).

All byte counts are UTF-8 bytes. Lone surrogates (possible in text decoded
from JSON) are counted as their ``surrogatepass`` encoding and never raise.
"""

from __future__ import annotations

# One definition of whitespace compaction for recall and injection alike.
from ..recall.text import compact_whitespace

__all__ = [
    "TRUNCATION_MARKER",
    "age_phrase",
    "compact_whitespace",
    "cut_utf8",
    "days_phrase",
    "escape_attr",
    "escape_xml_text",
    "scrub_surrogates",
    "truncate_utf8_boundary",
    "utf8_len",
]

TRUNCATION_MARKER = " [truncated]"


def utf8_len(value: str) -> int:
    """Length of ``value`` in UTF-8 bytes."""
    return len(value.encode("utf-8", "surrogatepass"))


def scrub_surrogates(value: str) -> str:
    """Replace lone surrogates by U+FFFD so the text always encodes as UTF-8."""
    try:
        value.encode("utf-8")
        return value
    except UnicodeEncodeError:
        return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def cut_utf8(value: str, max_bytes: int) -> str:
    """The longest prefix of ``value`` of at most ``max_bytes`` UTF-8 bytes, ending on a character boundary."""
    raw = value.encode("utf-8", "surrogatepass")
    if len(raw) <= max_bytes:
        return value
    end = max(0, max_bytes)
    while end > 0 and (raw[end] & 0xC0) == 0x80:
        end -= 1
    return raw[:end].decode("utf-8", "surrogatepass")


def truncate_utf8_boundary(value: str, max_bytes: int) -> str:
    """Return ``value`` unchanged if it fits in ``max_bytes`` UTF-8 bytes.

    Otherwise cut it at the largest character boundary ``<= max_bytes`` and
    append ``" [truncated]"`` (so the result may exceed ``max_bytes`` by the
    marker's 12 bytes).
    """
    if utf8_len(value) <= max_bytes:
        return value
    return cut_utf8(value, max_bytes) + TRUNCATION_MARKER


def escape_xml_text(value: str) -> str:
    """Escape ``&``, ``<`` and ``>`` (in that order) for XML-like element content."""
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def escape_attr(value: str) -> str:
    """:func:`escape_xml_text` then ``"`` -> ``&quot;``, for a double-quoted attribute value."""
    return escape_xml_text(value).replace('"', "&quot;")


def age_phrase(created_at_ms: int, now_ms: int) -> str | None:
    """Human age of a record: ``saved today``, ``saved 1 day ago``, ``saved N days ago``.

    ``None`` when ``created_at_ms <= 0`` (unknown). Whole days, floored; a
    creation time in the future counts as today.
    """
    if created_at_ms <= 0:
        return None
    return days_phrase(max(0, (now_ms - created_at_ms) // 86_400_000))


def days_phrase(days: int) -> str:
    """``saved today`` (0 or less), ``saved 1 day ago``, ``saved N days ago``."""
    if days <= 0:
        return "saved today"
    if days == 1:
        return "saved 1 day ago"
    return f"saved {days} days ago"
