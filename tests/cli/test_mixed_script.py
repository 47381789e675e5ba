"""The rule of which words mix look-alike alphabets (``meta_memory.mixed_script``), the terminal's marks by
it, and the console page's copy of its table (generated, so the two cannot drift apart)."""

from __future__ import annotations

import sys
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.table import Table

from meta_memory.console.routes import STATIC_DIR
from meta_memory.mixed_script import LOOKALIKE_SCRIPTS, console_table, mixed_script_words, mixed_scripts, script_of
from meta_memory.terminal import MARK_STYLE, legend, printable, text
from meta_memory.textfold import LOOK_ALIKE_LETTERS

NAMES = [name for name, _ in LOOKALIKE_SCRIPTS]


def _letters(script: str) -> list[str]:
    spans = dict(LOOKALIKE_SCRIPTS)[script]
    return [chr(cp) for lo, hi in spans for cp in range(lo, min(hi, 0x2FFFF) + 1)
            if unicodedata.category(chr(cp)).startswith("L")][:400]


LETTERS = {name: _letters(name) for name in NAMES}


def word_in(script: str) -> st.SearchStrategy[str]:
    return st.text(st.sampled_from(LETTERS[script]), min_size=1, max_size=8)


def test_the_console_reads_the_table_the_shell_marks_by() -> None:
    """``lookalike_scripts.js`` is generated from ``LOOKALIKE_SCRIPTS``; the page loads it before its script."""
    assert (STATIC_DIR / "lookalike_scripts.js").read_text(encoding="utf-8") == console_table()
    page = (STATIC_DIR / "index.html").read_text(encoding="utf-8")
    assert page.index('src="static/lookalike_scripts.js"') < page.index('src="static/console.js"')
    assert "p{Script=" not in (STATIC_DIR / "console.js").read_text(encoding="utf-8")  # no second copy of the rule


def test_the_table_agrees_with_the_letters_unicode_names_after_each_alphabet() -> None:
    """Every letter Python's Unicode database names ``LATIN …``, ``CYRILLIC …``, ``GREEK …``, ``ARMENIAN …``,
    ``CHEROKEE …``, ``COPTIC …``, ``LISU …`` or ``CANADIAN SYLLABICS …`` is in that alphabet's ranges (but GREEK NUMERAL SIGN, which Unicode puts in no script);
    the ranges never overlap."""
    named = {name.upper(): name for name in NAMES}
    for cp in range(sys.maxunicode + 1):
        char = chr(cp)
        first = unicodedata.name(char, "").replace("CANADIAN SYLLABICS", "CANADIAN_SYLLABICS").split(" ")[0]
        first = first.replace("_", " ")
        if first in named and unicodedata.category(char).startswith("L") and cp != 0x0374:
            assert script_of(char) == named[first], (hex(cp), unicodedata.name(char))
    spans = sorted(span for _, ranges in LOOKALIKE_SCRIPTS for span in ranges)
    assert all(a[1] < b[0] for a, b in zip(spans, spans[1:]))


def test_every_lookalike_letter_of_another_alphabet_in_a_latin_word_is_marked() -> None:
    for char, latin in LOOK_ALIKE_LETTERS.items():
        if script_of(char) in (None, "Latin"):  # Latin small capitals, dotless i: one alphabet with ASCII
            continue
        word = f"p{char}ss"
        assert mixed_scripts(word) == ("Latin", script_of(char)), (char, latin)


@settings(max_examples=200)
@given(st.data())
def test_a_word_in_one_alphabet_is_never_marked_and_one_letter_of_another_marks_it(data: st.DataObject) -> None:
    one, other = data.draw(st.lists(st.sampled_from(NAMES), min_size=2, max_size=2, unique=True))
    word = data.draw(word_in(one))
    assert mixed_scripts(word) == () and mixed_script_words(f"{word} 42") == []
    at = data.draw(st.integers(0, len(word)))
    mixed = word[:at] + data.draw(st.sampled_from(LETTERS[other])) + word[at:]
    assert mixed_scripts(mixed) == tuple(n for n in NAMES if n in (one, other))
    # only the mixed word is marked, at its offsets; words each in one alphabet beside it are not
    line = f"{word}, {mixed}: {data.draw(word_in(other))}"
    start = len(word) + 2
    assert mixed_script_words(line) == [(start, start + len(mixed), mixed_scripts(mixed))]


def _words_by_category(text: str) -> list[tuple[int, int, tuple[str, ...]]]:
    """The words of ``text`` read one character at a time (general categories L, M, N), those mixing kept."""
    out, start = [], None
    for at, char in enumerate(text + " "):
        if at < len(text) and unicodedata.category(char)[0] in "LMN":
            start = at if start is None else start
            continue
        if start is not None and mixed_scripts(text[start:at]):
            out.append((start, at, mixed_scripts(text[start:at])))
        start = None
    return out


_MIXED_TEXT = st.text(st.sampled_from(LETTERS["Latin"][:60] + LETTERS["Cyrillic"][:30] + LETTERS["Greek"][:20]
                                      + list("12_- ·\u0301\u0669\u00b2\u2160\u200b\n\u4e00")), max_size=30)


@settings(max_examples=300)
@given(st.one_of(_MIXED_TEXT, st.text(max_size=30)))
def test_the_words_found_are_the_runs_of_letters_marks_and_digits(value: str) -> None:
    assert mixed_script_words(value) == _words_by_category(value)


@given(st.text(max_size=40))
def test_a_mark_adds_no_character(value: str) -> None:
    shown = text(value)
    assert shown.plain == printable(value)
    marked = [shown.plain[s.start:s.end] for s in shown.spans if s.style == MARK_STYLE]
    assert marked == [shown.plain[a:b] for a, b, _ in mixed_script_words(shown.plain)]


def test_the_legend_names_each_marked_word_once_by_its_alphabets() -> None:
    table = Table(title=text("quarantined records of lead:ma\u0456n"))
    table.add_column("title")
    for title in ("P\u0430yroll", "P\u0430yroll again", "\u0391lpha", "Meeting встреча", "plain"):
        table.add_row(text(title))
    note = legend(table)
    assert note is not None and note.plain.splitlines() == [
        "marked: ma\u0456n, P\u0430yroll (mixes Latin and Cyrillic letters: may imitate another word)",
        "marked: \u0391lpha (mixes Latin and Greek letters: may imitate another word)"]
    assert legend(text("Meeting встреча"), text("lead:main")) is None
    many = legend(text(" ".join(f"w{n}\u0430" for n in range(7))))
    assert many is not None and many.plain.startswith("marked: w0\u0430, w1\u0430, w2\u0430, w3\u0430, w4\u0430 and 2 more (")
