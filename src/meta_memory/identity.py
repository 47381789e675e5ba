"""Agent identities and realms as the memory layer names them.

Memory identity is *logical*: a roster id that carries a respawn generation
(``rt:identity:parent-1:0``, ``rt:identity:parent-1:1``) names the same memory
scope as ``identity:parent-1``, so writes, recall and injection share one scope
across respawns (reference §4, "Memory scope identity is LOGICAL").
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from functools import lru_cache

from .limits import MAX_REALM_FILE_STEM_BYTES
from .textfold import invisible_characters

__all__ = ["DEFAULT_REALM", "SYSTEM_EVENT_IDENTITY", "check_name", "disguise", "parse_identity", "logical_identity", "parse_mob", "parse_operator",
           "parse_realm"]

DEFAULT_REALM = "default"
#: The identity the timeline names a system event by (an event about no identity, judged on an unscoped
#: grant: ``services/access.py``), so it is no agent's name: :func:`parse_identity` refuses it.
SYSTEM_EVENT_IDENTITY = "_system"
MAX_IDENTITY_BYTES = 512
_NO_CAP = 1 << 62
#: Realm names of at most this many characters always meet the file-name rule (12 encoded bytes a character).
_SHORT_REALM = MAX_REALM_FILE_STEM_BYTES // 12
MAX_MOB_BYTES = 512
MAX_OPERATOR_BYTES = 512

#: a roster id: ``rt:<base>:<generation>``, the generation in ASCII digits only (``\d`` would also take
#: Arabic-Indic or fullwidth digits, giving one identity several spellings)
_ROSTER = re.compile(r"^rt:(?P<base>.+):(?P<generation>[0-9]+)$")
#: a roster id whose generation holds a digit of another script (``rt:lead:main:١``): refused as a name
_ROSTER_OTHER_DIGITS = re.compile(r"^rt:.+:\d+$")
#: the control characters a name may not hold: C0 (below U+0020) and DEL
_CONTROL = re.compile("[\x00-\x1f\x7f]")
#: characters a name may not hold because they hide or reorder what it shows: C1 controls and every invisible
#: character of :func:`meta_memory.textfold.is_invisible` (format characters: zero-width, bidirectional marks,
#: embeddings, overrides and isolates, the soft hyphen, tag characters; variation selectors, the combining
#: grapheme joiner, Hangul fillers, the braille blank); ``"\u202ehr"`` reads as another name than it is
#: and ``"hr\u00ad"`` looks like ``"hr"``. Compiled on the first name that is not ASCII.
@lru_cache(maxsize=1)
def _HIDDEN() -> re.Pattern[str]:  # noqa: N802 - the rule's name, read as a constant
    return re.compile("[\x80-\x9f]|" + invisible_characters())


#: general categories a name may not hold outside ASCII: spaces other than U+0020 (no-break, thin, ideographic,
#: ogham...: they show as a space and name another scope), line and paragraph separators, and code points
#: that are unassigned, private-use or surrogates (nothing a reader can tell apart)
_ODD_CATEGORIES = frozenset({"Zs", "Zl", "Zp", "Cn", "Co", "Cs"})


def disguise(value: str) -> tuple[str, str] | None:
    """How ``value`` could show as another text, by the name rule, or ``None``: ``("hidden", "")`` for a C1
    control or an invisible character (:data:`_HIDDEN`), ``("odd", <the character>)`` for one of
    :data:`_ODD_CATEGORIES`, ``("nfc", "")`` for a form other than Unicode NFC. ASCII text never has one.
    The one statement of that part of the rule: :func:`check_name` refuses a name by it, and a record's
    metadata keys (:func:`meta_memory.agent_memory.fields.metadata_key_problem`) are refused by it too."""
    if value.isascii():
        return None
    if _HIDDEN().search(value) is not None:
        return ("hidden", "")
    odd = next((ch for ch in value if not ch.isascii() and unicodedata.category(ch) in _ODD_CATEGORIES), None)
    if odd is not None:
        return ("odd", odd)
    if not unicodedata.is_normalized("NFC", value):
        return ("nfc", "")
    return None


def check_name(name: str, value: str, max_bytes: int, *, noun: str = "name") -> str:
    """``value`` (a non-blank identity, realm or session key) unless it breaks a rule: a ``ValueError`` naming
    ``name`` (and calling the value a ``noun``) and the rule it breaks (whitespace at either end, control characters, invisible or
    direction-changing characters, spaces other than U+0020, line or paragraph separators, unassigned,
    private-use or surrogate code points, a form other than Unicode NFC, the byte cap).

    A name is taken exactly as given, never trimmed: ``" hr "`` is refused rather than read as ``hr``,
    so a caller never writes to a scope other than the one it named (nor acts in another session)."""
    if value != value.strip():
        raise ValueError(f"{name} must not begin or end with whitespace (a {noun} is taken as given, never trimmed)")
    if _CONTROL.search(value) is not None:
        raise ValueError(f"{name} must not contain control characters (tab, newline, NUL, ...)")
    broken = disguise(value)
    if broken is not None:
        rule, odd = broken
        if rule == "hidden":
            raise ValueError(f"{name} must not contain invisible or direction-changing characters "
                             "(format characters such as zero-width, soft hyphen, tag and bidirectional "
                             "characters; variation selectors, fillers, C1 controls)")
        if rule == "odd":
            raise ValueError(f"{name} must not contain U+{ord(odd):04X}: a space other than U+0020, a line or "
                             "paragraph separator, an unassigned, private-use or surrogate code point "
                             '("hr\\u00a0team" would show as "hr team" and name another scope)')
        raise ValueError(f"{name} must be in Unicode NFC form (a letter and its accent composed into one "
                         "character, as most keyboards type them), so that two spellings of one name "
                         "cannot name two scopes")
    if len(value) * 4 <= max_bytes:  # no character takes more than four bytes
        return value
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise ValueError(f"{name} must be at most {max_bytes} bytes (got {size})")
    return value


def logical_identity(identity: str) -> str:
    """Map a roster id with a respawn generation to its logical identity.

    ``rt:identity:parent-1:3`` -> ``identity:parent-1``; any other id is returned unchanged. A roster id
    whose base is itself a roster id (``rt:rt:identity:parent-1:0:3``) is unwrapped to the end, so the
    mapping is idempotent: every module that maps an identity (access, the store's scope, the firewall's
    session key, injection) reaches the same logical identity, and no spelling names one identity to the
    access check and another to the store.
    """
    while (m := _ROSTER.match(identity)) is not None:
        identity = m.group("base")
    return identity


def parse_identity(value: object) -> str:
    """Validate and normalise an agent identity.

    Input: any JSON value. Output: the logical identity (``str``), never trimmed.
    Raises ``ValueError("identity must be a valid non-empty string")`` for a
    non-string or an empty/blank string, and a ``ValueError`` naming the rule for whitespace at
    either end (``" lead:main "``), control,
    invisible or direction-changing characters, a name not in Unicode NFC form, or more than 512 bytes,
    for a roster id whose logical identity begins or ends with whitespace (``rt: lead:main :0``), and for
    one whose respawn generation holds a digit other than ASCII ``0-9`` (``rt:lead:main:\u0661``), and for
    :data:`SYSTEM_EVENT_IDENTITY` (``_system``, also as ``rt:_system:<n>``), the timeline's name for a system event.
    Roster layers are removed to the end (:func:`logical_identity`). A missing identity is never defaulted.
    """
    if not isinstance(value, str) or not value.strip():
        raise ValueError("identity must be a valid non-empty string")
    logical = logical_identity(check_name("identity", value, MAX_IDENTITY_BYTES))
    if not logical.isascii() and _ROSTER_OTHER_DIGITS.match(logical) is not None:
        raise ValueError("identity must write a respawn generation in ASCII digits 0-9 (rt:<identity>:<n>), "
                         "so that one identity has one spelling")
    if logical != logical.strip():  # ``rt: lead:main :0`` would name `` lead:main `` (refused as given)
        raise ValueError("identity must not begin or end with whitespace once its respawn generation is "
                         "removed (a name is taken as given, never trimmed)")
    if logical == SYSTEM_EVENT_IDENTITY:  # its events would pass for system events, shown on an unscoped grant
        raise ValueError(f"identity must not be '{SYSTEM_EVENT_IDENTITY}': the timeline names system events so")
    return logical


def parse_realm(value: object) -> str:
    """Validate a realm name: optional (``None`` -> ``"default"``), else a non-empty string, never trimmed.

    Raises ``ValueError("realm must be a non-empty string when provided")`` for a non-string or a
    blank string, and a ``ValueError`` naming the rule for whitespace at either end (``" hr "``),
    control, invisible or direction-changing
    characters, a name not in Unicode NFC form, or more than 239 bytes once encoded as a file name
    (:func:`meta_memory.storage.layout.realm_file_name_problem`: a byte other than a lower-case ASCII letter,
    digit, ``-`` or ``_`` counts three, an upper-case letter too; the realm's database file and the
    ``-journal``, ``-wal`` and ``-shm`` files SQLite keeps beside it must fit 255 bytes). The same rule on
    both stores.
    """
    if value is None:
        return DEFAULT_REALM
    if type(value) is str and value in _VALID_REALMS:  # a name that passed once passes again: the rules are fixed
        return value
    if not isinstance(value, str) or not value.strip():
        raise ValueError("realm must be a non-empty string when provided")
    # the byte cap is the file-name rule's (an encoded name is never shorter than the name), which names why
    name = check_name("realm", value, _NO_CAP)
    if len(name) > _SHORT_REALM and (problem := _file_name_rule()(name)) is not None:
        raise ValueError(problem)
    if type(name) is str:
        if len(_VALID_REALMS) >= _VALID_REALMS_KEPT:
            _VALID_REALMS.clear()
        _VALID_REALMS.add(name)
    return name


#: Realm names :func:`parse_realm` accepted (each call of a write checks its realm a few times, in the method
#: table and in the store); emptied when it holds :data:`_VALID_REALMS_KEPT`, so a flood of names stays small.
_VALID_REALMS: set[str] = set()
_VALID_REALMS_KEPT = 1024


@lru_cache(maxsize=1)
def _file_name_rule() -> Callable[[str], str | None]:
    """:func:`meta_memory.storage.layout.realm_file_name_problem`, imported on the first long name (the
    storage package imports modules that import this one)."""
    from .storage.layout import realm_file_name_problem

    return realm_file_name_problem


def parse_mob(value: object, name: str = "mob") -> str:
    """Validate a mob name (the scope key a ``propose_to_mob`` writes to and an injection reads from):
    a non-empty string under the rules of identity and realm names, never trimmed.

    Raises ``ValueError`` naming ``name`` (``mob``, ``mobs[2]``) and the rule: a non-string or blank
    value, whitespace at either end, control, invisible or direction-changing characters (a mob
    ``"research\u200b"`` would show as the mob ``research``), odd spaces, a form other than Unicode NFC,
    more than 512 bytes."""
    return _scope_name(value, name, MAX_MOB_BYTES)


def parse_operator(value: object, name: str = "operator") -> str:
    """Validate an operator scope's name (the key of an ``operator`` scope): a non-empty string under the
    rules of identity, realm and mob names, never trimmed.

    Raises ``ValueError`` naming ``name`` and the rule: a non-string or blank value, whitespace at either
    end, control, invisible or direction-changing characters, odd spaces, a form other than Unicode NFC,
    more than 512 bytes."""
    return _scope_name(value, name, MAX_OPERATOR_BYTES)


def _scope_name(value: object, name: str, max_bytes: int) -> str:
    """A shared scope's key (a mob's or an operator's name) under :func:`check_name`, refused when blank."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty string")
    return check_name(name, value, max_bytes)
