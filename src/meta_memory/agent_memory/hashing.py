"""Content hashes, record ids and stage tokens (reference §2A, §2B).

- :func:`content_hash` binds a review or a dedup to exact content; :func:`folded_content_hash` is the
  same hash over the whitespace-folded content (:func:`fold_whitespace`): the erasure register's
  match of content that differs only in whitespace.
- :func:`new_memory_id` mints ``mem-{now_ns}-{pid:x}-{nonce:016x}`` (``nonce``: 64 random bits, no
  function of the content); :func:`new_memory_ids` mints many, their nonces from one ``os.urandom`` call.
- :func:`mint_token` mints ``{prefix}-{now_ns}-{pid:x}-{nonce:08x}`` (32 random bits).

Ids are identifiers, not timestamps: ``now_ns`` is the wall clock in nanoseconds, raised by one
nanosecond when the clock has not moved past the previous id of this process (so a process's ids are
minted in increasing ``now_ns``); the random nonce makes them unique. No component counts what was
minted: an id shown to one identity says nothing of how many records, stages or proposals other
identities made meanwhile (a process-wide counter did). No component depends on the record's
content, so an id that outlives its record (an erasure event, a history line the caller may not
review) cannot be used to confirm a guess of the text.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time

from meta_memory.textfold import strip_invisible

__all__ = ["content_hash", "fold_whitespace", "folded_content_hash", "new_memory_id", "new_memory_ids", "mint_token"]

_clock_lock = threading.Lock()
_last_ns = 0


def _id_ns() -> int:
    """The wall clock in nanoseconds, strictly above the previous value this process minted with (a
    clock that stands still or steps back moves one nanosecond on): an ordering part that is no count."""
    global _last_ns
    with _clock_lock:
        _last_ns = max(time.time_ns(), _last_ns + 1)
        return _last_ns


def content_hash(title: str, body: str) -> str:
    """SHA-256 (64 lowercase hex chars) over ``u64le(len(title bytes)) + title + body``.

    The length prefix makes the hash boundary-safe: ``("ab", "c")`` and
    ``("a", "bc")`` differ.
    """
    t = title.encode("utf-8", "surrogatepass")
    digest = hashlib.sha256()
    digest.update(len(t).to_bytes(8, "little"))
    digest.update(t)
    digest.update(body.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def fold_whitespace(text: str) -> str:
    """``text`` without its invisible characters (:func:`meta_memory.textfold.strip_invisible`: zero-width
    characters, joiners, variation selectors, the soft hyphen...) and with every run of Unicode whitespace
    (``str.split``'s: spaces, tabs, line breaks, the no-break and other Unicode spaces) folded to one space
    and the ends trimmed. Idempotent."""
    return " ".join(strip_invisible(text).split())


def folded_content_hash(title: str, body: str, exact: str | None = None) -> str:
    """:func:`content_hash` over ``title`` and ``body`` each folded by :func:`fold_whitespace`: equal for
    two contents that differ only in whitespace or invisible characters, different when their visible
    non-whitespace text differs.

    ``exact`` (optional) is ``content_hash(title, body)`` when the caller already holds it: returned as
    is when folding changes neither text (no second SHA-256)."""
    folded_title, folded_body = fold_whitespace(title), fold_whitespace(body)
    if exact is not None and folded_title == title and folded_body == body:
        return exact
    return content_hash(folded_title, folded_body)


#: Bytes of randomness at the end of each minted memory id (16 hex digits).
ID_NONCE_BYTES = 8


def _memory_id(nonce: str) -> str:
    return f"mem-{_id_ns()}-{os.getpid():x}-{nonce}"


def new_memory_id() -> str:
    """A fresh record id ``mem-{now_ns}-{pid:x}-{nonce:016x}``; ``nonce`` is 64 random bits
    (``os.urandom``), so the id says nothing about the record's content: an id shown after the record
    is erased, withheld or quarantined cannot be checked against guessed texts."""
    return _memory_id(os.urandom(ID_NONCE_BYTES).hex())


def new_memory_ids(count: int) -> list[str]:
    """``count`` fresh ids as :func:`new_memory_id` mints them, their nonces drawn in one ``os.urandom`` call."""
    if count <= 0:
        return []
    width = 2 * ID_NONCE_BYTES
    pool = os.urandom(ID_NONCE_BYTES * count).hex()
    return [_memory_id(pool[k:k + width]) for k in range(0, width * count, width)]


def mint_token(prefix: str) -> str:
    """A unique stage/audit/proposal token ``{prefix}-{now_ns}-{pid:x}-{nonce:08x}`` (32 random bits; no
    count of the tokens minted before it).

    Prefixes in use: ``direct``, ``stage``, ``review``, ``import``,
    ``import-audit``, ``prop``.
    """
    return f"{prefix}-{_id_ns()}-{os.getpid():x}-{os.urandom(4).hex()}"
