"""Canonical forms for the assertion ledger (seed: Indexing, Querying; reference §1.4–1.5).

One module decides how entity, topic, store, fact, reason and the query needle
are normalised, so index, query and load can never disagree.

* Tokens (entity, topic, store, the query needle): leading/trailing whitespace
  trimmed, then ASCII-only lowercasing (``"ÉTÉ"`` keeps its accents and case;
  ``"Ops"`` becomes ``"ops"``). Empty after trimming means *absent*.
* Stores: a canonical token that must be one of :data:`SUPPORTED_STORES`.
* Facts and conflict reasons: trimmed, case preserved; empty means *absent*.
* Entity and topic of an index request: no control characters once trimmed
  (:func:`control_character_rule`), the rule agent-memory identities follow, and one spelling each
  (:func:`name_rule`: the name rule of identities and realms), which ``meta/gating/check`` holds too.
"""

from __future__ import annotations

from meta_memory.agent_memory.fields import hidden_text_rule
from meta_memory.identity import check_name

__all__ = [
    "SUPPORTED_STORES",
    "DEFAULT_STORE",
    "WHITESPACE",
    "trim",
    "ascii_lower",
    "canonical_token",
    "canonical_store",
    "canonical_text",
    "unsupported_store_rule",
    "has_control_character",
    "control_character_rule",
    "name_rule",
]

#: The five stores an assertion may name, in the order ``meta/memory/stores`` reports them.
SUPPORTED_STORES: tuple[str, ...] = ("knowledge_graph", "vector", "timeline", "todo", "top_of_mind")

#: The store used when an index request names none.
DEFAULT_STORE: str = "knowledge_graph"

#: Unicode ``White_Space`` characters: what "trim" removes. (Python's bare
#: ``str.strip()`` would also remove U+001C..U+001F, which are not White_Space.)
WHITESPACE: str = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    + "".join(chr(c) for c in range(0x2000, 0x200B))
    + "\u2028\u2029\u202f\u205f\u3000"
)

_ASCII_UPPER_TO_LOWER = str.maketrans({chr(c): chr(c + 32) for c in range(ord("A"), ord("Z") + 1)})


def trim(value: str) -> str:
    """Remove leading and trailing Unicode ``White_Space`` characters."""
    return value.strip(WHITESPACE)


def ascii_lower(value: str) -> str:
    """Lowercase ``A``–``Z`` only; every other character is left untouched."""
    return value.translate(_ASCII_UPPER_TO_LOWER)


def canonical_token(value: str | None) -> str | None:
    """Trim then ASCII-lowercase ``value``; ``None`` when absent or empty after trimming."""
    if value is None:
        return None
    trimmed = trim(value)
    if not trimmed:
        return None
    return ascii_lower(trimmed)


def canonical_store(value: str | None) -> str | None:
    """The canonical store name, or ``None`` when ``value`` is absent, empty or unsupported."""
    token = canonical_token(value)
    if token is None or token not in SUPPORTED_STORES:
        return None
    return token


def canonical_text(value: str | None) -> str | None:
    """Trim ``value`` keeping its case; ``None`` when absent or empty after trimming (facts, reasons)."""
    if value is None:
        return None
    trimmed = trim(value)
    return trimmed or None


def unsupported_store_rule(store: str) -> str:
    """The refusal text for an unsupported store name (reference §1.12)."""
    return f"store '{store}' is unsupported (allowed: {', '.join(SUPPORTED_STORES)})"


def has_control_character(value: str) -> bool:
    """Whether ``value`` holds an ASCII control character (U+0000..U+001F or U+007F), the characters an
    identity refuses: NUL, tab, line feed, escape..."""
    return any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in value)


def control_character_rule(field: str) -> str:
    """The refusal text for a token holding a control character (``entity``, ``topic``)."""
    return f"{field} must not contain control characters (tab, newline, NUL, ...)"


def name_rule(field: str, token: str) -> str | None:
    """The refusal text when the entity or topic ``token`` (trimmed) breaks the name rule identities, realms and
    session keys follow (:func:`meta_memory.identity.check_name`): a control, invisible or direction-changing
    character (zero-width, bidirectional, soft hyphen, C1 control, ...), a space other than U+0020, a line or
    paragraph separator, an unassigned, private-use or surrogate code point, or a form other than Unicode NFC;
    ``None`` when it may be taken. Such a spelling shows as another name (``deploy`` with a zero-width space
    reads ``deploy``) while naming another key: a conflict signal on one would not hold a check of the other.
    Held by ``meta/memory/index`` and ``meta/gating/check``; ``meta/memory/resolve`` does not hold it, so a
    signal written before the rule can still be removed. The byte cap is the caller's (65,536 bytes). Hidden
    text (tag characters, smuggled variation selectors, private use: :func:`hidden_text_rule`, which every
    stored text meets) is named first, by its own rule."""
    hidden = hidden_text_rule(field, token)
    if hidden is not None:
        return hidden
    try:
        check_name(field, token, 1 << 62, noun=field)
    except ValueError as exc:
        return str(exc)
    return None
