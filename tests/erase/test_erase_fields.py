"""Erased text stays out of every field a record shows, not only its (title, body) pair: after
``meta/agent_memory/erase`` of a record, its body written again as another record's description (the
``memory`` tool), one of its tags (lower-cased, the tool) or a metadata string (``remember``) is refused
``erased``, over a real gateway on SQLite and on PostgreSQL, and nothing of it reaches the next turn's
injection or the tool's recall. Copies stored before the erase with the body in such a field go with
the erase (its content closure). Short fields are everyday words, not the erased text: erasing a record
titled "Meeting notes" refuses no later record with that title.
"""

from __future__ import annotations

import json

import pytest

from support import GatewayProcess

pytestmark = pytest.mark.gateway

ID, OTHER = "gina", "hank"
BODY = "The back door code is 4471 and the alarm word is heron."
TOOL = "meta/agent_memory/tool"


def _refused(body: dict[str, object]) -> None:
    err = body["error"]
    assert isinstance(err, dict) and err["code"] == -32040 and err["data"]["reason"] == "erased", body
    assert "4471" not in json.dumps(err) and "identity scope 'gina'" in err["message"], err


def _tool(gw: GatewayProcess, arguments: dict[str, object], identity: str = ID) -> dict[str, object]:
    return gw.result(TOOL, {"identity": identity, "session_key": "k1", "arguments": arguments})


def _nothing_shown(gw: GatewayProcess) -> None:
    """Neither the next turn's injection nor the tool's recall holds the erased text."""
    turn = gw.result("meta/turn/inject", {"identity": ID, "session_key": "k2", "query_text": "back door code alarm"})
    recall = _tool(gw, {"action": "recall", "query_text": "back door code alarm heron"})
    for shown in (json.dumps(turn), json.dumps(recall)):
        assert "4471" not in shown and "heron" not in shown.lower(), shown


def test_erased_text_in_another_field_is_refused(backend_gateway: GatewayProcess) -> None:
    gw = backend_gateway
    mid = gw.result("meta/agent_memory/remember", {"identity": ID, "title": "Door code", "body": BODY})["memory_id"]
    assert gw.result("meta/agent_memory/erase", {"identity": ID, "memory_id": mid})["count"] == 1
    gw.result("meta/session/note", {"identity": ID, "session_key": "k1"})
    _refused(gw.rpc("meta/agent_memory/remember", {"identity": ID, "title": "x", "body": "y",
                                                   "metadata": {"note": BODY}}))
    _refused(gw.rpc("meta/agent_memory/remember", {"identity": ID, "title": "Elsewhere", "body": BODY.upper()}))
    batch = gw.result("meta/agent_memory/remember_batch", {"identity": ID, "records": [
        {"title": "Door", "body": "see the tag", "tags": [BODY.lower()]}]})
    assert batch["refused"] == 1 and batch["results"][0]["error"]["data"]["reason"] == "erased", batch
    for arguments, extra in (({"action": "remember", "title": "Door", "body": "see index", "description": BODY}, {}),
                             ({"action": "remember", "title": "Door2", "body": "see tag", "tags": [BODY.lower()]}, {}),
                             ({"action": "propose_to_mob", "title": "Door", "body": "see index", "description": BODY},
                              {"mob": "team"})):
        out = gw.result(TOOL, {"identity": ID, "session_key": "k1", "arguments": arguments, **extra})
        assert out["is_error"] and "erased" in out["text"] and "4471" not in out["text"], out
    assert gw.result("meta/memory/proposals/list", {})["proposals"] == []
    assert gw.result("meta/agent_memory/manifest", {"identity": ID, "tier": "full"})["records"] == []
    _nothing_shown(gw)
    # other words are other content; another identity's own memory is its own
    assert gw.result("meta/agent_memory/remember", {"identity": ID, "title": "Door", "body": "x",
                                                    "metadata": {"note": BODY.replace("4471", "9000")}})["created"]
    assert not _tool(gw, {"action": "remember", "title": "Door", "body": "see index", "description": BODY},
                     identity=OTHER)["is_error"]


def test_an_erase_takes_the_copies_holding_its_text_in_another_field(backend_gateway: GatewayProcess) -> None:
    """Copies stored before the erase with the erased body as a description, a tag or a metadata string go
    with it; a record of other words stays, and so does another identity's copy."""
    gw = backend_gateway
    gw.result("meta/session/note", {"identity": ID, "session_key": "k1"})
    for arguments in ({"action": "remember", "title": "Door", "body": "see index", "description": BODY},
                      {"action": "remember", "title": "Door2", "body": "see tag", "tags": [BODY.lower()]}):
        out = _tool(gw, arguments)
        assert not out["is_error"], out
    listed = gw.result("meta/agent_memory/manifest", {"identity": ID, "tier": "full"})["records"]
    copies = [r["id"] for r in listed]
    proposed = gw.result(TOOL, {"identity": ID, "session_key": "k1", "mob": "team", "arguments": {
        "action": "propose_to_mob", "title": "Door", "body": "see the tags", "tags": [BODY]}})
    assert not proposed["is_error"] and len(gw.result("meta/memory/proposals/list", {})["proposals"]) == 1, proposed
    copies.append(gw.result("meta/agent_memory/remember", {"identity": ID, "title": "x", "body": "y",
                                                           "metadata": {"note": BODY}})["memory_id"])
    kept = gw.result("meta/agent_memory/remember", {"identity": ID, "title": "Garden", "body": "Water it on Fridays"})
    theirs = gw.result("meta/agent_memory/remember", {"identity": OTHER, "title": "x", "body": "y",
                                                      "metadata": {"note": BODY}})
    mid = gw.result("meta/agent_memory/remember", {"identity": ID, "title": "Door code", "body": BODY})["memory_id"]
    report = gw.result("meta/agent_memory/erase", {"identity": ID, "memory_id": mid})
    assert sorted(r["memory_id"] for r in report["records"]) == sorted([mid, *copies]), report
    assert len(report["proposals"]) == 1 and gw.result("meta/memory/proposals/list", {})["proposals"] == []
    assert [r["id"] for r in gw.result("meta/agent_memory/manifest", {"identity": ID, "tier": "full"})["records"]] == [
        kept["memory_id"]]
    _nothing_shown(gw)
    assert [r["id"] for r in gw.result("meta/agent_memory/manifest", {"identity": OTHER, "tier": "full"})["records"]] == [
        theirs["memory_id"]]


def test_short_fields_are_not_the_erased_text(backend_gateway: GatewayProcess) -> None:
    """Erasing a record titled "Meeting notes" with a short body refuses that pair again, not every later
    record that shares its title, a short tag or a short description."""
    gw = backend_gateway
    mid = gw.result("meta/agent_memory/remember", {"identity": ID, "title": "Meeting notes", "body": "Roadmap call",
                                                   "tags": ["meeting notes"]})["memory_id"]
    gw.result("meta/agent_memory/erase", {"identity": ID, "memory_id": mid})
    _refused(gw.rpc("meta/agent_memory/remember", {"identity": ID, "title": "Meeting notes", "body": "Roadmap call"}))
    for params in ({"title": "Meeting notes", "body": "Budget review with finance on Tuesday"},
                   {"title": "Standup", "body": "Short sync", "tags": ["meeting notes", "roadmap call"]},
                   {"title": "Retro", "body": "What went well", "metadata": {"kind": "Meeting notes"}}):
        assert gw.result("meta/agent_memory/remember", {"identity": ID, **params})["created"], params
    gw.result("meta/session/note", {"identity": ID, "session_key": "k1"})
    assert not _tool(gw, {"action": "remember", "title": "Planning", "body": "Q3 planning",
                          "description": "Meeting notes"})["is_error"]


def test_field_level_erasure_holds_in_the_realm_it_was_erased_from(backend_gateway: GatewayProcess) -> None:
    """An erase in a realm other than the default keeps its body out of every field of that realm's scope
    (a metadata string through ``remember``, a description through the ``memory`` tool, a tag through
    ``remember_batch``). The same
    identity's scope in another realm is another scope: a live write there is not refused (the register
    keeps erased content out of the scope it was erased from; only an import reads every realm's
    register, ``tests/portability/test_untrusted_import.py``)."""
    gw = backend_gateway
    here, there = {"identity": ID, "realm": "hr"}, {"identity": ID, "realm": "default"}
    mid = gw.result("meta/agent_memory/remember", {**here, "title": "Door code", "body": BODY})["memory_id"]
    assert gw.result("meta/agent_memory/erase", {**here, "memory_id": mid})["count"] == 1
    _refused(gw.rpc("meta/agent_memory/remember", {**here, "title": "Door", "body": "x", "metadata": {"note": BODY}}))
    batch = gw.result("meta/agent_memory/remember_batch", {**here, "records": [
        {"title": "Door", "body": "see the tag", "tags": [BODY.lower()]}]})
    assert batch["refused"] == 1 and batch["results"][0]["error"]["data"]["reason"] == "erased", batch
    gw.result("meta/session/note", {**here, "session_key": "k1"})
    out = gw.result(TOOL, {**here, "session_key": "k1", "arguments": {
        "action": "remember", "title": "Door", "body": "see index", "description": BODY}})
    assert out["is_error"] and "erased" in out["text"] and "4471" not in out["text"], out
    assert gw.result("meta/agent_memory/manifest", {**here, "tier": "full"})["records"] == []
    # the default realm's scope of the same identity is another scope: not refused there
    kept = gw.result("meta/agent_memory/remember", {**there, "title": "Door", "body": "x", "metadata": {"note": BODY}})
    tagged = gw.result("meta/agent_memory/remember_batch", {**there, "records": [
        {"title": "Door", "body": "see the tag", "tags": [BODY.lower()]}]})
    assert kept["created"] and tagged["refused"] == 0, (kept, tagged)
    assert len(gw.result("meta/agent_memory/manifest", {**there, "tier": "full"})["records"]) == 2
    assert gw.result("meta/agent_memory/manifest", {**here, "tier": "full"})["records"] == []


def test_an_erase_takes_copies_showing_its_text_in_another_field_in_any_folded_spelling(
        backend_gateway: GatewayProcess) -> None:
    """The field closure compares every spelling the register folds, whether the copy's field or the erased
    body is the ASCII one: a copy showing the erased body in capitals (a metadata string), run together (a
    tag), tab-spaced (a metadata string) or with a Cyrillic look-alike letter (a description) goes with the
    erase; so does a plain ASCII copy of a body erased in a look-alike spelling. Other words stay."""
    gw = backend_gateway
    gw.result("meta/session/note", {"identity": ID, "session_key": "k1"})
    lookalike = BODY.replace("o", "\u043e")
    copies = [gw.result("meta/agent_memory/remember", {"identity": ID, "title": t, "body": "y", **extra})["memory_id"]
              for t, extra in (("Upper", {"metadata": {"note": BODY.upper()}}),
                               ("Joined", {"tags": [BODY.replace(" ", "")]}),
                               ("Tabbed", {"metadata": {"note": BODY.replace(" ", "\t ")}}))]
    out = _tool(gw, {"action": "remember", "title": "Look", "body": "see index", "description": lookalike})
    assert not out["is_error"], out
    listed = {r["title"]: r["id"] for r in gw.result("meta/agent_memory/manifest", {"identity": ID, "tier": "full"})["records"]}
    copies.append(listed["Look"])
    kept = gw.result("meta/agent_memory/remember", {"identity": ID, "title": "Other", "body": "y",
                                                    "metadata": {"note": BODY.replace("heron", "crane")}})["memory_id"]
    mid = gw.result("meta/agent_memory/remember", {"identity": ID, "title": "Door code", "body": BODY})["memory_id"]
    report = gw.result("meta/agent_memory/erase", {"identity": ID, "memory_id": mid})
    assert sorted(r["memory_id"] for r in report["records"]) == sorted([mid, *copies]), report
    # a body erased in a look-alike spelling takes a plain ASCII copy shown in a metadata string
    plain = "Feed the cat at seven and lock the cellar"
    ascii_copy = gw.result("meta/agent_memory/remember", {"identity": ID, "title": "Cat", "body": "y",
                                                          "metadata": {"note": plain}})["memory_id"]
    odd = gw.result("meta/agent_memory/remember", {"identity": ID, "title": "Cat note",
                                                   "body": plain.replace("a", "\u0430")})["memory_id"]
    report = gw.result("meta/agent_memory/erase", {"identity": ID, "memory_id": odd})
    assert sorted(r["memory_id"] for r in report["records"]) == sorted([odd, ascii_copy]), report
    assert [r["id"] for r in gw.result("meta/agent_memory/manifest", {"identity": ID, "tier": "full"})["records"]] == [kept]
