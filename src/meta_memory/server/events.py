"""``GET /events``: the timeline as Server-Sent Events, for a bounded number of subscribers.

* Authentication is the ``Authorization: Bearer`` header only. A ``token`` in the
  query string is refused (HTTP 400, ``data.field = "token"``): URLs end up in
  logs, histories and ``Referer`` headers. The console reads the stream with
  ``fetch()`` and sends the header like any other client.
* Resume with ``Last-Event-ID`` (or ``?after=<event id>``; the header wins when both are sent): a reader who
  sees only some identities' events is sent opaque ids of its own (``events/cursor.py``) and resumes with
  them; any other well-formed value (one it was not shown: made up, another reader's, a plain number)
  starts from the oldest retained event.
* ``after`` is the only query parameter. A caller the gateway would serve is refused with HTTP 400
  (``-32600 invalid_request``, ``data.field`` naming the parameter, before any slot is taken) for a
  parameter of another name (``?limit=``, ``?since=``, ``?After=``: names are case-sensitive), ``after``
  given more than once, or an ``after`` not shaped as a cursor (``AFTER_RULE``: empty, ``abc``, ``-1``, a
  number past 2**64-1). Callers refused 401 or 403 are refused as before, whatever the query.
* Under ``[access]`` the caller must be able to read some memory (``memory.can_read``);
  otherwise HTTP 403 before any slot is taken, so an anonymous caller cannot hold streams.
* At most ``[gateway] max_event_subscribers`` streams are open at once and, under ``[access]``,
  one principal holds at most a quarter of them; one more is refused with HTTP 503, ``Retry-After`` and a JSON-RPC shaped error
  (``-32005``, ``data.kind = "capacity_exceeded"``, ``data.resource = "event_subscribers"``,
  ``data.limit``).
* Each event is filtered by the caller's access (``AccessService.event_visible``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from ..access.principal import AuthenticationFailed, Principal
from ..errors import AccessDenied, CapacityExceeded, InvalidRequest, echo
from ..events.cursor import AFTER_RULE, EventCursor, is_event_cursor
from ..rpc.dispatch import encode, error_response
from .gateway import Gateway
from .perimeter import json_refusal

__all__ = ["EVENTS_QUERY", "EventsEndpoint", "QueryRule", "query_refusal", "url_token_refusal"]

_SSE_POLL_S = 0.1  # how often an idle stream checks the bus for new events
_SSE_KEEPALIVE_S = 15.0  # an idle stream sends a comment line this often
_SSE_BATCH = 1000  # events sent per check at most
_URL_TOKEN_PARAMS = ("token", "access_token")


def url_token_refusal(request: Request) -> Response | None:
    """HTTP 400 (``invalid_request``, ``data.field`` naming the parameter) when the URL's query carries
    ``token`` or ``access_token`` (in any case), whatever the header says: a token in a URL ends up in proxy logs and
    histories. ``None`` when it carries neither. Every route that takes a token applies it first."""
    for given in request.query_params:
        name = given.strip().lower()  # ``?TOKEN=`` carries a token as well as ``?token=``
        if name in _URL_TOKEN_PARAMS:
            exc = InvalidRequest("a bearer token is accepted only in the Authorization header, never in the URL",
                                 name)
            return Response(encode(error_response(None, exc)), status_code=400, media_type="application/json")
    return None


#: A query parameter's check: whether a value keeps its rule, and the rule in words (the refusal's message).
QueryRule = tuple[Callable[[str], bool], str]


def query_refusal(request: Request, route: str, accepted: Mapping[str, QueryRule]) -> Response | None:
    """HTTP 400 (``invalid_request``, ``data.field`` naming the parameter) for the first query parameter of
    ``request`` that breaks a rule of the GET route ``route``: a name not in ``accepted`` (names are
    case-sensitive), a name given more than once (one value is read, so two are refused rather than one
    chosen), or a value its check refuses (the message is the rule; the value is not repeated: a URL may
    carry what an answer should not). ``None`` when the query keeps them all. A name the caller made up is
    repeated as :func:`~meta_memory.errors.echo` shows it."""
    seen: set[str] = set()
    for name, value in request.query_params.multi_items():
        rule = accepted.get(name)
        if rule is None:
            takes = f"only {', '.join(accepted)}" if accepted else "no query parameters"
            exc = InvalidRequest(f"unknown query parameter {echo(name)!r}: {route} takes {takes}", echo(name))
        elif name in seen:
            exc = InvalidRequest(f"the query parameter {name} is given more than once; give it once", name)
        elif not rule[0](value):
            exc = InvalidRequest(rule[1], name)
        else:
            seen.add(name)
            continue
        return json_refusal(400, exc)
    return None


#: The query parameters ``GET /events`` reads.
EVENTS_QUERY: dict[str, QueryRule] = {"after": (is_event_cursor, AFTER_RULE)}


class _Subscription(StreamingResponse):
    """A stream that gives its subscriber slot back however it ends."""

    def __init__(self, content: AsyncIterator[bytes], release: Callable[[], None], **kw: Any) -> None:
        super().__init__(content, **kw)
        self._release = release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._release()


class EventsEndpoint:
    """The ``/events`` route of one gateway (:meth:`handle`; ``auth_error`` renders a 401)."""

    def __init__(self, gateway: Gateway, auth_error: Callable[[AuthenticationFailed], Response]) -> None:
        self.gateway = gateway
        self.auth_error = auth_error
        self.cap = gateway.runtime.config.gateway.max_event_subscribers
        self.per_caller = max(1, self.cap // 4)
        self.open = 0
        self.by_caller: dict[str, int] = {}

    def _releaser(self, caller: str) -> Any:
        def release() -> None:
            self.open -= 1
            left = self.by_caller.get(caller, 1) - 1
            if left > 0:
                self.by_caller[caller] = left
            else:
                self.by_caller.pop(caller, None)
        return release

    def _busy(self, message: str, limit: int) -> Response:
        exc = CapacityExceeded(message, resource="event_subscribers", limit=limit)
        return Response(encode(error_response(None, exc)), status_code=503, media_type="application/json",
                        headers={"Retry-After": "5"})

    async def handle(self, request: Request) -> Response:
        """Serve one ``GET /events`` (see the module docstring for refusals)."""
        refused = url_token_refusal(request)
        if refused is not None:
            return refused
        try:
            principal = self.gateway.authenticate(request.headers.get("authorization"))
        except AuthenticationFailed as exc:
            return self.auth_error(exc)
        access = self.gateway.runtime.access
        if access.enabled and not access.memory_can_read(principal):
            denied = AccessDenied("agent.memory.read", "events")
            return Response(encode(error_response(None, denied)), status_code=403, media_type="application/json")
        refused = query_refusal(request, "GET /events", EVENTS_QUERY)
        if refused is not None:
            return refused
        caller = getattr(principal, "name", None) or "anonymous"
        if self.open >= self.cap:
            return self._busy(f"too many event subscribers (at most {self.cap} streams are open at once)", self.cap)
        if access.enabled and self.by_caller.get(caller, 0) >= self.per_caller:
            return self._busy(f"too many event streams for one caller (at most {self.per_caller})", self.per_caller)
        cursor = access.event_cursor(principal)  # a reader's own event ids (events/cursor.py)
        resume = request.headers.get("last-event-id") or request.query_params.get("after") or 0
        start = cursor.parse(resume, self.gateway.runtime.events.last_seq) or 0
        self.open += 1  # the event loop is single-threaded: check and take happen without a yield between
        self.by_caller[caller] = self.by_caller.get(caller, 0) + 1
        return _Subscription(self._stream(request, principal, start, cursor), self._releaser(caller), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    async def _stream(self, request: Request, principal: Principal, start: int,
                      cursor: EventCursor) -> AsyncIterator[bytes]:
        # Poll the in-memory bus from the event loop (an O(1) check per tick) instead of
        # blocking a worker thread per subscriber: worker threads are shared with POST /rpc,
        # so subscribers parked in a blocking wait would starve every JSON-RPC call.
        bus = self.gateway.runtime.events
        access = self.gateway.runtime.access
        after = start
        idle_s = 0.0
        yield b": meta-memory timeline\n\n"
        while not self.gateway.stopping.is_set():
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
                shown = access.event_json(principal, env, cursor)
                payload = json.dumps(shown, ensure_ascii=False)
                yield f"id: {shown['event_id']}\nevent: {env.event_type}\ndata: {payload}\n\n".encode()
            await asyncio.sleep(0)
