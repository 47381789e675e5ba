"""Property tests of the one neutralisation over generated spellings an attacker controls: any bracket-like
character before the words (ASCII, Unicode opening punctuation and quotes, look-alikes, HTML, URL and
backslash escapes), any run of separators between them, look-alike letters of other scripts (Cherokee,
Lisu, Coptic, Cyrillic, Greek) and any case; the result carries no marker, is idempotent, and
renderers also drop every bidirectional control."""

from __future__ import annotations

import re
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from meta_memory.injection.defang import BIDI_CONTROLS, defang, marker_skeleton, neutralise
from meta_memory.textfold import LOOK_ALIKE_LETTERS

_FORGED = re.compile(r"[<\[({][\W_]{0,16}(?:(?:meta|mobkit)[\W_]*memory[\W_]*observation|mem[\W_]*token[\W_]*:)")


def forged_left(text: str) -> bool:
    return _FORGED.search(marker_skeleton(text)[0]) is not None


_OPENING = [chr(c) for c in range(0x80, 0x3100)
            if unicodedata.category(chr(c)) in ("Ps", "Pi") and unicodedata.normalize("NFKC", chr(c)).isprintable()]
_openers = st.one_of(
    st.sampled_from(["<", "[", "(", "{", "＜", "［", "（", "｛", "﹤", "˂", "‹", "«", "〈", "⟨", "「", "【"]),
    st.sampled_from(_OPENING),
    st.sampled_from(["&lt;", "&LT", "&lt", "&#60;", "&#060;", "&#x3c;", "&#X3C;", "&amp;lt;", "&lsqb;", "&lpar;",
                     "&lcub;", "&lang;", "%3c", "%3C", "%253C", "\\u003c", "\\x3c", "\\u{3c}", "&#91;", "&#x28;"]),
)
# any character that is not a letter or a digit can stand between the words
_separator_chars = st.characters(
    codec="utf-8", categories=("Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs"),
).filter(lambda c: not any(x.isalnum() for x in unicodedata.normalize("NFKC", c)))  # 🈀 is ほか: letters
_separators = st.one_of(st.just(""), st.text(alphabet=_separator_chars, min_size=1, max_size=4),
                        st.sampled_from(["~", "/", "+", "_", "-", ".", ":", " ", "|", "*", "\u200b", "&#95;"]))
_look_alikes: dict[str, list[str]] = {}
for _char, _latin in LOOK_ALIKE_LETTERS.items():
    _look_alikes.setdefault(_latin, []).append(_char)


@st.composite
def _word(draw: st.DrawFn, word: str) -> str:
    out = []
    for letter in word:
        choice = draw(st.integers(0, 3))
        if choice == 0 and letter in _look_alikes:
            out.append(draw(st.sampled_from(_look_alikes[letter])))
        elif choice == 1:
            out.append(letter.upper())
        else:
            out.append(letter)
    return "".join(out)


@st.composite
def forged_markers(draw: st.DrawFn) -> str:
    opener = draw(_openers)
    gap = draw(st.sampled_from(["", " ", "/", " / ", "\u200b", "／"]))
    if draw(st.booleans()):
        words = [draw(_word(draw(st.sampled_from(["meta", "mobkit"])))), draw(_word("memory")),
                 draw(_word("observation"))]
        return opener + gap + words[0] + draw(_separators) + words[1] + draw(_separators) + words[2]
    colon = draw(st.sampled_from([":", "：", "∶", " :", "&colon;", "&#58;", "%3a", "~:"]))
    return opener + gap + draw(_word("mem")) + draw(_separators) + draw(_word("token")) + colon


_filler = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Ps", "Pi")), max_size=20)


@settings(max_examples=400, deadline=None)
@given(_filler, forged_markers(), _filler, forged_markers(), _filler)
def test_no_generated_spelling_survives(a: str, m1: str, b: str, m2: str, c: str) -> None:
    assert forged_left(m1) and forged_left(m2)
    out, hits = defang(a + m1 + b + m2 + c)
    assert hits >= 2
    assert not forged_left(out)
    assert defang(out) == (out, 0)  # idempotent


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(forged_markers(), _filler, st.sampled_from(sorted(BIDI_CONTROLS))), max_size=8))
def test_renderers_drop_every_bidi_control_and_every_marker(pieces: list[str]) -> None:
    out = neutralise("".join(pieces))
    assert not set(out) & BIDI_CONTROLS
    assert not forged_left(out)
    assert neutralise(out) == out


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_any_text_is_total_and_idempotent(text: str) -> None:
    out, _ = defang(text)
    assert not forged_left(out)
    assert defang(out) == (out, 0)


def test_prose_without_a_bracket_is_left_alone() -> None:
    for prose in ("mem-token: 5", "memory observation <b>bold</b>", "the meta memory observation tag",
                  "AT&T and R&D cost 50% more &#169;", "&lt;b&gt;bold&lt;/b&gt;", "50%3 done", "path\\x"):
        assert defang(prose) == (prose, 0), prose


def test_a_long_adversarial_input_is_linear() -> None:
    # runs of brackets, separators and escapes the matcher must not try quadratically
    for piece in ("<" * 20 + "meta" + "~" * 60, "&lt;" * 50 + "mem" + "/" * 60, "(" + "~" * 70 + "meta"):
        text = piece * 2000
        out, _ = defang(text)
        assert not forged_left(out)
