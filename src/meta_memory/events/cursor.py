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

from .bus import MAX_EVENT_SEQ, parse_event_seq

__all__ = ["AFTER_RULE", "OPAQUE_PREFIX", "EventCursor", "is_event_cursor", "is_opaque_event_id"]

#: The prefix of an opaque (per-reader) event id.
OPAQUE_PREFIX = "evt-"
_OPAQUE = re.compile(r"evt-[0-9a-f]{16}")
_MASK32 = (1 << 32) - 1
_ROUNDS = 4


def is_opaque_event_id(value: Any) -> bool:
    """Whether ``value`` has the shape of an opaque event id (``evt-`` and 16 lowercase hex digits)."""
    return isinstance(value, str) and _OPAQUE.fullmatch(value.strip()) is not None


#: The shape every ``after`` cursor keeps (``meta/events/list``, ``GET /events?after=``), whoever reads it.
AFTER_RULE = ("after must be an event_id ('console-evt-<n>' or 'evt-<16 hex>') or an integer from 0 to "
              f"{MAX_EVENT_SEQ}")


def is_event_cursor(value: Any) -> bool:
    """Whether ``value`` has the shape of an event cursor (:data:`AFTER_RULE`): an id some reader could be
    shown, or a sequence number. The shape alone, alike for every reader: whether this reader was shown it
    is :meth:`EventCursor.parse`'s to say."""
    return parse_event_seq(value) is not None or is_opaque_event_id(value)


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

    def parse(self, value: Any, last_seq: int) -> int | None:
        """The sequence number ``value`` names for this reader, ``last_seq`` being the timeline's newest.

        For a plain reader any form :func:`~meta_memory.events.bus.parse_event_seq` reads. For an opaque
        one ``0`` / ``"0"`` (the start) or an id it could have been shown: ``evt-<16 hex>`` deciphering to a
        sequence number from 1 to ``last_seq``. ``None`` for anything else, alike for every case: a plain
        number (it would let the reader probe the shared sequence), a malformed id, and an id made up or
        shown to another reader, which decipher under this reader's key to a number in the whole 64-bit
        range, beyond ``last_seq`` but with a chance of ``last_seq / 2**64``. No id the reader was shown is
        ever refused (its event was numbered at most ``last_seq`` when shown, whatever the timeline has
        dropped since), and the reader cannot make an id deciphering to a number of its choice, so the
        answer tells it nothing of other identities' events. (A state directory restored from an older
        backup numbers from a smaller ``last_seq``: ids shown since are refused, and the reader starts
        again from ``0``.)"""
        if self._key is None:
            return parse_event_seq(value)
        if is_opaque_event_id(value):
            seq = self._decipher(int(str(value).strip()[len(OPAQUE_PREFIX):], 16))
            return seq if 1 <= seq <= last_seq else None
        return 0 if parse_event_seq(value) == 0 else None
