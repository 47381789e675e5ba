"""The one rule for identity and realm names (``identity.py``), as properties: whatever it accepts is a
fixed point (parsing it again gives it back), holds no control, invisible or direction-changing
character, and is in Unicode NFC form, so two names that display alike are one name or one refusal."""

from __future__ import annotations

import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from meta_memory.identity import parse_identity, parse_realm

_HIDDEN = set("\u061c\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2060\u2061\u2062\u2063\u2064"
              "\u2066\u2067\u2068\u2069\ufeff") | {chr(c) for c in range(0x80, 0xA0)}
#: blank or ignorable characters that are not format characters: fillers, the braille blank, the combining
#: grapheme joiner, variation selectors (standard, Mongolian, supplement)
_BLANK = {chr(c) for c in [0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x2800, 0x3164, 0xFFA0,
                           *range(0x180B, 0x1810), *range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0)]}


def _shows_nothing(ch: str) -> bool:
    return ch in _HIDDEN or ch in _BLANK or unicodedata.category(ch) == "Cf"


_invisible = st.sampled_from(sorted(_BLANK)) | st.characters(categories=["Cf"])
_names = st.text(st.characters(codec="utf-8"), min_size=1, max_size=24) | st.sampled_from(
    ["Caf\u00e9", "Cafe\u0301", "\u202ehr", "lead:main", "a\u200bb", "\u65e5\u672c", " hr ", "rt:ops:1:2"]) | st.builds(
    lambda a, ch, b: a + ch + b, st.text(min_size=1, max_size=8), _invisible, st.text(max_size=8))


@settings(max_examples=400, deadline=None)
@given(_names)
def test_an_accepted_realm_is_a_fixed_point_in_nfc_with_nothing_hidden(name: str) -> None:
    try:
        realm = parse_realm(name)
    except ValueError as exc:
        assert str(exc).startswith("realm must"), exc
        return
    assert parse_realm(realm) == realm
    assert unicodedata.is_normalized("NFC", realm)
    assert not any(_shows_nothing(c) for c in realm) and all(ord(c) >= 0x20 and ord(c) != 0x7F for c in realm)


@settings(max_examples=400, deadline=None)
@given(_names)
def test_two_spellings_of_one_identity_are_never_two_identities(name: str) -> None:
    composed, decomposed = unicodedata.normalize("NFC", name), unicodedata.normalize("NFD", name)
    accepted = set()
    for spelling in (composed, decomposed):
        try:
            accepted.add(parse_identity(spelling))
        except ValueError as exc:
            assert str(exc).startswith("identity must"), exc
    assert len(accepted) <= 1


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(codec="utf-8"), max_size=8), _invisible, st.text(st.characters(codec="utf-8"), max_size=8))
def test_a_name_holding_an_invisible_character_is_refused_as_one(before: str, invisible: str, after: str) -> None:
    for parse, field in ((parse_identity, "identity"), (parse_realm, "realm")):
        try:
            parse("n" + before + invisible + after + "n")
        except ValueError as exc:
            assert str(exc).startswith(f"{field} must"), exc
        else:
            raise AssertionError(f"{field} {before + invisible + after!r} accepted")


def test_the_invisible_class_holds_every_invisible_code_point() -> None:
    """The name rule's character class (scanned over the planes that hold format characters) is the
    whole of the one definition, over every code point."""
    import re
    import sys

    from meta_memory.textfold import invisible_characters, is_invisible

    pattern = re.compile(invisible_characters())
    every = [cp for cp in range(0x80, sys.maxunicode + 1) if is_invisible(chr(cp))]
    assert all(pattern.fullmatch(chr(cp)) for cp in every)
    assert len(pattern.findall("".join(chr(cp) for cp in range(0x80, 0x30000)))) == sum(cp < 0x30000 for cp in every)


_OTHER_DIGITS = st.characters(categories=["Nd"]).filter(lambda ch: not ch.isascii())


@settings(max_examples=200, deadline=None)
@given(st.text(st.sampled_from("0123456789"), max_size=3), _OTHER_DIGITS, st.text(st.sampled_from("0123456789"), max_size=3))
def test_a_respawn_generation_is_ascii_digits_or_the_name_is_refused(before: str, digit: str, after: str) -> None:
    """``rt:lead:main:1`` is ``lead:main``; a generation holding an Arabic-Indic, fullwidth or any other
    script's digit is neither ``lead:main`` nor a name of its own: refused, naming the rule."""
    assert parse_identity("rt:lead:main:" + before + "7" + after) == "lead:main"
    try:
        parse_identity("rt:lead:main:" + before + digit + after)
    except ValueError as exc:
        assert "ASCII digits" in str(exc) or str(exc).startswith("identity must"), exc
    else:
        raise AssertionError(f"rt:lead:main:{before}{digit}{after} was accepted")
