"""Content hashes, record ids and stage tokens (reference §2A, §2B).

- :func:`content_hash` binds a review or a dedup to exact content.
- :func:`new_memory_id` mints ``mem-{now_ns}-{pid:x}-{seq:x}-{fnv1a64:016x}``.
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

__all__ = ["content_hash", "fnv1a64", "new_memory_id", "mint_token"]

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


def fnv1a64(*parts: bytes) -> int:
    """FNV-1a 64-bit over the concatenation of ``parts``."""
    h = _FNV_OFFSET
    prime, mask = _FNV_PRIME, _MASK64
    for byte in b"".join(parts):  # one expression per byte: about 3x faster than two statements
        h = ((h ^ byte) * prime) & mask
    return h


def new_memory_id(title: str, body: str) -> str:
    """A fresh record id ``mem-{now_ns}-{pid:x}-{seq:x}-{fnv:016x}``; unique even for identical content."""
    fnv = fnv1a64(title.encode("utf-8", "surrogatepass"), body.encode("utf-8", "surrogatepass"))
    return f"mem-{time.time_ns()}-{os.getpid():x}-{_next_seq():x}-{fnv:016x}"


def mint_token(prefix: str) -> str:
    """A unique stage/audit/proposal token ``{prefix}-{now_ns}-{pid:x}-{seq:x}``.

    Prefixes in use: ``direct``, ``stage``, ``review``, ``import``,
    ``import-audit``, ``prop``.
    """
    return f"{prefix}-{time.time_ns()}-{os.getpid():x}-{_next_seq():x}"
