"""``meta/memory/panel/records`` with ``query``: text search through a real gateway over HTTP.

The search narrows rows in the store before the page is cut from the rows the
caller may read, so a restricted principal's search never returns, pages onto
or hints at a row it may not read; odd or huge query text is a clear -32602.
"""

from __future__ import annotations

from typing import Any

import pytest

from seed import LEAD

pytestmark = pytest.mark.gateway

P = "meta/memory/panel/records"


def search(panel: Any, who: str | None, query: str, limit: int = 1, **params: Any) -> tuple[list[str], int]:
    """Every page of ``query``'s listing for ``who`` (ids in order, number of pages)."""
    out: list[str] = []
    cursor = None
    pages = 0
    while True:
        p = dict(params, query=query, limit=limit)
        if cursor:
            p["cursor"] = cursor
        res = panel.result(who, P, p)
        pages += 1
        out += [r["id"] for r in res["records"]]
        assert all("body" not in r for r in res["records"])
        cursor = res["next_cursor"]
        if cursor is None:
            return out, pages


def test_search_matches_title_body_any_case_and_every_term(panel: Any) -> None:
    w = panel.world.ids
    assert search(panel, "admin", "TEA")[0] == [w["lead_a"]]  # the superseded "Lead prefers tea"
    assert search(panel, "admin", "third floor")[0] == [w["lead_b"]]  # body only
    assert search(panel, "admin", "lead coffee")[0] == [w["lead_a2"]]  # every term must occur
    assert set(search(panel, "admin", "lead")[0]) >= {w["lead_a"], w["lead_a2"], w["lead_b"]}
    assert search(panel, "admin", "nothing-like-this")[0] == []
    # combined with the other filters
    assert search(panel, "admin", "lead", status="active", identity=LEAD)[0] == [w["lead_a2"], w["lead_b"]]


def test_search_pages_with_the_keyset_cursor(panel: Any) -> None:
    one_page = panel.result("admin", P, {"query": "e", "limit": 200})
    ids = [r["id"] for r in one_page["records"]]
    assert len(ids) > 5 and one_page["next_cursor"] is None
    for limit in (1, 2, 3):
        walked, _ = search(panel, "admin", "e", limit=limit)
        assert walked == ids  # same rows, same order, no duplicates or gaps


def test_a_restricted_search_never_returns_or_pages_onto_unreadable_rows(panel: Any) -> None:
    w = panel.world.ids
    # the quarantined "Poisoned instruction" / "Worker poisoned" rows match, but only reviewers may read them
    assert set(search(panel, "admin", "poisoned")[0]) == {w["quar_a"], w["quar_forgotten"], w["quar_worker"]}
    for who in ("reader", "bob", "noview", "mobber", "ops", None):
        found, pages = search(panel, who, "poisoned")
        assert found == [] and pages == 1, who  # no row, and no cursor hinting at a hidden match
    # review scoped to lead:main: lead's quarantined rows, never worker's
    assert set(search(panel, "alice", "poisoned")[0]) == {w["quar_a"], w["quar_forgotten"]}
    # another identity's rows stay invisible whatever the query
    assert search(panel, "bob", "worker")[0] == []
    assert w["worker_a"] in search(panel, "reader", "worker")[0]
    # a scope the caller may not read is refused before any search runs
    err = panel.error("bob", P, {"query": "night", "identity": "worker:two", "realm": "default"})
    assert err["code"] == -32030


@pytest.mark.parametrize(
    ("query", "rule"),
    [
        ("", "query must be a non-empty string when provided"),
        ("   \t ", "query must be a non-empty string when provided"),
        ("x" * 201, "query is longer than 200 characters"),
        (" ".join("abcdefghi"), "query has more than 8 terms"),
        ("tea\x00", "query must not contain control characters"),
        ("tea\x1b[2J", "query must not contain control characters"),
    ],
)
def test_odd_or_huge_query_text_is_refused_naming_the_field(panel: Any, query: str, rule: str) -> None:
    err = panel.error("admin", P, {"query": query})
    assert err["code"] == -32602 and err["message"] == f"Invalid params: {rule}"
    assert err["data"]["field"] == "query"


def test_a_non_string_or_megabyte_query_is_refused(panel: Any) -> None:
    for bad in (5, ["tea"], {"q": "tea"}, True):
        err = panel.error("admin", P, {"query": bad})
        assert err["code"] == -32602 and err["data"]["field"] == "query", bad
    err = panel.error("admin", P, {"query": "tea " * 250_000})
    assert err["code"] == -32602


def test_wildcards_and_sql_are_plain_text(panel: Any) -> None:
    for q in ("%", "_", "'", "\" OR 1=1 --", "*"):
        assert search(panel, "admin", q, limit=50)[0] == [], q
    assert search(panel, "admin", "8601")[0] == [panel.world.ids["realm_a"]]
