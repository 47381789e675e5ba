"""Variation selectors as a data channel ("emoji smuggling"): any bytes encoded as a run of selectors
(U+FE00-U+FE0F for 0-15, U+E0100-U+E01EF for 16-255) after one visible character are refused by the
write rule and stripped by every renderer, while ordinary emoji and ideographic variation sequences pass."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from meta_memory.agent_memory.fields import FieldError, check_text_field, normalize_metadata, normalize_tags
from meta_memory.injection.defang import neutralise
from meta_memory.textfold import has_hidden_text, has_smuggled_selectors, is_invisible, strip_smuggled_selectors


def smuggle(data: bytes) -> str:
    return "".join(chr(0xFE00 + b) if b < 16 else chr(0xE0100 + b - 16) for b in data)


ORDINARY = [
    "\u2764\ufe0f", "\u263a\ufe0f", "\U0001F44D\U0001F3FD", "\U0001F1EC\U0001F1E7", "\U0001F1EF\U0001F1F5",
    "\U0001F468\u200d\U0001F469\u200d\U0001F467\u200d\U0001F466", "\U0001F3F3\ufe0f\u200d\U0001F308",
    "\U0001F441\ufe0f\u200d\U0001F5E8\ufe0f", "\u2764\ufe0f\u200d\U0001F525", "1\ufe0f\u20e3", "#\ufe0f\u20e3",
    "\u2139\ufe0f", "\u00a9\ufe0f", "\u2122\ufe0f", "\u203c\ufe0f", "\u21a9\ufe0e", "\u2600\ufe0e",
    "\U0001F469\U0001F3FD\u200d\U0001F4BB", "\u845b\U000E0100", "\u8fbb\U000E0101", "\u9f8d\ufe00",
]
_visible = st.characters(blacklist_categories=("Cs", "Cc", "Mn", "Me", "Cf", "Zs", "Zl", "Zp", "Co", "Cn"))
# any text around the payload but NUL and tag characters (refused by rules of their own)
_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00").filter(
    lambda c: not 0xE0000 <= ord(c) <= 0xE007F), max_size=20)


@given(_text, _visible, st.binary(min_size=2, max_size=64), _text)
def test_a_smuggled_payload_of_any_bytes_is_refused(before: str, carrier: str, payload: bytes, after: str) -> None:
    text = f"{before}{carrier}{smuggle(payload)}{after}"
    assert has_smuggled_selectors(text) and has_hidden_text(text)
    with pytest.raises(FieldError) as exc:
        check_text_field("body", f"note {text}")
    assert exc.value.field == "body" and "variation selectors" in exc.value.rule
    out = neutralise(text)
    assert smuggle(payload) not in out and not has_smuggled_selectors(out)
    assert neutralise(out) == out


@given(st.binary(min_size=1, max_size=1))
def test_one_smuggled_byte_after_a_letter_or_at_the_start_is_refused(payload: bytes) -> None:
    for text in (f"a{smuggle(payload)}", smuggle(payload), f"x {smuggle(payload)}", f"\u200d{smuggle(payload)}"):
        assert has_smuggled_selectors(text), repr(text)
        assert strip_smuggled_selectors(text) == text.replace(smuggle(payload), "")


@pytest.mark.parametrize("emoji", ORDINARY)
def test_ordinary_emoji_and_ideographic_variants_are_accepted_whole(emoji: str) -> None:
    text = f"Team mood {emoji} today, {emoji}{emoji} again"
    assert not has_hidden_text(text)
    check_text_field("body", text)
    check_text_field("title", emoji)
    assert normalize_tags([f"mood{emoji}"]) == (f"mood{emoji}",)
    assert normalize_metadata({"k": emoji}, "metadata") == {"k": emoji}
    # a metadata key follows the name rule instead: a selector or joiner in it would let it show as another key
    shows_as_another = any(is_invisible(ch) for ch in emoji)
    with pytest.raises(FieldError) if shows_as_another else contextlib.nullcontext():
        normalize_metadata({f"k{emoji}": 1}, "metadata")
    # accepted and stored whole, but the model is given the visible characters alone: a selector or a joiner
    # picks a glyph the model does not need, and each could carry a hidden bit or byte
    assert neutralise(text) == "".join(ch for ch in text if not is_invisible(ch))


@given(st.lists(st.sampled_from(ORDINARY), min_size=1, max_size=8), st.lists(_text, min_size=8, max_size=8))
def test_ordinary_emoji_among_any_text_are_kept_by_the_renderer(emoji: list[str], filler: list[str]) -> None:
    text = " ".join(f"{f} {e}" for f, e in zip(filler, emoji))
    out = strip_smuggled_selectors(text)
    for e in emoji:
        assert e in out
    assert strip_smuggled_selectors(out) == out


def test_metadata_tags_and_ledger_fields_refuse_a_run() -> None:
    run = "x" + smuggle(b"wire funds")
    with pytest.raises(FieldError) as exc:
        normalize_metadata({"note": run}, "metadata")
    assert exc.value.field == "metadata"
    with pytest.raises(FieldError):
        normalize_metadata({run: 1}, "metadata")
    with pytest.raises(FieldError) as exc:
        normalize_tags(["ok", run])
    assert exc.value.field == "tags.1"
