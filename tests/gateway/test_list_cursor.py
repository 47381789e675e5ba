"""``meta/agent_memory/list``'s ``next_cursor`` through a real gateway, on SQLite and PostgreSQL.

A cursor is an opaque position in the caller's own listing: other identities' writes in the realm do not
change it (it carries no row id or realm-wide sequence), paging with it visits each record once, and a
cursor the method did not return (malformed, an earlier release's ``"<ms>:<n>"``, another method's) is
refused ``-32602`` naming ``cursor``, without echoing it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from contract.pgsupport import dsn_with_schema, require_postgres, throwaway_schema
from meta_memory.agent_memory.list_cursor import encode_cursor
from support import GatewayProcess, module_gateway

ME, OTHER = "agent:lister", "agent:busy"



@pytest.fixture
def gw(backend_gateway: GatewayProcess) -> GatewayProcess:
    """A gateway on each backend (``backend_gateway`` in ``tests/conftest.py``)."""
    return backend_gateway

@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def shared_gw(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """A gateway on each backend for the module's tests that check a refusal only: what they write is ``ME``'s and
    none of them counts it."""
    if request.param == "sqlite":
        yield from module_gateway(tmp_path_factory, "cursor-sqlite")
        return
    require_postgres()
    with throwaway_schema() as schema:
        yield from module_gateway(tmp_path_factory, "cursor-postgres",
                                  f'[agent_memory]\nstore = "postgres"\ndsn = "{dsn_with_schema(schema)}"\n')


def _remember(gw: GatewayProcess, identity: str, text: str) -> str:
    return str(gw.result("meta/agent_memory/remember", {"identity": identity, "title": "Note", "body": text})
               ["memory_id"])


def _first_cursor(gw: GatewayProcess) -> str:
    page = gw.result("meta/agent_memory/list", {"identity": ME, "limit": 1})
    assert page["next_cursor"] is not None
    return str(page["next_cursor"])


def test_another_identitys_writes_do_not_show_in_the_cursor(gw: GatewayProcess) -> None:
    _remember(gw, ME, "mine a")
    _remember(gw, ME, "mine b")
    first = _first_cursor(gw)
    for i in range(5):  # another identity's writes in the realm, between my two reads
        _remember(gw, OTHER, f"someone else {i}")
    assert _first_cursor(gw) == first  # the same position: nothing of the others' writes in it
    page = gw.result("meta/agent_memory/list", {"identity": ME, "limit": 1})
    newest = page["records"][0]
    assert page["next_cursor"] == encode_cursor(newest["updated_at_ms"], newest["memory_id"])


def test_paging_by_the_cursor_visits_each_record_once(gw: GatewayProcess) -> None:
    mine = {_remember(gw, ME, f"record {i}") for i in range(7)}
    seen: list[str] = []
    cursor: str | None = None
    while True:
        params: dict[str, Any] = {"identity": ME, "limit": 3}
        if cursor is not None:
            params["cursor"] = cursor
        page = gw.result("meta/agent_memory/list", params)
        seen += [r["memory_id"] for r in page["records"]]
        _remember(gw, OTHER, f"interleaved {len(seen)}")
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert sorted(seen) == sorted(mine) and len(seen) == len(mine)


@pytest.mark.parametrize("cursor", ["1700000000000:42", "", "not a cursor", "AQAAAAAAAAAAbQ=", "AgAAAAAAAAAAbQ",
                                    "AQAAAAAAAAAA", "AQAAAAAAAAAAAA", "x" * 2000, "\u00e9t\u00e9"])
def test_a_cursor_the_method_did_not_return_is_refused_naming_cursor(shared_gw: GatewayProcess, cursor: str) -> None:
    _remember(shared_gw, ME, "present")
    err = shared_gw.error("meta/agent_memory/list", {"identity": ME, "cursor": cursor})
    assert err["code"] == -32602, err
    assert err["data"]["field"] == "cursor" and "next_cursor this method returned" in err["message"]
    if len(cursor) > 3:
        assert cursor not in err["message"]
