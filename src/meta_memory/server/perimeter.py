"""The HTTP perimeter: which requests a browser or a rebinding page may make at all.

Applied to every HTTP request (``/rpc``, ``/events``, ``/v1/health``, ``/console/``)
before any route runs (``docs/security.md``, "Perimeter"):

* **Host.** The ``Host`` header must name a loopback host (``localhost``, a
  ``*.localhost`` name, ``127.0.0.0/8``, ``::1``), the address the gateway is
  bound to (unless that is a wildcard such as ``0.0.0.0``), or an entry of
  ``[gateway] allowed_hosts``. Otherwise HTTP 421: a DNS-rebinding page reaches
  the port under its own name and is refused before it can read anything.
* **Origin.** A present ``Origin`` must be the gateway's own origin (the
  request's scheme and ``Host``) or an entry of ``[gateway] allowed_origins``.
  Otherwise HTTP 403, nothing executed (``Origin: null`` is always refused).
* **One of each.** A request that sends ``Host``, ``Origin``, ``Content-Type``,
  ``Authorization``, ``Sec-Fetch-Site``, ``Sec-Fetch-Mode`` or ``Last-Event-ID``
  more than once is refused (HTTP 400) before any other check: every rule reads one
  value, and a second one that a proxy, a framework or a later check might read
  instead would walk around it.
* **One framing.** A request that sends both ``Transfer-Encoding`` and ``Content-Length`` is refused
  (HTTP 400, ``data.field = "transfer-encoding"``, ``Connection: close``) before any other check: the two
  say where the body ends in two ways, and a proxy in front reading the other one than the server
  (request smuggling, RFC 9112 section 11.2) would pass the rest of the body off as the next request on
  its kept-alive connection, which another client's answer may then be given to. The parser alone
  would read the chunks and keep the connection open.
* **Fetch metadata.** A request without ``Origin`` that a browser marks
  ``Sec-Fetch-Site: cross-site`` or ``same-site`` is refused (HTTP 403) unless it
  is a top-level ``GET`` navigation, so a page cannot open ``/events`` or read
  the console with a ``no-cors`` request either.

Refusals are JSON-RPC shaped (``-32600``, ``data.kind = "invalid_request"``,
``data.field`` = ``host`` | ``origin`` | ``sec-fetch-site`` | ``transfer-encoding``, or the repeated
header's lower-case name), logged as one line,
and never reach a handler. CORS (preflights and ``Access-Control-Allow-Origin``)
is answered only for ``allowed_origins``, by Starlette's ``CORSMiddleware``
placed behind this guard.
"""

from __future__ import annotations

import ipaddress
import logging
import re
from dataclasses import dataclass

from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from ..errors import InvalidRequest
from ..rpc.dispatch import encode, error_response
from .config import normalise_host, normalise_origin

__all__ = ["SINGLE_HEADERS", "Perimeter", "PerimeterRules", "framed_twice", "is_wildcard_bind", "json_refusal",
           "repeated_header", "rpc_media_type_refusal"]

log = logging.getLogger("meta_memory.http")

_HOST_HEADER = re.compile(r"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<name>[^:\[\]/@\s]+))(?::(?P<port>[0-9]{1,5}))?")
_WILDCARD_BINDS = {"0.0.0.0", "::", ""}
_CROSS = {"cross-site", "same-site"}
#: Headers a request may send at most once (the perimeter, the media type, authentication and /events
#: each read one value), lower-case, as ASGI gives them.
SINGLE_HEADERS = (b"host", b"origin", b"content-type", b"authorization", b"sec-fetch-site", b"sec-fetch-mode",
                  b"last-event-id")


def repeated_header(raw: list[tuple[bytes, bytes]]) -> str | None:
    """The first of :data:`SINGLE_HEADERS` that ``raw`` (ASGI ``scope["headers"]``) holds more than once,
    as its lower-case name, or ``None``."""
    seen: set[bytes] = set()
    for name, _ in raw:
        name = name.lower()
        if name in SINGLE_HEADERS:
            if name in seen:
                return name.decode("latin-1")
            seen.add(name)
    return None


def framed_twice(raw: list[tuple[bytes, bytes]]) -> bool:
    """Whether ``raw`` (ASGI ``scope["headers"]``) holds both ``Transfer-Encoding`` and ``Content-Length``:
    two answers to where the body ends (RFC 9112 section 6.1)."""
    names = {name.lower() for name, _ in raw}
    return b"transfer-encoding" in names and b"content-length" in names


def json_refusal(status: int, exc: InvalidRequest, headers: dict[str, str] | None = None) -> Response:
    """An HTTP error whose body is the JSON-RPC error for ``exc`` (``id: null``)."""
    return Response(encode(error_response(None, exc)), status_code=status, media_type="application/json",
                    headers=headers)


def rpc_media_type_refusal(content_type: str | None) -> str | None:
    """Why a ``POST /rpc`` body of this ``Content-Type`` is refused (HTTP 415), or ``None``.

    Accepted: ``application/json``, with an optional ``charset=utf-8`` parameter (any case)."""
    if not content_type:
        return "Content-Type must be application/json (none was sent)"
    media, _, params = content_type.partition(";")
    if media.strip().lower() != "application/json":
        return f"Content-Type must be application/json, not {media.strip()[:64]!r}"
    for param in params.split(";"):
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset" and value.strip().strip('"').lower() not in ("utf-8", "utf8"):
            return f"Content-Type charset must be utf-8, not {value.strip()[:32]!r}"
    return None


def _host_of(header: str | None) -> tuple[str, int | None] | None:
    """``(normalised host, port)`` of a ``Host`` header value, or ``None`` when malformed."""
    if not header:
        return None
    match = _HOST_HEADER.fullmatch(header.strip())
    if match is None:
        return None
    port = int(match["port"]) if match["port"] else None
    if port is not None and port > 65535:
        return None
    try:
        return normalise_host(match["v6"] or match["name"]), port
    except ValueError:
        return None


def is_wildcard_bind(host: str) -> bool:
    """Is ``host`` (a ``serve --host`` value, brackets allowed) a wildcard bind such as ``0.0.0.0`` or ``::``?

    A wildcard listens on every address but names none: it is not a ``Host`` the gateway serves."""
    bare = host.strip().strip("[]")
    if bare in _WILDCARD_BINDS:
        return True
    try:
        return ipaddress.ip_address(bare).is_unspecified
    except ValueError:
        return False


def _is_loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class PerimeterRules:
    """The perimeter's decisions, free of ASGI (unit-testable).

    ``allowed_hosts`` and ``allowed_origins`` are already normalised
    (:func:`~meta_memory.server.config.normalise_host` / ``normalise_origin``);
    ``bind_host`` is the address the server listens on."""

    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    bind_host: str | None = None

    def _bind(self) -> str | None:
        if self.bind_host is None or is_wildcard_bind(self.bind_host):
            return None
        try:
            return normalise_host(self.bind_host)
        except ValueError:
            return None

    def host_allowed(self, host: str) -> bool:
        """Is the (normalised) host name served?"""
        if _is_loopback(host) or host == self._bind():
            return True
        for entry in self.allowed_hosts:
            if host == entry or (entry.startswith("*.") and host.endswith(entry[1:])):
                return True
        return False

    def host_refusal(self, header: str | None) -> str | None:
        """Why a request with this ``Host`` header is refused, or ``None``."""
        parsed = _host_of(header)
        if parsed is None:
            return "the Host header is missing or malformed"
        if not self.host_allowed(parsed[0]):
            bind = self._bind()
            if bind is not None:
                served = f"loopback names, the bind address {bind!r} and [gateway] allowed_hosts are"
            elif self.bind_host is not None and is_wildcard_bind(self.bind_host):
                # a wildcard bind (0.0.0.0, ::) listens on every address but is itself no host name
                served = (f"loopback names and [gateway] allowed_hosts are; the wildcard bind address "
                          f"{self.bind_host.strip('[]')!r} is not a host name")
            else:
                served = "loopback names and [gateway] allowed_hosts are"
            return f"Host {parsed[0]!r} is not served here ({served})"
        return None

    def origin_allowed(self, origin: str, scheme: str, host_header: str) -> bool:
        """Is a browser ``Origin`` the gateway's own (``scheme://Host``) or configured?"""
        try:
            normal = normalise_origin(origin)
        except ValueError:
            return False
        if normal in self.allowed_origins:
            return True
        try:
            own = normalise_origin(f"{scheme}://{host_header.strip()}")
        except ValueError:
            return False
        return normal == own

    def origin_refusal(self, headers: Headers, scheme: str, method: str) -> tuple[str, str] | None:
        """``(field, reason)`` when the request's ``Origin`` / fetch metadata is refused, or ``None``."""
        origin = headers.get("origin")
        if origin is not None:
            if self.origin_allowed(origin, scheme, headers.get("host", "")):
                return None
            return "origin", f"Origin {origin[:200]!r} is not allowed (add it to [gateway] allowed_origins)"
        site = (headers.get("sec-fetch-site") or "").strip().lower()
        if site in _CROSS:
            # a top-level navigation (a link followed, an address typed) only: an iframe, embed or object loads in
            # navigate mode too, and would let another site hold the gateway's streams from a hidden frame
            navigation = (method in ("GET", "HEAD") and headers.get("sec-fetch-mode", "").lower() == "navigate"
                          and headers.get("sec-fetch-dest", "document").strip().lower() == "document")
            if not navigation:
                return "sec-fetch-site", f"a {site} browser request without an allowed Origin is refused"
        return None


class Perimeter:
    """ASGI middleware enforcing :class:`PerimeterRules` on every HTTP request."""

    def __init__(self, app: ASGIApp, rules: PerimeterRules) -> None:
        self.app = app
        self.rules = rules

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":  # no route speaks WebSocket: refuse before any check is needed
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        client = _client(scope)
        repeated = repeated_header(scope["headers"])
        if repeated is not None:
            twice = f"the {repeated} header is sent more than once; send it once"
            log.warning("refused %s %s from %s: %s", scope["method"], _loggable_path(scope), client, twice)
            await json_refusal(400, InvalidRequest(twice, repeated))(scope, receive, send)
            return
        if framed_twice(scope["headers"]):
            both = ("the request sends both Transfer-Encoding and Content-Length; send one (its body's end "
                    "must be read one way only)")
            log.warning("refused %s %s from %s: %s", scope["method"], _loggable_path(scope), client, both)
            await json_refusal(400, InvalidRequest(both, "transfer-encoding"),
                               {"Connection": "close"})(scope, receive, send)
            return
        reason = self.rules.host_refusal(headers.get("host"))
        if reason is not None:
            log.warning("refused %s %s from %s: %s", scope["method"], _loggable_path(scope), client, reason)
            await json_refusal(421, InvalidRequest(reason, "host"))(scope, receive, send)
            return
        refusal = self.rules.origin_refusal(headers, scope.get("scheme", "http"), scope["method"])
        if refusal is not None:
            field, reason = refusal
            log.warning("refused %s %s from %s: %s", scope["method"], _loggable_path(scope), client, reason)
            await json_refusal(403, InvalidRequest(reason, field), {"Vary": "Origin"})(scope, receive, send)
            return
        await self.app(scope, receive, send)


#: The longest path a refusal line shows (longer ones end with ``...``).
_LOGGED_PATH_CHARS = 200


def _loggable_path(scope: Scope) -> str:
    """The request's path for a log line: the server has decoded its percent escapes, so a caller
    chooses every character of it; each one that is not printable (line and paragraph breaks, carriage
    returns, ``U+0085``, escape sequences, format characters) is shown as a Python escape, and the path
    is cut at :data:`_LOGGED_PATH_CHARS` characters, so it can neither end its line nor forge another."""
    path = str(scope.get("path", ""))
    shown = "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii")
                    for ch in path[:_LOGGED_PATH_CHARS])
    return shown + ("..." if len(path) > _LOGGED_PATH_CHARS else "")


def _client(scope: Scope) -> str:
    client = scope.get("client")
    return f"{client[0]}:{client[1]}" if client else "an unknown client"

