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
allowed_origins``). Then, on ``POST /rpc``:

* a body whose ``Content-Type`` is not ``application/json`` is refused with
  HTTP 415 and a JSON-RPC ``-32600`` error (``data.field = "content-type"``)
  before it is read, so nothing is executed;
* a body larger than ``[gateway] max_request_bytes`` is refused with HTTP 413
  and ``-32600`` before any of it is parsed;
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
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ..access.principal import AuthenticationFailed
from ..access.resources import Resource
from ..errors import AccessDenied, InvalidRequest
from ..observability.metrics import CONTENT_TYPE
from ..observability.requests import accept_request_id
from ..rpc.dispatch import encode, error_response
from ..rpc.registry import CallContext
from .config import normalise_host
from .events import EventsEndpoint, url_token_refusal
from .gateway import Gateway
from .perimeter import Perimeter, PerimeterRules, json_refusal, rpc_media_type_refusal

__all__ = ["create_app"]

log = logging.getLogger("meta_memory.http")

_JSON = "application/json"
_NO_STORE = {"Cache-Control": "no-store"}
#: Request headers a configured foreign origin may send (CORS).
_CORS_HEADERS = ["authorization", "content-type", "last-event-id"]


class _TooLarge(Exception):
    pass


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _TooLarge
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _TooLarge
        chunks.append(chunk)
    return b"".join(chunks)


def _auth_error(exc: AuthenticationFailed) -> Response:
    return Response(encode(error_response(None, exc)), status_code=exc.status, media_type=_JSON,
                    headers={"WWW-Authenticate": exc.www_authenticate})


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
    server = request.scope.get("server")
    return metrics_port is not None and server is not None and server[1] == metrics_port


class _MetricsListenerOnly:
    """On the ``metrics_bind`` listener, only ``GET /metrics`` is served (everything else is 404):
    that listener has no token check, so it must not reach ``/rpc``, ``/events`` or the console."""

    def __init__(self, app: ASGIApp, metrics_port: int) -> None:
        self.app = app
        self.metrics_port = metrics_port

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        server = scope.get("server")
        if scope["type"] == "http" and server and server[1] == self.metrics_port and scope.get("path") != "/metrics":
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

    async def rpc(request: Request) -> Response:
        refused = url_token_refusal(request)
        if refused is not None:
            return refused
        refusal = rpc_media_type_refusal(request.headers.get("content-type"))
        if refusal is not None:
            return json_refusal(415, InvalidRequest(refusal, "content-type"), {"Accept-Post": _JSON})
        try:
            body = await _read_body(request, limit)
        except _TooLarge:
            err = error_response(None, InvalidRequest(
                f"request body exceeds the cap of {limit} bytes ([gateway] max_request_bytes)", "request"))
            return Response(encode(err), status_code=413, media_type=_JSON)
        except ClientDisconnect:
            client = request.client
            log.info("client %s went away before its request body was complete; nothing was executed",
                     f"{client.host}:{client.port}" if client else "?")
            return Response(status_code=400)
        request_id = accept_request_id(request.headers.get("x-request-id"))
        try:
            principal = gateway.authenticate(request.headers.get("authorization"))
        except AuthenticationFailed as exc:
            return _auth_error(exc)
        ctx = CallContext(principal=principal, transport="http", request_id=request_id)
        answer = await run_in_threadpool(gateway.dispatcher.answer, body, ctx)
        headers = {"X-Request-Id": request_id}
        if answer.body is None:
            return Response(status_code=204, headers=headers)
        if answer.retry_after_ms is not None:  # a single call refused for capacity: retry later
            headers["Retry-After"] = str(math.ceil(answer.retry_after_ms / 1000))
            return Response(answer.body, status_code=503, media_type=_JSON, headers=headers)
        return Response(answer.body, media_type=_JSON, headers=headers)

    async def health(request: Request) -> Response:
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
        body = await run_in_threadpool(observability.metrics.render)
        return Response(body, media_type=CONTENT_TYPE)

    events = EventsEndpoint(gateway, _auth_error)
    observability.metrics.watch_subscribers(lambda: events.open)
    routes: list[BaseRoute] = [
        Route("/rpc", rpc, methods=["POST"]),
        Route("/v1/health", health, methods=["GET"]),
        Route("/v1/ready", ready, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        Route("/events", events.handle, methods=["GET"]),
        Route("/", lambda request: RedirectResponse("/console/"), methods=["GET"]),
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
    if settings.allowed_origins:
        middleware.append(Middleware(CORSMiddleware, allow_origins=list(settings.allowed_origins),
                                     allow_methods=["GET", "POST"], allow_headers=_CORS_HEADERS,
                                     allow_private_network=True))
    return Starlette(routes=routes, middleware=middleware)
