"""Content hashes, record ids and stage tokens (reference §2A, §2B).

- :func:`content_hash` binds a review or a dedup to exact content; :func:`folded_content_hash` is the
  same hash over the whitespace-folded content (:func:`fold_whitespace`): the erasure register's
  match of content that differs only in whitespace.
- :func:`new_memory_id` mints ``mem-{now_ns}-{pid:x}-{seq:x}-{fnv1a64:016x}``; :func:`new_memory_ids`
  mints one for each of many records, their FNV-1a hashes computed side by side in one numpy array
  (:func:`fnv1a64_many`).
- :func:`mint_token` mints ``{prefix}-{now_ns}-{pid:x}-{seq:x}``.

Ids are identifiers, not timestamps: the nanosecond component only makes
ids unique across process restarts that reuse a pid; the process-wide
counter makes them unique within a process.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import threading
import time
from collections.abc import Sequence

__all__ = ["content_hash", "fold_whitespace", "folded_content_hash", "fnv1a64", "fnv1a64_many", "new_memory_id",
           "new_memory_ids", "mint_token"]

_FNV_OFFSET = 14695981039346656037
_FNV_PRIME = 1099511628211
_MASK64 = (1 << 64) - 1

_counter = itertools.count()
_counter_lock = threading.Lock()


def _next_seq() -> int:
    with _counter_lock:
        return next(_counter)


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
    """``text`` with every run of Unicode whitespace (``str.split``'s: spaces, tabs, line breaks, the
    no-break and other Unicode spaces) folded to one space and the ends trimmed. Idempotent."""
    return " ".join(text.split())


def folded_content_hash(title: str, body: str, exact: str | None = None) -> str:
    """:func:`content_hash` over ``title`` and ``body`` each folded by :func:`fold_whitespace`: equal for
    two contents that differ only in whitespace, different when their non-whitespace text differs.

    ``exact`` (optional) is ``content_hash(title, body)`` when the caller already holds it: returned as
    is when folding changes neither text (no second SHA-256)."""
    folded_title, folded_body = fold_whitespace(title), fold_whitespace(body)
    if exact is not None and folded_title == title and folded_body == body:
        return exact
    return content_hash(folded_title, folded_body)


def fnv1a64(*parts: bytes) -> int:
    """FNV-1a 64-bit over the concatenation of ``parts``."""
    h = _FNV_OFFSET
    prime, mask = _FNV_PRIME, _MASK64
    for byte in b"".join(parts):  # one expression per byte: about 3x faster than two statements
        h = ((h ^ byte) * prime) & mask
    return h


#: Inputs longer than this (bytes) are hashed one by one: side by side, every input is padded to the
#: longest, and a few long ones would make the padding cost more than it saves.
LANE_MAX_BYTES = 4096


def fnv1a64_many(items: Sequence[bytes]) -> list[int]:
    """``[fnv1a64(item) for item in items]``, computed side by side: the 64-bit states of all inputs
    (up to :data:`LANE_MAX_BYTES` each) are one numpy ``uint64`` array, so each byte position costs one
    vectorised XOR and one multiplication (wrapping modulo 2**64, as FNV-1a does) over every input at
    once instead of one interpreted step per input byte. Longer inputs are hashed one by one.

    Inputs are ordered longest first, so the inputs still running at a byte position are always a prefix.
    """
    import numpy as np  # here, not at import: a process that never mints ids together never loads it

    out = [0] * len(items)
    short = [i for i, item in enumerate(items) if len(item) <= LANE_MAX_BYTES]
    for i in set(range(len(items))) - set(short):
        out[i] = fnv1a64(items[i])
    if len(short) < 2:
        for i in short:
            out[i] = fnv1a64(items[i])
        return out
    order = sorted(short, key=lambda i: len(items[i]), reverse=True)
    longest = len(items[order[0]])
    if longest:
        padded = b"".join(items[i].ljust(longest, b"\0") for i in order)
        # columns[pos, lane] = byte ``pos`` of the lane's input (0 past its end, never read)
        columns = np.frombuffer(padded, dtype=np.uint8).reshape(len(order), longest).T.astype(np.uint64)
    lengths = [len(items[i]) for i in order]
    state = np.full(len(order), _FNV_OFFSET, dtype=np.uint64)
    prime = np.uint64(_FNV_PRIME)
    running = len(order)
    for pos in range(longest):
        while lengths[running - 1] <= pos:
            running -= 1
        lane = state[:running]
        np.bitwise_xor(lane, columns[pos, :running], out=lane)
        np.multiply(lane, prime, out=lane)
    for slot, i in enumerate(order):
        out[i] = int(state[slot])
    return out


def _memory_id(fnv: int) -> str:
    return f"mem-{time.time_ns()}-{os.getpid():x}-{_next_seq():x}-{fnv:016x}"


def new_memory_id(title: str, body: str) -> str:
    """A fresh record id ``mem-{now_ns}-{pid:x}-{seq:x}-{fnv:016x}``; unique even for identical content."""
    return _memory_id(fnv1a64(title.encode("utf-8", "surrogatepass"), body.encode("utf-8", "surrogatepass")))


def new_memory_ids(contents: Sequence[tuple[str, str]]) -> list[str]:
    """:func:`new_memory_id` of each ``(title, body)``, in order (the hashes computed side by side)."""
    fnvs = fnv1a64_many([t.encode("utf-8", "surrogatepass") + b.encode("utf-8", "surrogatepass") for t, b in contents])
    return [_memory_id(fnv) for fnv in fnvs]


def mint_token(prefix: str) -> str:
    """A unique stage/audit/proposal token ``{prefix}-{now_ns}-{pid:x}-{seq:x}``.

    Prefixes in use: ``direct``, ``stage``, ``review``, ``import``,
    ``import-audit``, ``prop``.
    """
    return f"{prefix}-{time.time_ns()}-{os.getpid():x}-{_next_seq():x}"
