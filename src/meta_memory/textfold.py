"""Unicode folding shared by the firewall's matchers (secret scan, tool-name classification).

An attacker can hide a marker, a key or a tool name behind characters a reader
never sees or reads as ASCII: zero-width spaces and joiners, the word joiner,
the BOM, soft hyphens, bidi controls and tag characters (Unicode category
``Cf``), combining marks and variation selectors (``Mn``, ``Me``), control
characters (``Cc``, but tab and line breaks), blank-looking letters (Hangul
fillers, the braille blank), fullwidth and other compatibility forms (folded by NFKC) and Unicode
dashes. :func:`fold` removes the first, applies NFKC and reads every dash as
``-``. It never raises; ASCII text is returned unchanged.

Letters of other scripts that look Latin (Cyrillic ``е``, Greek ``Η``, small capitals) are not
folded by :func:`fold`; :func:`unconfuse` reads them as the Latin letters, for the matchers where a
look-alike must count as the original (markers, and the rules that make a tool untrusted).
"""

from __future__ import annotations

import re
import sys
import unicodedata
from functools import lru_cache

__all__ = [
    "BIDI_CONTROLS",
    "escape_char",
    "INVISIBLE_FILLERS",
    "LOOK_ALIKE_LETTERS",
    "fold",
    "fold_table",
    "has_hidden_tags",
    "has_hidden_text",
    "has_private_use",
    "has_smuggled_selectors",
    "ignorable_code_points",
    "invisible_characters",
    "is_invisible",
    "strip_controls",
    "strip_hidden_tags",
    "strip_hidden_text",
    "strip_ignorable",
    "strip_invisible",
    "strip_smuggled_selectors",
    "unconfuse",
    "unconfuse_separators",
    "SEPARATOR_LOOK_ALIKES",
]


#: Unicode tag characters (U+E0000-U+E007F) outside an emoji tag sequence: invisible to a reader,
#: read by a model as the ASCII they shadow ("ASCII smuggling"). Group 1 is an emoji subdivision flag
#: (U+1F3F4, 2-7 tag digits or lower-case tag letters, U+E007F CANCEL TAG: the form of
#: ``unicode_subdivision_id``, e.g. the flag of England), their one legitimate use, which is kept.
#: The only tag sequences Unicode recommends for display (RGI emoji flag tag sequences): the flags of
#: England, Scotland and Wales (black flag, tag letters ``gbeng`` / ``gbsct`` / ``gbwls``, cancel tag).
#: Any other run of tag characters, however well formed, can spell hidden text and is not one of them.
_FLAG_TAGS = ("gbeng", "gbsct", "gbwls")
_TAGS = re.compile(
    "(\U0001F3F4(?:" + "|".join("".join(chr(0xE0000 + ord(c)) for c in flag) for flag in _FLAG_TAGS)
    + ")\U000E007F)|[\U000E0000-\U000E007F]+"
)


def has_hidden_tags(text: str) -> bool:
    """Whether ``text`` holds a Unicode tag character (U+E0000-U+E007F) outside the three recommended
    emoji flag tag sequences (England, Scotland, Wales: :data:`_FLAG_TAGS`)."""
    if text.isascii():
        return False
    return any(m.group(1) is None for m in _TAGS.finditer(text))


def strip_hidden_tags(text: str) -> str:
    """``text`` without the tag characters :func:`has_hidden_tags` finds (emoji flag sequences kept). Idempotent."""
    if text.isascii() or not has_hidden_tags(text):
        return text
    return _TAGS.sub(lambda m: m.group(1) or "", text)


#: Variation selectors: VS1-VS16 (U+FE00-U+FE0F) and the ideographic VS17-VS256 (U+E0100-U+E01EF).
#: They render as nothing; 256 of them are one byte each, so a run after one visible character
#: carries any bytes a model can be taught to decode ("emoji smuggling").
_SELECTORS = re.compile("[\uFE00-\uFE0F\U000E0100-\U000E01EF]")
#: The general categories of the characters that take VS15/VS16 (text or emoji presentation):
#: every base of Unicode's emoji variation sequences is a symbol, a punctuation mark or a digit
#: (``#``, ``*``, ``0``-``9`` of the keycaps), but U+2139 INFORMATION SOURCE, a letter.
_PRESENTATION_BASES = frozenset({"So", "Sm", "Sk", "Po", "Pd", "Nd"})


#: The CJK unified and compatibility ideograph blocks (the bases of ideographic variation sequences).
_CJK_IDEOGRAPHS = ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x2FA1F), (0x30000, 0x323AF))


def _ranges_class(ranges: list[tuple[int, int]]) -> str:
    """The inside of a regex character class holding the code point ``ranges`` (inclusive pairs)."""
    return "".join(re.escape(chr(lo)) if lo == hi else f"{re.escape(chr(lo))}-{re.escape(chr(hi))}" for lo, hi in ranges)


@lru_cache(maxsize=1)
def _stray_selector() -> re.Pattern[str]:
    """One variation selector that does not fit (built once, on first use): a selector next to another
    selector; VS4-VS14 anywhere; VS1-VS3 or an ideographic selector not after a CJK ideograph; VS15/VS16
    not after a symbol, punctuation mark or digit (the categories of :data:`_PRESENTATION_BASES`, below
    U+20000) or U+2139. A selector first in the text has nothing before it, so it fits nowhere either."""
    bases: list[tuple[int, int]] = []
    for o in range(0x20000):
        if unicodedata.category(chr(o)) in _PRESENTATION_BASES or o == 0x2139:
            if bases and bases[-1][1] == o - 1:
                bases[-1] = (bases[-1][0], o)
            else:
                bases.append((o, o))
    sel = "\uFE00-\uFE0F\U000E0100-\U000E01EF"
    cjk = _ranges_class(list(_CJK_IDEOGRAPHS))
    ideographic = "\uFE00-\uFE02\U000E0100-\U000E01EF"
    # every alternative consumes a selector first and looks back after it, so the large classes are
    # consulted only at a selector, never at every character
    return re.compile(
        f"[{sel}](?:(?=[{sel}])|(?<=[{sel}][{sel}]))|[\uFE03-\uFE0D]"
        f"|[{ideographic}](?<![{cjk}][{ideographic}])"
        f"|[\uFE0E\uFE0F](?<![{_ranges_class(bases)}][\uFE0E\uFE0F])"
    )


def has_smuggled_selectors(text: str) -> bool:
    """Whether ``text`` holds a variation selector (U+FE00-U+FE0F, U+E0100-U+E01EF) that is not a single
    selector directly after a character that takes it: VS15/VS16 after a symbol, punctuation mark or digit
    (or U+2139 INFORMATION SOURCE), VS1-VS3 or one ideographic selector after a CJK ideograph. Emoji such
    as ``❤️``, keycaps, ZWJ sequences and ideographic variation sequences pass; a run of two or more
    selectors, or one after a letter, a space or at the start of the text, is hidden data."""
    if text.isascii() or _SELECTORS.search(text) is None:
        return False
    return _stray_selector().search(text) is not None


def strip_smuggled_selectors(text: str) -> str:
    """``text`` without the selectors :func:`has_smuggled_selectors` finds (fitting ones kept). Idempotent:
    only selectors are removed, so a kept selector keeps its base and its non-selector neighbours."""
    if not has_smuggled_selectors(text):
        return text
    return _stray_selector().sub("", text)


#: Private-use code points (U+E000-U+F8FF, and planes 15 and 16: U+F0000-U+FFFFD, U+100000-U+10FFFD) and
#: noncharacters (U+FDD0-U+FDEF and the last two code points of every plane, U+xFFFE and U+xFFFF). Neither
#: has a meaning a reader or a model shares: a glyph, if any, comes from a private font. Each plane of
#: private use holds 65,534 of them, so one code point a byte (U+F0000 + b) carries any text, which a model
#: can be taught to decode while a person sees boxes or nothing.
_PRIVATE_CODE_POINTS = (
    (0xE000, 0xF8FF), (0xFDD0, 0xFDEF), *((plane << 16 | 0xFFFE, plane << 16 | 0xFFFF) for plane in range(15)),
    (0xF0000, 0x10FFFF),
)
#: Above U+1FFFE the private code points are sparse (two a plane up to plane 14), and a character class of
#: many ranges above the BMP is slow to test at every character. So a pattern takes every code point from
#: U+1FFFE up, then looks back and lets go of the ones it does not remove: only such rare characters (CJK
#: extension ideographs, plane-14 tags and selectors) pay for the second test.
_ASTRAL = 0x1FFFE


def _removal_pattern(removed: list[tuple[int, int]]) -> re.Pattern[str]:
    """A pattern matching one code point of ``removed`` (inclusive ranges) at a time (see :data:`_ASTRAL`)."""
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted(removed):
        if merged and lo <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
        else:
            merged.append((lo, hi))
    low = [(lo, min(hi, _ASTRAL - 1)) for lo, hi in merged if lo < _ASTRAL]
    kept: list[tuple[int, int]] = []  # the code points from U+1FFFE up that are not removed
    at = _ASTRAL
    for lo, hi in ((max(lo, _ASTRAL), hi) for lo, hi in merged if hi >= _ASTRAL):
        if lo > at:
            kept.append((at, lo - 1))
        at = max(at, hi + 1)
    if at <= 0x10FFFF:
        kept.append((at, 0x10FFFF))
    taken = f"[{_ranges_class(low)}{re.escape(chr(_ASTRAL))}-{re.escape(chr(0x10FFFF))}]"
    return re.compile(taken + (f"(?<![{_ranges_class(kept)}])" if kept else ""))


_PRIVATE = _removal_pattern(list(_PRIVATE_CODE_POINTS))


def has_private_use(text: str) -> bool:
    """Whether ``text`` holds a private-use code point or a noncharacter (:data:`_PRIVATE_CODE_POINTS`)."""
    return not text.isascii() and _PRIVATE.search(text) is not None


def has_hidden_text(text: str) -> bool:
    """Whether ``text`` holds hidden text a write refuses: a tag character outside a recommended flag
    (:func:`has_hidden_tags`), a smuggling variation selector (:func:`has_smuggled_selectors`), or a
    private-use code point or noncharacter (:func:`has_private_use`)."""
    return has_hidden_tags(text) or has_smuggled_selectors(text) or has_private_use(text)


def strip_hidden_text(text: str) -> str:
    """``text`` as every renderer gives it to a model: without what :func:`has_hidden_text` finds and
    without every other invisible character (:func:`is_invisible`: zero-width characters and joiners,
    word joiners, the soft hyphen, every variation selector) and every private-use code point and
    noncharacter (:func:`has_private_use`), an emoji flag's tag sequence kept; each
    :data:`INVISIBLE_FILLERS` blank (a Hangul filler, the braille blank) becomes the space it shows, so
    words it separates are not run together (and the erasure folds read it the same way). A write accepts a single
    selector after a character that takes it and zero-width characters inside text, each of which picks a
    glyph or a join a model does not need, and each of which can carry a bit or a byte: none reaches the
    model. Records stored before a write refused a character keep it; no renderer passes it on. Idempotent."""
    if text.isascii():
        return text
    return _invisible_outside_tags().sub("", strip_hidden_tags(text).translate(_FILLER_SPACES))


def strip_invisible(text: str) -> str:
    """``text`` without every :func:`is_invisible` character (the folding of the erasure register's
    content hash: a text that differs from erased content only by invisible characters is that content),
    each :data:`INVISIBLE_FILLERS` blank read as the space it shows, as the renderers read it
    (:func:`strip_hidden_text`): ``"the\u3164vault"`` is ``"the vault"``, never ``"thevault"``. Idempotent."""
    if text.isascii():
        return text
    return _invisible().sub("", text.translate(_FILLER_SPACES))


#: The control characters (``Cc``) no text a person writes holds and no renderer shows: C0 but tab, line feed
#: and carriage return (vertical tab, form feed and the separators U+001C-U+001F included), DEL, and C1 but
#: the next line U+0085. One inside a word or a marker hides it from a match a model may not make.
_CONTROLS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x84\x86-\x9f]")
#: The controls that separate words (``str.isspace``: vertical tab, form feed, the file, group, record
#: and unit separators) become a space; every other one of :data:`_CONTROLS` is deleted.
_CONTROL_TABLE: dict[int, str | None] = {
    cp: (" " if chr(cp).isspace() else None)
    for cp in (*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), *range(0x7F, 0x85), *range(0x86, 0xA0))
}


def strip_controls(text: str) -> str:
    """``text`` with its control characters but tab, line feed, carriage return and U+0085 taken out: the
    ones that separate words (vertical tab, form feed, U+001C-U+001F, which ``str.split`` reads as
    whitespace) each become a space, every other one (a bell, an escape, a backspace, DEL, a C1 control)
    is deleted. What every renderer applies (:func:`meta_memory.injection.defang.neutralise`) and what the
    erasure register's folds read through, so content that differs from erased content only by such a
    character folds as the text the model is shown: ``"the\x0cbank pin"`` is ``"the bank pin"`` to both,
    ``"pi\x07n"`` is ``"pin"`` to both. Idempotent; text without a control is returned as it is."""
    return text.translate(_CONTROL_TABLE) if _CONTROLS.search(text) is not None else text


#: The bidirectional controls (``Cf``): the Arabic letter mark, the left-to-right and right-to-left marks,
#: embeddings, overrides and their pop, isolates and their pop. They stand where one direction's run meets
#: another's (an Arabic or Hebrew name in English text), so :func:`strip_ignorable` keeps them: removed,
#: they would join the words on either side into one.
BIDI_CONTROLS = frozenset({0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)})


def strip_ignorable(text: str) -> str:
    """``text`` without the characters that show nothing inside a word: every :func:`is_invisible` character
    (zero-width space, non-joiner and joiner, word joiner, BOM, soft hyphen, tag characters, the combining
    grapheme joiner, variation selectors, Unicode's reserved default-ignorable code points...) but the
    :data:`BIDI_CONTROLS` and the :data:`INVISIBLE_FILLERS` (letters that render as blank space). What recall
    reads a word through (:mod:`meta_memory.recall.text`): ``"pass\u200bport"`` is ``"passport"``, as a
    reader sees it. Idempotent; ASCII text is returned unchanged."""
    if text.isascii():
        return text
    return _ignorable().sub("", text)


@lru_cache(maxsize=1)
def ignorable_code_points() -> tuple[int, ...]:
    """Every code point :func:`strip_ignorable` removes, ascending (from the one scan of
    :func:`_invisible_code_points`)."""
    kept = BIDI_CONTROLS | INVISIBLE_FILLERS
    return tuple(cp for cp in _invisible_code_points() if cp not in kept)


@lru_cache(maxsize=1)
def _ignorable() -> re.Pattern[str]:
    return re.compile(_char_class(list(ignorable_code_points())) + "+")


@lru_cache(maxsize=1)
def _invisible() -> re.Pattern[str]:
    return re.compile(invisible_characters())


@lru_cache(maxsize=1)
def _invisible_outside_tags() -> re.Pattern[str]:
    """Every :func:`is_invisible` character but the tag characters (U+E0000-U+E007F), which
    :func:`strip_hidden_tags` has already judged (a recommended flag's sequence stays), and every
    private-use code point and noncharacter (:data:`_PRIVATE_CODE_POINTS`): one pattern, one pass."""
    removed = [(cp, cp) for cp in _invisible_code_points() if not 0xE0000 <= cp <= 0xE007F]
    return _removal_pattern([*removed, *_PRIVATE_CODE_POINTS])


#: Letters of other scripts (and Latin small capitals, the dotless i) a reader takes for a Latin letter,
#: each mapped to that lower-case ASCII letter. Capitals are listed apart where their lower case looks
#: like another letter (Greek ``Ν`` is N, ``ν`` is v). Used where a name or marker must match in
#: whatever script it is spelled: the markers of :mod:`meta_memory.injection.defang` and the tool and
#: server names of :mod:`meta_memory.firewall.classify`. Sources: Unicode's confusables (UTS #39) for
#: Cyrillic, Greek, Armenian, Latin IPA and small capitals, Cherokee (capitals; their small letters
#: are added below), Lisu, Coptic and Canadian syllabics.
_LOOK_ALIKES: dict[str, str] = {
    "a": "аАαΑɑᴀ" "ᎪꓮⲀⲁᗅ", "b": "ВьЬΒʙ" "ᏴᏏꓐⲂⲃᗷ", "c": "сСϲᴄ" "ᏟꓚⲤⲥᑕ", "d": "ԁᴅ" "ᎠᏧꓓᗞ",
    "e": "еЕёЁεΕᴇҽ" "ᎬꓰⲈⲉ", "f": "ꓝ", "g": "ɡɢ" "Ꮐꓖ", "h": "һНΗʜհ" "ᎻᏂꓧⲎⲏᕼ",
    "i": "іІıιΙɪ" "ᎥꓲⲒⲓɩ", "j": "јЈᴊ" "Ꭻꓙᒍ", "k": "кКκΚᴋ" "ᏦꓗⲔⲕ", "l": "ʟӏ" "Ꮮꓡᒪ",
    "m": "мМΜᴍ" "ᎷꓟⲘⲙ", "n": "пΝɴո" "ꓠⲚⲛ", "o": "оОοΟᴏօ" "ꓳⲞⲟഠ౦", "p": "рРρΡᴘ" "ᏢꓑⲢⲣᑭ",
    "q": "ԛ", "r": "гʀ" "ᎡᏒꓣᖇ", "s": "ѕЅꜱ" "ᏚᏕꓢᔕƽ", "t": "тТτΤᴛ" "ᎢꓔⲦⲧ", "u": "υᴜս" "ꓴʋ",
    "v": "νᴠѵ" "Ꮩꓦᐯ", "w": "ԝᴡ" "ᎳᏔꓪᗯ", "x": "хХΧ" "ꓫⲬⲭ᙭", "y": "уУүγΥʏ" "ᎩꓬⲨⲩɣ", "z": "Ζᴢ" "Ꮓꓜ",
}
LOOK_ALIKE_LETTERS: dict[str, str] = {c: t for t, cs in _LOOK_ALIKES.items() for c in cs}
# Cherokee small letters (U+AB70-U+ABBF, U+13F8-U+13FD) look like their capitals; case folding maps
# them to the capitals, but a table read before folding must know them too.
LOOK_ALIKE_LETTERS.update({
    c.lower(): t for c, t in list(LOOK_ALIKE_LETTERS.items())
    if "\u13a0" <= c <= "\u13f5" and c.lower() != c
})
_LOOK_ALIKE_TABLE = str.maketrans(LOOK_ALIKE_LETTERS)


def unconfuse(text: str) -> str:
    """``text`` with every :data:`LOOK_ALIKE_LETTERS` letter replaced by the Latin letter it looks like."""
    return text if text.isascii() else text.translate(_LOOK_ALIKE_TABLE)


#: Letters, digits and marks a reader takes for an ASCII separator, each mapped to it: the entries of Unicode's
#: confusables (UTS #39) whose prototype is one of ``_ - . / : \`` and whose source is a letter, a digit or a
#: mark (so no rule splitting a name at its punctuation splits at it): N'Ko ``ߺ``, Coptic ``Ⲻ`` and ``Ⳇ``,
#: the Arabic-Indic zeros, Lisu ``ꓸ`` and ``ꓽ``, the triangular colon ``ː``, Katakana ``ノ``, the visarga.
SEPARATOR_LOOK_ALIKES: dict[str, str] = {
    "\u07fa": "_", "\u2cba": "-", "\U0001d16d": ".", "\u0660": ".", "\u06f0": ".", "\ua4f8": ".",
    "\u3033": "/", "\u2cc6": "/", "\u30ce": "/", "\u4e3f": "/", "\u0903": ":", "\u0a83": ":", "\u02d0": ":",
    "\ua4fd": ":", "\u4e36": "\\",
}


def unconfuse_separators(text: str) -> str:
    """``text`` with every character a reader takes for an ASCII separator written as that separator: each
    :data:`SEPARATOR_LOOK_ALIKES` character as its separator, and every other modifier letter or modifier symbol
    (Unicode categories ``Lm`` and ``Sk``, which show as a stroke, a dot or an accent beside the letters:
    ``web\u02cdfetch`` with a modifier letter low macron) as ``_``. ASCII text is returned as it is. Read
    after :func:`fold` (NFKC turns the modifier letters that are small Latin letters, ``ʰ``, into those letters)."""
    if text.isascii():
        return text
    return "".join(SEPARATOR_LOOK_ALIKES.get(c) or ("_" if unicodedata.category(c) in ("Lm", "Sk") else c)
                   for c in text)


#: Letters and symbols that render as blank space: Hangul fillers, the braille blank, Khmer inherent vowels, the
#: Khitan small script filler.
INVISIBLE_FILLERS = frozenset({0x115F, 0x1160, 0x3164, 0xFFA0, 0x2800, 0x17B4, 0x17B5, 0x16FE4})
#: ``str.translate`` table: each :data:`INVISIBLE_FILLERS` blank as the space it shows.
_FILLER_SPACES: dict[int, str] = dict.fromkeys(INVISIBLE_FILLERS, " ")
#: Unicode's default-ignorable code points (DerivedCoreProperties.txt, ``Default_Ignorable_Code_Point``) that
#: are not format characters: the combining grapheme joiner, the Mongolian free variation selectors, the
#: variation selectors and their supplement, the Hangul fillers, the Khmer inherent vowels, and the code
#: points Unicode reserves as default-ignorable (a later version may assign them; a renderer shows nothing).
_DEFAULT_IGNORABLE = frozenset({
    0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, *range(0x180B, 0x1810), 0x2065, 0x3164, *range(0xFE00, 0xFE10),
    0xFFA0, *range(0xFFF0, 0xFFF9), *range(0xE0000, 0xE1000),
})


def escape_char(char: str) -> str:
    """``char`` written as its escape, as refusals and terminal output show a character they do not repeat:
    ``\\x1b`` below U+0100, ``\\u202e`` in the Basic Multilingual Plane, ``\\U000e0041`` above it."""
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def is_invisible(char: str) -> bool:
    """Whether ``char`` (one character) shows nothing, or nothing of its own, where it stands: a format
    character (``Cf``: zero-width, bidirectional, soft hyphen, tag, interlinear and musical format
    controls...), a default-ignorable code point (variation selectors, the combining grapheme joiner,
    Hangul fillers) or an :data:`INVISIBLE_FILLERS` blank. The one definition the name rule
    (:mod:`meta_memory.identity`) and the terminal's escaping (:mod:`meta_memory.terminal`) share; the
    console page's ``INVISIBLE`` class is the same set. Control characters are not in it (each caller has
    its own rule for them)."""
    code = ord(char)
    return code in _DEFAULT_IGNORABLE or code in INVISIBLE_FILLERS or unicodedata.category(char) == "Cf"


@lru_cache(maxsize=1)
def invisible_characters() -> str:
    """A regular-expression character class (``"[...]"``) of every :func:`is_invisible` character, built
    once, on first use (about 20 ms of CPU): Unicode places format characters and default-ignorable code
    points in planes 0, 1 and 14 only (:data:`_INVISIBLE_PLANES`), so the rest is not scanned."""
    return _char_class(_invisible_code_points())


@lru_cache(maxsize=1)
def _invisible_code_points() -> list[int]:
    """Every :func:`is_invisible` code point, found once by the one scan of :data:`_INVISIBLE_PLANES` that
    every invisible-character pattern is built from."""
    return [cp for start, stop in _INVISIBLE_PLANES for cp in range(start, stop) if is_invisible(chr(cp))]


#: The code point ranges :func:`invisible_characters` scans: the BMP and plane 1 past ASCII, and plane 14.
_INVISIBLE_PLANES = ((0x80, 0x20000), (0xE0000, 0xF0000))


#: Categories removed: format characters, combining marks (and variation selectors), controls.
_DROPPED = frozenset({"Cf", "Mn", "Me", "Cc"})
#: Control characters :func:`fold` takes out as the renderers do (:func:`strip_controls`'s table, C0 and DEL;
#: the C1 controls go with :func:`fold_table`): removed, but those that separate words (vertical tab, form
#: feed, U+001C-U+001F, and U+0085, which the renderers keep as whitespace) become a space; tab, line feed and
#: carriage return stay.
_FOLD_CONTROLS: dict[int, str | None] = {
    **{cp: to for cp, to in _CONTROL_TABLE.items() if cp < 0x80}, 0x85: " "}  # C1 goes with fold_table


@lru_cache(maxsize=1)
def fold_table() -> dict[int, int | None]:
    """``str.translate`` table: every ``Cf``/``Mn``/``Me``/``Cc`` code point past ASCII (but U+0085, which
    :func:`fold` reads as a space) deleted, every :data:`INVISIBLE_FILLERS` blank as a space (as the
    renderers show it), every ``Pd`` dash and U+2212 as ``-``."""
    table: dict[int, int | None] = {}
    for cp in range(0x80, sys.maxunicode + 1):
        if cp == 0x85:  # next line: whitespace, a space to the renderers (fold's last step makes it one)
            continue
        category = unicodedata.category(chr(cp))
        if cp in INVISIBLE_FILLERS:
            table[cp] = ord(" ")
        elif category in _DROPPED:
            table[cp] = None
        elif category == "Pd":
            table[cp] = ord("-")
    table[0x2212] = ord("-")  # minus sign (Sm)
    return table


def _char_class(code_points: list[int]) -> str:
    """A regex character class (``"[...]"``) holding ``code_points``, consecutive ones as ranges."""
    ranges: list[tuple[int, int]] = []
    for cp in sorted(code_points):
        if ranges and cp == ranges[-1][1] + 1:
            ranges[-1] = (ranges[-1][0], cp)
        else:
            ranges.append((cp, cp))
    return "[" + _ranges_class(ranges) + "]"


@lru_cache(maxsize=1)
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    table = fold_table()
    dropped = _char_class([cp for cp, to in table.items() if to is None])
    dashes = _char_class([cp for cp, to in table.items() if to == ord("-")])
    return re.compile(dropped + "+"), re.compile(dashes)


def _strip(text: str) -> str:
    dropped, dashes = _patterns()
    return dashes.sub("-", dropped.sub("", text.translate(_FILLER_SPACES)))


def fold(text: str) -> str:
    """NFKC, format characters removed, :data:`INVISIBLE_FILLERS` blanks as a space, Unicode dashes as ``-``,
    control characters as the renderers show them (:func:`strip_controls`: a vertical tab, form feed, separator or next line a space, others removed).
    Printable ASCII passes through untouched.

    The removal runs after NFKC, so a compatibility form that decomposes into a dash is folded too.
    """
    if text.isascii():
        return text.translate(_FOLD_CONTROLS) if not text.isprintable() else text
    # decomposed first, so a combining mark NFKC would compose into a letter (A + U+0301 -> Á) is dropped
    return unicodedata.normalize("NFKC", _strip(unicodedata.normalize("NFKD", text))).translate(_FOLD_CONTROLS)
