"""One JSON-RPC message a line (``meta-memory gateway --stdio`` and ``meta-memory mcp``): reading a line
under a byte cap, and the error that answers a line over it.

A line longer than the cap (``[gateway] max_request_bytes``) is read on to its end and thrown away: only
its first ``limit + 1`` bytes are ever held, so the cap bounds what a line costs in memory. It is
answered with a ``-32600`` error naming the cap (:func:`oversized_line_error`) under the request's ``id``
when a top-level ``"id"`` member stands whole in the line's first :data:`ID_HEAD_BYTES` bytes
(:func:`head_request_id`; nothing past them is parsed), else under ``null``: a client waiting on that
request gets its answer instead of a hang. A line that is not JSON is answered by the caller with
``-32700`` under ``null``, as JSON-RPC 2.0 requires.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, BinaryIO

from ..errors import InvalidRequest
from .dispatch import error_response

__all__ = ["ID_HEAD_BYTES", "Line", "head_request_id", "oversized_line_error", "read_line"]

#: How much of an over-long line's head is searched for its ``"id"`` member (bytes).
ID_HEAD_BYTES = 4096

#: What the rest of an over-long line is read in, to find its end (bytes).
_DRAIN_CHUNK = 1 << 20

_WHITESPACE = " \t\n\r"
_DECODER = json.JSONDecoder()


@dataclass(frozen=True, slots=True)
class Line:
    """A line read by :func:`read_line`: ``data`` (its bytes, newline included) when it is within the
    cap; for a line over it, ``oversized`` (its length in bytes) and ``head`` (its first
    :data:`ID_HEAD_BYTES` bytes), ``data`` empty."""

    data: bytes
    oversized: int = 0
    head: bytes = b""


def read_line(source: BinaryIO, limit: int) -> Line | None:
    """The next line of ``source`` (``None`` at the end of input), holding at most ``limit + 1`` bytes
    of it: a longer line is read to its end in 1 MiB steps and dropped, its size and head kept."""
    data = source.readline(limit + 1)
    if not data:
        return None
    if len(data) <= limit or data.endswith(b"\n"):
        return Line(data)
    size = len(data)
    head = data[:ID_HEAD_BYTES]
    del data
    while True:
        rest = source.readline(_DRAIN_CHUNK)
        size += len(rest)
        if not rest or rest.endswith(b"\n"):
            return Line(b"", size, head)


def _skip_whitespace(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WHITESPACE:
        i += 1
    return i


def head_request_id(head: bytes) -> str | int | None:
    """The ``id`` of the JSON-RPC request whose line starts with ``head``, when the line is an object
    whose top-level ``"id"`` member (a string or an integer) stands whole within the first
    :data:`ID_HEAD_BYTES` bytes; ``None`` otherwise (no object, the member past the head, another
    type). Only the members before ``"id"`` are decoded, and only within the head."""
    text = head[:ID_HEAD_BYTES].decode("utf-8", errors="replace")
    try:
        i = _skip_whitespace(text, 0)
        if not text.startswith("{", i):
            return None
        i += 1
        while True:
            i = _skip_whitespace(text, i)
            if not text.startswith('"', i):
                return None
            key, i = _DECODER.raw_decode(text, i)
            i = _skip_whitespace(text, i)
            if not text.startswith(":", i):
                return None
            value, i = _DECODER.raw_decode(text, _skip_whitespace(text, i + 1))
            i = _skip_whitespace(text, i)
            ends = text[i:i + 1]
            if ends not in (",", "}"):  # a number cut by the head's end reads short: no id
                return None
            if key == "id":
                if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
                    return value
                return None
            if ends == "}":
                return None
            i += 1
    except (ValueError, RecursionError):  # the head ends inside a member, or is not JSON
        return None


def oversized_line_error(line: Line, limit: int) -> dict[str, Any]:
    """The JSON-RPC response refusing an over-long ``line``: ``-32600`` (``data.field = "request"``: the request as a whole, not a member)
    naming the cap, under :func:`head_request_id` of its head."""
    refusal = InvalidRequest(
        f"request line of {line.oversized} bytes exceeds the cap of {limit} bytes ([gateway] max_request_bytes)",
        "request")
    return error_response(head_request_id(line.head), refusal)
