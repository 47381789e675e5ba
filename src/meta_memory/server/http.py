"""HTTP transport: ``POST /rpc`` (JSON-RPC 2.0), ``GET /v1/health``, ``GET /v1/ready``, ``GET /metrics``
(Prometheus), ``GET /events`` (SSE), ``/console/``.

``GET /v1/health`` is liveness: the process answers (it reads no store). ``GET /v1/ready`` is
readiness (:mod:`meta_memory.readiness`): HTTP 200 ``{status: "ready", failing: []}``, or 503
``{status: "not_ready", failing: [component kinds]}``; a caller holding ``operator.status`` (every
caller on a gateway without ``[access]``) also gets ``checks`` (each failing check's name, problem and
fix, which may name realms and paths) and ``checked_at_ms``. No token is needed for the short answer
under any ``[access]`` configuration (tokens alone, or ``enabled = true``): a request without one gets
it, so a load balancer can probe. A bearer token that is sent but refused (unknown or malformed) is
refused (401) as on ``/rpc``.

Every request first passes the perimeter (:mod:`meta_memory.server.perimeter`:
``Host``, ``Origin`` and fetch-metadata rules; CORS only for ``[gateway]
allowed_origins``). Then, on ``POST /rpc``, in this order and each before a byte of the body is read:

* a body whose ``Content-Type`` is not ``application/json`` is refused with
  HTTP 415 and a JSON-RPC ``-32600`` error (``data.field = "content-type"``),
  so nothing is executed;
* the bearer token is judged from the headers: one refused (or missing where tokens are the only guard)
  is answered 401, the body left unread (what arrives is discarded), and the connection closed (every
  401 and 403 closes its connection: :mod:`meta_memory.server.connections`);
* a body larger than ``[gateway] max_request_bytes`` (for a caller that sent no token to a gateway that
  lists tokens: ``TOKENLESS_MAX_REQUEST_BYTES``, 64 KiB) is refused with HTTP 413 and ``-32600``, by its
  ``Content-Length`` before it is read, else as soon as it passes the cap, never parsed;
* the bytes of bodies held at once over every connection, each counted as it arrives and held until the
  answer is built, are bounded by ``[gateway] max_buffered_request_bytes``: a request whose next bytes
  would pass it is answered HTTP 503 with ``Retry-After: 1`` and ``-32005 capacity_exceeded``
  (``resource: "buffered_request_bytes"``, ``limit``, ``retry_after_ms``), the rest of its body unread
  and nothing of it run; callers without a token hold at most 1/8 of it together and one principal (named
  by its token) at most half (never less than one body of the largest size), so neither can take the
  others' room;
* the encoded answers held over every connection, each counted as it is built and held until its
  response's last byte is handed to the connection (or the client goes away), are bounded by ``[gateway]
  max_buffered_response_bytes``, with the same shares: a call not yet started while its caller's share or
  the whole bound is passed is answered ``-32005 capacity_exceeded`` (``resource:
  "buffered_response_bytes"``) in its place, not run (a single call: HTTP 503 with ``Retry-After``); an
  answer already built is always sent;
* a client that goes away before its body is complete is logged as one line;
* a single call refused with ``capacity_exceeded`` (-32005) that says when to retry
  (``data.retry_after_ms``) is answered with HTTP 503 and ``Retry-After`` (whole seconds);
  every other answer, refusals included, is HTTP 200.

Every ``POST /rpc`` answer carries ``X-Request-Id`` (the caller's, when it is a short safe token,
else a fresh one): the id its log lines and span carry (:mod:`meta_memory.observability`).

Blocking work (SQLite, fsync) runs in a worker thread so the event loop stays
responsive. ``/events`` is :mod:`meta_memory.server.events`.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ..access.principal import AuthenticationFailed
from ..access.resources import Resource
from ..errors import AccessDenied, CapacityExceeded, InvalidRequest
from ..limits import TOKENLESS_MAX_REQUEST_BYTES
from ..observability.metrics import CONTENT_TYPE
from ..observability.requests import accept_request_id
from ..rpc.dispatch import encode, error_response
from ..rpc.registry import CallContext
from .config import normalise_host
from .connections import ConnectionTerms, on_metrics_listener
from .events import EventsEndpoint, query_refusal, url_token_refusal
from .gateway import Gateway
from .perimeter import Perimeter, PerimeterRules, json_refusal, rpc_media_type_refusal

__all__ = ["create_app"]

log = logging.getLogger("meta_memory.http")

_JSON = "application/json"
_NO_STORE = {"Cache-Control": "no-store"}
#: Request headers a configured foreign origin may send (CORS).
_CORS_HEADERS = ["authorization", "content-type", "last-event-id"]


#: Bytes of a batch's answers handed to the connection at a time.
_PIECE_BYTES = 1024 * 1024
#: Seconds a request refused for the buffered-bytes bound is told to wait (``Retry-After``).
_BUSY_RETRY_S = 1


class _TooLarge(Exception):
    pass


class _Busy(Exception):
    pass


#: The share of a :class:`_Budget` that callers without a token hold together, and that one principal holds.
_ANONYMOUS_SHARE = 8
_PRINCIPAL_SHARE = 2
#: The pool of every caller that sent no token to a gateway that lists tokens.
_ANONYMOUS: tuple[str, ...] = ("anonymous",)


def _pool(gateway: Gateway, principal: Any) -> tuple[str, ...] | None:
    """Whose share of a :class:`_Budget` a request draws from: the callers without a token together, one
    principal named by its token, or (a gateway without tokens: one caller) none but the whole budget."""
    if gateway.runtime.access.tokenless(principal):
        return _ANONYMOUS
    name = getattr(principal, "name", None)
    return ("principal", name) if name is not None and gateway.runtime.access.config is not None else None


class _Budget:
    """Bytes the gateway holds at once over every connection (``limit``): request bodies (``[gateway]
    max_buffered_request_bytes``) or encoded answers (``max_buffered_response_bytes``). Callers without a
    token hold at most 1/8 of it together, one principal at most half (never less than ``floor``, the
    largest one request may need), so neither can take every other caller's room. Thread-safe: answers are
    counted from worker threads."""

    def __init__(self, limit: int, floor: int = 0) -> None:
        self.limit = limit
        self.shares = {_ANONYMOUS: min(limit, max(limit // _ANONYMOUS_SHARE, min(floor, TOKENLESS_MAX_REQUEST_BYTES)))}
        self.principal_share = min(limit, max(limit // _PRINCIPAL_SHARE, floor))
        self.held = 0
        self.pools: dict[tuple[str, ...], int] = {}
        self._lock = threading.Lock()

    def _fits(self, pool: tuple[str, ...] | None, size: int) -> bool:
        if self.held + size > self.limit:
            return False
        return pool is None or self.pools.get(pool, 0) + size <= self.shares.get(pool, self.principal_share)

    def take(self, pool: tuple[str, ...] | None, size: int, *, strict: bool = True) -> bool:
        """Hold ``size`` more bytes in ``pool``; with ``strict``, ``False`` (nothing held) when that would
        pass the limit or the pool's share."""
        with self._lock:
            if strict and not self._fits(pool, size):
                return False
            self.held += size
            if pool is not None:
                self.pools[pool] = self.pools.get(pool, 0) + size
            return True

    def room(self, pool: tuple[str, ...] | None) -> bool:
        """Whether ``pool`` and the whole budget are below their bounds (a call may start)."""
        with self._lock:
            return self._fits(pool, 1)

    def give(self, pool: tuple[str, ...] | None, size: int) -> None:
        with self._lock:
            self.held -= size
            if pool is not None:
                left = self.pools.pop(pool) - size
                if left:
                    self.pools[pool] = left


class _Reservation:
    """One request's bytes in a :class:`_Budget`, given back (once) by :meth:`release`."""

    def __init__(self, budget: _Budget, pool: tuple[str, ...] | None, refusal: CapacityExceeded) -> None:
        self.budget = budget
        self.pool = pool
        self.refusal = refusal
        self.held = 0

    def cover(self, size: int) -> None:
        """Hold at least ``size`` bytes (a body read so far). Raises :class:`_Busy` when there is no room."""
        if size > self.held:
            if not self.budget.take(self.pool, size - self.held):
                raise _Busy
            self.held = size

    def admit(self) -> CapacityExceeded | None:
        """:class:`~meta_memory.rpc.dispatch.AnswerHold`: ``None`` while the budget has room."""
        return None if self.budget.room(self.pool) else self.refusal

    def count(self, size: int) -> None:
        """:class:`~meta_memory.rpc.dispatch.AnswerHold`: ``size`` more answer bytes held, never refused."""
        self.budget.take(self.pool, size, strict=False)
        self.held += size

    def release(self) -> None:
        held, self.held = self.held, 0
        if held:
            self.budget.give(self.pool, held)


class _Releasing(Response):
    """``response`` sent as it is, then ``reservation`` released: once its last byte is handed to the
    connection, or when the client went away (or anything else ended the send)."""

    def __init__(self, response: Response, reservation: _Reservation) -> None:
        self.response = response
        self.reservation = reservation
        self.status_code = response.status_code
        self.background = None
        self.raw_headers = response.raw_headers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self.response(scope, receive, send)
        finally:
            self.reservation.release()


async def _read_body(request: Request, limit: int, reservation: _Reservation) -> bytes:
    """The whole body, at most ``limit`` bytes, each byte counted under ``reservation`` as it arrives (a
    ``Content-Length`` a client announces and does not send holds nothing). Raises :class:`_TooLarge` (by
    ``Content-Length`` before reading, else once past the limit), :class:`_Busy`, ``ClientDisconnect``."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _TooLarge
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _TooLarge
        reservation.cover(size)
        chunks.append(chunk)
    return b"".join(chunks)


async def _pieces(parts: list[bytes]) -> AsyncIterator[bytes]:
    """``parts`` joined into pieces of about :data:`_PIECE_BYTES`, in order, each part dropped from the
    list as it goes (the response's memory shrinks as the client reads it)."""
    parts.reverse()
    while parts:
        piece = [parts.pop()]
        size = len(piece[0])
        while parts and size < _PIECE_BYTES:
            piece.append(parts.pop())
            size += len(piece[-1])
        yield b"".join(piece)


def _auth_error(exc: AuthenticationFailed) -> Response:
    return Response(encode(error_response(None, exc)), status_code=exc.status, media_type=_JSON,
                    headers={"WWW-Authenticate": exc.www_authenticate})


def _vouches(gateway: Gateway, authorization: str | None) -> bool:
    """Whether ``authorization`` carries a bearer token the gateway accepts (never, when it lists none)."""
    try:
        principal = gateway.authenticate(authorization)
    except AuthenticationFailed:
        return False
    return not getattr(principal, "anonymous", True)


def _caller(gateway: Gateway, request: Request) -> Any:
    """The principal of a GET endpoint's request (``/metrics``), or the :class:`Response`
    refusing it: a token in the URL (400), a bearer token the gateway does not know (401)."""
    refused = url_token_refusal(request)
    if refused is not None:
        return refused
    try:
        return gateway.authenticate(request.headers.get("authorization"))
    except AuthenticationFailed as exc:
        return _auth_error(exc)


def _on_metrics_listener(request: Request, metrics_port: int | None) -> bool:
    """Whether the request came in on the ``[gateway] metrics_bind`` listener (its own port)."""
    return on_metrics_listener(request.scope, metrics_port)


class _MetricsListenerOnly:
    """On the ``metrics_bind`` listener, only ``GET /metrics`` is served (everything else is 404):
    that listener has no token check, so it must not reach ``/rpc``, ``/events`` or the console."""

    def __init__(self, app: ASGIApp, metrics_port: int) -> None:
        self.app = app
        self.metrics_port = metrics_port

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and on_metrics_listener(scope, self.metrics_port) and scope.get("path") != "/metrics":
            await Response(b"not found: this listener serves GET /metrics only\n", status_code=404,
                           media_type="text/plain")(scope, receive, send)
            return
        await self.app(scope, receive, send)


def create_app(gateway: Gateway, *, bind_host: str | None = None, metrics_port: int | None = None) -> Starlette:
    """The ASGI application for one gateway; ``bind_host`` is the address the server listens on
    (a ``Host`` naming it is served, see :class:`~meta_memory.server.perimeter.PerimeterRules`).
    ``metrics_port``: the port of the ``[gateway] metrics_bind`` listener, whose requests reach
    ``GET /metrics`` alone and without a token; ``/metrics`` on the main listener needs the
    ``operator.status`` grant under ``[access]``."""
    settings = gateway.runtime.config.gateway
    limit = settings.max_request_bytes
    budget = _Budget(settings.max_buffered_request_bytes, floor=limit)
    busy = CapacityExceeded(
        f"the gateway holds {budget.limit} bytes of request bodies at once ([gateway] max_buffered_request_bytes; "
        f"a caller without a token 1/{_ANONYMOUS_SHARE} of it, one principal 1/{_PRINCIPAL_SHARE}) and has no "
        f"room for this one now; nothing was run, send it again",
        resource="buffered_request_bytes", limit=budget.limit, retry_after_ms=_BUSY_RETRY_S * 1000)
    answers = _Budget(settings.max_buffered_response_bytes)
    answers_full = CapacityExceeded(
        f"the gateway holds {answers.limit} bytes of answers not yet sent at once ([gateway] "
        f"max_buffered_response_bytes; a caller without a token 1/{_ANONYMOUS_SHARE} of it, one principal "
        f"1/{_PRINCIPAL_SHARE}): this call was not run; read the answers you asked for, or send it again",
        resource="buffered_response_bytes", limit=answers.limit, retry_after_ms=_BUSY_RETRY_S * 1000)

    async def rpc(request: Request) -> Response:
        refused = url_token_refusal(request)
        if refused is not None:
            return refused
        refusal = rpc_media_type_refusal(request.headers.get("content-type"))
        if refusal is not None:
            return json_refusal(415, InvalidRequest(refusal, "content-type"), {"Accept-Post": _JSON})
        try:  # judged on the headers alone: a refused caller's body is never read
            principal = gateway.authenticate(request.headers.get("authorization"))
        except AuthenticationFailed as exc:
            return _auth_error(exc)
        cap, rule = limit, "[gateway] max_request_bytes"
        if gateway.runtime.access.tokenless(principal) and TOKENLESS_MAX_REQUEST_BYTES < limit:
            cap, rule = TOKENLESS_MAX_REQUEST_BYTES, "for a caller without a token"
        pool = _pool(gateway, principal)
        reservation = _Reservation(budget, pool, busy)
        held = _Reservation(answers, pool, answers_full)
        try:
            response = await _serve(request, principal, cap, rule, reservation, held)
        except BaseException:
            held.release()
            raise
        finally:
            reservation.release()
        return _Releasing(response, held) if held.held else response

    async def _serve(request: Request, principal: Any, cap: int, rule: str, reservation: _Reservation,
                     held: _Reservation) -> Response:
        try:
            body = await _read_body(request, cap, reservation)
        except _TooLarge:
            err = error_response(None, InvalidRequest(f"request body exceeds the cap of {cap} bytes ({rule})",
                                                      "request"))
            return Response(encode(err), status_code=413, media_type=_JSON)
        except _Busy:
            return Response(encode(error_response(None, busy)), status_code=503, media_type=_JSON,
                            headers={"Retry-After": str(_BUSY_RETRY_S)})
        except ClientDisconnect:
            client = request.client
            log.info("client %s went away before its request body was complete; nothing was executed",
                     f"{client.host}:{client.port}" if client else "?")
            return Response(status_code=400)
        request_id = accept_request_id(request.headers.get("x-request-id"))
        ctx = CallContext(principal=principal, transport="http", request_id=request_id)
        answer = await run_in_threadpool(gateway.dispatcher.answer, body, ctx, held)
        headers = {"X-Request-Id": request_id}
        if not answer.parts:
            return Response(status_code=204, headers=headers)
        if answer.retry_after_ms is not None:  # a single call refused for capacity: retry later
            headers["Retry-After"] = str(math.ceil(answer.retry_after_ms / 1000))
            return Response(answer.body, status_code=503, media_type=_JSON, headers=headers)
        if len(answer.parts) == 1:
            return Response(answer.parts[0], media_type=_JSON, headers=headers)
        headers["Content-Length"] = str(answer.size)  # a batch: sent piece by piece, each let go once written
        return StreamingResponse(_pieces(answer.parts), media_type=_JSON, headers=headers)

    async def health(request: Request) -> Response:
        refused = query_refusal(request, "GET /v1/health", {})
        if refused is not None:
            return refused
        return JSONResponse({"status": "ok", "methods": len(gateway.table.names(gateway.runtime))})

    async def ready(request: Request) -> Response:
        refused = url_token_refusal(request)
        if refused is not None:
            return refused
        try:
            principal = gateway.authenticate(request.headers.get("authorization"))
        except AuthenticationFailed as exc:
            if exc.reason != "missing_token":  # a token sent and refused: 401, as on /rpc
                return _auth_error(exc)
            principal = None  # no token where tokens guard the gateway: the short answer, never a 401
        refused = query_refusal(request, "GET /v1/ready", {})
        if refused is not None:
            return refused
        readiness = gateway.runtime.readiness
        if readiness is None:  # pragma: no cover - a runtime always builds one
            return JSONResponse({"status": "ready", "failing": []}, headers=_NO_STORE)
        report = await run_in_threadpool(readiness.report)
        operator = principal is not None and gateway.runtime.access.policy.check(
            principal, "operator.status", Resource.unscoped())
        body = report.detailed() if operator else report.public()
        return JSONResponse(body, status_code=200 if report.ready else 503, headers=_NO_STORE)

    observability = gateway.runtime.observability

    async def metrics(request: Request) -> Response:
        refused = url_token_refusal(request)  # on either listener: a token never travels in a URL
        if refused is not None:
            return refused
        if not observability.config.metrics:
            exc = InvalidRequest("metrics are off on this gateway ([telemetry] metrics = false)", "path")
            return Response(encode(error_response(None, exc)), status_code=404, media_type=_JSON)
        if not _on_metrics_listener(request, metrics_port):
            principal = _caller(gateway, request)
            if isinstance(principal, Response):
                return principal
            if not gateway.runtime.access.holds_unscoped(principal, "operator.status"):
                denied = AccessDenied("operator.status", "metrics")
                return Response(encode(error_response(None, denied)), status_code=403, media_type=_JSON)
        refused = query_refusal(request, "GET /metrics", {})
        if refused is not None:
            return refused
        body = await run_in_threadpool(observability.metrics.render)
        return Response(body, media_type=CONTENT_TYPE)

    async def root(request: Request) -> Response:
        return query_refusal(request, "GET /", {}) or RedirectResponse("/console/")

    events = EventsEndpoint(gateway, _auth_error)
    observability.metrics.watch_subscribers(lambda: events.open)
    routes: list[BaseRoute] = [
        Route("/rpc", rpc, methods=["POST"]),
        Route("/v1/health", health, methods=["GET"]),
        Route("/v1/ready", ready, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        Route("/events", events.handle, methods=["GET"]),
        Route("/", root, methods=["GET"]),
    ]
    try:
        from ..console.routes import console_routes
    except ImportError:  # the console package is optional at import time
        pass
    else:
        routes.extend(console_routes(gateway))
    extra_hosts: tuple[str, ...] = ()
    if settings.metrics_bind is not None and settings.metrics_bind[0] not in ("0.0.0.0", "::"):
        extra_hosts = (normalise_host(settings.metrics_bind[0]),)
    rules = PerimeterRules(settings.allowed_hosts + extra_hosts, settings.allowed_origins, bind_host)
    middleware = [Middleware(Perimeter, rules=rules)]
    if metrics_port is not None:
        middleware.insert(0, Middleware(_MetricsListenerOnly, metrics_port=metrics_port))
    access = gateway.runtime.access
    middleware.insert(0, Middleware(ConnectionTerms, vouches=lambda header: _vouches(gateway, header),
                                    tokens_listed=lambda: access.config is not None and bool(access.config.tokens),
                                    max_tokenless=settings.max_tokenless_requests, metrics_port=metrics_port))
    if settings.allowed_origins:
        middleware.append(Middleware(CORSMiddleware, allow_origins=list(settings.allowed_origins),
                                     allow_methods=["GET", "POST"], allow_headers=_CORS_HEADERS,
                                     allow_private_network=True))
    return Starlette(routes=routes, middleware=middleware)
