"""Record field caps and normalisation (reference §2B field caps, §3.6 helpers).

One place for the rules every write path shares: the staged-batch validator,
the RPC parameter parsers and the markdown importer call these.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from meta_memory.errors import echo
from meta_memory.identity import disguise
from meta_memory.limits import MAX_TTL_S
from meta_memory.textfold import (
    escape_char,
    has_hidden_tags,
    has_private_use,
    has_smuggled_selectors,
    is_invisible,
)

__all__ = [
    "MAX_TITLE_BYTES",
    "MAX_DESCRIPTION_BYTES",
    "MAX_BODY_BYTES",
    "MAX_MEMORY_TAGS",
    "MAX_MEMORY_TAG_BYTES",
    "FieldError",
    "shown_key",
    "compact_whitespace",
    "ascii_lower",
    "normalize_tags",
    "check_given_tags",
    "check_text_field",
    "text_cap_rule",
    "SHOWS_NOTHING_RULE",
    "hidden_text_rule",
    "validate_record_fields",
    "MEMORY_ID_RULE",
    "MAX_MEMORY_ID_CHARS",
    "memory_id_ref",
    "content_hash_ref",
    "is_well_formed_memory_id",
    "check_ttl_s",
    "MAX_METADATA_BYTES",
    "MAX_METADATA_DEPTH",
    "MAX_METADATA_KEYS",
    "MAX_METADATA_KEY_BYTES",
    "MAX_METADATA_INT",
    "METADATA_KEY_RULE",
    "canonical_metadata",
    "metadata_key_problem",
    "normalize_metadata",
]

MAX_TITLE_BYTES = 200
MAX_DESCRIPTION_BYTES = 400
MAX_BODY_BYTES = 65_536
MAX_MEMORY_TAGS = 32
MAX_MEMORY_TAG_BYTES = 64

_ASCII_LOWER = str.maketrans({chr(c): chr(c + 32) for c in range(ord("A"), ord("Z") + 1)})


#: What an explicit record id (markdown import) must look like: 1-128 ASCII letters, digits,
#: ``.``, ``_``, ``:`` or ``-``, starting with a letter or digit (``mem-{ns}-{pid}-{nonce}`` fits).
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


_CONTENT_HASH = re.compile(r"[0-9a-f]{64}")


def content_hash_ref(value: str) -> str:
    """``value`` (a request's ``expected_content_hash``) trimmed: a record's ``content_hash``, 64 lowercase
    hexadecimal characters (:func:`meta_memory.agent_memory.hashing.content_hash`). Raises ``ValueError``
    naming the shape for anything else (never echoing it)."""
    text = value.strip()
    if _CONTENT_HASH.fullmatch(text) is None:
        raise ValueError("expected_content_hash must be the reviewed record's content_hash: "
                         "64 lowercase hexadecimal characters")
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


#: The rule of a field that holds text but shows a reader none of it (:func:`shows_nothing`), after its name.
SHOWS_NOTHING_RULE = "must show a visible character (it holds only invisible, control and white-space characters)"


def normalize_tags(tags: Iterable[str]) -> tuple[str, ...]:
    """Trim and ASCII-lowercase each tag, drop empties, sort and dedup.

    Raises :class:`FieldError` ``tags must contain at most 32 entries`` (more
    than 32 given), ``tags must be an array of strings``, or a rule of one tag naming it by its
    index ``i`` in ``tags`` as given (``field`` is ``tags.<i>``): ``tags.<i> must not contain NUL
    characters``, hidden text (:func:`hidden_text_rule`: Unicode tag characters, smuggled variation
    selectors, private-use code points), ``tags.<i> must be at most 64 bytes`` (the trimmed tag is
    over 64 UTF-8 bytes) or ``tags.<i> must show a visible character (...)`` (a tag of only invisible,
    control and white-space characters, :func:`shows_nothing`: a zero-width space,
    a bidirectional override, a Hangul filler; a reader would see an empty tag).
    """
    return tuple(sorted({norm for _, norm in _each_tag(tags) if norm}))


def _each_tag(tags: Iterable[object]) -> Iterator[tuple[int, str]]:
    """``(i, tag i trimmed and ASCII-lowercased)`` of a list of tags as given, after its count is held to
    :data:`MAX_MEMORY_TAGS` (:class:`FieldError` ``tags must contain at most 32 entries``), each tag held to
    the rules of one tag (:func:`_one_tag`); a blank tag yields ``""``."""
    raw = list(tags)
    if len(raw) > MAX_MEMORY_TAGS:
        raise FieldError(f"tags must contain at most {MAX_MEMORY_TAGS} entries", "tags")
    for index, tag in enumerate(raw):
        yield index, _one_tag(index, tag)


def _one_tag(index: int, tag: object) -> str:
    """Tag ``index`` of a list, trimmed and ASCII-lowercased (``""`` for a blank one), or the
    :class:`FieldError` of the first rule of one tag it breaks (see :func:`normalize_tags`)."""
    if not isinstance(tag, str):
        raise FieldError("tags must be an array of strings", "tags")
    if "\x00" in tag:
        raise FieldError(f"tags.{index} must not contain NUL characters", f"tags.{index}")
    norm = ascii_lower(tag.strip())
    if (rule := hidden_text_rule(f"tags.{index}", norm)) is not None:
        raise FieldError(rule, f"tags.{index}")
    if _nbytes(norm) > MAX_MEMORY_TAG_BYTES:
        raise FieldError(f"tags.{index} must be at most {MAX_MEMORY_TAG_BYTES} bytes", f"tags.{index}")
    if norm and shows_nothing(norm):
        raise FieldError(f"tags.{index} {SHOWS_NOTHING_RULE}", f"tags.{index}")
    return norm


def check_given_tags(tags: Iterable[object]) -> None:
    """The rule of tags a caller gives (an RPC write or tag filter, a ``remember_batch`` item, the
    ``memory`` tool's arguments): every rule :func:`normalize_tags` holds, in its order (the count of tags
    as given, then each tag, named by its index ``i`` in ``tags`` as given, before repeats are dropped), and
    none blank (empty or only white space), which :func:`normalize_tags` would drop unseen:
    :class:`FieldError` ``tags.<i> must not be empty`` (``field`` ``tags.<i>``). Stored and imported
    records keep :func:`normalize_tags` alone (a blank tag of a legacy file is dropped)."""
    for index, norm in _each_tag(tags):
        if not norm:
            raise FieldError(f"tags.{index} must not be empty", f"tags.{index}")


#: The byte cap of each text field of a record.
_TEXT_CAPS = {"title": MAX_TITLE_BYTES, "description": MAX_DESCRIPTION_BYTES, "body": MAX_BODY_BYTES}


def check_text_field(name: str, value: str) -> None:
    """The rules of one text field of a record (``title``, ``description`` or ``body``), in order: no NUL
    character, non-empty when trimmed (not ``description``), at most its cap in UTF-8 bytes
    (title 200, description 400, body 65536), no hidden text (:func:`hidden_text_rule`: a Unicode tag
    character outside an emoji flag sequence, a variation selector that is not one directly after a
    character that takes it, a private-use code point or a noncharacter). Raises :class:`FieldError` naming ``name``."""
    if "\x00" in value:
        raise FieldError(f"{name} must not contain NUL characters", name)
    if name != "description" and not value.strip():
        raise FieldError(f"{name} must not be empty", name)
    if name != "description" and shows_nothing(value):
        raise FieldError(f"{name} {SHOWS_NOTHING_RULE}", name)
    if _nbytes(value) > _TEXT_CAPS[name]:
        raise FieldError(text_cap_rule(name), name)
    if (rule := hidden_text_rule(name, value)) is not None:
        raise FieldError(rule, name)


def text_cap_rule(name: str) -> str:
    """The refusal of a text field ``name`` (``title``, ``description`` or ``body``) longer than its cap in
    UTF-8 bytes, e.g. ``body must be at most 65536 bytes``: what :func:`check_text_field` says, and what the
    command line says of a body it stops reading past the cap."""
    return f"{name} must be at most {_TEXT_CAPS[name]} bytes"


def shows_nothing(value: str) -> bool:
    """Whether ``value`` holds no character a reader sees: only white space, control characters (``Cc``) and
    invisible ones (:func:`meta_memory.textfold.is_invisible`: format, bidirectional and zero-width characters,
    variation selectors, fillers). Stops at the first visible character."""
    if value.isascii():
        return not any(c.isprintable() and not c.isspace() for c in value)
    return all(c.isspace() or is_invisible(c) or unicodedata.category(c) == "Cc" for c in value)


def hidden_text_rule(name: str, value: str) -> str | None:
    """The refusal of a field ``name`` whose ``value`` holds hidden text, or ``None``: a Unicode tag
    character outside a recommended emoji flag sequence (:func:`hidden_tags_rule`), or a variation
    selector that is not a single selector directly after a character that takes it
    (:func:`meta_memory.textfold.has_smuggled_selectors`; :func:`hidden_selectors_rule`), or a private-use
    code point or noncharacter (:func:`meta_memory.textfold.has_private_use`; :func:`private_use_rule`)."""
    if value.isascii():
        return None
    if has_hidden_tags(value):
        return hidden_tags_rule(name)
    if has_smuggled_selectors(value):
        return hidden_selectors_rule(name)
    if has_private_use(value):
        return private_use_rule(name)
    return None


def private_use_rule(name: str) -> str:
    """The refusal of a field holding a private-use code point or a noncharacter."""
    return (f"{name} must not contain private-use code points (U+E000-U+F8FF, U+F0000-U+10FFFD) or "
            f"noncharacters (U+FDD0-U+FDEF, U+xFFFE, U+xFFFF): no shared meaning, one a byte they carry "
            f"hidden text")


def hidden_selectors_rule(name: str) -> str:
    """The refusal of a field holding a variation selector outside an emoji or ideographic variation sequence."""
    return (f"{name} must not contain variation selectors (U+FE00-U+FE0F, U+E0100-U+E01EF: invisible to a "
            f"reader, a run of them carries hidden bytes) other than one directly after an emoji, symbol or "
            f"CJK ideograph")


def hidden_tags_rule(name: str) -> str:
    """The refusal of a field holding Unicode tag characters outside a recommended emoji flag sequence."""
    return (f"{name} must not contain Unicode tag characters (U+E0000-U+E007F: invisible to a reader, read "
            f"by a model as hidden text) outside an emoji flag sequence")


def validate_record_fields(title: str, description: str, body: str) -> None:
    """Check the caps, in order: no NUL character in any of them (text is stored the same way on every
    backend; PostgreSQL text cannot hold NUL), then title non-empty (trimmed), title <= 200 bytes,
    description <= 400 bytes, body non-empty (trimmed), body <= 65536 bytes (:func:`check_text_field`).

    Raises :class:`FieldError` with the reference message, e.g.
    ``title must not be empty``, or ``<field> must not contain NUL characters``.
    """
    for name, value in (("title", title), ("description", description), ("body", body)):
        if "\x00" in value:
            raise FieldError(f"{name} must not contain NUL characters", name)
    for name, value in (("title", title), ("description", description), ("body", body)):
        check_text_field(name, value)


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
# --------------------------------------------------------------------------- metadata

#: A record's ``metadata`` object, stored as canonical JSON (sorted keys, no spaces), at most this
#: many UTF-8 bytes.
MAX_METADATA_BYTES = 8192
#: Objects and arrays nest at most this deep (the metadata object itself is depth 1).
MAX_METADATA_DEPTH = 5
#: At most this many keys in all the objects of one metadata value together.
MAX_METADATA_KEYS = 128
#: A key is at most this many UTF-8 bytes.
MAX_METADATA_KEY_BYTES = 64
#: Integers are "safe integers" (exact in a double, so in every backend and in JavaScript): |n| <= 2**53 - 1.
MAX_METADATA_INT = 2**53 - 1

#: What a metadata key must look like. ``.`` is the separator of a filter's key path and a leading
#: ``$`` names a filter operator, so neither can be part of a key.
METADATA_KEY_RULE = (
    f"metadata keys must be 1-{MAX_METADATA_KEY_BYTES} bytes, must not start with '$' and must not contain "
    "'.', '\"', '\\', control characters, invisible or direction-changing characters (zero-width, bidirectional, "
    "soft hyphen and other format characters, tag characters, variation selectors, fillers, C1 controls), spaces "
    "other than U+0020, line or paragraph separators, unassigned, private-use or surrogate code points or "
    "noncharacters, and must be in Unicode NFC form: the name rule's (a key must not show as another key)"
)


def shown_key(key: object) -> str:
    """A metadata key (or a filter's key path or operator) as a refusal names it: JSON-quoted (control and
    invisible characters escaped), at most 64 characters of it."""
    text = key if isinstance(key, str) else repr(key)
    return json.dumps(text[:64] + ("..." if len(text) > 64 else ""))


def metadata_key_problem(key: object) -> bool:
    """Whether ``key`` breaks :data:`METADATA_KEY_RULE` (the rule of stored keys and of a filter's path segments)."""
    if not isinstance(key, str) or not key or key.startswith("$"):
        return True
    if _nbytes(key) > MAX_METADATA_KEY_BYTES:
        return True
    if any(c in '."\\' or ord(c) < 0x20 or ord(c) == 0x7F for c in key):
        return True
    return disguise(key) is not None


def _escaped_key(key: object) -> str:
    """A key as a refusal's field names it: :func:`~meta_memory.errors.echo` (cut short, invisible and
    control characters escaped), and every other character by which the key rule refuses it (a space other
    than U+0020, a character not in NFC; in a key not in NFC its combining marks, so the field does not
    show as the composed key) escaped too."""
    text = echo(key if isinstance(key, str) else repr(key))
    decomposed = disguise(text) == ("nfc", "")
    return "".join(escape_char(c) if disguise(c) is not None or (decomposed and unicodedata.combining(c)) else c
                   for c in text)


#: The characters that make a metadata key read as more than one segment of a field's path (``a.b``, ``a[0]``)
#: or that quote one: a key holding any (or empty, or all digits, which reads as an array index) is named
#: in brackets.
_PATH_SYNTAX = frozenset('.[]"\\')


def metadata_key_path(path: str, key: object) -> str:
    """The field naming ``key`` inside the metadata value at ``path``: ``metadata.source`` for a plain key
    (:func:`_escaped_key`: ``metadata.source\\u200b``), and a key that would not read as one segment of
    the path (one holding ``.``, ``[``, ``]``, ``"`` or ``\\``, an empty key, or one of digits only, which
    would read as an array index) in brackets and quotes, its ``"`` and ``\\`` escaped:
    ``metadata["a.b"]``, never ``metadata.a.b``, the path of key ``b`` inside key ``a``. Array items
    are ``.0``, ``.1``."""
    if isinstance(key, str) and (not key or key.isdigit() or any(c in _PATH_SYNTAX for c in key)):
        quoted = key.replace("\\", "\\\\").replace('"', '\\"')
        return f'{path}["{_escaped_key(quoted)}"]'
    return f"{path}.{_escaped_key(key)}"


def canonical_metadata(value: Mapping[str, Any]) -> str:
    """The stored text of a (normalised) metadata object: JSON with sorted keys and no spaces,
    non-ASCII characters kept (so its size is the same on every backend and in the content of an export)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def normalize_metadata(value: object, field: str = "metadata") -> dict[str, Any]:
    """Check a record's ``metadata`` and return it as plain JSON values (a new ``dict``; ``None`` reads
    as ``{}``). Never interpreted: it is stored and returned as given, keys sorted.

    Rules, each a :class:`FieldError` naming ``field``: an object; only JSON values (string, number,
    boolean, null, array, object; no NaN or Infinity; integers within +-(2**53 - 1)); strings without
    NUL and encodable as UTF-8; keys by :data:`METADATA_KEY_RULE` (the refusal's field is the key's path,
    :func:`metadata_key_path`, each key escaped as :func:`~meta_memory.errors.echo` shows it:
    ``metadata.source\\u200b``, ``metadata.ok.0["a.b"]``); at most :data:`MAX_METADATA_DEPTH` levels, :data:`MAX_METADATA_KEYS` keys in all,
    and :data:`MAX_METADATA_BYTES` bytes as canonical JSON.
    """
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise FieldError(f"{field} must be an object", field)
    if not value:
        return {}  # what the walk below returns for an empty object (no key, 2 bytes of JSON)
    keys = [0]
    # a running lower bound of the canonical JSON's size: each value is at least one character and a
    # string at least its bytes. Past the cap the walk stops at once, so a value sharing one list many
    # times (a pickle's memo: mem0's legacy docstore) costs no more than the cap to refuse.
    size = [0]

    def grow(nbytes: int) -> None:
        size[0] += nbytes
        if size[0] > MAX_METADATA_BYTES:
            raise FieldError(f"{field} must be at most {MAX_METADATA_BYTES} bytes as JSON", field)

    def walk(item: object, depth: int, where: str, path: str) -> Any:
        if depth > MAX_METADATA_DEPTH:
            raise FieldError(f"{field} must nest at most {MAX_METADATA_DEPTH} levels deep", field)
        grow(1)
        if item is None or isinstance(item, bool):
            return item
        if isinstance(item, int):
            if abs(item) > MAX_METADATA_INT:
                raise FieldError(f"{field} integers must be within +-{MAX_METADATA_INT}", field)
            return int(item)
        if isinstance(item, float):
            if not math.isfinite(item):
                raise FieldError(f"{field} numbers must be finite (no NaN or Infinity)", field)
            return float(item)
        if isinstance(item, str):
            _check_text(item)
            return str(item)
        if isinstance(item, Mapping):
            out: dict[str, Any] = {}
            for key, sub in item.items():
                keys[0] += 1
                if keys[0] > MAX_METADATA_KEYS:
                    raise FieldError(f"{field} must hold at most {MAX_METADATA_KEYS} keys", field)
                named = metadata_key_path(path, key)
                if metadata_key_problem(key):
                    raise FieldError(f"{named}: {METADATA_KEY_RULE} (got the key {shown_key(key)} in {where})", named)
                out[str(key)] = walk(sub, depth + 1, f"{where}[{shown_key(key)}]", named)
            return out
        if isinstance(item, (list, tuple)):
            return [walk(sub, depth + 1, f"{where}[{i}]", f"{path}.{i}") for i, sub in enumerate(item)]
        raise FieldError(f"{field} values must be JSON (string, number, boolean, null, array, object)", field)

    def _check_text(text: str) -> None:
        if "\x00" in text:
            raise FieldError(f"{field} strings must not contain NUL characters", field)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise FieldError(f"{field} strings must be valid Unicode", field) from None
        if (rule := hidden_text_rule(f"{field} strings", text)) is not None:
            raise FieldError(rule, field)
        grow(_nbytes(text))

    out = walk(value, 1, field, field)
    if _nbytes(canonical_metadata(out)) > MAX_METADATA_BYTES:
        raise FieldError(f"{field} must be at most {MAX_METADATA_BYTES} bytes as JSON", field)
    return dict(out)
