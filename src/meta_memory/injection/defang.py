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
``<``/``[``, and any Unicode space as a space. On the skeleton:

* an observation tag: ``<``, optional spaces, optional ``/`` (a closing tag),
  then ``meta`` or the predecessor's ``mobkit``, ``memory``, ``observation``
  with any run of spaces, ``-`` or ``_`` (or nothing) between the words
  -> ``<defanged_memory_observation`` (``</defanged_memory_observation``);
* a nonce marker: ``[``, optional spaces, ``mem``, separators, ``token``,
  optional spaces, ``:`` -> ``[defanged-mem-token:``;
* every line containing ``{header} for identity`` (words separated by spaces,
  ``-`` or ``_``) gets the prefix ``[defanged] `` unless it already starts with it.

The matched span of the *original* text is what gets replaced, so a forged
``［ MEM‐Token ： x]`` becomes ``[defanged-mem-token: x]``. ``hits`` counts
replacements plus prefixed lines. The transformation is idempotent (a second
pass finds 0 hits) and total (never raises on any ``str``, lone surrogates
included). It does not log; the caller logs a content-free warning on hits.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from ..textfold import INVISIBLE_FILLERS, LOOK_ALIKE_LETTERS
from .constants import (
    DEFANGED_LINE_PREFIX,
    DEFANGED_OBSERVATION_TAG,
    DEFANGED_TOKEN_MARKER,
    DEFAULT_INSTRUCTION_HEADER,
)

__all__ = ["defang", "defang_content", "marker_skeleton", "neutralise"]

# Look-alikes NFKC leaves alone. (Fullwidth and small forms already fold to ASCII under NFKC.)
_EXTRA_FOLDS: dict[str, str] = {
    **dict.fromkeys("‹〈〈⟨❮❬⧼ᐸ<", "<"),
    **dict.fromkeys("⟦〚【〔⁅❲〖⦋", "["),
    **dict.fromkeys("꞉∶˸ː⁚჻᛬։׃", ":"),
    **dict.fromkeys("∕⁄⧸", "/"),
    "\u2212": "-",  # minus sign
    **dict.fromkeys("\u30fc\uff70", "-"),  # katakana prolonged sound marks
    # letters of other scripts that look Latin: ``</mеta_memory_observation>`` with a Cyrillic ``е``
    **LOOK_ALIKE_LETTERS,
}
_DROPPED_CATEGORIES = frozenset({"Cf", "Mn", "Me", "Cc"})


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


def _skeleton_text(text: str) -> str:
    """The skeleton alone (no offsets), with one ``str.translate``."""
    if text.isascii():
        return text.lower()
    _fill_folds(text)
    return text.translate(_FOLDS)


def marker_skeleton(text: str) -> tuple[str, list[int] | None]:
    """``(skeleton, origin)``: the folded text markers are matched on, and for each skeleton
    position the index of the original character it came from (plus one final entry,
    ``len(text)``). ``origin`` is ``None`` when the mapping is the identity (every character
    folds to exactly one)."""
    if text.isascii():
        return text.lower(), None
    _fill_folds(text)
    irregular = sorted(ch for ch in set(text) if ch >= "\x80" and len(_FOLDS[ord(ch)]) != 1)
    skeleton = text.translate(_FOLDS)
    if not irregular:
        return skeleton, None
    origin: list[int] = []
    pos = 0
    for match in re.finditer("[" + "".join(re.escape(c) for c in irregular) + "]", text):
        at = match.start()
        origin.extend(range(pos, at))
        origin.extend([at] * len(_FOLDS[ord(text[at])]))
        pos = at + 1
    origin.extend(range(pos, len(text)))
    origin.append(len(text))
    return skeleton, origin


_WS = r"[\s\x00-\x1f\x7f]*"  # white space, or control characters a reader never sees
_SEP = r"[\s\x00-\x1f\x7f_.:-]*"  # also ``.`` and ``:`` (``meta.memory.observation``, ``meta:memory:...``)
_MARKERS = re.compile(
    r"<" + _WS + r"(?P<close>/" + _WS + r")?(?:meta|mobkit)" + _SEP + "memory" + _SEP + "observation"
    r"|(?P<token>\[" + _WS + r"mem" + _SEP + r"token" + _WS + r":)"
)
_OPEN_REPLACEMENT = "<" + DEFANGED_OBSERVATION_TAG
_CLOSE_REPLACEMENT = "</" + DEFANGED_OBSERVATION_TAG


def _replace_markers(text: str) -> tuple[str, int]:
    skeleton, origin = marker_skeleton(text)
    out: list[str] = []
    last = 0
    hits = 0
    for match in _MARKERS.finditer(skeleton):
        start, end = match.span()
        if origin is not None:
            start, end = origin[start], origin[end - 1] + 1
        if start < last:  # two matches folded from one original character: already replaced
            continue
        if match["token"] is not None:
            replacement = DEFANGED_TOKEN_MARKER
        else:
            replacement = _CLOSE_REPLACEMENT if match["close"] is not None else _OPEN_REPLACEMENT
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
    return re.compile(r"[\s_-]+".join(re.escape(w) for w in words))


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


def neutralise(text: str, header: str = DEFAULT_INSTRUCTION_HEADER) -> str:
    """:func:`defang` without the count: what every renderer applies to memory text."""
    return defang(text, header)[0]


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
