"""A caller who can never be allowed a method is refused before its params are read.

Over a real socket, with access control on: an anonymous caller (no token) holding no ``anyone`` grant
of a method's actions gets ``access denied`` (-32030) for every method with an entry gate, however
broken its params, never ``Invalid params`` (which would teach an unauthenticated caller the params'
rules). What is legitimately open stays open: ``meta/capabilities``, ``rpc.discover``,
``GET /v1/health``, and a method an ``anyone`` grant opens (then the params are judged as for
anyone). A token holder is still told which param is wrong."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from meta_memory.rpc.methods import build_method_table
from support import GatewayProcess, RpcClient, access_toml, start_gateway, write_config

pytestmark = pytest.mark.gateway

ADMIN = "tok-admin-0123456789abcdef"
EVERY = ("agent.memory.read", "agent.view", "agent.memory.write", "agent.memory.delete", "agent.memory.erase",
         "mob.memory.read", "operator.memory.read", "memory.quarantine.review", "mob.memory.commit", "ledger.read",
         "ledger.write", "agent.session.manage", "operator.status", "operator.backup")
#: the methods with no entry gate: the public ones, and the two panel reads that refuse no caller (every
#: row is judged: a caller without a grant gets an empty listing or ``not_found``, as for an unknown id).
#: A new method joins this list only on purpose.
UNGATED = {"meta/capabilities", "rpc.discover", "meta/memory/panel/records", "meta/memory/panel/record"}
OPEN_TO_ANYONE = {"ledger.read"}
BAD_PARAMS: list[Any] = [{"identity": 7, "realm": " hr ", "bogus": True}, [1, 2], {"x" * 300: None}]


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    tmp = tmp_path_factory.mktemp("gate")
    anyone = '[[access.grants]]\naction = "ledger.read"\nwho = { anyone = true }\n'
    config = write_config(tmp / "c.toml", access_toml({ADMIN: "admin"}, [("admin", a) for a in EVERY]) + "\n" + anyone)
    gw = start_gateway(tmp / "state", config=config)
    try:
        yield gw
    finally:
        gw.stop()


def _advertised(gw: GatewayProcess) -> list[str]:
    doc = gw.result("rpc.discover")  # public: a console needs it before it has a token
    return sorted(m["name"] for m in doc["methods"])


def test_every_gated_method_refuses_an_anonymous_caller_before_reading_params(gateway: GatewayProcess) -> None:
    specs = {s.name: s for s in build_method_table().specs()}
    names = _advertised(gateway)
    assert "meta/agent_memory/remember" in names and "meta/memory/index" in names
    assert {n for n, s in specs.items() if not s.requires.entry} == UNGATED
    checked = 0
    for name in names:
        if name in UNGATED:
            continue
        if all(group & OPEN_TO_ANYONE for group in specs[name].requires.entry):  # opened to anyone below
            continue
        for params in BAD_PARAMS:
            error = gateway.rpc(name, params)["error"]
            assert error["code"] == -32030 and error["data"]["kind"] == "access_denied", (name, params, error)
            assert "Invalid params" not in error["message"] and "identity" not in error["message"], (name, error)
        checked += 1
    assert checked >= 30


def test_the_refusal_says_nothing_of_the_params(gateway: GatewayProcess) -> None:
    a = gateway.rpc("meta/agent_memory/remember", {"identity": "lead:main", "title": "t", "body": "b"})["error"]
    b = gateway.rpc("meta/agent_memory/remember", {"title": 1, "bogus": 2})["error"]
    assert a == b == {"code": -32030, "message": "access denied: agent.memory.write",
                      "data": {"kind": "access_denied", "action": "agent.memory.write", "resource": "*"}}


def test_what_is_open_stays_open(gateway: GatewayProcess) -> None:
    assert httpx.get(gateway.url + "/v1/health", timeout=10).json()["status"] == "ok"
    assert "methods" in gateway.result("meta/capabilities") or gateway.result("meta/capabilities")
    # an anyone grant admits the anonymous caller: then the params are judged, as for anyone
    assert gateway.result("meta/memory/query", {}) == {"assertions": [], "conflicts": []}
    error = gateway.rpc("meta/memory/query", {"bogus": 1})["error"]
    assert error["code"] == -32602 and error["data"]["field"] == "bogus"
    # the grant covers reading only
    assert gateway.rpc("meta/memory/index", {"bogus": 1})["error"]["code"] == -32030


def test_a_token_holder_still_learns_which_param_is_wrong(gateway: GatewayProcess) -> None:
    client = RpcClient(gateway, ADMIN)
    try:
        error = client.error("meta/agent_memory/remember", {"identity": "lead:main", "title": "t", "body": 3})
        assert error["code"] == -32602 and error["data"]["field"] == "body"
    finally:
        client.close()


def test_without_access_control_a_missing_token_is_refused_before_anything(tmp_path: Path) -> None:
    config = write_config(tmp_path / "c.toml", access_toml({ADMIN: "admin"}, [], header=False))
    gw = start_gateway(tmp_path / "state", config=config)
    try:
        resp = httpx.post(gw.url + "/rpc", json={"jsonrpc": "2.0", "id": 1, "method": "meta/agent_memory/remember",
                                                  "params": {"bogus": 1}}, timeout=10)
        assert resp.status_code == 401 and "bogus" not in resp.text and "Invalid params" not in resp.text
    finally:
        gw.stop()
