"""Erased stays erased: after ``meta/agent_memory/erase`` the same content is refused at every door
(remember, batch, update, the ``memory`` tool, a proposal, the LangGraph store, the legacy markdown
import), over a real gateway; ``erase_identity`` takes the identity's proposals (an operator can no
longer accept them) and nothing it refuses echoes the content.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from support import GatewayProcess, legacy_markdown_file, markdown_record, open_ro, realm_db

pytestmark = pytest.mark.gateway

ID, OTHER = "lead:main", "lead:other"
TITLE, BODY = "Clinic visit", "The diagnosis was quokkazanzibar syndrome."


def _erased(body: dict[str, Any]) -> dict[str, Any]:
    """The error of a refused write: -32040 ``erased``, never repeating the content."""
    err = body["error"]
    assert err["code"] == -32040 and err["data"]["reason"] == "erased", err
    assert "quokkazanzibar" not in json.dumps(err)
    return err


def _remember_and_erase(gw: GatewayProcess) -> str:
    mid = gw.result("meta/agent_memory/remember", {"identity": ID, "title": TITLE, "body": BODY})["memory_id"]
    assert gw.result("meta/agent_memory/erase", {"identity": ID, "memory_id": mid})["count"] == 1
    return mid


def test_erased_content_is_refused_at_every_door(gateway: GatewayProcess) -> None:
    _remember_and_erase(gateway)
    # the same words, re-spelled the way the duplicate check treats as equal
    _erased(gateway.rpc("meta/agent_memory/remember", {"identity": ID, "title": "  Clinic   visit ",
                                                       "body": f"\n{BODY}  \n"}))
    batch = gateway.result("meta/agent_memory/remember_batch", {"identity": ID, "records": [
        {"title": TITLE, "body": BODY}, {"title": "Groceries", "body": "oat milk"}]})
    assert batch["created"] == 1 and batch["refused"] == 1
    assert batch["results"][0]["error"]["data"]["reason"] == "erased" and "quokkazanzibar" not in json.dumps(batch)
    other = gateway.result("meta/agent_memory/remember", {"identity": ID, "title": "Other", "body": "unrelated"})
    _erased(gateway.rpc("meta/agent_memory/update", {"identity": ID, "memory_id": other["memory_id"],
                                                     "title": TITLE, "body": BODY}))
    gateway.result("meta/session/note", {"identity": ID, "session_key": "s1"})
    for arguments, extra in (({"action": "remember", "title": TITLE, "body": BODY}, {}),
                             ({"action": "update", "memory_id": other["memory_id"], "title": TITLE, "body": BODY}, {}),
                             ({"action": "propose_to_mob", "title": TITLE, "body": BODY}, {"mob": "team"})):
        out = gateway.result("meta/agent_memory/tool", {"identity": ID, "session_key": "s1", "arguments": arguments,
                                                        **extra})
        assert out["is_error"] and "erased" in out["text"] and "quokkazanzibar" not in out["text"], out
    assert gateway.result("meta/memory/proposals/list", {})["proposals"] == []
    # nothing came back: recall finds nothing, the manifest has only what was allowed
    assert gateway.result("meta/agent_memory/recall", {"identity": ID, "query_text": "quokkazanzibar"})["records"] == []
    # another identity's own memory is its own: refusing it would tell it what someone else erased
    assert gateway.result("meta/agent_memory/remember", {"identity": OTHER, "title": TITLE, "body": BODY})["created"]


def test_erase_identity_takes_its_pending_proposals(gateway: GatewayProcess) -> None:
    gateway.result("meta/session/note", {"identity": ID, "session_key": "s1"})
    out = gateway.result("meta/agent_memory/tool", {"identity": ID, "session_key": "s1", "mob": "team", "arguments": {
        "action": "propose_to_mob", "title": TITLE, "body": BODY}})
    assert not out["is_error"], out
    (proposal,) = gateway.result("meta/memory/proposals/list", {})["proposals"]
    gateway.result("meta/agent_memory/remember", {"identity": ID, "title": "Keep?", "body": "no: erase all of me"})
    done = gateway.result("meta/agent_memory/erase_identity", {"identity": ID, "reason": "privacy request"})
    assert done["proposals"] == [proposal["proposal_id"]] and done["count"] == 1
    assert gateway.result("meta/memory/proposals/list", {})["proposals"] == []
    accept = gateway.rpc("meta/memory/proposals/decide", {"realm": "default", "proposal_id": proposal["proposal_id"],
                                                          "action": "accept"})
    assert "error" in accept, accept  # the operator can no longer accept it into mob memory
    assert gateway.result("meta/agent_memory/manifest", {"identity": ID, "tier": "full"})["records"] == []
    out = gateway.result("meta/agent_memory/tool", {"identity": ID, "session_key": "s1", "mob": "team", "arguments": {
        "action": "propose_to_mob", "title": TITLE, "body": BODY}})
    assert out["is_error"] and "erased" in out["text"], out
    gateway.stop()
    with open_ro(realm_db(gateway.state_dir)) as conn:
        assert conn.execute("SELECT count(*) FROM proposals").fetchone()[0] == 0
        rows = conn.execute("SELECT memory_id, scope_kind, scope_key, content_hash FROM erasures").fetchall()
    assert {r["memory_id"] for r in rows} >= {proposal["proposal_id"]}
    assert all("quokkazanzibar" not in json.dumps(dict(r)) for r in rows)


def test_an_erased_legacy_record_is_cut_from_its_file_and_never_imported_again(tmp_path: Path, gateway_factory: Any) -> None:
    state = tmp_path / "state"
    source = legacy_markdown_file(state, ID)
    source.write_text(markdown_record("mem-legacy-1", TITLE, BODY) + markdown_record("mem-legacy-2", "Kept", "still here"),
                      encoding="utf-8")
    gw = gateway_factory(state)
    assert {m["id"] for m in gw.result("meta/agent_memory/manifest", {"identity": ID, "tier": "full"})["records"]} == {
        "mem-legacy-1", "mem-legacy-2"}
    gw.result("meta/agent_memory/erase", {"identity": ID, "memory_id": "mem-legacy-1"})
    archive = source.with_name(source.name + ".imported")
    kept = archive.read_text(encoding="utf-8")
    assert "quokkazanzibar" not in kept and "mem-legacy-1" not in kept and "still here" in kept
    gw.stop()
    # the same record handed in again (a restored backup of the old file): skipped, by id and by content
    source.write_text(markdown_record("mem-legacy-1", TITLE, BODY) + markdown_record("mem-legacy-3", TITLE, BODY),
                      encoding="utf-8")
    gw = gateway_factory(state)
    ids = {m["id"] for m in gw.result("meta/agent_memory/manifest", {"identity": ID, "tier": "full"})["records"]}
    assert ids == {"mem-legacy-2"}
    gw.stop()
    with open_ro(realm_db(state)) as conn:
        notes = [json.loads(r[0]) for r in conn.execute("SELECT detail FROM audit WHERE op_kind = 'import_summary'")]
    reasons = [r for n in notes for r in n["skip_reasons"]]
    assert any("mem-legacy-1" in r and "erased" in r for r in reasons), reasons
    assert all("quokkazanzibar" not in r for r in reasons)


def test_an_identity_erase_takes_its_harvest_causes_even_with_no_record_left(gateway: GatewayProcess) -> None:
    gateway.result("meta/session/note", {"identity": ID, "session_key": "s1"})
    gateway.result("meta/session/retire", {"identity": ID, "session_key": "s1",
                                           "cause": "user said quokkazanzibar before leaving"})
    done = gateway.result("meta/agent_memory/erase_identity", {"identity": ID})
    assert done["count"] == 0 and done["erased_at_ms"] is not None
    files = b"".join(p.read_bytes() for p in gateway.state_dir.rglob("*") if p.is_file())
    assert b"quokkazanzibar" not in files  # while serving: the WAL was truncated too
