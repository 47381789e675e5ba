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

* ``send_timeout_s``: how long a connection's send buffer may stay full with the
  client reading none of it (the transport paused writing, and its buffer did
  not shrink) before the connection is aborted: the bytes buffered for it are
  dropped, and the answers the gateway holds for it
  (``max_buffered_response_bytes``) are given back. A client reading a large
  answer slowly but steadily is never dropped.

A response being streamed (``/events``) has no deadline of its own as long as
its client reads: the read deadlines only watch what the client still owes us,
the send deadline only a client that stopped reading.

Open connections are bounded, so that no flood of idle connections can take the
process's last file descriptor (:func:`connection_budget`):

* ``max_connections``: over every client. Unset, it is what the open-file limit
  (``RLIMIT_NOFILE``, soft) leaves after a reserve for databases, logs and files;
  a configured value is never served above that.
* ``max_connections_per_ip``: from one peer address (an IPv6 address counts by
  its /64 network, which one host usually holds whole).

A connection at either cap first displaces the oldest connection still waiting
for a request head that has shown no accepted token (of its address, or of any
at the total cap; :mod:`meta_memory.server.connections`), which is closed. When
there is none, it is answered at once, before it has sent anything, with
``503 Service Unavailable``, ``Retry-After: 5`` and a JSON-RPC shaped
``-32005 capacity_exceeded`` (``data.resource`` ``"connections"`` or
``"connections_per_ip"``, ``data.limit``), then closed: its descriptor is freed
on the event loop's next turn. Its slot is counted from ``connection_made`` to
``connection_lost`` (or until it is displaced). Over TLS, ``connection_made``
comes once the handshake is complete: a handshake in progress holds no slot.

Each dropped or refused connection is a log line, at most one a second of each
kind (``headers``, ``body``, ``send``, ``refused``, ``displaced``, and ``tokenless``: a request past ``[gateway] max_tokenless_requests``); the lines held back are
counted and reported in one line when that second ends (:class:`~meta_memory.server.connections.DropLog`).
asyncio's own ``socket.accept() out of system resource`` error (the process out
of descriptors anyway, e.g. under a lower ``ulimit -n`` than the caps assume) is
rate-limited the same way, without its traceback (:func:`install_accept_error_filter`).
"""

from __future__ import annotations

import asyncio
import fcntl
import ipaddress
import logging
import struct
import termios
import time
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from ..limits import DEFAULT_MAX_CONNECTIONS_PER_IP, MAX_CONNECTIONS
from .connections import DROPS as _drops
from .connections import LOG_INTERVAL_S, MARK_KEY, ConnectionMark, ConnectionTable

#: the ioctl reading a socket's unsent bytes in the kernel (Linux's ``SIOCOUTQ``), where there is one
_OUTQ: int | None = getattr(termios, "TIOCOUTQ", None)

__all__ = ["ConnectionTable", "connection_budget", "guarded_protocol", "install_accept_error_filter",
           "peer_key"]

log = logging.getLogger("meta_memory.http")

#: Descriptors kept back from connections: an eighth of the open-file limit, at least 256 (at most half
#: the limit when the limit itself is below 512), for the databases, logs and files the gateway opens and
#: the connections asyncio has accepted but not yet handed over.
_RESERVE_FRACTION = 8
_RESERVE_FLOOR = 256


def connection_budget(soft_limit: int | None = None) -> int:
    """The connections the open-file limit leaves room for: ``soft_limit`` (default: this process's soft
    ``RLIMIT_NOFILE``; unlimited counts as :data:`~meta_memory.limits.MAX_CONNECTIONS`) minus a reserve of
    an eighth of it, at least 256 descriptors (half the limit when it is below 512). At least 1.

    The default ``[gateway] max_connections``, and the most a configured one is served with."""
    if soft_limit is None:
        try:
            import resource
        except ImportError:  # no POSIX limits: assume the common default
            soft_limit = 1024
        else:
            soft_limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
            if soft_limit == resource.RLIM_INFINITY:
                soft_limit = MAX_CONNECTIONS
    soft_limit = min(soft_limit, MAX_CONNECTIONS)
    reserve = max(min(_RESERVE_FLOOR, soft_limit // 2), soft_limit // _RESERVE_FRACTION)
    return max(1, soft_limit - reserve)


def peer_key(host: str) -> str:
    """The address a peer's connections are counted under: an IPv4 address as it is, an IPv6 address by
    its /64 network (``2001:db8::/64``; an IPv4-mapped one as its IPv4 address); anything else as it is."""
    if ":" not in host:
        return host
    try:
        address = ipaddress.IPv6Address(host.split("%", 1)[0])
    except ValueError:
        return host
    if address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return str(ipaddress.IPv6Network((address, 64), strict=False))




class _AcceptErrorFilter(logging.Filter):
    """asyncio's ``socket.accept() out of system resource`` at most once a second, without its traceback,
    with the count of those held back since the last one shown."""

    def __init__(self, interval_s: float = LOG_INTERVAL_S) -> None:
        super().__init__()
        self.interval_s = interval_s
        self._last = float("-inf")
        self._held = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if not isinstance(record.msg, str) or not record.msg.startswith("socket.accept() out of system resource"):
            return True
        now = time.monotonic()
        if now - self._last < self.interval_s:
            self._held += 1
            return False
        self._last = now
        error = record.exc_info[1] if record.exc_info else None
        held, self._held = self._held, 0
        record.msg = "socket.accept() out of system resource (%s); %d such line(s) suppressed since the last one"
        record.args = (error or "no detail", held)
        record.exc_info = None
        record.exc_text = None
        return True


def install_accept_error_filter() -> None:
    """Rate-limit asyncio's accept error on the ``asyncio`` logger (see :class:`_AcceptErrorFilter`);
    installing it again is a no-op."""
    logger = logging.getLogger("asyncio")
    if not any(isinstance(f, _AcceptErrorFilter) for f in logger.filters):
        logger.addFilter(_AcceptErrorFilter())


class _GuardedH11Protocol(H11Protocol):
    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    send_timeout_s: float = 30.0
    table: ConnectionTable = ConnectionTable(MAX_CONNECTIONS, DEFAULT_MAX_CONNECTIONS_PER_IP)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._phase: str | None = None
        self._deadline: asyncio.TimerHandle | None = None
        self._stall: asyncio.TimerHandle | None = None
        peer = transport.get_extra_info("peername")
        host = str(peer[0]) if isinstance(peer, tuple) and peer else ""
        self._peer = peer_key(host)
        self._displaced = False
        self._mark = ConnectionMark()
        refused = self.table.admit(self._peer)
        if refused is not None and self.table.admit_in_reserve(self, self._peer):
            self._mark.reserve_refusal = self.table.refusal_bodies[refused]
            refused = None
        self._refused = refused is not None
        if refused is not None:  # not counted, never handed to H11Protocol: connection_lost ignores it
            who = f"{host}:{peer[1]}" if isinstance(peer, tuple) and len(peer) > 1 else "a client"
            limit = self.table.max_connections if refused == "connections" else self.table.max_per_ip
            _drops.drop(self.loop, "refused", who, f"gateway.{'max_' + refused} ({limit}) reached")
            transport.write(self.table.refusals[refused])
            transport.close()  # the answer is a few hundred bytes: it leaves at once, then the descriptor
            return
        self.app_state = {**self.app_state, MARK_KEY: self._mark}  # each request's scope["state"] is a copy
        super().connection_made(transport)
        self._watch()

    def data_received(self, data: bytes) -> None:
        if self._refused or self._displaced:  # closing: what it sent is never read
            return
        super().data_received(data)
        self._watch()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._refused:
            return
        if not self._displaced:
            self.table.release(self, self._peer)
        self._disarm()
        self._unstall()
        super().connection_lost(exc)

    def pause_writing(self) -> None:
        """The send buffer is full: the client has ``send_timeout_s`` to read some of it, and as long again
        after each time it did, before the connection is aborted."""
        super().pause_writing()
        if self._stall is None and not self.transport.is_closing():
            self._arm_stall()

    def _arm_stall(self) -> None:
        self._stall = self.loop.call_later(self.send_timeout_s, self._stalled, self.send_timeout_s, self._unsent())

    def _unsent(self) -> int:
        """The bytes written to this connection and not yet sent: the transport's buffer, plus (on Linux) the
        socket's send queue in the kernel, which a client's reads drain first (it may hold megabytes)."""
        unsent = self.transport.get_write_buffer_size()
        sock = self.transport.get_extra_info("socket")
        if sock is not None and _OUTQ is not None:
            try:
                unsent += struct.unpack("i", fcntl.ioctl(sock.fileno(), _OUTQ, b"\0\0\0\0"))[0]
            except (OSError, ValueError):
                pass
        return unsent

    def resume_writing(self) -> None:
        super().resume_writing()
        self._unstall()

    def _unstall(self) -> None:
        if self._stall is not None:
            self._stall.cancel()
            self._stall = None

    def _stalled(self, timeout: float, buffered: int) -> None:
        """``send_timeout_s`` after the buffer held ``buffered`` bytes: a client that read some of them since is
        given as long again (a large answer read steadily keeps the buffer above its mark throughout)."""
        self._stall = None
        if not self.flow.write_paused:
            return
        if self._unsent() < buffered:
            self._arm_stall()
            return
        who = "%s:%d" % self.client if self.client else "a client"
        _drops.drop(self.loop, "send", who, f"its answer not read for {timeout:g} s")
        self.transport.abort()  # drops the buffered bytes at once; connection_lost releases the send

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def unread(self) -> bool:
        """Whether the socket holds bytes the client sent that the event loop has not read yet."""
        sock = self.transport.get_extra_info("socket")
        if sock is None:
            return False
        try:
            return bool(struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.FIONREAD, b"\0\0\0\0"))[0] > 0)
        except (OSError, ValueError):
            return False

    def displace(self, reason: str) -> None:
        """Close this connection, which is waiting for a request head, for a newcomer at a connection cap
        (:class:`~meta_memory.server.connections.ConnectionTable`, which has given its slot away)."""
        self._displaced = True
        self._disarm()
        who = "%s:%d" % self.client if self.client else "a client"
        _drops.drop(self.loop, "displaced", who, f"no request head yet, its slot given to a new connection ({reason})")
        self.transport.close()  # what was written to it still leaves; nothing more is read

    def _watch(self) -> None:
        """(Re)arm the deadline for what the client owes now: headers, a body, or nothing; and tell the
        connection table whether this connection may be displaced (waiting for a head, no accepted token)."""
        if self.transport.is_closing():
            self._disarm()
            if not self._displaced:
                self.table.busy(self)
            return
        state = self.conn.their_state
        phase = "headers" if state is h11.IDLE else "body" if state is h11.SEND_BODY else None
        if phase == "headers" and not self._mark.vouched:
            self.table.waiting(self, self._peer)
        else:
            self.table.busy(self)
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
        _drops.drop(self.loop, phase, who, f"request {phase} not complete within {timeout:g} s")
        if phase == "headers":
            text = f"request headers not complete within {timeout:g} s".encode()
            self.transport.write(b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
                                 b"connection: close\r\ncontent-length: " + str(len(text)).encode() + b"\r\n\r\n" + text)
        self.transport.close()


def guarded_protocol(header_timeout_s: float, body_timeout_s: float, send_timeout_s: float,
                     max_connections: int, max_connections_per_ip: int, reserve: int = 0) -> type[Any]:
    """The protocol class to hand to ``uvicorn.Config(http=...)`` with these deadlines (seconds),
    connection caps (counts, each at least 1) and ``reserve`` (connections admitted past a cap for
    requests with an accepted token or ``GET /v1/health``; 0 or more), shared by every connection of
    that class."""
    return type("GuardedH11Protocol", (_GuardedH11Protocol,),
                {"header_timeout_s": float(header_timeout_s), "body_timeout_s": float(body_timeout_s),
                 "send_timeout_s": float(send_timeout_s),
                 "table": ConnectionTable(max_connections, max_connections_per_ip, reserve)})
