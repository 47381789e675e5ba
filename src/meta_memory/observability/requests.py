"""Request ids: one per JSON-RPC call, in logs, traces and error responses.

A transport mints the id of a request (:func:`new_request_id`, or the caller's ``X-Request-Id``
when it is a safe token: :func:`accept_request_id`) and the dispatcher binds it to the running call
(:func:`bound_request_id`), so every log line written while the call runs carries it
(:mod:`.logs`), its span carries it as ``meta_memory.request_id`` (:mod:`.tracing`), and an error
response names it in ``data.request_id`` when logs or traces can be searched for it.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from contextvars import ContextVar

__all__ = ["UNKNOWN_METHOD", "accept_request_id", "bound_request_id", "current_request_id", "new_request_id"]

#: The ``method`` label of a call to a name the table does not advertise (an unbounded set of names
#: must not become an unbounded set of series), and its span's name. Here, not in :mod:`.metrics`, so the
#: method table names it without importing Prometheus (a ``--url`` command uses the table's helpers).
UNKNOWN_METHOD = "(unknown)"

_REQUEST_ID: ContextVar[str | None] = ContextVar("meta_memory_request_id", default=None)
#: A caller's id is kept only when it is a short token: nothing a log line or a header could be forged with.
_SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,63}")


def new_request_id() -> str:
    """A fresh request id: 16 lowercase hex digits (64 random bits)."""
    return os.urandom(8).hex()


def accept_request_id(offered: str | None) -> str:
    """The caller's ``X-Request-Id`` when it is 1 to 64 of ``[A-Za-z0-9._:-]`` (starting with a letter
    or digit), else a fresh id: an id with spaces, quotes or control characters is never echoed."""
    if offered is not None and _SAFE.fullmatch(offered):
        return offered
    return new_request_id()


def current_request_id() -> str | None:
    """The id of the call running on this thread or task (``None`` outside a call)."""
    return _REQUEST_ID.get()


@contextlib.contextmanager
def bound_request_id(request_id: str | None) -> Iterator[None]:
    """Bind ``request_id`` to the code run inside the block (restored after it)."""
    token = _REQUEST_ID.set(request_id)
    try:
        yield
    finally:
        _REQUEST_ID.reset(token)
