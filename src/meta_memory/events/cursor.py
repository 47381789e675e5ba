"""Event ids as one reader sees them: the timeline's sequence number, or a per-reader opaque cursor.

The timeline numbers every event with one sequence shared by all identities (``console-evt-<seq>``,
:mod:`.bus`). Shown to a reader who may see only some identities' events, those numbers would count the
events of the others between two of its own (how many records another identity wrote, when). So such a
reader is shown each event id as ``evt-<16 hex>``: the sequence number enciphered under a key of that
reader alone (a 64-bit Feistel permutation, four rounds of HMAC-SHA256), which it hands back as a cursor
(``after``, ``Last-Event-ID``) and the gateway deciphers. Two ids of one reader say nothing of how far
apart they are; one reader's ids mean nothing to another. A reader who sees every event (no access
control, or an unscoped read and view) is shown the plain ``console-evt-<seq>``.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from typing import Any

from .bus import parse_event_seq

__all__ = ["OPAQUE_PREFIX", "EventCursor", "is_opaque_event_id"]

#: The prefix of an opaque (per-reader) event id.
OPAQUE_PREFIX = "evt-"
_OPAQUE = re.compile(r"evt-[0-9a-f]{16}")
_MASK32 = (1 << 32) - 1
_ROUNDS = 4


def is_opaque_event_id(value: Any) -> bool:
    """Whether ``value`` has the shape of an opaque event id (``evt-`` and 16 lowercase hex digits)."""
    return isinstance(value, str) and _OPAQUE.fullmatch(value.strip()) is not None


class EventCursor:
    """How one reader's event ids are written (:meth:`event_id`) and read back (:meth:`parse`).

    ``key``: the reader's 32-byte key (opaque ids), or ``None`` (the plain ``console-evt-<seq>``)."""

    __slots__ = ("_key",)

    def __init__(self, key: bytes | None) -> None:
        self._key = key

    @property
    def opaque(self) -> bool:
        return self._key is not None

    def _round(self, n: int, half: int) -> int:
        assert self._key is not None
        digest = hmac.new(self._key, bytes((n,)) + half.to_bytes(4, "big"), hashlib.sha256).digest()
        return int.from_bytes(digest[:4], "big")

    def _encipher(self, value: int) -> int:
        left, right = value >> 32, value & _MASK32
        for n in range(_ROUNDS):
            left, right = right, left ^ self._round(n, right)
        return (left << 32) | right

    def _decipher(self, value: int) -> int:
        left, right = value >> 32, value & _MASK32
        for n in reversed(range(_ROUNDS)):
            left, right = right ^ self._round(n, left), left
        return (left << 32) | right

    def event_id(self, seq: int) -> str:
        """The id of the event numbered ``seq`` as this reader is shown it."""
        if self._key is None:
            return f"console-evt-{seq}"
        return f"{OPAQUE_PREFIX}{self._encipher(seq):016x}"

    def parse(self, value: Any) -> int | None:
        """The sequence number ``value`` names for this reader: for a plain reader any form
        :func:`~meta_memory.events.bus.parse_event_seq` reads; for an opaque one an id it was shown
        (``evt-<16 hex>``) or ``0`` / ``"0"`` (the start). ``None`` for anything else (a plain number
        from an opaque reader would let it probe the shared sequence)."""
        if self._key is None:
            return parse_event_seq(value)
        if is_opaque_event_id(value):
            return self._decipher(int(str(value).strip()[len(OPAQUE_PREFIX):], 16))
        return 0 if parse_event_seq(value) == 0 else None
