"""Newline-delimited JSON-RPC over stdin/stdout (what an SDK spawns).

One JSON message per line in, one response per line out (nothing for a
notification). Logs go to stderr, never stdout. EOF or SIGTERM ends the loop
after the call in flight.
"""

from __future__ import annotations

import sys
from typing import BinaryIO

from ..rpc.registry import CallContext
from .gateway import Gateway

__all__ = ["serve_stdio"]


def serve_stdio(gateway: Gateway, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> int:
    """Serve until EOF. Returns the process exit code (0)."""
    inp = stdin or sys.stdin.buffer
    out = stdout or sys.stdout.buffer
    ctx = CallContext(principal=gateway.authenticate(None), transport="stdio")
    limit = gateway.runtime.config.gateway.max_request_bytes
    while True:
        line = inp.readline(limit + 1)
        if not line:
            return 0
        if len(line) > limit and not line.endswith(b"\n"):
            # drain the rest of the oversized line, then refuse it without parsing
            while True:
                rest = inp.readline(1 << 20)
                if not rest or rest.endswith(b"\n"):
                    break
            from ..errors import InvalidRequest
            from ..rpc.dispatch import encode, error_response

            out.write(encode(error_response(None, InvalidRequest(f"request line exceeds {limit} bytes", "body"))) + b"\n")
            out.flush()
            continue
        if not line.strip():
            continue
        response = gateway.dispatcher.handle_bytes(line, ctx)
        if response is not None:
            out.write(response + b"\n")
            out.flush()
