"""``meta/memory/panel/records`` without ``realm`` over a few hundred realms, through a real gateway.

One listing across every realm, newest updated first: walked page by page with ``next_cursor`` it lists
every record once, in order, and a record written after the realms went quiet leads the next walk. A caller
whose grants reach one identity of one realm lists that identity's rows only, and no realm list or cursor
of its answers names another realm or another realm's row. A filtered listing that matches rows in few realms
ends its pages early once they have read many realms, and its walk still lists every match.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from meta_memory.panel.paging import MAX_REALM_READS
from support import GatewayProcess, access_toml, start_gateway, write_config

pytestmark = pytest.mark.gateway

REALMS = [f"r{i}" for i in range(300)]
ADMIN, ALICE = "tok-admin-many-realms-0123", "tok-alice-many-realms-0123"
READS = ("agent.memory.read", "agent.view", "mob.memory.read", "operator.memory.read", "memory.quarantine.review")
#: realms where ``lead:main`` also keeps records (alice may read those of ``r7`` only)
LEAD_REALMS = ["r7", "r8"] + [f"r{i}" for i in range(0, 300, 25)]


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GatewayProcess, dict[tuple[str, str], str]]]:
    """A gateway whose realms ``r0``..``r299`` hold one record each, and ``lead:main`` three records in
    each of :data:`LEAD_REALMS`; with ``{(realm, memory_id): identity}`` of every record."""
    tmp = tmp_path_factory.mktemp("many-realms")
    grants = [("admin", a) for a in (*READS, "agent.memory.write")]
    grants += [("alice", a, {"identity": "lead:main", "realm": "r7"}) for a in ("agent.memory.read", "agent.view")]
    config = write_config(tmp / "c.toml", access_toml({ADMIN: "admin", ALICE: "alice"}, grants))
    gw = start_gateway(tmp / "state", config=config)
    written: dict[tuple[str, str], str] = {}
    try:
        for realm in REALMS:
            out = gw.result("meta/agent_memory/remember", {"identity": "agent:a", "realm": realm,
                                                           "title": f"note of {realm}", "body": f"{realm} keeps a note"},
                            token=ADMIN)
            written[(realm, out["memory_id"])] = "agent:a"
        for realm in LEAD_REALMS:
            out = gw.result("meta/agent_memory/remember_batch", {"identity": "lead:main", "realm": realm, "records": [
                {"title": f"lead {realm} {i}", "body": f"lead keeps {i} in {realm}"} for i in range(3)]}, token=ADMIN)
            for item in out["results"]:
                written[(realm, item["memory_id"])] = "lead:main"
        yield gw, written
    finally:
        gw.stop()


def _walk(gw: GatewayProcess, token: str, limit: int, **params: Any) -> list[dict[str, Any]]:
    """Every page of the every-realm listing, first to last."""
    pages: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        call = {"limit": limit, **params, **({"cursor": cursor} if cursor else {})}
        page = gw.result("meta/memory/panel/records", call, token=token, timeout=60)
        pages.append(page)
        cursor = page["next_cursor"]
        if cursor is None:
            return pages
        assert len(pages) < 500, "the walk does not end"


def _rows(pages: list[dict[str, Any]]) -> list[tuple[int, str, str]]:
    return [(r["updated_at_ms"], r["id"], r["scope"]["realm"]) for p in pages for r in p["records"]]


def _check_walk(pages: list[dict[str, Any]], limit: int) -> list[tuple[int, str, str]]:
    rows = _rows(pages)
    assert len(rows) == len(set(rows)), "no row is listed twice"
    keys = [(ms, mid) for ms, mid, _ in rows]
    assert keys == sorted(keys, reverse=True), "newest updated first, across every realm and page"
    for page in pages:
        assert len(page["records"]) <= limit
        if page["next_cursor"] is not None and page["records"]:
            last = page["records"][-1]
            assert page["next_cursor"] == f"{last['updated_at_ms']}:{last['id']}"
        elif page["next_cursor"] is not None:  # a page that stopped short of reading more realms
            assert page["next_cursor"].endswith("~")
    return rows


def test_every_record_of_every_realm_is_listed_once_in_order(fleet: tuple[GatewayProcess, dict[tuple[str, str], str]]) -> None:
    gw, written = fleet
    pages = _walk(gw, ADMIN, 40)
    rows = _check_walk(pages, 40)
    assert {(realm, mid) for _, mid, realm in rows} == set(written)
    assert all(p["realms"] == sorted(REALMS) for p in pages) and all("skipped_realms" not in p for p in pages)

    time.sleep(2.5)  # the realms' files have been quiet a while: their newest keys are kept between calls
    again = _walk(gw, ADMIN, 40)
    assert _rows(again) == rows
    quiet = _walk(gw, ADMIN, 7)
    assert _check_walk(quiet, 7) == rows

    new = gw.result("meta/agent_memory/remember", {"identity": "agent:b", "realm": "r3", "title": "late",
                                                   "body": "written after the realms went quiet"}, token=ADMIN)
    first = gw.result("meta/memory/panel/records", {"limit": 5}, token=ADMIN)
    assert (first["records"][0]["id"], first["records"][0]["scope"]["realm"]) == (new["memory_id"], "r3")
    after = _check_walk(_walk(gw, ADMIN, 40), 40)
    assert {(realm, mid) for _, mid, realm in after} == set(written) | {("r3", new["memory_id"])}


def test_filters_hold_across_every_realm(fleet: tuple[GatewayProcess, dict[tuple[str, str], str]]) -> None:
    gw, written = fleet
    lead = _check_walk(_walk(gw, ADMIN, 9, identity="lead:main"), 9)
    assert {(realm, mid) for _, mid, realm in lead} == {k for k, who in written.items() if who == "lead:main"}
    pages = _walk(gw, ADMIN, 50, query="r251 keeps")
    assert [realm for _, _, realm in _check_walk(pages, 50)] == ["r251"]
    # a page starts reading at most MAX_REALM_READS realms, then ends with a cursor that resumes it
    assert len(pages) > len(REALMS) // MAX_REALM_READS
    assert all(p["realms"] == sorted(REALMS) for p in pages)
    assert _walk(gw, ADMIN, 50, status="quarantined")[0]["records"] == []


def test_a_caller_of_one_realm_sees_that_realm_only(fleet: tuple[GatewayProcess, dict[tuple[str, str], str]]) -> None:
    gw, written = fleet
    mine = {mid for (realm, mid), who in written.items() if realm == "r7" and who == "lead:main"}
    for limit in (1, 2, 50):
        pages = _walk(gw, ALICE, limit)
        rows = _check_walk(pages, limit)
        assert {mid for _, mid, _ in rows} == mine and {realm for _, _, realm in rows} == {"r7"}
        for page in pages:
            assert page["realms"] == ["r7"] and "skipped_realms" not in page
            assert all(r["scope"] == {"scope": "identity", "realm": "r7", "identity": "lead:main"}
                       for r in page["records"])
            if page["next_cursor"] is not None:  # a cursor names a row of the caller's own page
                assert page["next_cursor"].split(":", 1)[1] in mine
            text = json.dumps(page)
            assert not any(f'"{realm}"' in text for realm in REALMS if realm != "r7")
    # a cursor forged from another realm's row resumes the caller's own rows, and names nothing else
    other = next(mid for (realm, mid), who in written.items() if realm == "r8" and who == "lead:main")
    page = gw.result("meta/memory/panel/records", {"cursor": f"99999999999999:{other}"}, token=ALICE)
    assert {r["id"] for r in page["records"]} == mine and page["realms"] == ["r7"]


def test_the_gateway_state_holds_one_database_per_realm(fleet: tuple[GatewayProcess, dict[tuple[str, str], str]]) -> None:
    gw, _ = fleet
    files = {p.name for p in Path(gw.state_dir).rglob("*.sqlite3")}
    assert {f"{realm}.sqlite3" for realm in REALMS} <= files
