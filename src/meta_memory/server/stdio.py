"""Newline-delimited JSON-RPC over stdin/stdout (what an SDK spawns).

One JSON message per line in, one response per line out (nothing for a
notification). A line over ``[gateway] max_request_bytes`` is refused unparsed
with ``-32600`` under the id its head names (``rpc/lines.py``; ``meta-memory
mcp`` answers by the same rule). Logs go to stderr, never stdout. EOF or SIGTERM ends the loop
after the call in flight.

The caller is the principal of the bearer token in the ``META_MEMORY_TOKEN``
environment variable (anonymous without it). When ``[access]`` lists tokens
with access control off, the tokens are the only guard: without a valid
token the gateway refuses to start (:class:`~meta_memory.errors.StartupError`,
one line), it never serves anonymously.
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from typing import BinaryIO

from ..access.principal import AuthenticationFailed
from ..errors import StartupError
from ..observability.requests import new_request_id
from ..rpc.dispatch import encode
from ..rpc.lines import oversized_line_error, read_line
from ..rpc.registry import CallContext
from .gateway import Gateway

__all__ = ["TOKEN_ENV", "serve_stdio"]

#: The environment variable holding the stdio caller's bearer token.
TOKEN_ENV = "META_MEMORY_TOKEN"


def serve_stdio(gateway: Gateway, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> int:
    """Serve until EOF. Returns the process exit code (0).

    Raises :class:`StartupError` when the token in ``META_MEMORY_TOKEN`` is refused (or missing
    while tokens are the only guard), or holds whitespace."""
    inp = stdin or sys.stdin.buffer
    out = stdout or sys.stdout.buffer
    token = os.environ.get(TOKEN_ENV, "")
    if any(ch.isspace() for ch in token):  # sent as given, never trimmed: no configured token holds whitespace
        raise StartupError(f"stdio cannot serve: {TOKEN_ENV} must not contain whitespace, at either end or inside "
                           "(a token is taken as given, never trimmed)")
    try:
        principal = gateway.authenticate(f"Bearer {token}" if token else None)
    except AuthenticationFailed as exc:
        raise StartupError(
            f"stdio cannot serve: {exc.detail} ([access] tokens are configured; set {TOKEN_ENV} to one of them"
            + (")" if token else ", or enable access control to serve an anonymous caller under its grants)")
        ) from None
    ctx = CallContext(principal=principal, transport="stdio")
    limit = gateway.runtime.config.gateway.max_request_bytes
    while True:
        read = read_line(inp, limit)
        if read is None:
            return 0
        if read.oversized:  # refused unparsed, under the id its head names (see rpc/lines.py)
            out.write(encode(oversized_line_error(read, limit)) + b"\n")
            out.flush()
            continue
        line = read.data
        if not line.strip():
            continue
        response = gateway.dispatcher.handle_bytes(line, replace(ctx, request_id=new_request_id()))
        if response is not None:
            out.write(response + b"\n")
            out.flush()
