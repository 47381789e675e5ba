"""The ``next_cursor`` of ``meta/agent_memory/list``: an opaque position in one identity's listing.

A listing runs newest updated first, ties broken by ``memory_id`` (descending, bytewise): a total order
over the scope's records that no other identity's write moves. A cursor is the last listed record's
``(updated_at_ms, memory_id)``, both already shown to the caller on that record, packed and base64url
encoded (no padding): it carries no row id, sequence or count of the realm, so a caller learns nothing
of the records other identities hold or write by reading its cursors.

Packing: one version byte (``1``), ``updated_at_ms`` as a signed 64-bit big-endian integer (epoch ms),
then the memory id in UTF-8 (1..200 characters, no NUL). :func:`decode_cursor` refuses anything else,
including the ``"<ms>:<n>"`` cursors of earlier releases (a client holding one starts its listing again).
"""

from __future__ import annotations

import base64
import binascii
import struct
from typing import Final

from meta_memory.agent_memory.fields import MAX_MEMORY_ID_CHARS

__all__ = ["CURSOR_RULE", "MAX_CURSOR_CHARS", "encode_cursor", "decode_cursor"]

_VERSION: Final = 1
_HEAD: Final = struct.Struct(">Bq")
#: The longest cursor :func:`encode_cursor` makes (a 200-character id of 4-byte characters), in characters.
MAX_CURSOR_CHARS: Final = (_HEAD.size + 4 * MAX_MEMORY_ID_CHARS + 2) // 3 * 4
#: The refusal of a cursor this method did not return (the text of the ``-32602`` naming ``cursor``).
CURSOR_RULE: Final = "cursor must be a next_cursor this method returned"


def encode_cursor(updated_at_ms: int, memory_id: str) -> str:
    """The opaque cursor after the record ``(updated_at_ms, memory_id)`` (epoch ms, its id)."""
    return _text(_HEAD.pack(_VERSION, updated_at_ms) + memory_id.encode("utf-8"))


def decode_cursor(cursor: str) -> tuple[int, str]:
    """``(updated_at_ms, memory_id)`` of a cursor :func:`encode_cursor` made. Raises ``ValueError``
    (:data:`CURSOR_RULE`, never echoing the value) for any other text: not canonical base64url, another
    version, a time outside a signed 64-bit integer, an id that is empty, too long, not UTF-8 or holds NUL."""
    if not isinstance(cursor, str) or not 0 < len(cursor) <= MAX_CURSOR_CHARS or not cursor.isascii():
        raise ValueError(CURSOR_RULE)
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        if len(raw) <= _HEAD.size or _text(raw) != cursor:
            raise ValueError(CURSOR_RULE)
        version, updated_at_ms = _HEAD.unpack_from(raw)
        memory_id = raw[_HEAD.size:].decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, struct.error):
        raise ValueError(CURSOR_RULE) from None
    if version != _VERSION or "\x00" in memory_id or len(memory_id) > MAX_MEMORY_ID_CHARS:
        raise ValueError(CURSOR_RULE)
    return updated_at_ms, memory_id


def _text(raw: bytes) -> str:
    """``raw`` in the cursor's text form (base64url, no padding)."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")
