"""Erased content with a control character slipped in is the same erased content: a bell, an escape, a
backspace, DEL or a C1 control shows nothing and the injected block drops it, and a vertical tab, a form feed or
a separator (U+001C-U+001F) or a blank filler (a Hangul filler, the braille blank) in place of a space is
shown as that space, so after
``meta/agent_memory/erase`` such a spelling is refused ``erased`` (remember, the ``memory`` tool) and an
erase takes such a copy with the record it names, over a real gateway."""

from __future__ import annotations

import json

import pytest

from support import GatewayProcess

pytestmark = pytest.mark.gateway

ID = "lead:controls"
TITLE, BODY = "Diagnosis", "Alice has condition quokkazanzibar Q"
#: The erased body with controls slipped in, or in place of its spaces.
SLIPPED = [BODY + "\a", BODY.replace("has", "h\x01as"), "\x7f" + BODY, BODY.replace(" Q", "\x1b Q"),
           BODY.replace("Alice", "Al\x08ice"), BODY.replace("condition", "cond\x9bition"),
           BODY.replace(" ", "\x0c"), BODY.replace(" ", "\x0b"), BODY.replace(" has", "\x1chas"),
           BODY.replace(" ", "\x1d"), BODY.replace(" Q", "\x1e\x1fQ"), BODY.replace(" ", " \x1f"),
           # blank fillers (Hangul fillers, the braille blank) in place of a space are shown as that space
           BODY.replace(" has", "\u3164has"), BODY.replace(" ", "\uffa0"), BODY.replace(" Q", "\u2800Q")]


def _refused(body: dict[str, object]) -> None:
    err = body["error"]
    assert isinstance(err, dict) and err["data"]["reason"] == "erased", body
    assert "quokkazanzibar" not in json.dumps(err)


def test_erased_content_with_a_control_slipped_in_is_refused(gateway: GatewayProcess) -> None:
    mid = gateway.result("meta/agent_memory/remember", {"identity": ID, "title": TITLE, "body": BODY})["memory_id"]
    assert gateway.result("meta/agent_memory/erase", {"identity": ID, "memory_id": mid})["count"] == 1
    for body in SLIPPED:
        _refused(gateway.rpc("meta/agent_memory/remember", {"identity": ID, "title": TITLE, "body": body}))
        _refused(gateway.rpc("meta/agent_memory/remember", {"identity": ID, "title": TITLE.upper() + "\x07",
                                                            "body": body.upper()}))
        out = gateway.result("meta/agent_memory/tool", {"identity": ID, "session_key": "s1", "arguments": {
            "action": "remember", "title": TITLE, "body": body}})
        assert out["is_error"] and "erased" in out["text"], out
    assert gateway.result("meta/agent_memory/recall", {"identity": ID, "query_text": "quokkazanzibar"})["records"] == []
    # a visible difference is other content: an escape's printable tail
    assert gateway.result("meta/agent_memory/remember", {"identity": ID, "title": TITLE,
                                                         "body": BODY.replace(" Q", "\x1b[8m Q")})["created"]
    # a separator splitting a word is shown as a space: the word split in two, which fold 3 reads as the same
    # letters (whitespace put into a word), so it is refused as well
    _refused(gateway.rpc("meta/agent_memory/remember", {"identity": ID, "title": TITLE,
                                                        "body": BODY.replace("quokkaz", "quokka\x1cz")}))


def test_an_erase_takes_the_copies_that_differ_by_a_control(gateway: GatewayProcess) -> None:
    ident = ID + "-closure"
    first = gateway.result("meta/agent_memory/remember", {"identity": ident, "title": TITLE, "body": BODY})
    copies = [gateway.result("meta/agent_memory/remember", {"identity": ident, "title": TITLE, "body": body})
              for body in SLIPPED[:3]]
    assert all(c["created"] for c in copies)
    out = gateway.result("meta/agent_memory/erase", {"identity": ident, "memory_id": first["memory_id"]})
    assert out["count"] == 4, out
    assert gateway.result("meta/agent_memory/recall", {"identity": ident, "query_text": "quokkazanzibar"})["records"] == []
