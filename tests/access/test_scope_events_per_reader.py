"""A system event about a mob's memory (an accepted proposal's ``memory.record.promoted``) is shown only to
a reader who may read that mob, as its rows are: a deny of ``mob.memory.read`` on the mob withholds the event
(its record id, proposal id and mob name) from a caller holding an unscoped ``agent.memory.read``, on
``meta/events/list`` and ``GET /events`` alike. Driven over a real gateway."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from support import GatewayProcess, access_toml, start_gateway, write_config

pytestmark = pytest.mark.gateway

AGENT, MOB = "scout:main", "secret-team"
ADMIN, AUDITOR = "scope-events-admin-0001", "scope-events-auditor-0001"
ADMIN_ACTIONS = ("agent.memory.read", "agent.view", "agent.memory.write", "agent.session.manage",
                 "mob.memory.read", "mob.memory.commit", "memory.quarantine.review")
GRANTS = [("admin", a) for a in ADMIN_ACTIONS] + [("admin", "mob.memory.propose", {"mob": MOB})]
GRANTS += [("auditor", a) for a in ("agent.memory.read", "agent.view")]
DENIES = [("auditor", "mob.memory.read", {"mob": MOB})]


@pytest.fixture(scope="module")
def promoted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GatewayProcess, str]]:
    root = tmp_path_factory.mktemp("scope-events")
    config = write_config(root / "c.toml", access_toml({ADMIN: "admin", AUDITOR: "auditor"}, GRANTS, denies=DENIES))
    gateway = start_gateway(root / "state", config=config)
    try:
        gateway.result("meta/agent_memory/remember", {"identity": AGENT, "title": "Standup", "body": "At 9:30."},
                       token=ADMIN)
        out = gateway.result("meta/agent_memory/tool", {
            "identity": AGENT, "session_key": "s-1", "mob": MOB,
            "arguments": {"action": "propose_to_mob", "title": "Launch date", "body": "The launch is on the 9th."}},
            token=ADMIN)
        pid = out["text"].split(" as ", 1)[1].split(".", 1)[0]
        accepted = gateway.result("meta/memory/proposals/decide", {"proposal_id": pid, "action": "accept"},
                                  token=ADMIN)
        yield gateway, accepted["record_id"]
    finally:
        gateway.stop()


def _promotions(events: list[dict[str, object]]) -> list[dict[str, object]]:
    return [e for e in events if e["event_type"] == "memory.record.promoted"]


def test_a_reader_denied_the_mob_is_not_shown_its_promotion(promoted: tuple[GatewayProcess, str]) -> None:
    gw, record_id = promoted
    # the mob's reader sees the promotion
    (event,) = _promotions(gw.result("meta/events/list", {}, token=ADMIN)["events"])
    assert event["data"]["record_id"] == record_id and event["data"]["scope_key"] == MOB  # type: ignore[index]
    # the auditor reads every identity but not the mob: its rows are withheld, and so is the event
    listed = gw.result("meta/events/list", {}, token=AUDITOR)
    assert _promotions(listed["events"]) == [] and record_id not in json.dumps(listed), listed
    # and, not seeing every event, it is shown ids of its own: no gap in a shared sequence counts the hidden one
    assert listed["events"] and all(e["event_id"].startswith("evt-") for e in listed["events"]), listed
    assert gw.result("meta/memory/panel/records", {"query": "launch"}, token=AUDITOR)["records"] == []
    with httpx.stream("GET", gw.url + "/events", headers={"Authorization": f"Bearer {AUDITOR}"},
                      timeout=httpx.Timeout(5.0, read=2.0)) as resp:
        text = ""
        try:
            for chunk in resp.iter_text():
                text += chunk
        except httpx.ReadTimeout:
            pass
    assert resp.status_code == 200 and "memory.record.created" in text, text
    assert record_id not in text and MOB not in text, text
