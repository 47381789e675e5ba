"""``_system`` is the timeline's name for a system event, so it is no identity's name: memory written for an
identity of that name would publish its events as system events, shown to every caller holding an unscoped
``agent.memory.read`` (its record ids, and a taint transition's session key in clear) even under a deny that
withholds that identity's rows. Every door that names an identity refuses it, naming the field. Driven over a
real gateway."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from support import GatewayProcess, access_toml, start_gateway, write_config

pytestmark = pytest.mark.gateway

ADMIN, AUDITOR = "system-name-admin-0001", "system-name-auditor-0001"
ACTIONS = ("agent.memory.read", "agent.view", "agent.memory.write", "agent.session.manage")
GRANTS = [("admin", a) for a in ACTIONS] + [("auditor", a) for a in ("agent.memory.read", "agent.view")]
DENIES = [("auditor", "agent.memory.read", {"identity": "payroll:bot"})]


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    root = tmp_path_factory.mktemp("system-name")
    config = write_config(root / "c.toml", access_toml({ADMIN: "admin", AUDITOR: "auditor"}, GRANTS, denies=DENIES))
    gw = start_gateway(root / "state", config=config)
    try:
        yield gw
    finally:
        gw.stop()


@pytest.mark.parametrize("name", ["_system", "rt:_system:3"])
@pytest.mark.parametrize(("method", "params"), [
    ("meta/agent_memory/remember", {"title": "Payroll", "body": "Runs on the 25th."}),
    ("meta/agent_memory/recall", {"query_text": "payroll"}),
    ("meta/turn/tool_result", {"session_key": "payroll-run-7", "tool_name": "web_fetch"}),
    ("meta/session/note", {"session_key": "payroll-run-7"}),
])
def test_the_system_events_name_is_no_identity(gateway: GatewayProcess, method: str, params: dict[str, str],
                                               name: str) -> None:
    err = gateway.error(method, {"identity": name, **params}, token=ADMIN)
    assert err["code"] == -32602 and err["data"]["field"] == "identity", err
    assert "_system" in err["message"] and "system event" in err["message"]


def test_a_reader_withheld_unknown_identities_sees_no_event_of_that_name(gateway: GatewayProcess) -> None:
    gateway.rpc("meta/agent_memory/remember", {"identity": "_system", "title": "Payroll", "body": "Runs on the 25th."},
                token=ADMIN)
    gateway.rpc("meta/turn/tool_result", {"identity": "_system", "session_key": "payroll-run-7",
                                          "tool_name": "web_fetch"}, token=ADMIN)
    # the auditor's identity-scoped deny withholds every identity the roster does not list, ``_system`` among them
    assert gateway.error("meta/agent_memory/recall", {"identity": "lead:main", "query_text": "payroll"},
                         token=AUDITOR)["code"] == -32030
    listed = json.dumps(gateway.result("meta/events/list", {}, token=AUDITOR))
    assert "payroll-run-7" not in listed and "memory.record.created" not in listed, listed
