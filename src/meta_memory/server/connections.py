"""The gateway's open connections against its two caps, and which of them a newcomer may displace.

``[gateway] max_connections`` bounds the connections of every client, ``max_connections_per_ip`` those
of one peer address (:func:`~meta_memory.server.protocol.peer_key`). Every loopback client, and every
client behind one reverse proxy, shares one address; so a connection that has not yet sent a complete
request head must not be able to keep a caller that has out:

* a connection is *waiting* while the gateway waits for its request head: from the moment it opens, and
  again after each answer on a kept-alive connection. A waiting connection is *displaceable* unless a
  request on it carried a bearer token the gateway accepted (:class:`ConnectionMark`);
* at a cap, a new connection displaces the oldest displaceable connection (of its own address at the
  per-address cap; of any address at the total cap) with no bytes waiting unread in its socket (they
  may hold a whole head the event loop has not read yet; the oldest 16 are looked at): that one is
  closed, its slot given to the newcomer at once. A connection serving a request, or a kept-alive one
  that has shown an accepted token, is never displaced;
* when none is displaceable, the newcomer is admitted *in reserve* (``[gateway] reserve_connections``,
  32, past both caps; at most that many at once, the oldest waiting one displaced for a newer): there
  a request runs only when it carries an accepted token or is ``GET /v1/health``; any other is answered
  503 (``capacity_exceeded``) unrun, and the connection closed. With the reserve full of connections
  that cannot be displaced either, the newcomer is refused at once (HTTP 503) as before;
* a request refused for its token or its access (HTTP 401 or 403) closes its connection, and on a
  gateway that lists bearer tokens so does every answer to a connection that showed no accepted token
  (:class:`ConnectionTerms`), so cheap requests without a token, refused or served, cannot hold slots
  either;
* on a gateway that lists bearer tokens, at most ``[gateway] max_tokenless_requests`` (32) requests on
  connections that showed no accepted token are in progress at once, from their head until the
  application is done with them (a client gone away frees nothing before that); one more is answered
  503 (``capacity_exceeded``, ``resource: "tokenless_requests"``, ``Retry-After: 1``) unrun and its
  connection closed. ``GET /v1/health`` is not counted, nor ``GET /events`` (bounded by
  ``max_event_subscribers``), nor a scrape on the ``[gateway] metrics_bind`` listener (which serves
  ``GET /metrics`` alone). So requests without a token, even ones ``[access]`` lets run, can never
  queue more than that many answers ahead of a caller with an accepted token for the event loop and the
  worker threads (:class:`ConnectionTerms`).

Nothing here lets a request through: a displaced connection had no request in progress, a newcomer
passes every check its requests meet, and a request past a bound is refused, never run.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from itertools import islice
from typing import Protocol

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import CapacityExceeded
from ..rpc.dispatch import encode, error_response

__all__ = ["DROPS", "LOG_INTERVAL_S", "DropLog", "MARK_KEY", "ConnectionMark", "ConnectionTable", "ConnectionTerms", "on_metrics_listener", "Displaceable"]

log = logging.getLogger("meta_memory.http")

#: Seconds a client refused for the connection caps is told to wait (``Retry-After``).
REFUSED_RETRY_S = 5
#: Seconds a request refused for ``[gateway] max_tokenless_requests`` is told to wait (``Retry-After``).
TOKENLESS_RETRY_S = 1
#: The key of a request's ``scope["state"]`` holding its connection's :class:`ConnectionMark`.
MARK_KEY = "meta_memory.connection"
#: Answers that close their connection: a token refused or missing (401), an access or perimeter refusal (403).
CLOSING_STATUSES = frozenset({401, 403})
#: What a connection admitted in reserve serves without an accepted token.
HEALTH_ROUTES = frozenset({("GET", "/v1/health"), ("HEAD", "/v1/health")})
#: Requests without an accepted token that ``[gateway] max_tokenless_requests`` does not count: health,
#: and the ``/events`` streams (``max_event_subscribers`` bounds them, each for as long as it lasts).
UNCOUNTED_ROUTES = HEALTH_ROUTES | {("GET", "/events")}


class ConnectionMark:
    """What the application tells a connection about the requests it carried: ``vouched`` once one of
    them carried a bearer token the gateway accepted (never set when the gateway lists no tokens)."""

    __slots__ = ("reserve_refusal", "vouched")

    def __init__(self) -> None:
        self.vouched = False
        #: on a connection admitted in reserve: the JSON body (``capacity_exceeded``) answering its
        #: requests that carry no accepted token and are not ``GET /v1/health``
        self.reserve_refusal: bytes | None = None


class Displaceable(Protocol):
    def unread(self) -> bool:
        """Whether bytes the client sent wait unread (a request head may be complete in them)."""

    def displace(self, reason: str) -> None:
        """Close this connection now; its slot is already given back."""


#: The waiting connections a newcomer looks at, oldest first, for one with no bytes unread.
DISPLACE_SCAN = 16


def on_metrics_listener(scope: Scope, metrics_port: int | None) -> bool:
    """Whether the HTTP request of ``scope`` came in on the ``[gateway] metrics_bind`` listener, told apart
    by its own port (``serve`` refuses a ``metrics_bind`` sharing the gateway's): the one test of it."""
    server = scope.get("server")
    return metrics_port is not None and server is not None and server[1] == metrics_port


def _refusal_body(resource: str, limit: int, message: str, retry_after_ms: int | None = None) -> bytes:
    return encode(error_response(None, CapacityExceeded(message, resource=resource, limit=limit,
                                                        retry_after_ms=retry_after_ms)))


#: Seconds between two log lines of one kind of dropped connection (and of asyncio's accept error).
LOG_INTERVAL_S = 1.0

@dataclass
class DropLog:
    """One warning line a second per kind of dropped connection; the lines held back meanwhile are counted
    and reported in one line when the second ends (``dropped N more connections in the last 1 s: ...``),
    so a flood of drops costs at most one line a second of each kind."""

    interval_s: float = LOG_INTERVAL_S
    _last: dict[str, float] = field(default_factory=dict)
    _held: dict[str, tuple[int, str]] = field(default_factory=dict)

    def drop(self, loop: asyncio.AbstractEventLoop, kind: str, who: str, reason: str) -> None:
        """Log ``dropped the connection from <who>: <reason>``, or count it when ``kind`` was logged
        less than ``interval_s`` ago."""
        now = loop.time()
        last = self._last.get(kind)
        if last is None or now - last >= self.interval_s:
            self._last[kind] = now
            log.warning("dropped the connection from %s: %s", who, reason)
            return
        count, _ = self._held.get(kind, (0, reason))
        if count == 0:
            loop.call_at(last + self.interval_s, self._flush, loop, kind)
        self._held[kind] = (count + 1, reason)

    def _flush(self, loop: asyncio.AbstractEventLoop, kind: str) -> None:
        count, reason = self._held.pop(kind, (0, ""))
        if count:
            self._last[kind] = loop.time()
            log.warning("dropped %d more connection(s) in the last %g s (lines suppressed, one a second): %s",
                        count, self.interval_s, reason)


#: The gateway's one drop log (the protocol's refusals and displacements, the tokenless bound's refusals).
DROPS = DropLog()


class ConnectionTable:
    """The connections one server holds open: in all and per peer address, against two caps, with the
    waiting ones (oldest first) that a newcomer at a cap may displace. Event-loop thread only."""

    def __init__(self, max_connections: int, max_per_ip: int, reserve: int = 0) -> None:
        self.max_connections = max_connections
        self.max_per_ip = max_per_ip
        self.reserve = reserve
        self.open = 0
        self.by_peer: dict[str, int] = {}
        self.displaced = 0
        self._waiting: dict[Displaceable, str] = {}  # insertion order: oldest first; the value is the peer
        self._waiting_by_peer: dict[str, dict[Displaceable, str]] = {}
        self.in_reserve: set[Displaceable] = set()
        self._reserve_waiting: dict[Displaceable, str] = {}
        self.refusal_bodies = {
            "connections": _refusal_body("connections", max_connections,
                                         f"the gateway holds its most open connections ({max_connections}, "
                                         f"gateway.max_connections); this connection, admitted in reserve, "
                                         f"serves only requests with an accepted token or GET /v1/health"),
            "connections_per_ip": _refusal_body("connections_per_ip", max_per_ip,
                                                f"this address holds its most open connections ({max_per_ip}, "
                                                f"gateway.max_connections_per_ip); this connection, admitted in "
                                                f"reserve, serves only requests with an accepted token or "
                                                f"GET /v1/health"),
        }
        self.refusals = {
            "connections": self._refusal("connections", max_connections,
                                         f"the gateway holds its most open connections ({max_connections}, "
                                         f"gateway.max_connections), each serving a request or an "
                                         f"authenticated caller; retry later"),
            "connections_per_ip": self._refusal("connections_per_ip", max_per_ip,
                                                f"this address holds its most open connections ({max_per_ip}, "
                                                f"gateway.max_connections_per_ip), each serving a request or an "
                                                f"authenticated caller; close some or retry later"),
        }

    @staticmethod
    def _refusal(resource: str, limit: int, message: str) -> bytes:
        body = _refusal_body(resource, limit, message)
        return (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nconnection: close\r\n"
                b"retry-after: " + str(REFUSED_RETRY_S).encode() + b"\r\ncontent-length: "
                + str(len(body)).encode() + b"\r\n\r\n" + body)

    def admit(self, peer: str) -> str | None:
        """Count one more connection from ``peer``, displacing the oldest displaceable connection (of
        ``peer`` at the per-address cap, of anyone at the total cap) when a cap is reached; or, when
        nothing there is displaceable, the ``resource`` it is refused for (nothing displaced then)."""
        if self.by_peer.get(peer, 0) >= self.max_per_ip and not self._displace(
                self._waiting_by_peer.get(peer), f"gateway.max_connections_per_ip ({self.max_per_ip}) reached"):
            return "connections_per_ip"
        if self.open >= self.max_connections and not self._displace(
                self._waiting, f"gateway.max_connections ({self.max_connections}) reached"):
            return "connections"
        self.open += 1
        self.by_peer[peer] = self.by_peer.get(peer, 0) + 1
        return None

    def admit_in_reserve(self, conn: Displaceable, peer: str) -> bool:
        """Count ``conn`` (refused by :meth:`admit`) in the reserve instead, displacing the oldest waiting
        connection in reserve when it is full; ``False`` (nothing displaced) when none can be."""
        if len(self.in_reserve) >= self.reserve and not self._displace(
                self._reserve_waiting, f"the {self.reserve} connections in reserve (gateway.reserve_connections) held"):
            return False
        self.in_reserve.add(conn)
        return True

    def waiting(self, conn: Displaceable, peer: str) -> None:
        """``conn`` (of ``peer``) waits for a request head and may be displaced; it keeps its place in
        the order when it already waits (a head arriving byte by byte stays the oldest)."""
        if conn in self.in_reserve:
            self._reserve_waiting.setdefault(conn, peer)
        elif conn not in self._waiting:
            self._waiting[conn] = peer
            self._waiting_by_peer.setdefault(peer, {})[conn] = peer

    def busy(self, conn: Displaceable) -> None:
        """``conn`` may not be displaced (a request is in progress, or it showed an accepted token)."""
        self._reserve_waiting.pop(conn, None)
        peer = self._waiting.pop(conn, None)
        if peer is not None:
            mine = self._waiting_by_peer[peer]
            del mine[conn]
            if not mine:
                del self._waiting_by_peer[peer]

    def release(self, conn: Displaceable, peer: str) -> None:
        """``conn``, which :meth:`admit` counted for ``peer`` (or :meth:`admit_in_reserve` held) and which
        was not displaced, has closed."""
        self.busy(conn)
        if conn in self.in_reserve:
            self.in_reserve.discard(conn)
            return
        self.open -= 1
        left = self.by_peer.get(peer, 1) - 1
        if left > 0:
            self.by_peer[peer] = left
        else:
            self.by_peer.pop(peer, None)

    def _displace(self, pool: Mapping[Displaceable, str] | None, reason: str) -> bool:
        oldest = next((conn for conn in islice(pool or (), DISPLACE_SCAN) if not conn.unread()), None)
        if oldest is None or pool is None:
            return False
        self.release(oldest, pool[oldest])
        self.displaced += 1
        oldest.displace(reason)
        return True


class ConnectionTerms:
    """ASGI middleware (outermost) between each request, its connection's place in the table and the
    requests without an accepted token in progress:

    * a request whose ``Authorization`` header ``vouches`` accepts marks its connection
      :class:`ConnectionMark` ``vouched``, so that kept alive it is never displaced (judged on the
      headers, before the request runs; ``vouches`` is asked at most once per request until it accepts);
    * on a connection admitted in reserve, a request not vouched for that is not ``GET /v1/health`` is
      answered 503 (``capacity_exceeded``, ``Retry-After``) and nothing of it runs;
    * while ``tokens_listed()`` (the gateway lists bearer tokens), at most ``max_tokenless`` requests not
      vouched for (by their connection's mark, or on a connection served without one by their own header)
      run at once, :data:`UNCOUNTED_ROUTES` and the ``metrics_bind`` listener's scrapes aside; one more is answered 503 (``capacity_exceeded``,
      ``resource: "tokenless_requests"``, ``Retry-After: 1``), closes its connection, and nothing of it
      runs. ``tokenless`` counts those in progress (event-loop thread only);
    * an answer with status 401 or 403 carries ``Connection: close``, and so does every answer on a
      connection not vouched for while ``tokens_listed()`` or in reserve: a caller without an accepted
      token gets one request a connection, so that it cannot hold a slot by sending requests back to
      back; its next connection waits for its head, displaceable."""

    def __init__(self, app: ASGIApp, vouches: Callable[[str | None], bool], tokens_listed: Callable[[], bool],
                 max_tokenless: int, metrics_port: int | None = None) -> None:
        self.app = app
        #: the port of the ``[gateway] metrics_bind`` listener: its scrapes (``GET /metrics`` alone, no token
        #: asked) are not counted, so a flood on the main listener cannot blind the operator's monitoring
        self.metrics_port = metrics_port
        self.vouches = vouches
        self.tokens_listed = tokens_listed
        self.max_tokenless = max_tokenless
        self.tokenless = 0
        self.tokenless_refusal = _refusal_body(
            "tokenless_requests", max_tokenless,
            f"the gateway runs at most {max_tokenless} requests without an accepted bearer token at once "
            f"(gateway.max_tokenless_requests), and that many are in progress: this one was not run; send it "
            f"again later, or with a token", retry_after_ms=TOKENLESS_RETRY_S * 1000)

    def _vouched(self, scope: Scope, mark: ConnectionMark | None) -> bool:
        if mark is not None and mark.vouched:
            return True
        header = next((value.decode("latin-1") for name, value in scope["headers"] if name == b"authorization"), None)
        vouched = header is not None and self.vouches(header)
        if mark is not None:
            mark.vouched = vouched
        return vouched

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        found = (scope.get("state") or {}).get(MARK_KEY)
        mark = found if isinstance(found, ConnectionMark) else None  # None: not served by the guarded protocol
        tokens_listed = self.tokens_listed()
        if mark is None and not tokens_listed:  # nothing to tell a connection, no token to put first
            await self.app(scope, receive, send)
            return
        vouched = self._vouched(scope, mark)
        route = (scope["method"], scope["path"])
        if mark is not None and mark.reserve_refusal is not None and not vouched and route not in HEALTH_ROUTES:
            await _refuse(send, mark.reserve_refusal, REFUSED_RETRY_S)
            return
        counted = (tokens_listed and not vouched and route not in UNCOUNTED_ROUTES
                   and not on_metrics_listener(scope, self.metrics_port))
        if counted and self.tokenless >= self.max_tokenless:
            client = scope.get("client")
            DROPS.drop(asyncio.get_running_loop(), "tokenless", str(client[0]) if client else "an unknown peer",
                       f"gateway.max_tokenless_requests ({self.max_tokenless}) reached: a request without an "
                       "accepted token refused unrun")
            await _refuse(send, self.tokenless_refusal, TOKENLESS_RETRY_S)
            return
        send_terms = send if mark is None else self._closing(send, not vouched and (
            tokens_listed or mark.reserve_refusal is not None))
        if not counted:
            await self.app(scope, receive, send_terms)
            return
        self.tokenless += 1
        try:
            await self.app(scope, receive, send_terms)
        finally:
            self.tokenless -= 1

    @staticmethod
    def _closing(send: Send, always: bool) -> Send:
        """``send``, adding ``Connection: close`` to the answer when ``always`` or its status is 401 or 403."""

        async def send_terms(message: Message) -> None:
            if message["type"] == "http.response.start" and (always or message["status"] in CLOSING_STATUSES):
                message = {**message, "headers": [*message.get("headers", ()), (b"connection", b"close")]}
            await send(message)

        return send_terms


async def _refuse(send: Send, body: bytes, retry_after_s: int) -> None:
    """Answer 503 with ``body`` (a JSON-RPC ``capacity_exceeded`` error), ``Retry-After`` and ``Connection:
    close``, before anything of the request has run."""
    await send({"type": "http.response.start", "status": 503,
                "headers": [(b"content-type", b"application/json"), (b"retry-after", str(retry_after_s).encode()),
                            (b"content-length", str(len(body)).encode()), (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})
