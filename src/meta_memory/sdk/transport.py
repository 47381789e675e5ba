"""How a handle reaches a runtime: in-process, over HTTP, or over a spawned stdio gateway.

Every transport takes ``(method, params)`` and returns the JSON result, or
raises the typed :class:`~meta_memory.errors.MetaError` the gateway answered
(the remote transports rebuild it with :func:`meta_memory.errors.from_jsonrpc`),
so the same code handles errors identically in every mode.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import itertools
import json
import math
import os
import subprocess
import sys
import threading
import time
import weakref
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable
from urllib.parse import urlsplit

import httpcore
import httpx

from .. import strict_json
from ..errors import ConfigError, InternalError, InvalidParams, MetaError, echo, from_jsonrpc
from ..limits import DEFAULT_MAX_RESPONSE_BYTES
from ..rpc.registry import CallContext

if TYPE_CHECKING:  # pragma: no cover
    from ..access.principal import Principal
    from ..runtime import Runtime
    from ..server.gateway import Gateway

__all__ = ["GatewayUnreachable", "NotAGateway", "UnreadableAnswer", "check_token", "Transport", "AsyncTransport", "ThreadedTransport", "EmbeddedTransport", "HttpTransport", "AsyncHttpTransport", "StdioTransport"]


class Transport(Protocol):
    def call(self, method: str, params: dict[str, Any] | None) -> Any: ...
    def close(self) -> None: ...


class AsyncTransport(Protocol):
    async def call(self, method: str, params: dict[str, Any] | None) -> Any: ...
    async def aclose(self) -> None: ...


@runtime_checkable
class ThreadedTransport(Transport, Protocol):
    """A sync transport an async handle can use: ``acall`` runs ``call`` off the event loop."""

    async def acall(self, method: str, params: dict[str, Any] | None) -> Any: ...


class HandleClosed(RuntimeError):
    """A method was called on a handle after its ``close()`` (``aclose()``, or the end of its ``with``
    block): a caller's mistake, raised before anything is sent. Open a new handle; closing twice is
    harmless."""

    def __init__(self) -> None:
        super().__init__("this meta-memory handle is closed (close() was called, or its with block ended): "
                         "open a new handle to call it again")


class GatewayUnreachable(ConnectionError):
    """The gateway could not be reached (refused, reset, timed out), or did not answer a call it was sent.
    ``url`` names it.

    ``maybe_tls``: the URL is ``http://``, the server closed the connection without an answer (what a
    gateway serving HTTPS, ``serve --ssl-certfile``, does to plain HTTP) and the caller found TLS there
    (``tls_seen``: a TLS handshake with the same host and port got a TLS server's reply); the message then
    says to try ``https://``. Never when ``speaks_http`` is true (the URL has answered plain HTTP before).
    A closed connection without that evidence (a listener that hangs up, a gateway stopped or restarted
    in the middle of the call) is ``unanswered``: the gateway closed the connection without answering.

    ``unanswered``: the connection was made and the request sent, but no answer came within ``timeout_s``
    seconds (an ``httpx.ReadTimeout``), or the gateway closed the connection without answering: the call
    may or may not have been applied, and the message says so and how to check, instead of "cannot reach"
    (a connect failure or connect timeout keeps that)."""

    def __init__(self, url: str, cause: Exception, timeout_s: float | None = None, *,
                 speaks_http: bool = False, tls_seen: bool = False) -> None:
        dropped = _dropped(cause)
        self.maybe_tls = url.startswith("http://") and dropped and tls_seen and not speaks_http
        self.untrusted_certificate = url.startswith("https://") and _certificate_refused(cause)
        self.unanswered = isinstance(cause, httpx.ReadTimeout) or (dropped and not self.maybe_tls)
        if self.unanswered:
            within = f"within {timeout_s:g} s" if timeout_s is not None else "in time"
            what = (f"did not answer {within}" if isinstance(cause, httpx.ReadTimeout) else
                    "closed the connection without answering (it may have stopped or restarted)")
            super().__init__(f"the meta-memory gateway at {url} was sent the call but {what}: "
                             "the call may or may not have been applied; check before repeating a write (e.g. "
                             "`meta-memory recall` or `meta-memory list`, or the record's history)")
            self.url = url
            return
        hint = (f"; the gateway may be serving HTTPS: try {'https://' + url.removeprefix('http://')}"
                if self.maybe_tls else "")
        if self.untrusted_certificate:
            hint = ("; something answers there with a TLS certificate this client does not trust: for a gateway "
                    "serving a self-signed or private-CA certificate, set SSL_CERT_FILE to that CA's PEM file")
        super().__init__(f"cannot reach the meta-memory gateway at {url}: {failure_reason(cause, timeout_s)}{hint}")
        self.url = url

    @property
    def explained(self) -> bool:
        """Whether the message already says what to do (an HTTPS gateway asked over HTTP, a certificate not
        trusted, a call sent and not answered), so "nothing listens there" hints do not apply."""
        return self.maybe_tls or self.untrusted_certificate or self.unanswered


def _dropped(cause: BaseException) -> bool:
    """Whether ``cause`` (an httpx error) is a connection closed or reset without an answer: what httpx's sync
    client raises as ``RemoteProtocolError`` ("Server disconnected") its async one may raise as ``ReadError``."""
    return isinstance(cause, (httpx.RemoteProtocolError, httpx.ReadError))


def _innermost_os_error(cause: BaseException) -> OSError | None:
    """The innermost operating-system error under ``cause`` that names what failed by its ``errno`` (a
    refused connection, a host name that does not resolve), past wrappers that name none (the async
    backend's ``OSError("All connection attempts failed")``); ``None`` when there is none."""
    found: OSError | None = None
    seen: BaseException | None = cause
    for _ in range(8):  # the chain httpx -> httpcore -> anyio -> socket is short
        if seen is None:
            break
        if isinstance(seen, OSError) and isinstance(seen.errno, int) and seen.errno != 0:
            found = seen
        seen = seen.__cause__ or seen.__context__
    return found


def failure_reason(cause: BaseException, timeout_s: float | None) -> str:
    """What failed when a call to a gateway failed in transport (``cause``, an httpx error), worded alike
    whichever client (sync or async) and network backend raised it, so both handles say the same:
    ``connection refused`` (any operating-system error: its errno's text, never the backend's wrapper),
    ``the host name did not resolve (Name or service not known)``, ``no connection within 30 s`` (a connect,
    TLS handshake or pool wait that did not end within ``timeout_s``), ``the call was not sent within 30 s``,
    ``the connection was closed without an answer``; a TLS refusal keeps the TLS library's words."""
    import socket
    import ssl

    within = f"within {timeout_s:g} s" if timeout_s is not None else "in time"
    if isinstance(cause, (httpx.ConnectTimeout, httpx.PoolTimeout)):
        return f"no connection {within}"
    if isinstance(cause, httpx.WriteTimeout):
        return f"the call was not sent {within}"
    if _dropped(cause):
        return "the connection was closed without an answer"
    error = _innermost_os_error(cause)
    if isinstance(error, ssl.SSLError):
        return str(error)
    if isinstance(error, socket.gaierror):
        return f"the host name did not resolve ({error.strerror})"
    if error is not None and error.errno is not None:
        said = os.strerror(error.errno)
        return said[:1].lower() + said[1:]
    return str(cause).rstrip(".") or type(cause).__name__


#: What :func:`_probe` finds at a URL's host and port.
Found = Literal["tls", "other", "nothing"]


def _probe(url: str) -> Found:
    """What answers at ``url``'s host and port now (one connect and one TLS handshake, at most 1 s each):
    ``"tls"`` when a TLS server replies to a handshake (it completes, or the server answers with a TLS
    alert: it wants a client certificate, shares no cipher), ``"other"`` when something accepts connections
    but no TLS server replies (it hangs up, answers plain bytes, or says nothing), ``"nothing"`` when
    nothing accepts them. The certificate is not checked: the probe only asks whether TLS is spoken."""
    import socket
    import ssl

    target = httpx.URL(url)
    port = target.port or (443 if target.scheme == "https" else 80)
    try:
        sock = socket.create_connection((target.host, port), timeout=1.0)
    except OSError:
        return "nothing"
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        with context.wrap_socket(sock):
            return "tls"
    except ssl.SSLError as exc:  # the server's TLS alert is TLS spoken; plain bytes read as a bad record are not
        return "tls" if "ALERT" in str(exc.reason or "").upper() else "other"
    except OSError:  # closed, reset, or silent for the whole second
        return "other"
    finally:
        sock.close()


def _probes(url: str, exc: Exception, answered: bool) -> bool:
    """Whether the error of ``exc`` depends on what answers at ``url`` (:func:`_probe`): an
    ``http://`` connection closed without an answer, from a URL that has not answered its client."""
    return not answered and url.startswith("http://") and _dropped(exc)


def transport_failure(url: str, exc: Exception, timeout_s: float | None, *, answered: bool,
                      found: Found | None = None) -> GatewayUnreachable:
    """The error of a JSON-RPC call to ``url`` that failed in transport (``exc``, an httpx error).

    A connection closed without an answer reads as an HTTPS gateway asked over plain HTTP (``maybe_tls``)
    only when a TLS server answers there (:func:`_probe`, run here unless ``found`` gives its answer) and
    ``url`` has not ``answered`` this client before. Otherwise (a listener that hangs up, the gateway
    stopped or restarted in the middle of the call) it is a call the gateway closed without answering,
    which may or may not have been applied (``unanswered``)."""
    if found is None:
        found = _probe(url) if _probes(url, exc, answered) else "other"
    return GatewayUnreachable(url, exc, timeout_s, speaks_http=answered, tls_seen=found == "tls")


def _certificate_refused(cause: BaseException) -> bool:
    """Whether ``cause`` (an httpx error) comes from a TLS certificate the client refused to verify."""
    import ssl

    seen: BaseException | None = cause
    for _ in range(8):  # the chain httpx -> httpcore -> ssl is short
        if seen is None:
            return False
        if isinstance(seen, ssl.SSLCertVerificationError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


class NotAGateway(GatewayUnreachable):
    """Something answers at the URL, but not a meta-memory gateway: its reply to ``POST /rpc`` is not a
    JSON-RPC 2.0 response (an HTML error page, another service's JSON). ``url`` names the endpoint,
    ``status`` the HTTP status it answered. A :class:`GatewayUnreachable`, so every client treats it as
    "no gateway there", never as a gateway's refusal."""

    def __init__(self, url: str, status: int, content_type: str) -> None:
        ConnectionError.__init__(self, f"{url} is not a meta-memory gateway: it answered HTTP {status} "
                                       f"({content_type or 'no content type'}) instead of a JSON-RPC response; "
                                       "check the URL and port")
        self.url = url
        self.status = status


class UnreadableAnswer(GatewayUnreachable):
    """The gateway's answer was not read: its body passed ``max_answer_bytes`` (``limit``), counted after
    any ``Content-Encoding`` is undone; it is encoded other than gzip or deflate once, or its encoding is
    broken; its JSON nests deeper than a reader can follow, or names a key twice in one object (read two
    ways: a proxy or a log in front may have read the first, ``json`` keeps the last); or its ``result`` is
    not the shape the method answers (``method`` names the method, ``field`` the dotted path of the first
    field that is not). Nothing of it reaches the caller. ``rule`` names which (``"max_answer_bytes"``,
    ``"content_encoding"``, ``"nesting"``, ``"duplicate_key"``, ``"result"``). A :class:`GatewayUnreachable`, so every client treats it as no answer (a
    call that may or may not have been applied), never as a gateway's refusal."""

    def __init__(self, url: str, rule: str, detail: str, limit: int | None = None, *,
                 method: str | None = None, field: str | None = None) -> None:
        ConnectionError.__init__(self, f"the answer of {url} was not read: {detail}; the call may or may not "
                                       "have been applied (check before repeating a write)")
        self.url = url
        self.rule = rule
        self.limit = limit
        self.method = method
        self.field = field
        self.maybe_tls = self.untrusted_certificate = False
        self.unanswered = True


def _twice_named(answered_by: str, exc: strict_json.DuplicateKeyError) -> UnreadableAnswer:
    """The refusal of an answer whose JSON names ``exc.key`` twice in one object (the TypeScript SDK's too)."""
    return UnreadableAnswer(answered_by, "duplicate_key",
                            f"its JSON names the key {json.dumps(echo(exc.key))} twice in one object")


def check_answer_bytes(max_answer_bytes: Any) -> int:
    """The most bytes of one answer an HTTP client reads: a positive integer. Raises
    :class:`~meta_memory.errors.ConfigError` otherwise, before anything is sent."""
    if isinstance(max_answer_bytes, bool) or not isinstance(max_answer_bytes, int) or max_answer_bytes < 1:
        raise ConfigError(f"max_answer_bytes must be a positive whole number of bytes, not {max_answer_bytes!r}")
    return max_answer_bytes


def _unwrap(response: Any) -> Any:
    if not isinstance(response, dict) or response.get("jsonrpc") != "2.0":
        raise InternalError("malformed JSON-RPC response from the gateway")
    if "error" in response:
        raise from_jsonrpc(response["error"])
    return response.get("result")


def _close_dropped(runtime: Any) -> None:
    """Close the runtime of an embedded transport collected without ``close()`` (its handle was dropped),
    so its state directory is free again for another handle of the process. On the collecting thread,
    unless that is a daemon thread (the runtime's own workers are): closing joins those workers, so it
    runs on a thread of its own then and the directory is given up moments later."""
    if threading.current_thread().daemon:
        threading.Thread(target=runtime.close, name="meta-memory-close-dropped", daemon=True).start()
    else:
        runtime.close()


class EmbeddedTransport:
    """Calls the method table in-process (the runtime lives inside the host).

    The runtime stops on :meth:`close`, or when the transport (its handle) is garbage-collected without
    it: a dropped handle does not keep its state directory locked until the process exits, unless its
    runtime was handed out (:meth:`hand_out`: ``handle.runtime``), which then lives until ``close()``."""

    def __init__(self, gateway: Gateway, principal: Principal | None = None) -> None:
        self.gateway = gateway
        self.ctx = CallContext(principal=principal, transport="embedded")
        self._finalizer = weakref.finalize(self, _close_dropped, gateway.runtime)
        self._finalizer.atexit = False  # at exit the process's end releases the directory

    def call(self, method: str, params: dict[str, Any] | None) -> Any:
        return self.gateway.call(method, params, self.ctx)

    async def acall(self, method: str, params: dict[str, Any] | None) -> Any:
        return await asyncio.to_thread(self.call, method, params)

    def hand_out(self) -> Runtime:
        """The runtime, for a caller that keeps it (``handle.runtime``): from then on the transport's
        collection no longer closes it (whatever holds the runtime would find it closed under it);
        :meth:`close` still does."""
        self._finalizer.detach()
        runtime: Runtime = self.gateway.runtime
        return runtime

    def close(self) -> None:
        self._finalizer.detach()
        self.gateway.runtime.close()


def check_gateway_url(url: str) -> str:
    """``url`` (trimmed) when it can name a gateway: an ``http://`` or ``https://`` URL with a host, a valid
    port if any, and nothing but a path after it.

    Raises :class:`~meta_memory.errors.ConfigError` otherwise (``localhost:8765`` is the usual slip),
    before anything is sent. Also refused: a user name or password in the URL (``http://u:pw@host``:
    the gateway authenticates by bearer token, and an error naming the URL would repeat the password),
    a query or fragment (``/rpc`` would be appended to it, not to the path: the call would go to another
    endpoint), spaces and control characters, and a port that is not a number in 1..65535. Refusals
    never repeat a user name or password. Every client of a gateway URL (SDK, shell commands, ``mcp``,
    ``replay``) checks it here."""
    text = url.strip() if isinstance(url, str) else None
    try:
        parts = urlsplit(text) if text is not None else None
        port = parts.port if parts is not None else None
    except ValueError:  # an invalid port or IPv6 literal
        parts, port = None, None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        shown = url if parts is None or "@" not in parts.netloc else "(a URL with a user name or password)"
        raise ConfigError(f"the gateway URL must start with http:// or https:// and name a host "
                          f"(e.g. http://127.0.0.1:8765), not {shown!r}")
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise ConfigError("the gateway URL must not carry a user name or password (the gateway authenticates "
                          "by bearer token: pass token=... or --token)")
    if port == 0 or any(c.isspace() or not c.isprintable() for c in text):
        raise ConfigError(f"the gateway URL must name a port in 1..65535 and hold no spaces or control "
                          f"characters, not {url!r}")
    if parts.query or parts.fragment or "?" in text or "#" in text:
        raise ConfigError(f"the gateway URL must not carry a query or fragment (/rpc is appended to its path), "
                          f"not {url!r}")
    return text


def check_timeout(timeout_s: Any) -> float:
    """A call's time budget in seconds: a positive, finite number. Raises
    :class:`~meta_memory.errors.ConfigError` otherwise, before anything is sent (a zero or negative
    budget would fail every call as an unreachable gateway)."""
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not 0 < timeout_s < math.inf:
        raise ConfigError(f"timeout_s must be a positive number of seconds (e.g. 30), not {timeout_s!r}")
    return float(timeout_s)


def _rpc_url(url: str) -> str:
    """The gateway's ``/rpc`` endpoint from its base URL (or the endpoint itself); see
    :func:`check_gateway_url`."""
    base = check_gateway_url(url).rstrip("/")
    return base if base.endswith("/rpc") else base + "/rpc"


def encode_request(method: str, params: dict[str, Any] | None, request_id: int) -> bytes:
    """One JSON-RPC request as UTF-8 JSON, refused before it is sent when a number in ``params`` is NaN or
    infinite (JSON has no such number; the gateway's own rule for ``metadata`` is the same):
    :class:`~meta_memory.errors.InvalidParams` naming the top-level member that holds it
    (``metadata numbers must be finite (no NaN or Infinity)``). A value JSON cannot encode at all is a
    ``TypeError``, as from :func:`json.dumps`."""
    payload = {"jsonrpc": "2.0", "method": method, "params": params or {}, "id": request_id}
    try:
        return json.dumps(payload, allow_nan=False).encode("ascii")
    except ValueError:
        for key, value in (params or {}).items():
            try:
                json.dumps(value, allow_nan=False)
            except ValueError:
                raise InvalidParams(f"{key} numbers must be finite (no NaN or Infinity)", str(key)) from None
        raise


# Only what the SDK inflates itself, within max_answer_bytes (httpx would also ask for br and zstd when
# their packages are installed, and inflate whatever arrives before it is counted).
_JSON_HEADERS = {"Content-Type": "application/json", "Accept-Encoding": "gzip, deflate"}
#: zlib's window bits for each Content-Encoding an answer may carry (deflate: the zlib format, RFC 9110).
_INFLATE_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}

#: When the call in progress on this thread (or task) must be over, by ``time.monotonic()``.
_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("meta_memory_sdk_deadline", default=None)


def _within(timeout: float | None, late: type[httpcore.TimeoutException]) -> float | None:
    """``timeout`` (seconds, httpx's per-operation one) cut to what is left of the call's deadline; ``late``
    raised when nothing is left."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise late("the call's timeout_s passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """A connection whose every read, write and TLS handshake ends by the call's deadline."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _within(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _within(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname,
                                                     _within(timeout, httpcore.ConnectTimeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's network backend whose connections keep the call's deadline (:class:`_DeadlineStream`)."""

    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Any = None) -> httpcore.NetworkStream:
        return _DeadlineStream(self._inner.connect_tcp(host, port, _within(timeout, httpcore.ConnectTimeout),
                                                       local_address, socket_options))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Any = None) -> httpcore.NetworkStream:
        return _DeadlineStream(self._inner.connect_unix_socket(path, _within(timeout, httpcore.ConnectTimeout),
                                                               socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def _keep_deadlines(client: httpx.Client) -> httpx.Client:
    """``client`` with every connection pool it may use (direct, and a proxy's from the environment) reading
    and writing through :class:`_DeadlineBackend`. httpx takes no network backend, so its pools' backend is
    wrapped where httpx keeps it; a release that moved it is refused here (:class:`InternalError`), never
    left without the deadline."""
    pools = [getattr(transport, "_pool", None)
             for transport in [client._transport, *client._mounts.values()] if transport is not None]
    if not pools or not all(hasattr(pool, "_network_backend") for pool in pools):
        raise InternalError(f"httpx {httpx.__version__} keeps its connection pools where the SDK cannot bound "
                            "a call by timeout_s; install an httpx the SDK supports")
    for pool in pools:
        pool._network_backend = _DeadlineBackend(pool._network_backend)  # type: ignore[union-attr]
    return client


def check_token(token: str | None, *, header: bool = True) -> str | None:
    """``token`` when it can be sent as given; ``None`` or ``""`` is no token.

    Raises :class:`~meta_memory.errors.ConfigError` before anything is sent, never repeating the token, for a
    value that is not a string or that holds whitespace at either end or inside (a copied newline, a stray
    space: no configured token holds any, and a token is sent as given, never trimmed), and with ``header``
    (it goes in ``Authorization: Bearer <token>``) for one holding a character an HTTP header cannot carry (a
    control character, anything outside printable ASCII; ``gateway --stdio`` takes such a token, HTTP never
    could). The SDK's HTTP clients check here, and so does every command's ``--token``."""
    if token is None or token == "":
        return None
    if not isinstance(token, str):
        raise ConfigError(f"a bearer token must be a string, not {type(token).__name__}")
    if any(ch.isspace() for ch in token):
        raise ConfigError("a bearer token must not contain whitespace, at either end or inside (a token is sent "
                          "as given, never trimmed)")
    if header and not (token.isascii() and token.isprintable()):
        raise ConfigError("a bearer token sent over HTTP must be printable ASCII (a header carries no other "
                          "character)")
    return token


def _bearer(token: str | None) -> dict[str, str]:
    checked = check_token(token)
    return {"Authorization": f"Bearer {checked}"} if checked else {}


class _HttpCalls:
    """What the sync and async HTTP transports share: the endpoint, request ids and the decoding.

    A call is bounded, whatever answers at the URL: the whole call, from connecting to the answer's last
    byte (its status line and headers too, however slowly they trickle), ends within ``timeout_s`` (the
    sync client cuts each read and write to what is left of it, the async one cancels the call); at most
    ``max_answer_bytes`` of body, counted after a ``gzip`` or ``deflate`` ``Content-Encoding`` is undone
    and inflated no further than one byte past it (a declared ``Content-Length`` above it is refused before
    any byte is read; any other encoding, or two, is refused unread); and JSON read strictly
    (:mod:`meta_memory.strict_json`) and no deeper than Python's reader can follow. Redirects are never
    followed (the bearer token goes to the URL given, and nowhere else)."""

    def __init__(self, url: str, timeout_s: float, max_answer_bytes: int = DEFAULT_MAX_RESPONSE_BYTES) -> None:
        self.url = _rpc_url(url)
        self.timeout_s = check_timeout(timeout_s)
        self.max_answer_bytes = check_answer_bytes(max_answer_bytes)
        self._ids = itertools.count(1)
        self._answered = False  # a JSON-RPC answer came from the URL: it speaks plain HTTP (or TLS, as given)

    def _payload(self, method: str, params: dict[str, Any] | None) -> bytes:
        return encode_request(method, params, next(self._ids))

    def _late(self, stage: str) -> GatewayUnreachable:
        """The error of a call whose ``timeout_s`` passed at ``stage`` (``"connect"``, ``"send"``, ``"answer"``),
        as the sync client's own timeout of that stage reads (:func:`failure_reason`): only a call whose
        request was sent whole is one that may have been applied."""
        late = {"connect": httpx.ConnectTimeout, "send": httpx.WriteTimeout}.get(stage, httpx.ReadTimeout)
        return GatewayUnreachable(self.url, late("the call's timeout_s passed"), self.timeout_s)

    def _opened(self, resp: httpx.Response) -> _Body:
        """The body to gather for ``resp``: refused when its declared length is already over
        ``max_answer_bytes`` or its ``Content-Encoding`` is not one the SDK inflates."""
        declared = resp.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_answer_bytes:
            raise self._oversized()
        coding = resp.headers.get("content-encoding", "").strip().lower()
        if coding in ("", "identity"):
            return _Body(self, None)
        if coding not in _INFLATE_WBITS:
            raise self._encoding(f"its Content-Encoding is {echo(coding)!r}; only gzip or deflate, once, is read")
        return _Body(self, zlib.decompressobj(_INFLATE_WBITS[coding]), coding)

    def _oversized(self) -> UnreadableAnswer:
        return UnreadableAnswer(self.url, "max_answer_bytes",
                                f"it is over max_answer_bytes ({self.max_answer_bytes} bytes)", self.max_answer_bytes)

    def _encoding(self, detail: str) -> UnreadableAnswer:
        return UnreadableAnswer(self.url, "content_encoding", detail)

    def _decode(self, resp: httpx.Response, content: bytes) -> Any:
        """The result of a JSON-RPC response; :class:`NotAGateway` for a reply that is not JSON-RPC 2.0."""
        try:
            body = strict_json.loads(content)
        except RecursionError:
            raise UnreadableAnswer(self.url, "nesting", "its JSON nests deeper than can be read") from None
        except strict_json.DuplicateKeyError as exc:
            raise _twice_named(self.url, exc) from None
        except (ValueError, UnicodeDecodeError):
            body = None
        if not isinstance(body, dict) or body.get("jsonrpc") != "2.0":
            content_type = resp.headers.get("content-type", "").split(";")[0].strip()
            raise NotAGateway(self.url, resp.status_code, content_type)
        self._answered = True
        return _unwrap(body)


class _Body:
    """One answer's body as its raw pieces arrive: inflated (``inflater``, for ``coding``) never more than
    one byte past ``max_answer_bytes``, and refused as soon as it passes it."""

    def __init__(self, calls: _HttpCalls, inflater: Any, coding: str = "") -> None:
        self._calls = calls
        self._inflater = inflater
        self._coding = coding
        self._raw = 0
        self.data = bytearray()

    def _add(self, piece: bytes) -> None:
        self.data += piece
        if len(self.data) > self._calls.max_answer_bytes:
            raise self._calls._oversized()

    def gather(self, chunk: bytes) -> None:
        self._raw += len(chunk)
        if self._raw > self._calls.max_answer_bytes:
            raise self._calls._oversized()
        if self._inflater is None:
            self._add(chunk)
            return
        try:
            while chunk:
                if self._inflater.eof:  # bytes after the compressed stream's end
                    raise zlib.error("data after the end of the stream")
                self._add(self._inflater.decompress(chunk, self._calls.max_answer_bytes - len(self.data) + 1))
                chunk = self._inflater.unconsumed_tail
            if self._inflater.unused_data:  # bytes after the end within this piece: refused as in the next
                raise zlib.error("data after the end of the stream")
        except zlib.error:
            raise self._calls._encoding(f"its Content-Encoding is {self._coding!r} but its body is not "
                                        f"{self._coding}") from None

    def content(self) -> bytes:
        """The whole body; a compressed one cut short is refused."""
        if self._inflater is not None:
            try:
                self._add(self._inflater.flush())
            except zlib.error:
                self._inflater = None
            if self._inflater is None or not self._inflater.eof:
                raise self._calls._encoding(f"its Content-Encoding is {self._coding!r} but its body is not "
                                            f"whole {self._coding}")
        return bytes(self.data)


class HttpTransport(_HttpCalls):
    """JSON-RPC over HTTP with httpx. ``token`` is sent as ``Authorization: Bearer <token>``."""

    def __init__(self, url: str, *, token: str | None = None, timeout_s: float = 30.0,
                 max_answer_bytes: int = DEFAULT_MAX_RESPONSE_BYTES) -> None:
        super().__init__(url, timeout_s, max_answer_bytes)
        self._client = _keep_deadlines(httpx.Client(timeout=self.timeout_s, headers=_bearer(token),
                                                    follow_redirects=False))

    def call(self, method: str, params: dict[str, Any] | None) -> Any:
        payload = self._payload(method, params)
        bound = _DEADLINE.set(time.monotonic() + self.timeout_s)
        try:
            with self._client.stream("POST", self.url, content=payload, headers=_JSON_HEADERS) as resp:
                body = self._opened(resp)
                for chunk in resp.iter_raw():
                    body.gather(chunk)
        except httpx.TransportError as exc:
            raise transport_failure(self.url, exc, self.timeout_s, answered=self._answered) from None
        finally:
            _DEADLINE.reset(bound)
        return self._decode(resp, body.content())

    def close(self) -> None:
        self._client.close()


class AsyncHttpTransport(_HttpCalls):
    """Async JSON-RPC over HTTP with ``httpx.AsyncClient``, one client per event loop: a client's pooled
    connections belong to the loop that opened them, so a handle used again under another loop (a second
    ``asyncio.run``, a test framework's loop per test) calls through a client of that loop instead of
    failing in the first one's closed connections (``RuntimeError: Event loop is closed``)."""

    def __init__(self, url: str, *, token: str | None = None, timeout_s: float = 30.0,
                 max_answer_bytes: int = DEFAULT_MAX_RESPONSE_BYTES) -> None:
        super().__init__(url, timeout_s, max_answer_bytes)
        self._headers = _bearer(token)  # a token no header can carry is refused here, before any loop runs
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
            weakref.WeakKeyDictionary())
        self._clients_lock = threading.Lock()

    def _client(self) -> httpx.AsyncClient:
        """The running loop's client, made at its first call on that loop. A closed loop's client is dropped
        then: its pooled connections refer to their loop, so the weak key alone would keep every closed
        loop, its client and its open sockets for the handle's life (one more per ``asyncio.run``); dropped,
        the garbage collector closes them."""
        loop = asyncio.get_running_loop()
        with self._clients_lock:  # loops of several threads may share the handle
            client = self._clients.get(loop)
            if client is None:
                for closed in [owner for owner in self._clients if owner.is_closed()]:
                    del self._clients[closed]
                client = httpx.AsyncClient(timeout=self.timeout_s, headers=self._headers, follow_redirects=False)
                self._clients[loop] = client
        return client

    async def call(self, method: str, params: dict[str, Any] | None) -> Any:
        payload = self._payload(method, params)
        stage = "connect"  # how far the call got when its time ran out: connect, send, answer

        async def trace(event: str, info: dict[str, Any]) -> None:  # httpcore's trace extension
            nonlocal stage
            if event.endswith(".send_request_headers.started"):
                stage = "send"
            elif event.endswith(".send_request_body.complete"):
                stage = "answer"

        try:
            async with asyncio.timeout(self.timeout_s):
                async with self._client().stream("POST", self.url, content=payload, headers=_JSON_HEADERS,
                                                 extensions={"trace": trace}) as resp:
                    body = self._opened(resp)
                    async for chunk in resp.aiter_raw():
                        body.gather(chunk)
        except TimeoutError:
            raise self._late(stage) from None
        except httpx.TransportError as exc:
            # the probe's connect and handshake run off the event loop
            found: Found = (await asyncio.to_thread(_probe, self.url) if _probes(self.url, exc, self._answered)
                            else "other")
            raise transport_failure(self.url, exc, self.timeout_s, answered=self._answered, found=found) from None
        return self._decode(resp, body.content())

    async def aclose(self) -> None:
        """Close the running loop's client; another loop's (closed or not running here) is dropped: its
        connections cannot be closed from this loop, and a closed loop's are gone with it."""
        loop = asyncio.get_running_loop()
        with self._clients_lock:
            clients, self._clients = dict(self._clients), weakref.WeakKeyDictionary()
        for owner, client in clients.items():
            if owner is loop:
                await client.aclose()


class StdioTransport:
    """Spawns ``meta-memory gateway --stdio`` and talks newline-delimited JSON-RPC over its pipes.

    Calls are serialised (one in flight at a time); each answer is matched to its call by the request id,
    so the answer of a call interrupted after its request was sent is passed over, never taken as the next
    call's. The child exits when the transport is closed.
    """

    def __init__(self, state_dir: Path | str, *, config: Path | str | None = None, command: list[str] | None = None) -> None:
        cmd = command or [sys.executable, "-m", "meta_memory.cli"]
        args = [*cmd, "gateway", "--stdio", "--state-dir", str(state_dir)]
        if config is not None:
            args += ["--config", str(config)]
        self._proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      env=os.environ.copy())
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        # the child's stderr still reaches ours; its last lines also explain an exit (a refused start)
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=20)
        self._stderr_pump = threading.Thread(target=self._pump_stderr, name="meta-memory-stdio-stderr", daemon=True)
        self._stderr_pump.start()

    def _pump_stderr(self) -> None:
        assert self._proc.stderr is not None
        for raw in iter(self._proc.stderr.readline, b""):
            text = raw.decode("utf-8", "replace")
            self._stderr_tail.append(text.strip())
            try:
                sys.stderr.write(text)
                sys.stderr.flush()
            except (OSError, ValueError):  # our stderr is closed: keep draining the child's
                pass

    def _exit_reason(self) -> str:
        """Why the child exited: its exit code and its last ``meta-memory:`` line (else its last line)."""
        code = self._proc.wait(timeout=10) if self._proc.poll() is None else self._proc.returncode
        self._stderr_pump.join(timeout=5)
        lines = [line for line in self._stderr_tail if line]
        said = next((line for line in reversed(lines) if line.startswith("meta-memory:")), lines[-1] if lines else "")
        return f"stdio gateway exited (code {code})" + (f": {said.removeprefix('meta-memory:').strip()}" if said else "")

    def call(self, method: str, params: dict[str, Any] | None) -> Any:
        with self._lock:
            assert self._proc.stdin is not None and self._proc.stdout is not None
            request_id = next(self._ids)
            line = encode_request(method, params, request_id)
            try:
                self._proc.stdin.write(line + b"\n")
                self._proc.stdin.flush()
                while True:
                    out = self._proc.stdout.readline()
                    if not out:
                        raise MetaError(self._exit_reason())
                    response = self._read(out)
                    answered = response.get("id") if isinstance(response, dict) else None
                    # an earlier id answers a call interrupted after its request was sent: not this one's
                    if not (isinstance(answered, int) and answered < request_id):
                        break
            except UnreadableAnswer:  # an OSError too: the gateway answered, the answer was not read
                raise
            except (BrokenPipeError, OSError) as exc:
                raise MetaError(f"stdio gateway is gone: {exc}") from None
            return _unwrap(response)

    @staticmethod
    def _read(line: bytes) -> Any:
        """One answer line, read strictly; one nested past the reader is :class:`UnreadableAnswer`."""
        try:
            return strict_json.loads(line)
        except RecursionError:
            raise UnreadableAnswer("the stdio gateway", "nesting", "its JSON nests deeper than can be read") from None
        except strict_json.DuplicateKeyError as exc:
            raise _twice_named("the stdio gateway", exc) from None
        except ValueError:
            raise InternalError("malformed JSON-RPC response from the gateway") from None

    async def acall(self, method: str, params: dict[str, Any] | None) -> Any:
        """:meth:`call` on a worker thread, so an async host's event loop is not blocked."""
        return await asyncio.to_thread(self.call, method, params)

    def close(self) -> None:
        if self._proc.poll() is None:
            assert self._proc.stdin is not None
            self._proc.stdin.close()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._stderr_pump.join(timeout=5)
