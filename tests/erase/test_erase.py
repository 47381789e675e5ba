"""``meta/agent_memory/erase`` and ``erase_identity`` through a real gateway: content gone for good."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from meta_memory.access.config import hash_token
from support import poisoned_write, write_config

pytestmark = pytest.mark.gateway

ID, OTHER = "lead:main", "lead:other"
MARK = "zanzibarquokka"


def db_bytes(state: Path) -> bytes:
    return b"".join(p.read_bytes() for p in (state / "agent-memory").rglob("*") if p.is_file())


def remember(gw: Any, title: str, body: str, identity: str = ID, **kw: Any) -> str:
    return gw.result("meta/agent_memory/remember", {"identity": identity, "title": title, "body": body}, **kw)["memory_id"]


def test_erase_removes_the_chain_and_its_bytes_and_keeps_the_rest(gateway: Any, tmp_path: Path) -> None:
    v1 = remember(gateway, "Plan", f"{MARK} hides the key under the mat")
    v2 = gateway.result("meta/agent_memory/update", {"identity": ID, "memory_id": v1, "title": "Plan",
                                                     "body": f"{MARK} moved the key to the shed"})["memory_id"]
    keep = remember(gateway, "Groceries", "buy oat milk")
    dry = gateway.result("meta/agent_memory/erase", {"identity": ID, "memory_id": v1, "dry_run": True})
    assert dry["dry_run"] is True and dry["count"] == 2 and dry["erased_at_ms"] is None
    assert gateway.result("meta/agent_memory/recall", {"identity": ID, "query_text": MARK})["records"]  # unchanged

    done = gateway.result("meta/agent_memory/erase", {"identity": ID, "memory_id": v2, "reason": "privacy request"})
    assert done["count"] == 2 and {r["memory_id"] for r in done["records"]} == {v1, v2}
    assert all(set(r) == {"memory_id", "scope", "content_hash", "status"} for r in done["records"])
    assert gateway.result("meta/agent_memory/recall", {"identity": ID, "query_text": f"{MARK} key"})["records"] == []
    assert [m["id"] for m in gateway.result("meta/agent_memory/manifest", {"identity": ID, "tier": "full"})["records"]] == [keep]
    for mid in (v1, v2):
        assert gateway.rpc("meta/memory/panel/record", {"realm": "default", "memory_id": mid})["error"]["code"] == -32001
    rows = gateway.result("meta/memory/panel/records", {"realm": "default"})["records"]
    assert [r["id"] for r in rows] == [keep]
    events = gateway.result("meta/events/list", {})["events"]
    erased = [e for e in events if e["event_type"] == "memory.record.erased"]
    assert len(erased) == 1 and set(erased[0]["data"]["memory_ids"]) == {v1, v2}
    assert MARK not in str(events)
    gateway.stop()
    assert MARK.encode() not in db_bytes(gateway.state_dir)


def test_erase_leaves_no_merged_tag_on_the_timeline(gateway: Any) -> None:
    """A duplicate remember that merges tags is an event; the tags are the record's content, so they
    stay out of the timeline, which an erase does not rewrite (the timeline names ids only)."""
    tag = f"diagnosis-{MARK}"
    first = remember(gateway, "Clinic", "appointment on tuesday")
    merged = gateway.result("meta/agent_memory/remember", {"identity": ID, "title": "Clinic",
                                                           "body": "appointment on tuesday", "tags": [tag]})
    assert merged["supersedes"] == first and merged["tags_added"] == [tag]  # the caller is told
    batch = gateway.result("meta/agent_memory/remember_batch", {"identity": ID, "records": [
        {"title": "Clinic", "body": "appointment on tuesday", "tags": [tag, f"second-{MARK}"]}]})
    assert batch["results"][0]["tags_added"] == [f"second-{MARK}"]
    updated = [e for e in gateway.result("meta/events/list", {"limit": 1000})["events"]
               if e["event_type"] == "memory.record.updated"]
    assert [e["data"]["tags_merged"] for e in updated] == [1, 1]
    gateway.result("meta/agent_memory/erase", {"identity": ID, "memory_id": merged["memory_id"]})
    assert MARK not in str(gateway.result("meta/events/list", {"limit": 1000}))
    gateway.stop()
    state = b"".join(p.read_bytes() for p in gateway.state_dir.rglob("*") if p.is_file())
    assert MARK.encode() not in state


def test_erase_follows_a_released_copy(gateway: Any) -> None:
    q = poisoned_write(gateway.result, ID, "Web claim", f"{MARK} says the office moved")
    detail = gateway.result("meta/memory/panel/record", {"realm": "default", "memory_id": q})
    released = gateway.result("meta/memory/quarantine/decide", {
        "realm": "default", "identity": ID, "memory_id": q, "verdict": "release",
        "expected_content_hash": detail["record"]["content_hash"], "rationale": "checked"})
    successor = released["successor"]["memory_id"]
    done = gateway.result("meta/agent_memory/erase", {"identity": ID, "memory_id": successor})
    assert {r["memory_id"] for r in done["records"]} == {q, successor}  # the quarantined original went too


def test_erase_does_not_wait_for_a_quarantine_review(gateway: Any) -> None:
    """A tainted session can keep writing quarantined copies of content; none of them holds an erase up
    until an operator decides: they go with the rest, in the one transaction, and their review closes."""
    q = poisoned_write(gateway.result, ID, "Web claim", f"{MARK} says the office moved")
    done = gateway.result("meta/agent_memory/erase", {"identity": ID, "memory_id": q, "reason": "privacy request"})
    assert [(r["memory_id"], r["status"]) for r in done["records"]] == [(q, "quarantined")]
    assert gateway.result("meta/memory/panel/quarantine", {})["records"] == []
    refused = gateway.rpc("meta/memory/quarantine/decide", {
        "realm": "default", "identity": ID, "memory_id": q, "verdict": "release",
        "expected_content_hash": done["records"][0]["content_hash"], "rationale": "too late"})["error"]
    assert refused["code"] in (-32001, -32043), refused  # nothing is left to review

    # erase_identity takes a still-quarantined record with the identity's active ones, copies included
    held = poisoned_write(gateway.result, ID, "Plan", f"{MARK} hides the key under the mat")
    kept = remember(gateway, "Plan", f"{MARK} hides the key under the mat")  # the application's own copy
    other = poisoned_write(gateway.result, ID, "Another claim", f"{MARK} claims something else")
    dry = gateway.result("meta/agent_memory/erase_identity", {"identity": ID, "dry_run": True})
    assert {r["memory_id"] for r in dry["records"]} == {kept, held, other}
    assert len(gateway.result("meta/memory/panel/quarantine", {})["records"]) == 2  # a dry run changes nothing
    done = gateway.result("meta/agent_memory/erase_identity", {"identity": ID})
    assert {(r["memory_id"], r["status"]) for r in done["records"]} == {
        (kept, "active"), (held, "quarantined"), (other, "quarantined")}
    assert gateway.result("meta/memory/panel/quarantine", {})["records"] == []
    events = gateway.result("meta/events/list", {"limit": 1000})["events"]
    closed = [e["data"] for e in events if e["event_type"] == "memory.quarantine.verdict"]
    assert sorted((d["record_id"], d["verdict"]) for d in closed) == sorted(
        [(q, "erased"), (held, "erased"), (other, "erased")])
    assert [e["data"]["quarantined"] for e in events if e["event_type"] == "memory.record.erased"] == [1, 2]
    assert MARK not in str(events)
    gateway.stop()
    assert MARK.encode() not in db_bytes(gateway.state_dir)


def test_erase_identity_counts_then_erases_only_that_identity(gateway: Any) -> None:
    for i in range(3):
        remember(gateway, f"Note {i}", f"{MARK} number {i}")
    other = remember(gateway, "Theirs", f"{MARK} belongs to someone else", identity=OTHER)
    dry = gateway.result("meta/agent_memory/erase_identity", {"identity": ID, "dry_run": True})
    assert dry["count"] == 3
    assert len(gateway.result("meta/agent_memory/manifest", {"identity": ID, "tier": "full"})["records"]) == 3
    done = gateway.result("meta/agent_memory/erase_identity", {"identity": ID})
    assert done["count"] == 3 and done["dry_run"] is False
    assert gateway.result("meta/agent_memory/manifest", {"identity": ID, "tier": "full"})["records"] == []
    assert [m["id"] for m in gateway.result("meta/agent_memory/manifest", {"identity": OTHER, "tier": "full"})["records"]] == [other]


def test_the_model_cannot_erase(gateway: Any) -> None:
    mid = remember(gateway, "Keep", "the model must not erase this")
    schema = gateway.result("meta/agent_memory/tool_schema", {})
    assert "erase" not in str(schema["parameters"] if "parameters" in schema else schema)
    out = gateway.result("meta/agent_memory/tool", {"identity": ID, "session_key": "s1",
                                                    "arguments": {"action": "erase", "memory_id": mid}})
    assert out["is_error"]
    assert [m["id"] for m in gateway.result("meta/agent_memory/manifest", {"identity": ID, "tier": "full"})["records"]] == [mid]


@pytest.mark.parametrize("params, field", [
    ({"identity": ID}, "memory_id"),
    ({"identity": ID, "memory_id": " "}, "memory_id"),
    ({"identity": ID, "memory_id": "m", "dry_run": "yes"}, "dry_run"),
    ({"identity": ID, "memory_id": "m", "reason": "x" * 500}, "reason"),
    ({"identity": ID, "memory_id": "m", "extra": 1}, "extra"),
])
def test_bad_params_name_the_field(gateway: Any, params: dict[str, Any], field: str) -> None:
    err = gateway.rpc("meta/agent_memory/erase", params)["error"]
    assert err["code"] == -32602 and err["data"].get("field") == field


def _access_config(tmp_path: Path, grants: dict[str, list[str]]) -> Path:
    lines = ["[access]", "enabled = true", ""]
    for name in grants:
        lines += ["[[access.tokens]]", f'sha256 = "{hash_token("tok-" + name + "-0123456789")}"', f'principal = "{name}"', ""]
    for name, actions in grants.items():
        for action in actions:
            lines += ["[[access.grants]]", f'action = "{action}"', f'who = {{ principal = "{name}" }}',
                      f'on = {{ identity = "{ID}" }}', ""]
    return write_config(tmp_path / "access.toml", "\n".join(lines))


def test_erase_needs_its_own_grant_and_leaks_no_existence(tmp_path: Path, gateway_factory: Any) -> None:
    base = ["agent.memory.write", "agent.memory.read", "agent.view", "agent.memory.delete"]
    gw = gateway_factory(tmp_path / "state", config=_access_config(tmp_path, {
        "app": base, "dpo": [*base, "agent.memory.erase"]}))
    app, dpo = "tok-app-0123456789", "tok-dpo-0123456789"
    mine = remember(gw, "Mine", f"{MARK} private", token=app)
    assert gw.rpc("meta/agent_memory/erase", {"identity": ID, "memory_id": mine})["error"]["code"] == -32030
    denied = gw.rpc("meta/agent_memory/erase", {"identity": ID, "memory_id": mine}, token=app)["error"]
    assert denied["code"] == -32030 and denied["data"]["action"] == "agent.memory.erase"
    assert gw.rpc("meta/agent_memory/erase", {"identity": OTHER, "memory_id": mine}, token=dpo)["error"]["code"] == -32030
    unknown = gw.rpc("meta/agent_memory/erase", {"identity": ID, "memory_id": "mem-unknown"}, token=dpo)["error"]
    assert unknown["code"] == -32001
    assert gw.result("meta/agent_memory/erase", {"identity": ID, "memory_id": mine}, token=dpo)["count"] == 1
    again = gw.rpc("meta/agent_memory/erase", {"identity": ID, "memory_id": mine}, token=dpo)["error"]
    assert again["code"] == unknown["code"] and again["data"]["kind"] == unknown["data"]["kind"]


def test_an_eraser_who_may_not_read_is_shown_no_content_hash(tmp_path: Path, gateway_factory: Any) -> None:
    """An unsalted content hash of a short secret (a door code) gives the secret back to a guess: a caller
    holding only ``agent.memory.erase`` is shown ``content_hash: null``, in a dry run and in the erase itself;
    one who may read the identity is shown the hash."""
    base = ["agent.memory.write", "agent.memory.read", "agent.view"]
    gw = gateway_factory(tmp_path / "state", config=_access_config(tmp_path, {
        "app": base, "eraser": ["agent.memory.erase"], "dpo": [*base, "agent.memory.erase"]}))
    app, eraser, dpo = "tok-app-0123456789", "tok-eraser-0123456789", "tok-dpo-0123456789"
    door = remember(gw, "Door", "the door code is 4711", token=app)
    remember(gw, "Gate", "the gate code is 0815", token=app)
    for method, params in (("meta/agent_memory/erase_identity", {"identity": ID, "dry_run": True}),
                           ("meta/agent_memory/erase", {"identity": ID, "memory_id": door, "dry_run": True})):
        blind = gw.result(method, params, token=eraser)["records"]
        assert blind and all(r["content_hash"] is None for r in blind), blind
        seen = gw.result(method, params, token=dpo)["records"]
        assert all(isinstance(r["content_hash"], str) and len(r["content_hash"]) == 64 for r in seen), seen
    done = gw.result("meta/agent_memory/erase", {"identity": ID, "memory_id": door}, token=eraser)
    assert done["count"] == 1 and [r["content_hash"] for r in done["records"]] == [None]


def test_list_holds_its_access_and_input_rules(tmp_path: Path, gateway_factory: Any) -> None:
    base = ["agent.memory.write", "agent.memory.read", "agent.view"]
    gw = gateway_factory(tmp_path / "state", config=_access_config(tmp_path, {"app": base}))
    app = "tok-app-0123456789"
    remember(gw, "Mine", "listed body", token=app)
    assert len(gw.result("meta/agent_memory/list", {"identity": ID}, token=app)["records"]) == 1
    assert gw.rpc("meta/agent_memory/list", {"identity": ID})["error"]["code"] == -32030  # no token
    assert gw.rpc("meta/agent_memory/list", {"identity": OTHER}, token=app)["error"]["code"] == -32030
    assert gw.rpc("meta/agent_memory/list", {"identity": ID, "realm": "hr"}, token=app)["error"]["code"] == -32030
    for params, field in (({"identity": ID, "limit": 501}, "limit"), ({"identity": ID, "tags": ["t"] * 40}, "tags"),
                          ({"identity": ID, "cursor": "x" * 5000}, "cursor")):
        err = gw.rpc("meta/agent_memory/list", params, token=app)["error"]
        assert err["code"] == -32602 and err["data"].get("field") == field
