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
from typing import Any

from .errors import echo

__all__ = ["DuplicateKeyError", "NotANumberError", "loads"]


class DuplicateKeyError(ValueError):
    """A JSON object names ``key`` more than once; the message shows its first
    ``errors.ECHO_CHARS`` characters, ``key`` holds it whole."""

    def __init__(self, key: str) -> None:
        super().__init__(f"duplicate key {json.dumps(echo(key))} in an object")
        self.key = key


class NotANumberError(ValueError):
    """A number JSON cannot hold: ``NaN``, ``Infinity``, ``-Infinity`` or a literal past a double's range."""


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
    ``json.JSONDecodeError`` for text that is not JSON, ``RecursionError`` for nesting past the
    interpreter's limit (all but the last are ``ValueError`` subclasses).
    """
    return json.loads(text, object_pairs_hook=_object, parse_constant=_constant, parse_float=_finite)
