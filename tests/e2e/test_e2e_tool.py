"""The ``memory`` recorder tool over ``meta/agent_memory/tool``: every action and every error
text, as the model would read them."""

from __future__ import annotations

import json

import pytest

from e2e_support import Rpc, memory_id_of, uid

AVAILABLE = ("It becomes available to prompt assembly from the next build; this confirmation is your in-turn "
             "awareness of it.")
EXPECTED = "expected remember, update, forget, recall, or propose_to_mob"
FIELDS = ("action, title, body, description, tags, kind, epistemic, verification_evidence, memory_id, "
          "query_text, ttl_s, max_entries")


def test_schema_offered_to_models(rpc: Rpc) -> None:
    schema = rpc.result("meta/agent_memory/tool_schema")
    assert schema["name"] == "memory"
    assert schema["input_schema"]["additionalProperties"] is False
    assert schema["input_schema"]["required"] == ["action"]
    assert schema["input_schema"]["properties"]["action"]["enum"] == [
        "remember", "update", "forget", "recall", "propose_to_mob"]
    assert schema["input_schema"]["properties"]["kind"]["enum"] == [
        "preference", "fact", "gotcha", "procedure", "relationship", "open_loop", "reference"]
    assert schema["input_schema"]["properties"]["epistemic"]["enum"] == ["observed", "operator_said", "verified_claim"]
    assert ", ".join(schema["input_schema"]["properties"]) == FIELDS
    assert schema["protocol"].startswith("Memory recorder protocol:")


def test_remember_update_forget_recall_roundtrip(rpc: Rpc) -> None:
    ident, session = uid(), uid("sess")
    out = rpc.tool(ident, {"action": "remember", "title": "  Coffee   order ", "body": " flat white, no sugar ",
                           "tags": ["Drinks", "drinks"], "kind": "preference",
                           "description": "what to order   at the cafe"}, session)
    assert out["is_error"] is False and out["exclude_from_indexing"] is True
    mid = memory_id_of(out["text"])
    assert out["text"] == f"Stored memory {mid}. {AVAILABLE}"
    row = rpc.record_row(mid)
    assert (row["title"], row["body"], row["kind"], row["trust"], row["description"]) == (
        "Coffee order", "flat white, no sugar", "preference", "agent_observed", "what to order at the cafe")
    assert json.loads(row["tags"]) == ["drinks"]
    # a blank tag is refused as the RPC refuses it, never dropped unseen
    blank = rpc.tool(ident, {"action": "remember", "title": "Tea", "body": "green", "tags": ["drinks", " "]}, session)
    assert blank["is_error"] is True and blank["text"] == "tags.1 must not be empty", blank
    assert json.loads(row["provenance"])["author"] == {"author": "agent", "identity": ident}
    # exact-content dedup
    again = rpc.tool(ident, {"action": "remember", "title": "Coffee order", "body": "flat white, no sugar"}, session)
    assert again["text"].startswith(f"Memory {mid} already holds this content; nothing was stored or changed")
    # recall with and without a query
    rows = json.loads(rpc.tool(ident, {"action": "recall", "query_text": "coffee flat white"}, session)["text"])
    assert [r["memory_id"] for r in rows] == [mid]
    assert set(rows[0]) == {"memory_id", "title", "body", "tags", "updated_at_ms"}
    assert json.loads(rpc.tool(ident, {"action": "recall"}, session)["text"])[0]["memory_id"] == mid
    # update keeps a single active record with a new id
    upd = rpc.tool(ident, {"action": "update", "memory_id": mid, "title": "Coffee order",
                           "body": "oat flat white, no sugar"}, session)
    new = memory_id_of(upd["text"])
    assert new != mid and upd["text"] == f"Updated: new record memory {new}. {AVAILABLE}"
    assert rpc.recall_ids(ident, "coffee flat white") == [new]
    assert rpc.record_row(mid)["status_kind"] == "superseded"
    assert rpc.record_row(mid)["status_detail"] == new
    # forget
    out = rpc.tool(ident, {"action": "forget", "memory_id": new}, session)
    assert out == {"text": f"Forgot memory {new}. It stops being injected immediately; text already in a live "
                           "context is only revoked by reset/respawn.", "is_error": False, "exclude_from_indexing": True}
    assert rpc.tool(ident, {"action": "recall", "query_text": "coffee"}, session)["text"] == "No matching memory records."
    assert rpc.tool(ident, {"action": "recall"}, session)["text"] == "No matching memory records."
    out = rpc.tool(ident, {"action": "forget", "memory_id": new}, session)
    assert out["is_error"] is True and out["text"] == f"memory {new} was not found in your scope"
    assert rpc.record_row(new)["status_kind"] == "tombstoned"


def test_recall_max_entries_and_usage_marks(rpc: Rpc) -> None:
    ident = uid()
    ids = [memory_id_of(rpc.tool(ident, {"action": "remember", "title": f"Moth {i}", "body": f"moth sighting {i}"})["text"])
           for i in range(5)]
    rows = json.loads(rpc.tool(ident, {"action": "recall", "query_text": "moth sighting", "max_entries": 2})["text"])
    assert len(rows) == 2 and {r["memory_id"] for r in rows} <= set(ids)
    assert len(json.loads(rpc.tool(ident, {"action": "recall", "max_entries": 1000})["text"])) == 5  # clamped, not refused
    with rpc.db() as conn:
        usage = json.loads(conn.execute("SELECT usage_stats FROM records WHERE memory_id = ?", (rows[0]["memory_id"],)).fetchone()[0])
    assert usage["explicit_recall_count"] >= 1


def test_epistemic_handling(rpc: Rpc) -> None:
    ident = uid()
    said = memory_id_of(rpc.tool(ident, {"action": "remember", "title": "Deadline", "body": "report due 2026-12-01",
                                         "epistemic": "operator_said"})["text"])
    assert json.loads(rpc.record_row(said)["tags"]) == ["epistemic:operator_said"]
    checked = memory_id_of(rpc.tool(ident, {
        "action": "remember", "title": "Build", "body": "the build passes on main", "epistemic": "verified_claim",
        "verification_evidence": "  ran the CI pipeline #812  "})["text"])
    row = rpc.record_row(checked)
    assert row["trust"] == "agent_observed"
    assert json.loads(row["provenance"])["verification"]["checked"] == "ran the CI pipeline #812"
    observed = memory_id_of(rpc.tool(ident, {"action": "remember", "title": "Sky", "body": "the sky is grey"})["text"])
    assert json.loads(rpc.record_row(observed)["tags"]) == []
    assert json.loads(rpc.record_row(observed)["provenance"]).get("verification") is None


def test_update_of_another_identitys_record_is_refused(rpc: Rpc) -> None:
    owner, intruder = uid(), uid()
    mid = memory_id_of(rpc.tool(owner, {"action": "remember", "title": "Mine", "body": "owner's fact"})["text"])
    out = rpc.tool(intruder, {"action": "update", "memory_id": mid, "title": "Mine", "body": "hijacked"})
    assert out == {"text": f"memory {mid} was not found in your scope", "is_error": True, "exclude_from_indexing": True}
    out = rpc.tool(intruder, {"action": "forget", "memory_id": mid})
    assert out == {"text": f"memory {mid} was not found in your scope", "is_error": True, "exclude_from_indexing": True}
    assert rpc.recall_ids(owner, "owner's fact") == [mid]
    out = rpc.tool(owner, {"action": "update", "memory_id": "mem-missing", "title": "t", "body": "b"})
    assert out["is_error"] and out["text"] == "memory mem-missing was not found in your scope"


def test_propose_to_mob(rpc: Rpc) -> None:
    ident, session = uid(), uid("sess")
    out = rpc.tool(ident, {"action": "propose_to_mob", "title": "Standup", "body": "standup is at 09:30"}, session)
    assert out == {"text": "propose_to_mob is unavailable: this member is not running inside a mob",
                   "is_error": True, "exclude_from_indexing": True}
    out = rpc.tool(ident, {"action": "propose_to_mob", "title": "Standup", "body": "standup is at 09:30"}, session,
                   mob="mob-red")
    assert out["is_error"] is False
    assert out["text"].startswith("Proposed to mob scope as prop-")
    assert out["text"].endswith(". A steward or operator must review and commit it before it becomes shared memory.")
    proposal = out["text"].split(" as ", 1)[1].split(".", 1)[0]
    # a proposal made from a tainted session carries its propose-time taint
    rpc.tool_result(ident, session, "web_fetch")
    tainted = rpc.tool(ident, {"action": "propose_to_mob", "title": "Standup", "body": "standup moved to 10:00"},
                       session, mob="mob-red")["text"].split(" as ", 1)[1].split(".", 1)[0]
    with rpc.db() as conn:
        rows = {r["proposal_id"]: dict(r) for r in conn.execute("SELECT * FROM proposals WHERE scope_key = 'mob-red'")}
    assert rows[proposal]["status"] == "pending" and rows[proposal]["taint"] is None
    assert rows[proposal]["scope_kind"] == "mob"
    assert rows[tainted]["taint"] == "session tainted by web tool 'web_fetch'"
    # a proposal is not memory of anyone yet
    assert rpc.recall_ids(ident, "standup") == []


ERRORS = [
    ({}, f"`action` is required ({EXPECTED})"),
    ({"action": "archive"}, f"unknown action 'archive' ({EXPECTED})"),
    ({"action": 7}, f"`action` must be a string ({EXPECTED})"),
    ({"action": "remember", "title": "t", "body": "b", "scope": "mob"},
     f"unknown field 'scope' (the memory tool accepts: {FIELDS})"),
    ({"action": "recall", "identity": "agent:other", "realm": "x"},
     f"unknown fields 'identity', 'realm' (the memory tool accepts: {FIELDS})"),
    ({"action": "remember", "body": "b"}, '`title` is required for action "remember"'),
    ({"action": "remember", "title": "   ", "body": "b"}, "title must not be empty"),
    ({"action": "remember", "title": "t"}, '`body` is required for action "remember"'),
    ({"action": "propose_to_mob", "title": "t"}, '`body` is required for action "propose_to_mob"'),
    ({"action": "update", "title": "t", "body": "b"}, '`memory_id` is required for action "update"'),
    ({"action": "update", "memory_id": "m", "body": "b"}, '`title` is required for action "update"'),
    ({"action": "forget"}, '`memory_id` is required for action "forget"'),
    ({"action": "remember", "title": "t", "body": "b", "kind": "rumour"}, "unknown record kind 'rumour'"),
    ({"action": "remember", "title": "t", "body": "b", "epistemic": "guess"}, "unknown epistemic status 'guess'"),
    ({"action": "remember", "title": "t", "body": "b", "epistemic": "verified_claim"},
     '`verification_evidence` is required with epistemic="verified_claim": describe what you checked'),
    ({"action": "remember", "title": "t", "body": "b", "epistemic": "verified_claim", "verification_evidence": " "},
     '`verification_evidence` is required with epistemic="verified_claim": describe what you checked'),
    ({"action": "remember", "title": "t", "body": "b", "tags": "x"}, "`tags` must be an array of strings"),
    ({"action": "remember", "title": 5, "body": "b"}, "`title` must be a string"),
    ({"action": "recall", "max_entries": 0}, "`max_entries` must be an integer of at least 1"),
    ({"action": "recall", "max_entries": True}, "`max_entries` must be an integer of at least 1"),
    ({"action": "remember", "title": "t" * 201, "body": "b"}, "title must be at most 200 bytes"),
    ({"action": "remember", "title": "t", "body": "b" * 65537}, "body must be at most 65536 bytes"),
    ({"action": "remember", "title": "t", "body": "b", "description": "d" * 401}, "description must be at most 400 bytes"),
]


@pytest.mark.parametrize("arguments,text", ERRORS)
def test_error_texts_are_tool_errors(rpc: Rpc, arguments: dict, text: str) -> None:
    out = rpc.tool(uid(), arguments, uid("sess"))
    assert out["is_error"] is True and out["exclude_from_indexing"] is True
    assert out["text"] == text or out["text"].endswith(text), out["text"]


@pytest.mark.parametrize("action", ["forget", "recall", "propose_to_mob"])
def test_ttl_s_outside_remember_and_update_is_a_tool_error_and_changes_nothing(rpc: Rpc, action: str) -> None:
    """A model that asks to forget "in an hour" (``ttl_s`` on forget) gets a tool error naming the field,
    never an immediate forget it did not ask for; recall and propose_to_mob refuse the field alike."""
    ident, session = uid(), uid("sess")
    mid = memory_id_of(rpc.tool(ident, {"action": "remember", "title": "Standup", "body": "daily at nine"},
                                session)["text"])
    arguments = {"forget": {"memory_id": mid}, "recall": {"query_text": "standup"},
                 "propose_to_mob": {"title": "Standup", "body": "daily at nine"}}[action]
    out = rpc.tool(ident, {"action": action, **arguments, "ttl_s": 3600}, session)
    assert out["is_error"] is True
    assert out["text"] == '`ttl_s` applies to actions "remember" and "update" only'
    assert rpc.recall_ids(ident, "standup") == [mid]


def test_arguments_cannot_retarget_the_scope(rpc: Rpc) -> None:
    ident, other = uid(), uid()
    out = rpc.tool(ident, {"action": "remember", "title": "t", "body": "b", "identity": other})
    assert out["is_error"] is True
    assert rpc.recall_ids(other, selection="always") == [] and rpc.recall_ids(ident, selection="always") == []


def test_tool_identity_is_logical_across_respawn_generations(rpc: Rpc) -> None:
    base = uid("identity")
    mid = memory_id_of(rpc.tool(f"rt:{base}:0", {"action": "remember", "title": "Gen", "body": "generation zero heron"})["text"])
    rows = json.loads(rpc.tool(f"rt:{base}:1", {"action": "recall", "query_text": "heron"})["text"])
    assert [r["memory_id"] for r in rows] == [mid]
    assert rpc.recall_ids(base, "heron") == [mid]
