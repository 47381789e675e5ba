"""Valid Unicode round-trips byte for byte through remember -> recall:
emoji with skin-tone modifiers and ZWJ sequences, right-to-left text, combining marks, CJK.
Titles are stored whitespace-compacted and bodies trimmed (the store's documented normalisation);
everything else comes back exactly as sent, over the wire as UTF-8."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz_support import Fuzzed
from meta_memory.agent_memory.fields import shows_nothing

pytestmark = pytest.mark.gateway

PIECES = [
    "👩🏽‍💻", "👨‍👩‍👧‍👦", "🏳️‍🌈", "👍🏿", "🧑🏻‍🤝‍🧑🏾", "❤️‍🔥",          # ZWJ sequences, skin tones, VS16
    "שלום", "مرحبا", "\u202eevil\u202c", "\u200f", "\u200e",        # RTL, bidi controls
    "e\u0301", "n\u0303", "\u0915\u094d\u0937", "Å", "Å",            # combining marks, NFC/NFD twins
    "漢字", "カタカナ", "한국어", "ß", "ﬁ", "Ⅻ", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",          # CJK, compatibility forms
    " ", "\t", "\n", "\u3000", "\u00a0", "word", "x", "'", '"', "\\", "%", "_",
]

texts = st.lists(st.sampled_from(PIECES), min_size=1, max_size=24).map("".join)


def _expected_title(title: str) -> str:
    return " ".join(title.split())


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(title=texts, body=texts, tag=texts)
def test_unicode_round_trips_through_remember_and_recall(fz: Fuzzed, title: str, body: str, tag: str) -> None:
    want_title, want_body = _expected_title(title), body.strip()
    if not want_title or not want_body or len(want_title.encode()) > 200 or len(tag.strip().encode()) > 64:
        return
    ident = f"fuzz:uni:{fz.inputs}"  # a fresh scope per example (exact-content dedup would return an older record)
    out = fz.call("meta/agent_memory/remember", {"identity": ident, "title": title, "body": body, "tags": [tag]})
    # a title, body or tag of only invisible or control characters, or a blank tag: refused naming one of them, nothing written
    broken = {name for name, text in (("title", want_title), ("body", want_body)) if shows_nothing(text)}
    broken |= {"tags.0"} if not tag.strip() or shows_nothing(tag.strip()) else set()
    if broken:
        assert out["error"]["data"]["field"] in broken, out
        assert fz.call("meta/agent_memory/manifest", {"identity": ident, "tier": "full"})["result"]["records"] == []
        return
    assert "result" in out, out
    rec = out["result"]
    assert (rec["title"], rec["body"]) == (want_title, want_body)
    got = fz.call("meta/memory/panel/record", {"memory_id": rec["memory_id"]})["result"]["record"]
    assert got["title"].encode("utf-8") == want_title.encode("utf-8")
    assert got["body"].encode("utf-8") == want_body.encode("utf-8")
    want_tags = [t for t in [tag.strip().translate({c: c + 32 for c in range(65, 91)})] if t]
    assert got["tags"] == want_tags
    listed = fz.call("meta/agent_memory/recall", {"identity": ident, "selection": "always", "max_entries": 64})
    assert any(r["memory_id"] == rec["memory_id"] and r["body"] == want_body for r in listed["result"]["records"])


def test_response_bytes_are_utf8_not_ascii_escapes(fz: Fuzzed) -> None:
    title, body = "👩🏽‍💻 שלום e\u0301", "مرحبا 👨‍👩‍👧‍👦 漢字"
    resp = fz.post(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "meta/agent_memory/remember",
                               "params": {"identity": "fuzz:wire", "title": title, "body": body}},
                              ensure_ascii=False).encode("utf-8"))
    assert title.encode("utf-8") in resp.content and body.encode("utf-8") in resp.content


def test_recall_finds_records_by_words_of_any_script(fz: Fuzzed) -> None:
    ident = "fuzz:scripts"
    ids = {}
    for word in ("שלום", "مرحبا", "漢字テスト", "café"):
        ids[word] = fz.call("meta/agent_memory/remember", {"identity": ident, "title": f"note {word}",
                                                           "body": f"the word {word} appears here"})["result"]["memory_id"]
    for word, mid in ids.items():
        got = fz.call("meta/agent_memory/recall", {"identity": ident, "query_text": word})["result"]["records"]
        assert [r["memory_id"] for r in got][:1] == [mid], (word, got)
