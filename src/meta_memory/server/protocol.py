"""uvicorn's HTTP/1.1 protocol (h11) with per-connection read and send deadlines.

uvicorn closes idle keep-alive connections but has no deadline for a request
still arriving: a client that sends headers one byte at a time, or a body that
trickles, would hold its connection (and a file descriptor) forever. This
protocol adds two deadlines, from ``[gateway]``:

* ``header_timeout_s``: from the moment a connection opens (or its previous
  response completes) until the request's headers are complete. Past it the
  client gets ``408 Request Timeout`` and the connection is closed.
* ``body_timeout_s``: from the end of the headers until the whole body has
  arrived. Past it the connection is closed; the handler sees a disconnect.

* ``send_timeout_s``: how long the connection's send buffer may stay full (the
  transport paused writing because the client reads nothing) before the
  connection is aborted: the bytes buffered for it are dropped, and the answers
  the gateway holds for it (``max_buffered_response_bytes``) are given back.

Each drop is logged as one line. A response being streamed (``/events``) has no
deadline of its own as long as its client reads: the read deadlines only watch
what the client still owes us, the send deadline only a client that stopped
reading.
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
    send_timeout_s: float = 30.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._phase: str | None = None
        self._deadline: asyncio.TimerHandle | None = None
        self._stall: asyncio.TimerHandle | None = None
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
        self._unstall()
        super().connection_lost(exc)

    def pause_writing(self) -> None:
        """The send buffer is full: the client has this long to read before the connection is aborted."""
        super().pause_writing()
        if self._stall is None and not self.transport.is_closing():
            self._stall = self.loop.call_later(self.send_timeout_s, self._stalled, self.send_timeout_s)

    def resume_writing(self) -> None:
        super().resume_writing()
        self._unstall()

    def _unstall(self) -> None:
        if self._stall is not None:
            self._stall.cancel()
            self._stall = None

    def _stalled(self, timeout: float) -> None:
        self._stall = None
        if not self.flow.write_paused:
            return
        who = "%s:%d" % self.client if self.client else "a client"
        log.warning("dropped the connection from %s: its answer not read for %g s", who, timeout)
        self.transport.abort()  # drops the buffered bytes at once; connection_lost releases the send

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


def guarded_protocol(header_timeout_s: float, body_timeout_s: float, send_timeout_s: float) -> type[Any]:
    """The protocol class to hand to ``uvicorn.Config(http=...)`` with these deadlines (seconds)."""
    return type("GuardedH11Protocol", (_GuardedH11Protocol,),
                {"header_timeout_s": float(header_timeout_s), "body_timeout_s": float(body_timeout_s),
                 "send_timeout_s": float(send_timeout_s)})
