"""The quarantine queue's cursor under attack, through a real gateway over HTTP.

A ``cursor`` is a keyset position (``"<created_at_ms>:<memory_id>"``), never a
capability: a forged one (garbage, out-of-range or negative numbers, another
identity's or realm's memory id, odd Unicode) is refused with -32602 naming
``cursor``, or resumes the walk of rows the caller may review, and never shows a
row of an identity or realm the caller may not review.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

pytestmark = pytest.mark.gateway

P = "meta/memory/panel/quarantine"
BIG = 2**64 - 1


def _queue(panel: Any, who: str) -> list[dict[str, Any]]:
    """Every page of the queue for ``who`` (one row a page)."""
    out: list[dict[str, Any]] = []
    cursor = None
    for _ in range(50):
        params: dict[str, Any] = {"limit": 1}
        if cursor is not None:
            params["cursor"] = cursor
        res = panel.result(who, P, params)
        out += res["records"]
        cursor = res["next_cursor"]
        if cursor is None:
            return out
    raise AssertionError("the queue's cursor did not end")


def _call(panel: Any, who: str, params: dict[str, Any]) -> dict[str, Any]:
    """One call sent as ASCII JSON, so a lone surrogate travels as its ``\\uXXXX`` escape."""
    from seed import token_of

    body = json.dumps({"jsonrpc": "2.0", "method": P, "id": 1, "params": params}, ensure_ascii=True)
    resp = httpx.post(panel.gw.url + "/rpc", content=body.encode("ascii"), timeout=30,
                      headers={"Content-Type": "application/json", "Authorization": f"Bearer {token_of(who)}"})
    answer: dict[str, Any] = resp.json()
    return answer


def _key(row: dict[str, Any]) -> str:
    return f"{row['created_at_ms']}:{row['id']}"


def _forged(panel: Any) -> list[Any]:
    """Cursors naming every quarantined row and every record of the world, plus edge positions."""
    rows = _queue(panel, "admin")
    w = panel.world.ids
    keys = [_key(r) for r in rows]
    edges = [f"{n}:{mid}" for mid in w.values() for n in (0, 1, BIG)]
    near = [f"{r['created_at_ms'] + d}:{r['id']}" for r in rows for d in (-1, 1)]
    odd = [f"{BIG}:\uffff", f"{BIG}:\U0010ffff", f"{BIG}:{chr(0x1F600)}", f"{BIG}:\x00", f"{BIG}:a\x00b",
           f"{BIG}:id:with:colons", f"{BIG}:\u202e", f"{BIG}: ", "0:0", f"{BIG}:\ud800", f"{BIG}:\udfff"]
    return keys + edges + near + odd


GARBAGE: list[Any] = [
    "", ":", "::", "x", "x:y", ":mem", "12:", "-1:mem", "-0:mem", "+1:mem", " 1:mem", "1 :mem", "1.5:mem",
    "1e3:mem", "0x10:mem", "١٢:mem", "１２:mem", f"{2**64}:mem", f"{10**400}:mem", "9" * 5000 + ":mem",
    "\ud800:mem", "\x00:mem", 5, -5, 1.5, True, [], ["1:mem"], {"created_at_ms": 1, "memory_id": "m"},
]


@pytest.mark.parametrize("bad", GARBAGE, ids=lambda v: repr(v)[:24])
def test_a_malformed_cursor_is_refused_naming_cursor(panel: Any, bad: Any) -> None:
    for who in ("admin", "alice"):
        body = _call(panel, who, {"cursor": bad})
        assert "error" in body, (who, bad, body)
        err = body["error"]
        assert err["code"] == -32602, (who, bad, err)
        assert err["data"]["field"] == "cursor", (who, bad, err)


@pytest.mark.parametrize("who", ["alice", "admin", "reviewer"])
def test_a_forged_cursor_shows_only_rows_the_caller_may_review(panel: Any, who: str) -> None:
    own = {r["id"] for r in _queue(panel, who)}
    everyone = {r["id"] for r in _queue(panel, "admin")}
    w = panel.world.ids
    if who == "alice":  # lead:main of the default realm only: never the quiet realm's row
        assert own == {w["quar_a"]} and w["quiet_q"] in everyone
    for cursor in _forged(panel):
        for realm in (None, "default", "quiet"):
            params: dict[str, Any] = {"cursor": cursor, "limit": 200}
            if realm is not None:
                params["realm"] = realm
            body = _call(panel, who, params)
            if "error" in body:
                assert body["error"]["code"] == -32602 and body["error"]["data"]["field"] == "cursor", (cursor, body)
                continue
            seen = {r["id"] for r in body["result"]["records"]}
            assert seen <= own, (who, cursor, realm, seen - own)
            assert all("body" not in r for r in body["result"]["records"])


def test_a_cursor_resumes_strictly_after_its_row_in_every_realm(panel: Any) -> None:
    rows = _queue(panel, "admin")
    assert len(rows) >= 2
    for i, row in enumerate(rows):
        res = panel.result("admin", P, {"cursor": _key(row), "limit": 200})
        assert [r["id"] for r in res["records"]] == [r["id"] for r in rows[i + 1 :]]
        assert res["next_cursor"] is None
    everything = panel.result("admin", P, {"cursor": f"{BIG}:\U0010ffff", "limit": 200})
    assert [r["id"] for r in everything["records"]] == [r["id"] for r in rows]
    assert panel.result("admin", P, {"cursor": "0:0", "limit": 200})["records"] == []


def test_the_record_listing_refuses_an_overlong_number_too(panel: Any) -> None:
    for bad in ("9" * 5000 + ":mem", "0" * 5000 + "1:mem"):
        err = panel.error("admin", "meta/memory/panel/records", {"cursor": bad})
        assert err["code"] == -32602 and err["data"]["field"] == "cursor"
