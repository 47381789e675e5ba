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
  either.

Nothing here lets a request through: a displaced connection had no request in progress, and a
newcomer passes every check its requests meet.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from itertools import islice
from typing import Protocol

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import CapacityExceeded
from ..rpc.dispatch import encode, error_response

__all__ = ["MARK_KEY", "ConnectionMark", "ConnectionTable", "ConnectionTerms", "Displaceable"]

#: Seconds a client refused for the connection caps is told to wait (``Retry-After``).
REFUSED_RETRY_S = 5
#: The key of a request's ``scope["state"]`` holding its connection's :class:`ConnectionMark`.
MARK_KEY = "meta_memory.connection"
#: Answers that close their connection: a token refused or missing (401), an access or perimeter refusal (403).
CLOSING_STATUSES = frozenset({401, 403})
#: What a connection admitted in reserve serves without an accepted token.
HEALTH_ROUTES = frozenset({("GET", "/v1/health"), ("HEAD", "/v1/health")})


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


def _refusal_body(resource: str, limit: int, message: str) -> bytes:
    return encode(error_response(None, CapacityExceeded(message, resource=resource, limit=limit)))


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
    """ASGI middleware (outermost) between each request and its connection's place in the table:

    * a request whose ``Authorization`` header ``vouches`` accepts marks its connection
      :class:`ConnectionMark` ``vouched``, so that kept alive it is never displaced (judged on the
      headers, before the request runs; ``vouches`` is asked at most once per request until it accepts);
    * on a connection admitted in reserve, a request not vouched for that is not ``GET /v1/health`` is
      answered 503 (``capacity_exceeded``, ``Retry-After``) and nothing of it runs;
    * an answer with status 401 or 403 carries ``Connection: close``, and so does every answer on a
      connection not vouched for while ``tokens_listed()`` (the gateway lists bearer tokens) or in
      reserve: a caller without an accepted token gets one request a connection, so that it cannot hold
      a slot by sending requests back to back; its next connection waits for its head, displaceable."""

    def __init__(self, app: ASGIApp, vouches: Callable[[str | None], bool], tokens_listed: Callable[[], bool]) -> None:
        self.app = app
        self.vouches = vouches
        self.tokens_listed = tokens_listed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        mark = (scope.get("state") or {}).get(MARK_KEY) if scope["type"] == "http" else None
        if not isinstance(mark, ConnectionMark):  # not served by the guarded protocol: nothing to tell
            await self.app(scope, receive, send)
            return
        if not mark.vouched:
            header = next((value.decode("latin-1") for name, value in scope["headers"] if name == b"authorization"),
                          None)
            mark.vouched = header is not None and self.vouches(header)
        if (mark.reserve_refusal is not None and not mark.vouched
                and (scope["method"], scope["path"]) not in HEALTH_ROUTES):
            await send({"type": "http.response.start", "status": 503,
                        "headers": [(b"content-type", b"application/json"), (b"retry-after", str(REFUSED_RETRY_S).encode()),
                                    (b"content-length", str(len(mark.reserve_refusal)).encode()),
                                    (b"connection", b"close")]})
            await send({"type": "http.response.body", "body": mark.reserve_refusal})
            return
        closes = not mark.vouched and (mark.reserve_refusal is not None or self.tokens_listed())

        async def send_terms(message: Message) -> None:
            if message["type"] == "http.response.start" and (closes or message["status"] in CLOSING_STATUSES):
                message = {**message, "headers": [*message.get("headers", ()), (b"connection", b"close")]}
            await send(message)

        await self.app(scope, receive, send_terms)
