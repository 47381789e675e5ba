"""Erased content re-spaced is the same erased content: after ``meta/agent_memory/erase`` a body that
differs only in whitespace inside it (a doubled space, a tab, a no-break space, a line break) is refused
``erased`` at every door (remember, batch, update, the ``memory`` tool, a proposal, the legacy markdown
import), over a real gateway; another
identity may still write it, and the duplicate check still keeps a body's inner whitespace as content.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from support import GatewayProcess, legacy_markdown_file, markdown_record, open_ro, realm_db

pytestmark = pytest.mark.gateway

ID, OTHER = "lead:main", "lead:other"
TITLE, BODY = "Orchard", "persimmon secret fact about the quokkazanzibar grove"
#: The erased body with one run of its inner whitespace changed.
RESPACED = [BODY.replace(" secret ", sep) for sep in ("  secret ", "\tsecret ", "\u00a0secret ", "\nsecret ",
                                                       " \u2003\r\n secret ")]


def _erased(body: dict[str, object]) -> None:
    """The error of a refused write: -32040 ``erased``, naming the scope and never the content."""
    err = body["error"]
    assert isinstance(err, dict) and err["code"] == -32040 and err["data"]["reason"] == "erased", body
    assert "quokkazanzibar" not in json.dumps(err) and "identity scope 'lead:main'" in err["message"]


@pytest.mark.parametrize("erased_body", [BODY, RESPACED[0]], ids=["single-spaced", "double-spaced"])
def test_erased_content_re_spaced_is_refused_at_every_door(gateway: GatewayProcess, erased_body: str) -> None:
    mid = gateway.result("meta/agent_memory/remember", {"identity": ID, "title": TITLE, "body": erased_body})["memory_id"]
    assert gateway.result("meta/agent_memory/erase", {"identity": ID, "memory_id": mid})["count"] == 1
    other = gateway.result("meta/agent_memory/remember", {"identity": ID, "title": "Other", "body": "unrelated"})
    gateway.result("meta/session/note", {"identity": ID, "session_key": "s1"})
    for body in [BODY, *RESPACED]:
        _erased(gateway.rpc("meta/agent_memory/remember", {"identity": ID, "title": f" {TITLE} ", "body": body}))
        batch = gateway.result("meta/agent_memory/remember_batch", {"identity": ID, "records": [
            {"title": TITLE, "body": body}]})
        assert batch["created"] == 0 and batch["refused"] == 1, batch
        assert batch["results"][0]["error"]["data"]["reason"] == "erased" and "quokkazanzibar" not in json.dumps(batch)
        _erased(gateway.rpc("meta/agent_memory/update", {"identity": ID, "memory_id": other["memory_id"],
                                                         "title": TITLE, "body": body}))
        for arguments, extra in (({"action": "remember", "title": TITLE, "body": body}, {}),
                                 ({"action": "update", "memory_id": other["memory_id"], "title": TITLE, "body": body},
                                  {}),
                                 ({"action": "propose_to_mob", "title": TITLE, "body": body}, {"mob": "team"})):
            out = gateway.result("meta/agent_memory/tool", {"identity": ID, "session_key": "s1",
                                                            "arguments": arguments, **extra})
            assert out["is_error"] and "erased" in out["text"] and "quokkazanzibar" not in out["text"], out
    assert gateway.result("meta/memory/proposals/list", {})["proposals"] == []
    assert gateway.result("meta/agent_memory/recall", {"identity": ID, "query_text": "quokkazanzibar"})["records"] == []
    # other words are other content, and another identity's own memory is its own (as documented)
    assert gateway.result("meta/agent_memory/remember", {"identity": ID, "title": TITLE,
                                                         "body": BODY.replace("secret", "public")})["created"]
    for body in RESPACED[:3]:
        assert gateway.result("meta/agent_memory/remember", {"identity": OTHER, "title": TITLE, "body": body})["created"]


def test_the_duplicate_check_still_keeps_inner_whitespace(gateway: GatewayProcess) -> None:
    """Without an erase, bodies that differ inside only in whitespace (code, tables) are two records."""
    first = gateway.result("meta/agent_memory/remember", {"identity": ID, "title": "Code", "body": "if x:\n    y()"})
    second = gateway.result("meta/agent_memory/remember", {"identity": ID, "title": "Code", "body": "if x: y()"})
    assert first["created"] and second["created"] and first["memory_id"] != second["memory_id"]
    same = gateway.result("meta/agent_memory/remember", {"identity": ID, "title": "Code", "body": "if x:\n    y()\n"})
    assert not same["created"] and same["memory_id"] == first["memory_id"]
    listed = gateway.result("meta/agent_memory/manifest", {"identity": ID, "tier": "full"})["records"]
    assert sorted(r["id"] for r in listed) == sorted([first["memory_id"], second["memory_id"]])


def test_a_re_spaced_legacy_record_is_not_imported_again(tmp_path: Path, gateway_factory: Any) -> None:
    state = tmp_path / "state"
    source = legacy_markdown_file(state, ID)
    source.write_text(markdown_record("mem-legacy-1", TITLE, BODY), encoding="utf-8")
    gw = gateway_factory(state)
    gw.result("meta/agent_memory/erase", {"identity": ID, "memory_id": "mem-legacy-1"})
    gw.stop()
    source.write_text(markdown_record("mem-legacy-2", TITLE, RESPACED[1]) + markdown_record("mem-legacy-3", "Kept", "fine"),
                      encoding="utf-8")
    gw = gateway_factory(state)
    ids = {m["id"] for m in gw.result("meta/agent_memory/manifest", {"identity": ID, "tier": "full"})["records"]}
    assert ids == {"mem-legacy-3"}
    gw.stop()
    with open_ro(realm_db(state)) as conn:
        notes = [json.loads(r[0]) for r in conn.execute("SELECT detail FROM audit WHERE op_kind = 'import_summary'")]
    reasons = [r for n in notes for r in n["skip_reasons"]]
    assert any("mem-legacy-2" in r and "erased" in r for r in reasons) and "quokkazanzibar" not in str(reasons)


def test_an_erase_takes_the_re_spaced_copies_and_proposals_of_its_content(gateway: GatewayProcess) -> None:
    """The copies the duplicate check let in (inner whitespace is content there) hold the erased content for
    the register, so the erase takes them too: nothing of it stays readable in the scope."""
    remember = "meta/agent_memory/remember"
    ids = [gateway.result(remember, {"identity": ID, "title": TITLE, "body": body})["memory_id"]
           for body in [BODY, *RESPACED[:3]]]
    assert len(set(ids)) == 4
    kept = gateway.result(remember, {"identity": ID, "title": TITLE, "body": "other words under the same title"})
    theirs = gateway.result(remember, {"identity": OTHER, "title": TITLE, "body": RESPACED[1]})
    gateway.result("meta/session/note", {"identity": ID, "session_key": "s1"})
    proposed = gateway.result("meta/agent_memory/tool", {"identity": ID, "session_key": "s1", "mob": "team",
                                                         "arguments": {"action": "propose_to_mob", "title": TITLE,
                                                                       "body": RESPACED[3]}})
    assert not proposed["is_error"], proposed
    assert len(gateway.result("meta/memory/proposals/list", {})["proposals"]) == 1

    report = gateway.result("meta/agent_memory/erase", {"identity": ID, "memory_id": ids[1]})
    assert report["count"] == 4 and sorted(r["memory_id"] for r in report["records"]) == sorted(ids), report
    assert gateway.result("meta/memory/proposals/list", {})["proposals"] == []
    assert gateway.result("meta/agent_memory/recall", {"identity": ID, "query_text": "quokkazanzibar"})["records"] == []
    listed = gateway.result("meta/agent_memory/manifest", {"identity": ID, "tier": "full"})["records"]
    assert [r["id"] for r in listed] == [kept["memory_id"]]
    # another identity's own copy is its own
    assert [r["memory_id"] for r in gateway.result("meta/agent_memory/recall", {
        "identity": OTHER, "query_text": "quokkazanzibar"})["records"]] == [theirs["memory_id"]]


def test_in_another_realm_the_fold_holds_there_and_only_there(gateway: GatewayProcess) -> None:
    """An erase in realm ``blue`` refuses the re-spaced content in ``blue``; the default realm's own
    memory is another register."""
    blue = {"identity": ID, "realm": "blue"}
    mid = gateway.result("meta/agent_memory/remember", {**blue, "title": TITLE, "body": BODY})["memory_id"]
    copy = gateway.result("meta/agent_memory/remember", {**blue, "title": TITLE, "body": RESPACED[1]})["memory_id"]
    report = gateway.result("meta/agent_memory/erase", {**blue, "memory_id": mid})
    assert sorted(r["memory_id"] for r in report["records"]) == sorted([mid, copy])
    for body in RESPACED:
        _erased(gateway.rpc("meta/agent_memory/remember", {**blue, "title": TITLE, "body": body}))
    assert gateway.result("meta/agent_memory/remember", {"identity": ID, "title": TITLE, "body": RESPACED[2]})["created"]
