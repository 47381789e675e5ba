"""uvicorn's HTTP/1.1 protocol (h11) with per-connection read deadlines.

uvicorn closes idle keep-alive connections but has no deadline for a request
still arriving: a client that sends headers one byte at a time, or a body that
trickles, would hold its connection (and a file descriptor) forever. This
protocol adds two deadlines, from ``[gateway]``:

* ``header_timeout_s``: from the moment a connection opens (or its previous
  response completes) until the request's headers are complete. Past it the
  client gets ``408 Request Timeout`` and the connection is closed.
* ``body_timeout_s``: from the end of the headers until the whole body has
  arrived. Past it the connection is closed; the handler sees a disconnect.

Each drop is logged as one line. A response being streamed (``/events``) is not
limited: the deadlines only watch what the client still owes us.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["guarded_protocol"]

log = logging.getLogger("meta_memory.http")


class _GuardedH11Protocol(H11Protocol):
    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._phase: str | None = None
        self._deadline: asyncio.TimerHandle | None = None
        super().connection_made(transport)
        self._watch()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _watch(self) -> None:
        """(Re)arm the deadline for what the client owes now: headers, a body, or nothing."""
        if self.transport.is_closing():
            self._disarm()
            return
        state = self.conn.their_state
        phase = "headers" if state is h11.IDLE else "body" if state is h11.SEND_BODY else None
        if phase == self._phase:
            return
        self._disarm()
        self._phase = phase
        if phase is not None:
            timeout = self.header_timeout_s if phase == "headers" else self.body_timeout_s
            self._deadline = self.loop.call_later(timeout, self._expired, phase, timeout)

    def _expired(self, phase: str, timeout: float) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        who = "%s:%d" % self.client if self.client else "a client"
        log.warning("dropped the connection from %s: request %s not complete within %g s", who, phase, timeout)
        if phase == "headers":
            text = f"request headers not complete within {timeout:g} s".encode()
            self.transport.write(b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
                                 b"connection: close\r\ncontent-length: " + str(len(text)).encode() + b"\r\n\r\n" + text)
        self.transport.close()


def guarded_protocol(header_timeout_s: float, body_timeout_s: float) -> type[Any]:
    """The protocol class to hand to ``uvicorn.Config(http=...)`` with these deadlines (seconds)."""
    return type("GuardedH11Protocol", (_GuardedH11Protocol,),
                {"header_timeout_s": float(header_timeout_s), "body_timeout_s": float(body_timeout_s)})
