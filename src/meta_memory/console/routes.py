"""Starlette routes of the console page (seed: Console Memory panel).

* ``GET /console``          -> 307 redirect to ``/console/``;
* ``GET /console/``         -> the Memory panel page (``static/index.html``);
* ``GET /console/static/*`` -> its stylesheet and script.

None takes a query parameter: one is refused (HTTP 400 naming it), as on every GET route of the gateway.

The page is static: it holds no data and no secret. It asks for a bearer token
once per browser session (``sessionStorage``), then calls ``POST /rpc`` and
reads ``GET /events`` like any other client, so the gateway's authentication
and access rules apply unchanged. The timeline is read with ``fetch()``
streaming so the token travels in the ``Authorization`` header, never in a URL;
the page is same-origin, so the perimeter (``server/perimeter.py``) never
stands in its way while other pages are refused. Every response carries a strict
Content-Security-Policy (scripts and styles from this origin only, no inline
code, no framing) and ``Cache-Control: no-store`` for the page itself.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import FileResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from ..errors import echo
from ..server.events import query_refusal

__all__ = ["CONTENT_SECURITY_POLICY", "STATIC_DIR", "console_routes"]

STATIC_DIR = Path(__file__).resolve().parent / "static"

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}


class _Secured:
    """ASGI wrapper adding the security headers to every response of ``app``, which takes no query
    parameter: a request carrying one is refused (HTTP 400 naming it, the gateway's one rule for the query
    of a GET route, :func:`~meta_memory.server.events.query_refusal`)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        app = self.app
        if scope["type"] == "http":
            request = Request(scope)
            app = query_refusal(request, f"GET {echo(request.url.path)}", {}) or self.app

        async def send_with_headers(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {k.lower() for k, _ in headers}
                for name, value in _SECURITY_HEADERS.items():
                    if name.lower().encode() not in present:
                        headers.append((name.lower().encode(), value.encode()))
                message = {**message, "headers": headers}
            await send(message)

        await app(scope, receive, send_with_headers)


def console_routes(gateway: Any = None) -> list[BaseRoute]:
    """The console's routes for :func:`meta_memory.server.http.create_app` (``gateway`` is unused:
    the page talks to the gateway over HTTP like any client)."""

    async def page(request: Request) -> Response:
        refused = query_refusal(request, "GET /console/", {})
        if refused is not None:
            refused.headers.update(_SECURITY_HEADERS)
            return refused
        return FileResponse(
            STATIC_DIR / "index.html",
            media_type="text/html; charset=utf-8",
            headers={**_SECURITY_HEADERS, "Cache-Control": "no-store"},
        )

    async def redirect(request: Request) -> Response:
        return query_refusal(request, "GET /console", {}) or RedirectResponse(url="/console/", status_code=307)

    return [
        Route("/console", redirect, methods=["GET"]),
        Route("/console/", page, methods=["GET"]),
        Mount("/console/static", app=_Secured(StaticFiles(directory=STATIC_DIR)), name="console-static"),
    ]
