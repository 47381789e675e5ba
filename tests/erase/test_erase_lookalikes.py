"""Erased content spelled with look-alike letters is the same erased content: after
``meta/agent_memory/erase`` of ``"Erase Me Plan"`` / ``"The launch code word is bluebird"``, the title and
body with Latin letters swapped for Cyrillic or Greek ones that look the same (Cyrillic ``а`` U+0430 for
``a``, ``о``, ``е``, ``р``, ``с``, Greek ``ο`` U+03BF, capitals such as Cyrillic ``М`` and Greek ``Ρ``)
are refused ``erased``, as the exact re-send is, through ``remember``, ``remember_batch`` and the
``memory`` tool, over a real gateway on SQLite and on PostgreSQL; nothing of them reaches the next turn's
injection. An erase takes the look-alike copies written before it. Other words are other content, and
another identity's own memory is its own.
"""

from __future__ import annotations

import json

import pytest

from support import GatewayProcess

pytestmark = pytest.mark.gateway

ID, OTHER = "lead:main", "lead:other"
TITLE, BODY = "Erase Me Plan", "The launch code word is bluebird"


def _swap(text: str, pairs: dict[str, str]) -> str:
    return "".join(pairs.get(c, c) for c in text)


#: (title, body) spellings of the erased content with look-alike letters swapped in.
LOOK_ALIKE = [
    (TITLE, _swap(BODY, {"a": "\u0430"})),  # Cyrillic a
    (_swap(TITLE, {"a": "\u0430", "e": "\u0435"}), _swap(BODY, {"o": "\u043e", "e": "\u0435", "c": "\u0441"})),
    (TITLE, BODY.replace("launch", "l\u0430un\u0441h").replace("code", "c\u03bfde").replace("word", "w\u03bfr\u0501")),
    (_swap(TITLE, {"M": "\u041c", "P": "\u03a1", "E": "\u0415"}), _swap(BODY, {"T": "\u0422", "p": "\u0440"})),
    ("\u0415RASE ME \u0420LAN", _swap(BODY.upper(), {"O": "\u039f", "B": "\u0392"})),  # capitals, and case
    # whitespace taken out or put in: the words run together (a zero-width space in place of each space,
    # which the renderers drop, shows them so), letter-spaced, a line break inside a word
    (TITLE, BODY.replace(" ", "")), (TITLE, BODY.replace(" ", "\u200b")), (TITLE.replace(" ", ""), " ".join(BODY)),
    (TITLE, BODY.replace("bluebird", "blue\nbird")),
]


@pytest.fixture
def gw(backend_gateway: GatewayProcess) -> GatewayProcess:
    """A gateway whose agent memory is SQLite or a throw-away PostgreSQL schema (``tests/conftest.py``)."""
    return backend_gateway


def _error(body: dict[str, object]) -> dict[str, object]:
    err = body["error"]
    assert isinstance(err, dict), body
    return err


def _kind(err: dict[str, object]) -> tuple[object, object]:
    """What kind of refusal an error is: its code and reason, the same for every spelling of one content."""
    data = err["data"]
    assert isinstance(data, dict), err
    return err["code"], data["reason"]


def test_look_alike_spellings_of_erased_content_are_refused_as_the_exact_content_is(gw: GatewayProcess) -> None:
    mid = gw.result("meta/agent_memory/remember", {"identity": ID, "title": TITLE, "body": BODY})["memory_id"]
    assert gw.result("meta/agent_memory/erase", {"identity": ID, "memory_id": mid, "reason": "request"})["count"] == 1
    exact = _error(gw.rpc("meta/agent_memory/remember", {"identity": ID, "title": TITLE, "body": BODY}))
    assert _kind(exact) == (-32040, "erased")
    exact_batch = gw.result("meta/agent_memory/remember_batch", {"identity": ID, "records": [
        {"title": TITLE, "body": BODY}]})["results"][0]["error"]
    gw.result("meta/session/note", {"identity": ID, "session_key": "s1"})
    for n, (title, body) in enumerate(LOOK_ALIKE):
        assert (title, body) != (TITLE, BODY)
        err = _error(gw.rpc("meta/agent_memory/remember", {"identity": ID, "title": title, "body": body}))
        assert _kind(err) == _kind(exact) and err["message"] == exact["message"], (body, err)
        assert "bluebird" not in json.dumps(err).lower() and "identity scope 'lead:main'" in str(err["message"])
        batch = gw.result("meta/agent_memory/remember_batch", {"identity": ID, "records": [
            {"title": title, "body": body}, {"title": "Kept", "body": f"another plan, number {n}"}]})
        assert (batch["created"], batch["refused"]) == (1, 1), batch
        refused = batch["results"][0]["error"]
        assert _kind(refused) == _kind(exact_batch) == _kind(exact) and refused == exact_batch, (body, batch)
        assert "bluebird" not in json.dumps(batch).lower()
        out = gw.result("meta/agent_memory/tool", {"identity": ID, "session_key": "s1", "arguments": {
            "action": "remember", "title": title, "body": body}})
        assert out["is_error"] and "erased" in out["text"], (body, out)
    # nothing of it is injected into the next turn
    turn = gw.result("meta/turn/inject", {"identity": ID, "session_key": "s2",
                                          "query_text": "Erase Me Plan: the launch code word"})
    assert "bluebird" not in json.dumps(turn).lower() and "bluebird" not in _swap(
        json.dumps(turn, ensure_ascii=False), {"\u0435": "e", "\u043e": "o", "\u0430": "a"}).lower()
    # other words are other content; another identity's own memory is its own
    assert gw.result("meta/agent_memory/remember", {"identity": ID, "title": TITLE,
                                                    "body": _swap("The launch code word is redbird", {"a": "\u0430"})})[
        "created"]
    assert gw.result("meta/agent_memory/remember", {"identity": OTHER, "title": LOOK_ALIKE[1][0],
                                                    "body": LOOK_ALIKE[1][1]})["created"]


def test_an_erase_takes_the_look_alike_copies_of_its_content(gw: GatewayProcess) -> None:
    """Copies written before the erase with look-alike letters hold the erased content: they go with it."""
    ids = [gw.result("meta/agent_memory/remember", {"identity": ID, "title": t, "body": b})["memory_id"]
           for t, b in [(TITLE, BODY), LOOK_ALIKE[1], LOOK_ALIKE[3]]]
    kept = gw.result("meta/agent_memory/remember", {"identity": ID, "title": TITLE, "body": "Another plan"})
    report = gw.result("meta/agent_memory/erase", {"identity": ID, "memory_id": ids[0]})
    assert sorted(r["memory_id"] for r in report["records"]) == sorted(ids), report
    listed = gw.result("meta/agent_memory/manifest", {"identity": ID, "tier": "full"})["records"]
    assert [r["id"] for r in listed] == [kept["memory_id"]]
