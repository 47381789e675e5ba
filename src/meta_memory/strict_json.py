"""JSON from outside the process, read strictly: an object that names a key twice is refused.

``json.loads`` keeps the last of two equal keys, so ``{"identity": "a", "identity": "b"}`` reads
as ``b`` here while a proxy, a host's policy check or a log reader in front of us may have read
``a``: the same bytes meaning two things to two readers. Every boundary where text from a client,
a file or a model becomes a value (a JSON-RPC body, the ``memory`` tool's arguments, an import
file's lines, the CLI's JSON options) reads it with :func:`loads`, which refuses such an object
with :class:`DuplicateKeyError` (a ``ValueError``, so the boundary's existing refusal applies).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from .errors import echo

__all__ = ["MISSING", "DuplicateKeyError", "NestingTooDeepError", "NotANumberError", "kind_of", "loads",
           "top_level_member"]


class DuplicateKeyError(ValueError):
    """A JSON object names ``key`` more than once; the message shows its first
    ``errors.ECHO_CHARS`` characters, ``key`` holds it whole."""

    def __init__(self, key: str) -> None:
        super().__init__(f"duplicate key {json.dumps(echo(key))} in an object")
        self.key = key


class NestingTooDeepError(ValueError, RecursionError):
    """JSON text whose objects and arrays nest deeper than the reader goes (about 1,000 levels: the
    interpreter's recursion limit). A ``ValueError``, so every boundary that refuses text that is not
    JSON refuses it the same way (a model's ``memory`` tool arguments answer an ``is_error`` result, an
    import line is refused naming the line), and a ``RecursionError``, so a boundary that tells it apart
    (the JSON-RPC reader answering under the request's top-level ``id``) still does."""


class NotANumberError(ValueError):
    """A number JSON cannot hold: ``NaN``, ``Infinity``, ``-Infinity`` or a literal past a double's range."""


def kind_of(value: Any) -> str:
    """What a decoded JSON value is, in JSON's words with its article, for a refusal that says what was
    given instead: ``null``, ``a boolean``, ``a number``, ``a string``, ``an array`` or ``an object``
    (never Python's ``NoneType``, ``list`` or ``dict``, which the person who typed the JSON never wrote)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKeyError(key)
            seen.add(key)
    return obj


def _constant(name: str) -> float:
    raise NotANumberError(f"{name} is not a JSON number")


def _finite(literal: str) -> float:
    value = float(literal)
    if math.isinf(value):
        raise NotANumberError(f"{echo(literal)} is out of range of a JSON number (a double)")
    return value


def loads(text: str | bytes | bytearray) -> Any:
    """Decode ``text`` as ``json.loads`` does, refusing what JSON does not hold or reads two ways: an
    object with a repeated key, and the non-numbers Python's reader accepts (``NaN``, ``Infinity``,
    ``-Infinity``, and a literal like ``1e400`` that overflows a double), which its writer would send
    back as text no strict client parses.

    Raises :class:`DuplicateKeyError` for a repeated key, :class:`NotANumberError` for a non-number,
    ``json.JSONDecodeError`` for text that is not JSON, :class:`NestingTooDeepError` for nesting past
    the interpreter's limit (all of them ``ValueError`` subclasses; the last is a ``RecursionError`` too).
    """
    try:
        return json.loads(text, object_pairs_hook=_object, parse_constant=_constant, parse_float=_finite)
    except RecursionError:
        raise NestingTooDeepError("JSON nested too deep for the reader (objects and arrays nest at most "
                                  "about 1,000 levels)") from None


#: What :func:`top_level_member` answers when there is no member to answer.
MISSING: Any = object()

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_SCALARS = json.JSONDecoder(parse_constant=_constant, parse_float=_finite)


def _key(text: str, at: int, seen: set[str]) -> tuple[str, int]:
    """The object key at ``at`` (a string, its colon and the whitespace after): ``(key, where its value
    starts)``. Raises ``ValueError`` for anything else, or a key ``seen`` already holds."""
    if not text.startswith('"', at):
        raise ValueError("an object key is a string")
    key, at = _SCALARS.raw_decode(text, at)
    if key in seen:
        raise DuplicateKeyError(key)
    seen.add(key)
    at = _WHITESPACE.match(text, at).end()  # type: ignore[union-attr]
    if not text.startswith(":", at):
        raise ValueError("a key is followed by a colon")
    return key, _WHITESPACE.match(text, at + 1).end()  # type: ignore[union-attr]


def top_level_member(text: str, name: str) -> Any:
    """The value of member ``name`` of the JSON object ``text``, read without recursion, so at any depth
    of nesting (what :func:`loads` raises ``RecursionError`` for): one pass over ``text``, one set of keys
    per open object. The text is checked as :func:`loads` checks it (well-formed JSON, no repeated key,
    no non-number) except for depth.

    Returns the member's value when it is a string, number, ``true``, ``false`` or ``null``; :data:`MISSING`
    when ``text`` is not such an object, has no member ``name``, or its value is an object or array.
    """
    at = _WHITESPACE.match(text).end()  # type: ignore[union-attr]
    if not text.startswith("{", at):
        return MISSING
    open_: list[tuple[str, set[str]]] = []  # each open container: its closing bracket, its keys so far
    found: Any = MISSING
    wanted = False  # the value that starts at ``at`` is the top-level member ``name``
    try:
        while True:
            ch = text[at:at + 1]
            if ch in ("{", "["):  # a container opens: its first key or value, or it closes at once
                open_.append(("}" if ch == "{" else "]", set()))
                at = _WHITESPACE.match(text, at + 1).end()  # type: ignore[union-attr]
                if wanted:
                    return MISSING
                if not text.startswith(open_[-1][0], at):
                    if ch == "{":
                        key, at = _key(text, at, open_[-1][1])
                        wanted = len(open_) == 1 and key == name
                    continue
                open_.pop()
                at += 1
            else:
                value, at = _SCALARS.raw_decode(text, at)
                if wanted:
                    found = value
            wanted = False
            while True:  # after a value: a comma and the next key or value, or the container closes
                at = _WHITESPACE.match(text, at).end()  # type: ignore[union-attr]
                if not open_:
                    return found if at == len(text) else MISSING
                if text.startswith(",", at):
                    at = _WHITESPACE.match(text, at + 1).end()  # type: ignore[union-attr]
                    if open_[-1][0] == "}":
                        key, at = _key(text, at, open_[-1][1])
                        wanted = len(open_) == 1 and key == name
                    break
                if not text.startswith(open_[-1][0], at):
                    return MISSING
                open_.pop()
                at += 1
    except ValueError:
        return MISSING
