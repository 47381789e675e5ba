"""Every ``GET`` route of the gateway holds its query to one rule (``server/events.py`` ``query_refusal``):
a parameter it does not take, or one given twice, is refused with HTTP 400, ``-32600 invalid_request`` and
``data.field`` naming the parameter, never ignored. ``GET /events`` takes ``after``; the plain endpoints
(``/v1/health``, ``/v1/ready``, ``/metrics``, ``/``, the console page and its static files) take none:
health probes and Prometheus scrapers send none, so a query there is a mistyped URL, answered as one.
Over a real gateway's socket."""

from __future__ import annotations

import httpx
import pytest

from support import GatewayProcess

pytestmark = pytest.mark.gateway

#: Each plain GET route and the status it answers without a query.
PLAIN = [("/v1/health", 200), ("/v1/ready", 200), ("/metrics", 200), ("/", 307), ("/console", 307),
         ("/console/", 200), ("/console/static/console.css", 200)]


def _refused(resp: httpx.Response, field: str) -> str:
    assert resp.status_code == 400, (resp.status_code, resp.text)
    body = resp.json()
    assert body["id"] is None
    err = body["error"]
    assert err["code"] == -32600 and err["data"] == {"kind": "invalid_request", "field": field}, err
    return str(err["message"])


@pytest.mark.parametrize(("path", "status"), PLAIN)
def test_a_plain_get_route_refuses_any_query_parameter_naming_it(gateway: GatewayProcess, path: str,
                                                                  status: int) -> None:
    assert httpx.get(gateway.url + path, follow_redirects=False, timeout=30).status_code == status
    for query, field in (("verbose=1", "verbose"), ("x=1&x=2", "x"), ("Limit=", "Limit")):
        message = _refused(httpx.get(f"{gateway.url}{path}?{query}", follow_redirects=False, timeout=30), field)
        assert message == f"Invalid request: unknown query parameter '{field}': GET {path} takes no query parameters"


def test_events_keeps_its_one_parameter_and_the_same_wording(gateway: GatewayProcess) -> None:
    message = _refused(httpx.get(f"{gateway.url}/events?verbose=1", timeout=30), "verbose")
    assert message == "Invalid request: unknown query parameter 'verbose': GET /events takes only after"
    twice = _refused(httpx.get(f"{gateway.url}/events?after=1&after=2", timeout=30), "after")
    assert twice == "Invalid request: the query parameter after is given more than once; give it once"
