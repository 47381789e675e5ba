"""``GET /events`` reads one query parameter, ``after``; anything else in the query is refused (HTTP 400,
``-32600 invalid_request``, ``data.field`` naming the parameter) rather than ignored: before, ``?since=abc``,
``?limt=5`` or ``?after=abc`` opened a stream from the oldest event as if the query were empty. Over a real
gateway's socket; callers the gateway refuses (no token, a foreign ``Origin``) are refused as before."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from support import GatewayProcess, access_toml, start_gateway, write_config

pytestmark = pytest.mark.gateway

LEAD = "lead:main"
TOKEN = "events-query-reader-0001"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """One stream at a time: a refused request that took a subscriber slot would leave no room for the next.
    The reader sees every event, so it is shown (and resumes with) the plain ``console-evt-<n>`` ids."""
    root = tmp_path_factory.mktemp("events-query")
    grants = [("ann", a) for a in ("agent.memory.read", "agent.memory.write", "agent.view", "mob.memory.read",
                                   "operator.memory.read")]
    config = write_config(root / "c.toml", "[gateway]\nmax_event_subscribers = 1\n\n" + access_toml({TOKEN: "ann"}, grants))
    gateway = start_gateway(root / "state", config=config)
    try:
        for n in range(3):
            gateway.result("meta/agent_memory/remember", {"identity": LEAD, "title": f"Note {n}", "body": f"entry {n}"},
                           token=TOKEN)
        yield gateway
    finally:
        gateway.stop()


def get(url: str, headers: dict[str, str], params: dict[str, str] | None = None) -> tuple[int, Any]:
    """``(status, JSON body)`` of a GET; a stream that opens (200) is closed unread, its body ``None``."""
    with httpx.stream("GET", url, params=params, headers=headers, timeout=30) as resp:
        return resp.status_code, None if resp.status_code == 200 else json.loads(resp.read())


def refused(answer: tuple[int, Any], status: int, field: str) -> str:
    """The refusal's message, after checking its status and its JSON-RPC shaped body."""
    assert answer[0] == status, answer
    body = answer[1]
    assert body["id"] is None
    err = body["error"]
    assert err["code"] == -32600 and err["data"] == {"kind": "invalid_request", "field": field}, err
    return str(err["message"])


def streamed_ids(gw: GatewayProcess, query: str, count: int, headers: dict[str, str] | None = None) -> list[str]:
    """The first ``count`` event ids a stream opened with ``query`` sends."""
    ids: list[str] = []
    with httpx.stream("GET", f"{gw.url}/events{query}", headers={**AUTH, **(headers or {})}, timeout=30) as resp:
        assert resp.status_code == 200, resp.read()
        for line in resp.iter_lines():
            if line.startswith("id: "):
                ids.append(line[4:])
            if len(ids) == count:
                break
    return ids


@pytest.mark.parametrize("query, field", [
    ("limt=5", "limt"),
    ("limit=5", "limit"),
    ("since=abc", "since"),
    ("After=0", "After"),  # names are case-sensitive
    ("after=0&cursor=1", "cursor"),
    ("=5", ""),
])
def test_an_unknown_query_parameter_is_refused_by_name(gw: GatewayProcess, query: str, field: str) -> None:
    message = refused(get(f"{gw.url}/events?{query}", AUTH), 400, field)
    assert message == f"Invalid request: unknown query parameter {field!r}: GET /events takes only after"


def test_an_unknown_name_is_repeated_short_and_with_its_controls_escaped(gw: GatewayProcess) -> None:
    name = "\x1b[31m" + "x" * 500
    status, body = get(f"{gw.url}/events", AUTH, {name: "1"})
    assert status == 400
    err = body["error"]
    assert "\x1b" not in json.dumps(body, ensure_ascii=False) and "\\x1b[31m" in err["message"]
    assert "x" * 100 not in err["message"]
    assert err["data"]["field"].startswith("\\x1b[31m") and err["data"]["field"].endswith("...")


@pytest.mark.parametrize("value", ["", "abc", "-1", "1.5", "0x10", "console-evt-", "console-evt-x", "evt-123",
                                   "evt-" + "F" * 16, str(2**64), "9" * 5000])
def test_an_after_that_is_no_cursor_is_refused_with_the_rule(gw: GatewayProcess, value: str) -> None:
    message = refused(get(f"{gw.url}/events", AUTH, {"after": value}), 400, "after")
    assert message == ("Invalid request: after must be an event_id ('console-evt-<n>' or 'evt-<16 hex>') or an "
                       f"integer from 0 to {2**64 - 1}")


def test_the_same_cursor_rule_holds_on_the_rpc_method(gw: GatewayProcess) -> None:
    """``meta/events/list`` and ``GET /events`` keep one rule: a sequence number past 64 bits is refused by both."""
    err = gw.error("meta/events/list", {"after": 2**64}, token=TOKEN)
    assert err["code"] == -32602 and err["data"]["field"] == "after"
    assert f"integer from 0 to {2**64 - 1}" in err["message"]
    assert gw.result("meta/events/list", {"after": 2**64 - 1}, token=TOKEN)["events"] == []


@pytest.mark.parametrize("query", ["after=0&after=1", "after=1&after=1", "after=console-evt-1&after=abc"])
def test_after_given_twice_is_refused(gw: GatewayProcess, query: str) -> None:
    message = refused(get(f"{gw.url}/events?{query}", AUTH), 400, "after")
    assert message == "Invalid request: the query parameter after is given more than once; give it once"


def test_well_formed_queries_still_stream(gw: GatewayProcess) -> None:
    listed = [e["event_id"] for e in gw.result("meta/events/list", {}, token=TOKEN)["events"]]
    assert len(listed) >= 3
    assert streamed_ids(gw, "", len(listed)) == listed
    assert streamed_ids(gw, "?after=0", len(listed)) == listed
    assert streamed_ids(gw, f"?after={listed[0]}", len(listed) - 1) == listed[1:]
    assert streamed_ids(gw, f"?after={listed[0].removeprefix('console-evt-')}", len(listed) - 1) == listed[1:]
    assert streamed_ids(gw, "?", len(listed)) == listed  # an empty query is no parameter
    # the header keeps its rule and wins over the query: a malformed one starts from the oldest event
    assert streamed_ids(gw, f"?after={listed[0]}", len(listed), {"Last-Event-ID": "9" * 5000}) == listed
    assert streamed_ids(gw, "?after=0", len(listed) - 1, {"Last-Event-ID": listed[0]}) == listed[1:]


def test_a_refused_query_holds_no_subscriber_slot(gw: GatewayProcess) -> None:
    for _ in range(3):  # the gateway allows one stream: each refusal left it free
        refused(get(f"{gw.url}/events?limit=1", AUTH), 400, "limit")
    assert len(streamed_ids(gw, "", 1)) == 1


@pytest.mark.parametrize("query", ["?limt=5", "?after=abc", "?after=0&after=1"])
def test_callers_the_gateway_refuses_are_refused_as_before(gw: GatewayProcess, query: str) -> None:
    """Whatever the query, a caller without a token, with a token the gateway does not know, from a foreign
    ``Origin``, or with a token in the URL gets the answer it got with no query at all."""
    cases: list[tuple[str, dict[str, str], int]] = [
        ("", {}, 403),  # no token: the anonymous caller may read nothing here
        ("", {"Authorization": "Bearer not-a-token"}, 401),
        ("", {**AUTH, "Origin": "https://evil.example"}, 403),
        (f"token={TOKEN}", AUTH, 400),
    ]
    for extra, headers, status in cases:
        def answer(q: str) -> tuple[int, Any]:
            joined = "&".join(part for part in (q.lstrip("?"), extra) if part)
            return get(f"{gw.url}/events{'?' + joined if joined else ''}", headers)

        plain, queried = answer(""), answer(query)
        assert plain[0] == queried[0] == status, (extra, headers, queried)
        assert plain[1] == queried[1]
