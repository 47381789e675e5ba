"""An update that changes nothing (same title, body, tags, metadata, kind, description, expiry and trust
tier as the current version) writes nothing, through a real gateway: the answer is the current record
with ``supersedes: null``, and no version, history row or timeline event is added. The memory tool's
``update`` of the same content answers that nothing changed. Any real change still writes a version."""

from __future__ import annotations

import re
from typing import Any

import pytest

from meta_memory.rpc.results import UpdateResult
from support import GatewayProcess

pytestmark = pytest.mark.gateway

ID = "lead:main"
AGENT = "writer:main"


def _events(gw: GatewayProcess, mark: str, identity: str) -> list[tuple[str, dict[str, Any]]]:
    events = gw.result("meta/events/list", {"after": mark, "limit": 1000})["events"]
    return [(e["event_type"], e["data"]) for e in events
            if e["identity"] == identity and e["event_type"].startswith(("memory.record.", "memory.write."))]


def _versions(gw: GatewayProcess, identity: str, memory_id: str) -> list[str]:
    out = gw.result("meta/agent_memory/history", {"identity": identity, "memory_id": memory_id})
    return [v["memory_id"] for v in out["versions"]]


def _update(gw: GatewayProcess, **params: Any) -> dict[str, Any]:
    out = gw.result("meta/agent_memory/update", {"identity": ID, **params})
    UpdateResult.model_validate(out)  # the documented shape, member for member
    return out


def test_an_update_to_the_same_content_writes_nothing_and_returns_the_current_record(gateway: GatewayProcess) -> None:
    first = gateway.result("meta/agent_memory/remember", {
        "identity": ID, "title": "Standup", "body": "Standup is on Monday.", "tags": ["team", "ritual"],
        "metadata": {"room": "A1", "n": 1}, "ttl_s": 3600})
    before = gateway.result("meta/agent_memory/recall", {"identity": ID, "selection": "always"})["records"]
    mark = gateway.result("meta/status")["events"]["last_event_id"]

    # every field given again, spelt as the write spelt them (tags in another order, extra whitespace)
    same = _update(gateway, memory_id=first["memory_id"], title=" Standup ", body="Standup is on Monday.\n",
                   tags=["ritual", "team"], metadata={"n": 1, "room": "A1"})
    assert same["memory_id"] == first["memory_id"] and same["supersedes"] is None
    assert same["record"] == before[0]  # the current version, as stored (times and expiry unchanged)
    only_tags = _update(gateway, memory_id=first["memory_id"], tags=["team", "ritual"])
    assert only_tags == same
    assert _versions(gateway, ID, first["memory_id"]) == [first["memory_id"]]
    assert _events(gateway, mark, ID) == []
    assert gateway.result("meta/agent_memory/recall", {"identity": ID, "selection": "always"})["records"] == before

    # a value JSON tells apart is a change: 1 -> true, a new expiry, a cleared expiry
    changed = _update(gateway, memory_id=first["memory_id"], metadata={"n": True, "room": "A1"})
    assert changed["supersedes"] == first["memory_id"] and changed["memory_id"] != first["memory_id"]
    later = _update(gateway, memory_id=changed["memory_id"], ttl_s=7200)
    assert later["supersedes"] == changed["memory_id"]
    cleared = _update(gateway, memory_id=later["memory_id"], clear_expiry=True)
    assert cleared["supersedes"] == later["memory_id"] and cleared["record"]["expires_at_ms"] is None
    assert _update(gateway, memory_id=cleared["memory_id"], clear_expiry=True)["supersedes"] is None
    assert [e[0] for e in _events(gateway, mark, ID)] == ["memory.record.updated"] * 3


def test_a_no_op_update_of_a_record_that_is_not_current_is_still_refused(gateway: GatewayProcess) -> None:
    first = gateway.result("meta/agent_memory/remember", {"identity": ID, "title": "Lunch", "body": "noon"})
    second = _update(gateway, memory_id=first["memory_id"], body="one o'clock")
    err = gateway.error("meta/agent_memory/update", {"identity": ID, "memory_id": first["memory_id"], "body": "noon"})
    assert err["code"] == -32040 and "not active" in err["message"], err
    gateway.result("meta/agent_memory/forget", {"identity": ID, "memory_id": second["memory_id"]})
    err = gateway.error("meta/agent_memory/update", {"identity": ID, "memory_id": second["memory_id"],
                                                     "body": "one o'clock"})
    assert err["code"] == -32040 and "not active" in err["message"], err


def _tool(gw: GatewayProcess, **arguments: Any) -> str:
    out = gw.result("meta/agent_memory/tool", {"identity": AGENT, "session_key": "s1", "arguments": arguments})
    assert not out.get("is_error"), out
    return str(out["text"])


def test_the_memory_tools_update_to_the_same_content_changes_nothing_and_says_so(gateway: GatewayProcess) -> None:
    gateway.result("meta/session/note", {"identity": AGENT, "session_key": "s1"})
    found = re.search(r"mem-[0-9a-f-]+", _tool(gateway, action="remember", title="Plan", body="Ship on Friday."))
    assert found
    first = found.group(0)
    mark = gateway.result("meta/status")["events"]["last_event_id"]
    text = _tool(gateway, action="update", memory_id=first, title="Plan", body="Ship on Friday.")
    assert text.startswith(f"Unchanged: memory {first} already holds this content"), text
    assert _versions(gateway, AGENT, first) == [first] and _events(gateway, mark, AGENT) == []
    text = _tool(gateway, action="update", memory_id=first, title="Plan", body="Ship on Monday.")
    assert text.startswith("Updated: new record memory mem-") and first not in text, text


def test_a_no_op_update_of_another_identitys_or_realms_record_reveals_nothing(gateway: GatewayProcess) -> None:
    """The same content sent by another identity, or in another realm, is answered as an unknown id (the
    no-op never answers a record the caller may not update); in a named realm the no-op holds there alone."""
    mine = gateway.result("meta/agent_memory/remember", {"identity": ID, "title": "Badge", "body": "blue badge"})
    unknown = gateway.error("meta/agent_memory/update", {"identity": "intruder:1", "memory_id": "mem-nope",
                                                         "body": "blue badge"})
    for params in ({"identity": "intruder:1"}, {"identity": ID, "realm": "ops"}):
        err = gateway.error("meta/agent_memory/update", {**params, "memory_id": mine["memory_id"],
                                                         "title": "Badge", "body": "blue badge"})
        assert err["code"] == unknown["code"] == -32001, err
        assert err["data"] == {**unknown["data"], "memory_id": mine["memory_id"]}, err
        assert "blue badge" not in str(err) and err["message"] == unknown["message"].replace("mem-nope",
                                                                                             mine["memory_id"])
    theirs = gateway.result("meta/agent_memory/remember", {"identity": ID, "realm": "ops", "title": "Badge",
                                                           "body": "blue badge"})
    same = gateway.result("meta/agent_memory/update", {"identity": ID, "realm": "ops",
                                                       "memory_id": theirs["memory_id"], "body": "blue badge"})
    assert same["supersedes"] is None and same["memory_id"] == theirs["memory_id"]
    assert _versions(gateway, ID, mine["memory_id"]) == [mine["memory_id"]]
