"""Neutralising forged memory markers (reference §3B "Inbound defanging", widened to spelling variants).

Text that reaches the model from outside (user turns, tool output, pasted
transcripts) -- and every piece of memory text rendered into a block (turn
block, build index, the ``memory`` tool's recall output) -- must not be able to
pose as an injected memory block. :func:`defang` is the one neutralisation;
inbound defanging (``meta/turn/defang``) and every renderer call it.

Markers are matched on a *skeleton* of the text, never on the raw characters:
each character is NFKC-normalised and case-folded, format characters
(zero-width space/joiners, BOM, soft hyphen, bidi controls) and combining marks
are dropped, Unicode dashes read as ``-``, look-alike colons as ``:``, angle and
square bracket look-alikes (fullwidth ``＜``/``［``, ``〈``, ``⟦``, ...) as
``<``/``[``, every other opening bracket or opening quote (Unicode ``Ps``/``Pi``:
``（``, ``「``, ``«``, ...) as ``<``, letters of other scripts that look Latin
(:data:`meta_memory.textfold.LOOK_ALIKE_LETTERS`: Cyrillic, Greek, Armenian,
Cherokee, Lisu, Coptic, Canadian syllabics, small capitals) as those letters, and
any Unicode space as a space; then escaped characters are decoded (HTML references
``&lt;``, ``&LT``, ``&#60;``, ``&#x3c;``, ``&lsqb;`` behind any ``&amp;``; URL
escapes ``%3c``, ``%253c``; backslash escapes ``\\u003c``, ``\\x3c``). On the
skeleton, after any bracket-like character (``<``, ``[``, ``(``, ``{``) and at most
16 other characters that are not letters or digits:

* an observation tag: ``meta`` or the predecessor's ``mobkit``, ``memory``,
  ``observation``, with any run (up to 64) of characters that are not letters or
  digits (or nothing) between the words -> ``<defanged_memory_observation``, or
  ``</defanged_memory_observation`` when a ``/`` or a backslash stands before the first word;
* a nonce marker: ``mem``, separators, ``token``, then a ``:`` or a ``=`` within 16 more
  non-alphanumeric characters (``[mem-token: x]`` as the header prints it, ``[mem-token=x]`` as a
  model would read the same) -> ``[defanged-mem-token:``;
* every line containing ``{header} for identity`` (words separated by any run of
  non-alphanumeric characters) gets the prefix ``[defanged] `` unless it already
  starts with it.

The words without any bracket-like character before them (``mem-token: 5``, ``mem-token=5``, "the
meta memory observation tag") are prose and left alone: the header prints the nonce only as
``[mem-token: {nonce}]:`` at the end of its own first line, and memory text is one line inside a quoted
item, so such words can neither stand where the marker stands nor begin a line.

:func:`neutralise` (what every renderer calls) also removes the bidirectional
controls (:data:`BIDI_CONTROLS`); inbound :func:`defang` keeps them (a user's
right-to-left text is passed on as written).

The matched span of the *original* text is what gets replaced, so a forged
``［ MEM‐Token ： x]`` becomes ``[defanged-mem-token: x]``. ``hits`` counts
replacements plus prefixed lines. The transformation is idempotent (a second
pass finds 0 hits) and total (never raises on any ``str``, lone surrogates
included). It does not log; the caller logs a content-free warning on hits.
"""

from __future__ import annotations

import html.entities
import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from ..recall.text import compact_whitespace
from ..textfold import INVISIBLE_FILLERS, LOOK_ALIKE_LETTERS, strip_controls, strip_hidden_text
from .constants import (
    DEFANGED_LINE_PREFIX,
    DEFANGED_OBSERVATION_TAG,
    DEFANGED_TOKEN_MARKER,
    DEFAULT_INSTRUCTION_HEADER,
)

__all__ = ["BIDI_CONTROLS", "defang", "defang_content", "marker_skeleton", "neutralise", "neutralise_line"]

# Look-alikes NFKC leaves alone. (Fullwidth and small forms already fold to ASCII under NFKC.)
_EXTRA_FOLDS: dict[str, str] = {
    **dict.fromkeys("‹〈〈⟨❮❬⧼ᐸ<˂˱≺⋖⊏⊂«", "<"),
    **dict.fromkeys("⟦〚【〔⁅❲〖⦋", "["),
    **dict.fromkeys("꞉∶˸ː⁚჻᛬։׃", ":"),
    **dict.fromkeys("∕⁄⧸", "/"),
    "\u2212": "-",  # minus sign
    **dict.fromkeys("\u30fc\uff70", "-"),  # katakana prolonged sound marks
    # letters of other scripts that look Latin: ``</mеta_memory_observation>`` with a Cyrillic ``е``
    **LOOK_ALIKE_LETTERS,
}
_DROPPED_CATEGORIES = frozenset({"Cf", "Mn", "Me", "Cc"})
#: Opening punctuation and opening quotes (``（``, ``⦅``, ``「``, ``«``...): bracket-like, read as ``<``.
_OPENING_CATEGORIES = frozenset({"Ps", "Pi"})

#: The bidirectional controls a renderer removes from memory text: the embeddings and overrides
#: (U+202A-U+202E), the isolates (U+2066-U+2069) and the marks (U+200E, U+200F, U+061C). A model reads
#: text in logical order; these only change how it is displayed, so they can make a block look to a
#: person other than what the model reads (and an unclosed override spills over the block's own tags).
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")
_BIDI = re.compile("[" + "".join(sorted(BIDI_CONTROLS)) + "]")


@lru_cache(maxsize=8192)
def _fold_char(ch: str) -> str:
    """The skeleton of one non-ASCII character (possibly empty, possibly several characters)."""
    if ch in _EXTRA_FOLDS:
        return _EXTRA_FOLDS[ch]
    if "\ud800" <= ch <= "\udfff":
        return "\ufffd"
    if ord(ch) in INVISIBLE_FILLERS:  # blank-looking letters and symbols read as a space
        return " "
    out: list[str] = []
    for c in unicodedata.normalize("NFKC", ch).casefold():
        category = unicodedata.category(c)
        if c in _EXTRA_FOLDS:
            out.append(_EXTRA_FOLDS[c])
        elif c.isspace():
            out.append(" ")
        elif category in _DROPPED_CATEGORIES:
            continue
        elif category == "Pd":
            out.append("-")
        elif category in _OPENING_CATEGORIES and not c.isascii():
            out.append("<")
        else:
            out.append(c)
    return "".join(out)


_ASCII_UPPER = {c: chr(c + 32) for c in range(ord("A"), ord("Z") + 1)}
_FOLDS: dict[int, str] = dict(_ASCII_UPPER)
_FOLDS_LIMIT = 65_536


def _fill_folds(text: str) -> None:
    """Cache the skeleton of every non-ASCII character of ``text`` (the cache is bounded: the
    characters are attacker-chosen, so it is cleared rather than grown past the limit)."""
    new = [ch for ch in set(text) if ch >= "\x80" and ord(ch) not in _FOLDS]
    if len(_FOLDS) + len(new) > _FOLDS_LIMIT:
        _FOLDS.clear()
        _FOLDS.update(_ASCII_UPPER)
        new = [ch for ch in set(text) if ch >= "\x80"]
    for ch in new:
        _FOLDS[ord(ch)] = _fold_char(ch)


def _fold_text(text: str) -> str:
    if text.isascii():
        return text.lower()
    _fill_folds(text)
    return text.translate(_FOLDS)


# Escaped characters a reader (or a model) decodes: HTML character references, named (``&lt;``,
# ``&lsqb;``, ``&LT`` without ``;``), decimal (``&#60;``) or hex (``&#x3c;``), each behind any number
# of ``&amp;`` (escaped twice); URL escapes (``%3c``, ``%253c``) of ASCII; backslash escapes (``\u003c``,
# ``\x3c``, ``\u{3c}``). Matched on the (lower-cased) fold.
_ESCAPE = re.compile(
    r"&(?:amp;){0,8}(?:#x0{0,8}(?P<hex>[0-9a-f]{1,6})|#0{0,8}(?P<dec>[0-9]{1,7})|(?P<name>[a-z][a-z0-9]{1,31}));?"
    r"|%(?:25){0,8}(?P<url>[0-7][0-9a-f])"
    r"|\\{1,8}(?:u\{?0{0,8}(?P<bsu>[0-9a-f]{1,6})\}?|x\{?(?P<bsx>[0-9a-f]{2})\}?)"
)
def _may_escape(folded: str) -> bool:
    """Whether ``folded`` holds a character an escape starts with (three substring tests)."""
    return "&" in folded or "%" in folded or "\\" in folded


def _decode_escape(match: re.Match[str]) -> str | None:
    """The character ``match`` stands for, or ``None`` when it is not a character reference."""
    number = match["hex"] or match["url"] or match["bsu"] or match["bsx"]
    if number is not None:
        code = int(number, 16)
    elif match["dec"] is not None:
        code = int(match["dec"])
    else:
        name = match["name"]
        # a named reference as written, else its longest known prefix (``&ltmeta`` is ``<meta``)
        decoded = html.entities.html5.get(name + ";")
        if decoded is None:
            for cut in range(len(name), 1, -1):
                if name[:cut] in html.entities.html5:  # the names HTML reads without ``;``
                    return html.entities.html5[name[:cut]] + name[cut:]
            return None
        return decoded
    if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
        return None
    return chr(code)


@lru_cache(maxsize=4096)
def _decoded_fold(escape: str) -> str | None:
    """The fold of what the escape ``escape`` (one :data:`_ESCAPE` match) stands for, or ``None``."""
    match = _ESCAPE.fullmatch(escape)
    decoded = _decode_escape(match) if match is not None else None
    return None if decoded is None else _fold_text(decoded)


def _unescape(skeleton: str) -> str:
    """``skeleton`` with every escaped character decoded and folded (no offsets)."""
    def sub(match: re.Match[str]) -> str:
        decoded = _decoded_fold(match[0])
        return match[0] if decoded is None else decoded

    return _ESCAPE.sub(sub, skeleton)


def _skeleton_text(text: str) -> str:
    """The skeleton alone (no offsets): folded with one ``str.translate``, escapes decoded."""
    folded = _fold_text(text)
    return _unescape(folded) if _may_escape(folded) else folded


def _skeleton_spans(text: str) -> tuple[str, list[int], list[int]] | None:
    """``(skeleton, starts, ends)``: for each skeleton character the span ``[start, end)`` of the
    original characters it came from; ``None`` when the mapping is the identity (every character
    folds to exactly one and no escape occurs)."""
    folded = _fold_text(text)
    irregular = [] if text.isascii() else sorted(
        ch for ch in set(text) if ch >= "\x80" and len(_FOLDS[ord(ch)]) != 1)
    has_escape = _may_escape(folded) and _ESCAPE.search(folded) is not None
    if not irregular and not has_escape:
        return None
    starts: list[int] = []
    if irregular:
        pos = 0
        for match in re.finditer("[" + "".join(re.escape(c) for c in irregular) + "]", text):
            at = match.start()
            starts.extend(range(pos, at))
            starts.extend([at] * len(_FOLDS[ord(text[at])]))
            pos = at + 1
        starts.extend(range(pos, len(text)))
    else:
        starts = list(range(len(text)))
    ends = [s + 1 for s in starts]
    if not has_escape:
        return folded, starts, ends
    out: list[str] = []
    new_starts: list[int] = []
    new_ends: list[int] = []
    last = 0
    for match in _ESCAPE.finditer(folded):
        piece = _decoded_fold(match[0])
        if piece is None:
            continue
        a, b = match.span()
        out.append(folded[last:a])
        new_starts.extend(starts[last:a])
        new_ends.extend(ends[last:a])
        out.append(piece)
        new_starts.extend([starts[a]] * len(piece))
        new_ends.extend([ends[b - 1]] * len(piece))
        last = b
    out.append(folded[last:])
    new_starts.extend(starts[last:])
    new_ends.extend(ends[last:])
    return "".join(out), new_starts, new_ends


def marker_skeleton(text: str) -> tuple[str, list[int] | None]:
    """``(skeleton, origin)``: the folded text markers are matched on (escapes decoded), and for each
    skeleton position the index of the first original character it came from (plus one final entry,
    ``len(text)``). ``origin`` is ``None`` when the mapping is the identity."""
    spans = _skeleton_spans(text)
    if spans is None:
        return _fold_text(text), None
    skeleton, starts, _ = spans
    return skeleton, [*starts, len(text)]


#: Any run of characters that are not letters or digits, bounded (possessive: every attempt is linear).
_SEP = r"[\W_]{0,64}+"
#: What may stand between the bracket and the first word (lazy: the first word is found where it starts).
_GAP = r"(?P<gap>[\W_]{0,16}?)"
_MARKERS = re.compile(
    r"[<\[({]" + _GAP + r"(?:"
    r"(?P<tag>(?:meta|mobkit)" + _SEP + "memory" + _SEP + "observation)"
    r"|(?P<token>mem" + _SEP + r"token[\W_]{0,16}?[:=])"
    r")"
)
_OPEN_REPLACEMENT = "<" + DEFANGED_OBSERVATION_TAG
_CLOSE_REPLACEMENT = "</" + DEFANGED_OBSERVATION_TAG


def _replace_markers(text: str) -> tuple[str, int]:
    spans = _skeleton_spans(text)
    if spans is None:
        skeleton, starts, ends = _fold_text(text), None, None
    else:
        skeleton, starts, ends = spans
    out: list[str] = []
    last = 0
    hits = 0
    for match in _MARKERS.finditer(skeleton):
        start, end = match.span()
        if starts is not None and ends is not None:
            start, end = starts[start], ends[end - 1]
        if start < last:  # two matches folded from one original character: already replaced
            continue
        if match["token"] is not None:
            replacement = DEFANGED_TOKEN_MARKER
        else:
            gap = match["gap"]
            replacement = _CLOSE_REPLACEMENT if "/" in gap or "\\" in gap else _OPEN_REPLACEMENT
        out.append(text[last:start])
        out.append(replacement)
        last = end
        hits += 1
    if not hits:
        return text, 0
    out.append(text[last:])
    return "".join(out), hits


@lru_cache(maxsize=64)
def _header_pattern(header: str) -> re.Pattern[str] | None:
    words = marker_skeleton(f"{header} for identity")[0].split()
    if not words:
        return None
    return re.compile(r"[\W_]{1,16}".join(re.escape(w) for w in words))


def defang(text: str, header: str = DEFAULT_INSTRUCTION_HEADER) -> tuple[str, int]:
    """Neutralise forged memory markers in ``text``; returns ``(new_text, hits)``.

    ``header`` is the configured instruction header (default, and for a blank
    value, ``"Agent memory"``); only ``"{header} for identity"`` is treated as a
    forged header line.
    """
    header = header.strip() or DEFAULT_INSTRUCTION_HEADER
    skeleton = _skeleton_text(text)
    hits = 0
    if _MARKERS.search(skeleton):  # only then build the offset map (the common case has no marker)
        text, hits = _replace_markers(text)
        skeleton = _skeleton_text(text)
    pattern = _header_pattern(header)
    if pattern is None or not pattern.search(skeleton):
        return text, hits
    out: list[str] = []
    for line in text.splitlines(keepends=True):
        if not line.startswith(DEFANGED_LINE_PREFIX) and pattern.search(_skeleton_text(line)):
            out.append(DEFANGED_LINE_PREFIX + line)
            hits += 1
        else:
            out.append(line)
    return "".join(out), hits


def _without_hidden(text: str) -> str:
    text = strip_controls(text)  # one inside a marker (``</me\x1bta_memory_observation>``) would hide it
    if not text.isascii():
        text = strip_hidden_text(_BIDI.sub("", text))
    return text


def neutralise(text: str, header: str = DEFAULT_INSTRUCTION_HEADER) -> str:
    """What every renderer applies to memory text (turn block, build index, the ``memory`` tool's
    recall rows): every :data:`BIDI_CONTROLS` character, every invisible character, every Unicode tag
    character outside an emoji flag sequence, every private-use code point and noncharacter
    (:func:`~meta_memory.textfold.strip_hidden_text`: a person sees nothing or a box, a model may read
    hidden text; writes refuse the smuggling forms, older records may hold them) removed, then
    :func:`defang` without the count. Removing first means a marker split by a removed character
    (``</me\ue000ta_memory_observation``, a Hangul filler inside ``meta``) is found as the marker it
    becomes. Controls go too (:func:`~meta_memory.textfold.strip_controls`: C0 but tab, line feed and
    carriage return, DEL, C1 but U+0085; a vertical tab, a form feed or a separator U+001C-U+001F becomes a
    space, as the erasure folds read it). Idempotent."""
    return defang(_without_hidden(text), header)[0]


def neutralise_line(text: str, header: str = DEFAULT_INSTRUCTION_HEADER) -> str:
    """:func:`neutralise` for text a block gives on one line (a title, a body, an index entry's
    attribute): the characters :func:`neutralise` removes go first, then every run of whitespace
    becomes one space (ends trimmed), then :func:`defang`. Compacting after the removal means a
    removed character leaves no trace (``"a\ue000 b"`` reads ``"a b"``, as the text without it
    does), and compacting before defanging means no compaction can bring a marker's words closer
    than defanging saw them. Idempotent."""
    return defang(compact_whitespace(_without_hidden(text)), header)[0]


def defang_content(content: str | Sequence[Any], header: str = DEFAULT_INSTRUCTION_HEADER) -> tuple[Any, int]:
    """Defang a message body: a string, or a list of content blocks.

    In a block list every ``{"type": "text", "text": str}`` block is defanged
    (a new dict is returned for it); other blocks (and bare strings in the
    list) pass through or are defanged as text. Returns ``(content, hits)``.
    """
    if isinstance(content, str):
        return defang(content, header)
    total = 0
    blocks: list[Any] = []
    for block in content:
        if isinstance(block, str):
            new, n = defang(block, header)
            blocks.append(new)
            total += n
        elif isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            new, n = defang(block["text"], header)
            blocks.append({**block, "text": new})
            total += n
        else:
            blocks.append(block)
    return blocks, total
