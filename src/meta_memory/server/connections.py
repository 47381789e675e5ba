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
  closed, its slot given to the newcomer at once. When none is displaceable, the newcomer is refused (HTTP 503) as before. A
  connection serving a request, or a kept-alive one that has shown an accepted token, is never
  displaced;
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


class ConnectionMark:
    """What the application tells a connection about the requests it carried: ``vouched`` once one of
    them carried a bearer token the gateway accepted (never set when the gateway lists no tokens)."""

    __slots__ = ("vouched",)

    def __init__(self) -> None:
        self.vouched = False


class Displaceable(Protocol):
    def unread(self) -> bool:
        """Whether bytes the client sent wait unread (a request head may be complete in them)."""

    def displace(self, reason: str) -> None:
        """Close this connection now; its slot is already given back."""


#: The waiting connections a newcomer looks at, oldest first, for one with no bytes unread.
DISPLACE_SCAN = 16


class ConnectionTable:
    """The connections one server holds open: in all and per peer address, against two caps, with the
    waiting ones (oldest first) that a newcomer at a cap may displace. Event-loop thread only."""

    def __init__(self, max_connections: int, max_per_ip: int) -> None:
        self.max_connections = max_connections
        self.max_per_ip = max_per_ip
        self.open = 0
        self.by_peer: dict[str, int] = {}
        self.displaced = 0
        self._waiting: dict[Displaceable, str] = {}  # insertion order: oldest first
        self._waiting_by_peer: dict[str, dict[Displaceable, None]] = {}
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
        body = encode(error_response(None, CapacityExceeded(message, resource=resource, limit=limit)))
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

    def waiting(self, conn: Displaceable, peer: str) -> None:
        """``conn`` (of ``peer``) waits for a request head and may be displaced; it keeps its place in
        the order when it already waits (a head arriving byte by byte stays the oldest)."""
        if conn not in self._waiting:
            self._waiting[conn] = peer
            self._waiting_by_peer.setdefault(peer, {})[conn] = None

    def busy(self, conn: Displaceable) -> None:
        """``conn`` may not be displaced (a request is in progress, or it showed an accepted token)."""
        peer = self._waiting.pop(conn, None)
        if peer is not None:
            mine = self._waiting_by_peer[peer]
            del mine[conn]
            if not mine:
                del self._waiting_by_peer[peer]

    def release(self, conn: Displaceable, peer: str) -> None:
        """``conn``, which :meth:`admit` counted for ``peer`` and which was not displaced, has closed."""
        self.busy(conn)
        self.open -= 1
        left = self.by_peer.get(peer, 1) - 1
        if left > 0:
            self.by_peer[peer] = left
        else:
            self.by_peer.pop(peer, None)

    def _displace(self, pool: Mapping[Displaceable, object] | None, reason: str) -> bool:
        oldest = next((conn for conn in islice(pool or (), DISPLACE_SCAN) if not conn.unread()), None)
        if oldest is None:
            return False
        peer = self._waiting[oldest]
        self.release(oldest, peer)
        self.displaced += 1
        oldest.displace(reason)
        return True


class ConnectionTerms:
    """ASGI middleware (outermost) telling each request's connection what the connection table needs:

    * a request whose ``Authorization`` header ``vouches`` accepts marks its connection
      :class:`ConnectionMark` ``vouched``, so that kept alive it is never displaced (``vouches`` is
      called at most once a connection);
    * an answer with status 401 or 403 carries ``Connection: close``, and so does every answer on a
      connection not vouched for while ``tokens_listed()`` (the gateway lists bearer tokens): a caller
      without an accepted token gets one request a connection, so that it cannot hold a slot by sending
      requests back to back; its next connection waits for its head, displaceable, like any other."""

    def __init__(self, app: ASGIApp, vouches: Callable[[str | None], bool], tokens_listed: Callable[[], bool]) -> None:
        self.app = app
        self.vouches = vouches
        self.tokens_listed = tokens_listed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        mark = (scope.get("state") or {}).get(MARK_KEY)

        async def send_terms(message: Message) -> None:
            if message["type"] == "http.response.start" and self._closes(message["status"], mark, scope):
                message = {**message, "headers": [*message.get("headers", ()), (b"connection", b"close")]}
            await send(message)

        await self.app(scope, receive, send_terms)

    def _closes(self, status: int, mark: object, scope: Scope) -> bool:
        if status in CLOSING_STATUSES:
            return True
        if not isinstance(mark, ConnectionMark):  # not served by the guarded protocol: nothing to tell
            return False
        if not mark.vouched:
            header = next((value.decode("latin-1") for name, value in scope["headers"] if name == b"authorization"),
                          None)
            mark.vouched = header is not None and self.vouches(header)
        return not mark.vouched and self.tokens_listed()
