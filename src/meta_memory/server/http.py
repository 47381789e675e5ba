"""HTTP transport: ``POST /rpc`` (JSON-RPC 2.0), ``GET /v1/health``, ``GET /v1/ready``, ``GET /events`` (SSE),
``/console/``.

``GET /v1/health`` is liveness: the process answers (it reads no store). ``GET /v1/ready`` is
readiness (:mod:`meta_memory.readiness`): HTTP 200 ``{status: "ready", failing: []}``, or 503
``{status: "not_ready", failing: [component kinds]}``; a caller holding ``operator.status`` (every
caller on a gateway without ``[access]``) also gets ``checks`` (each failing check's name, problem and
fix, which may name realms and paths) and ``checked_at_ms``. An unknown bearer token is refused (401)
as on ``/rpc``; no token is needed for the short answer.

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

Blocking work (SQLite, fsync) runs in a worker thread so the event loop stays
responsive. ``/events`` is :mod:`meta_memory.server.events`.
"""

from __future__ import annotations

import logging
import math

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from ..access.principal import AuthenticationFailed
from ..access.resources import Resource
from ..errors import InvalidRequest
from ..rpc.dispatch import encode, error_response
from ..rpc.registry import CallContext
from .events import EventsEndpoint
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
    body = {"jsonrpc": "2.0", "error": {"code": -32030, "message": f"authentication failed: {exc}",
                                          "data": {"kind": "access_denied", "action": "authenticate"}}, "id": None}
    return JSONResponse(body, status_code=exc.status, headers={"WWW-Authenticate": exc.www_authenticate})


def create_app(gateway: Gateway, *, bind_host: str | None = None) -> Starlette:
    """The ASGI application for one gateway; ``bind_host`` is the address the server listens on
    (a ``Host`` naming it is served, see :class:`~meta_memory.server.perimeter.PerimeterRules`)."""
    settings = gateway.runtime.config.gateway
    limit = settings.max_request_bytes

    async def rpc(request: Request) -> Response:
        refusal = rpc_media_type_refusal(request.headers.get("content-type"))
        if refusal is not None:
            return json_refusal(415, InvalidRequest(refusal, "content-type"), {"Accept-Post": _JSON})
        try:
            body = await _read_body(request, limit)
        except _TooLarge:
            err = error_response(None, InvalidRequest(f"request body exceeds {limit} bytes", "body"))
            return Response(encode(err), status_code=413, media_type=_JSON)
        except ClientDisconnect:
            client = request.client
            log.info("client %s went away before its request body was complete; nothing was executed",
                     f"{client.host}:{client.port}" if client else "?")
            return Response(status_code=400)
        try:
            principal = gateway.authenticate(request.headers.get("authorization"))
        except AuthenticationFailed as exc:
            return _auth_error(exc)
        ctx = CallContext(principal=principal, transport="http")
        answer = await run_in_threadpool(gateway.dispatcher.answer, body, ctx)
        if answer.body is None:
            return Response(status_code=204)
        if answer.retry_after_ms is not None:  # a single call refused for capacity: retry later
            return Response(answer.body, status_code=503, media_type=_JSON,
                            headers={"Retry-After": str(math.ceil(answer.retry_after_ms / 1000))})
        return Response(answer.body, media_type=_JSON)

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok", "methods": len(gateway.table.names(gateway.runtime))})

    async def ready(request: Request) -> Response:
        try:
            principal = gateway.authenticate(request.headers.get("authorization"))
        except AuthenticationFailed as exc:
            return _auth_error(exc)
        readiness = gateway.runtime.readiness
        if readiness is None:  # pragma: no cover - a runtime always builds one
            return JSONResponse({"status": "ready", "failing": []}, headers=_NO_STORE)
        report = await run_in_threadpool(readiness.report)
        operator = gateway.runtime.access.policy.check(principal, "operator.status", Resource.unscoped())
        body = report.detailed() if operator else report.public()
        return JSONResponse(body, status_code=200 if report.ready else 503, headers=_NO_STORE)

    routes: list[BaseRoute] = [
        Route("/rpc", rpc, methods=["POST"]),
        Route("/v1/health", health, methods=["GET"]),
        Route("/v1/ready", ready, methods=["GET"]),
        Route("/events", EventsEndpoint(gateway, _auth_error).handle, methods=["GET"]),
        Route("/", lambda request: RedirectResponse("/console/"), methods=["GET"]),
    ]
    try:
        from ..console.routes import console_routes
    except ImportError:  # the console package is optional at import time
        pass
    else:
        routes.extend(console_routes(gateway))
    rules = PerimeterRules(settings.allowed_hosts, settings.allowed_origins, bind_host)
    middleware = [Middleware(Perimeter, rules=rules)]
    if settings.allowed_origins:
        middleware.append(Middleware(CORSMiddleware, allow_origins=list(settings.allowed_origins),
                                     allow_methods=["GET", "POST"], allow_headers=_CORS_HEADERS,
                                     allow_private_network=True))
    return Starlette(routes=routes, middleware=middleware)
