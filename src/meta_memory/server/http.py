"""HTTP transport: ``POST /rpc`` (JSON-RPC 2.0), ``GET /v1/health``, ``GET /events`` (SSE), ``/console/``.

A request body larger than ``[gateway] max_request_bytes`` is refused with
HTTP 413 and a JSON-RPC ``-32600`` error before any of it is parsed. Blocking
work (SQLite, fsync) runs in a worker thread so the event loop stays
responsive.
"""

from __future__ import annotations

import asyncio
import json
import logging

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from ..access.principal import AuthenticationFailed
from ..errors import InvalidRequest
from ..events.bus import parse_event_seq
from ..rpc.dispatch import encode, error_response
from ..rpc.registry import CallContext
from .gateway import Gateway

__all__ = ["create_app"]

log = logging.getLogger("meta_memory.http")

_JSON = "application/json"
_SSE_POLL_S = 0.1  # how often an idle ``GET /events`` stream checks the bus for new events
_SSE_KEEPALIVE_S = 15.0  # an idle stream sends a comment line this often
_SSE_BATCH = 1000  # events sent per check at most


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


def create_app(gateway: Gateway) -> Starlette:
    """The ASGI application for one gateway."""
    limit = gateway.runtime.config.gateway.max_request_bytes

    async def rpc(request: Request) -> Response:
        try:
            body = await _read_body(request, limit)
        except _TooLarge:
            err = error_response(None, InvalidRequest(f"request body exceeds {limit} bytes", "body"))
            return Response(encode(err), status_code=413, media_type=_JSON)
        try:
            principal = gateway.authenticate(request.headers.get("authorization"))
        except AuthenticationFailed as exc:
            return _auth_error(exc)
        ctx = CallContext(principal=principal, transport="http")
        out = await run_in_threadpool(gateway.dispatcher.handle_bytes, body, ctx)
        if out is None:
            return Response(status_code=204)
        return Response(out, media_type=_JSON)

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok", "methods": len(gateway.table.names(gateway.runtime))})

    async def events(request: Request) -> Response:
        try:
            principal = gateway.authenticate(request.headers.get("authorization") or _query_token(request))
        except AuthenticationFailed as exc:
            return _auth_error(exc)
        start = parse_event_seq(request.headers.get("last-event-id") or request.query_params.get("after") or 0) or 0
        bus = gateway.runtime.events
        access = gateway.runtime.access

        async def stream():
            # Poll the in-memory bus from the event loop (an O(1) check per tick) instead of
            # blocking a worker thread per subscriber: worker threads are shared with POST /rpc,
            # so subscribers parked in a blocking wait would starve every JSON-RPC call.
            after = start
            idle_s = 0.0
            yield b": meta-memory timeline\n\n"
            while not gateway.stopping.is_set():
                if await request.is_disconnected():
                    break
                batch = bus.list(after, _SSE_BATCH) if bus.last_seq > after else []
                if not batch:
                    await asyncio.sleep(_SSE_POLL_S)
                    idle_s += _SSE_POLL_S
                    if idle_s >= _SSE_KEEPALIVE_S:
                        idle_s = 0.0
                        yield b": keep-alive\n\n"
                    continue
                idle_s = 0.0
                for env in batch:
                    after = env.seq
                    if not access.event_visible(principal, env):
                        continue
                    payload = json.dumps(env.to_dict(), ensure_ascii=False)
                    yield f"id: {env.event_id}\nevent: {env.event_type}\ndata: {payload}\n\n".encode()
                await asyncio.sleep(0)

        return StreamingResponse(stream(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    routes = [
        Route("/rpc", rpc, methods=["POST"]),
        Route("/v1/health", health, methods=["GET"]),
        Route("/events", events, methods=["GET"]),
        Route("/", lambda request: RedirectResponse("/console/"), methods=["GET"]),
    ]
    try:
        from ..console.routes import console_routes
    except ImportError:  # the console package is optional at import time
        console_routes = None
    if console_routes is not None:
        routes.extend(console_routes(gateway))
    return Starlette(routes=routes)


def _query_token(request: Request) -> str | None:
    token = request.query_params.get("token")
    return f"Bearer {token}" if token else None
