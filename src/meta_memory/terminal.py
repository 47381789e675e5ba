"""What the command line prints of text it did not write: stored memory, a gateway's messages, file contents.

Stored titles, bodies and tags are written by models and by whoever fed them. A terminal must show
them as they are and never act on them:

* **no markup, no emoji codes**: text reaches Rich as :class:`rich.text.Text`, never as a markup
  string, so ``[/INST]`` (a prompt-format token) or ``[/foo]`` cannot raise a ``MarkupError``,
  ``[red]…[/red]`` is printed as written and ``:one:`` stays three words and two colons;
* **no terminal control, nothing hidden**: C0 and C1 control characters (``ESC``, ``CSI``, ``BEL``, a
  bare carriage return, ``DEL``) and every invisible character (format characters such as the Unicode
  bidirectional controls, zero-width spaces, the soft hyphen and tag characters; variation selectors;
  blank fillers: :func:`meta_memory.textfold.is_invisible`) are shown as ``\\xNN`` / ``\\uNNNN``
  escapes, so an ANSI sequence cannot recolour, move the cursor, retitle the window, rewrite the
  line it sits on or reorder what the reader sees, and a title never holds a character the reader
  cannot see. Line feeds and tabs stay (a body keeps its lines) unless the text is meant for one line.

* **no look-alike passes unremarked**: a word mixing look-alike alphabets (``Pаyroll`` with a
  Cyrillic ``а``: :func:`meta_memory.mixed_script.mixed_script_words`, the rule the console marks by) is
  styled (:data:`MARK_STYLE`) in a table or line; so is a name the caller names (:func:`name_text`, or
  ``names=`` of :func:`text`: an identity, realm, mob or session key), whole, when it may imitate
  another (``а-team:lead``, ``lead:ѕео``: :func:`meta_memory.mixed_script.name_mark`). A console from
  :func:`marked_console` prints a legend line under what it printed (:func:`legend`), naming the marked
  words and names and why, so a pipe without colour says it too. ``--json`` output carries no mark: it
  is the RPC result's shape.

:func:`printable` is the one rule; :func:`text` hands it to Rich, :func:`one_line` to a plain
message line, :func:`json_text` to ``--json`` output (JSON already escapes C0; C1, ``DEL`` and the
invisible characters are escaped too).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from .mixed_script import describe, mixed_script_words, mixed_scripts, name_mark
from .textfold import escape_char, invisible_characters, is_invisible

if TYPE_CHECKING:  # pragma: no cover
    from rich.style import Style
    from rich.text import Text

    NAME_MARK_STYLE: Style  # made on first use: :func:`_name_mark_style`

__all__ = ["MARK_STYLE", "NAME_MARK_STYLE", "json_text", "legend", "marked_console", "name_text", "one_line", "printable",
           "text"]

#: How a word mixing look-alike alphabets is shown (:func:`text`); :func:`legend` finds the words by it.
MARK_STYLE = "bold underline red"
#: The most words a legend line names per mix of alphabets (the rest are counted).
_LEGEND_WORDS = 5


@lru_cache(maxsize=1)
def _name_mark_style() -> Style:
    """``NAME_MARK_STYLE``, how a marked name is shown: as :data:`MARK_STYLE`, told apart by :func:`legend` (its
    ``meta``). Made on first use, so a command that prints no Rich text (``serve`` among them) starts without Rich."""
    from rich.style import Style

    return Style(bold=True, underline=True, color="red", meta={"mark": "name"})


def __getattr__(name: str) -> Any:
    if name == "NAME_MARK_STYLE":
        return _name_mark_style()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: Everything a terminal may act on, except line feed and tab: C0, DEL and C1 controls.
_CONTROLS = "\x00-\x08\x0b-\x1f\x7f-\x9f"


@lru_cache(maxsize=1)
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """The controls above plus every invisible character (:func:`meta_memory.textfold.is_invisible`:
    format characters such as the bidirectional controls and zero-width spaces, variation selectors,
    blank fillers): as printed text, as one line (line feeds and tabs too), and inside JSON text (which
    already escapes C0; a lone surrogate, a file name's undecodable byte, is escaped there too, so the text
    encodes as UTF-8)."""
    invisible = invisible_characters()
    return (re.compile(f"[{_CONTROLS}]|{invisible}"), re.compile(f"[\x00-\x1f\x7f-\x9f]|{invisible}"),
            re.compile(f"[\x7f-\x9f\ud800-\udfff]|{invisible}"))


def _is_selector(char: str) -> bool:
    code = ord(char)
    return 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF


def _shown_selector(match: re.Match[str]) -> bool:
    """Whether the match is one variation selector right after a visible character and not followed by
    another (``❤️``: the presentation a write accepts, :func:`meta_memory.textfold.has_smuggled_selectors`):
    printed as it is, since it only picks how that character looks. A run of selectors, or one after an
    invisible character or at the start, is escaped."""
    text, at = match.string, match.start()
    if not _is_selector(match.group()) or at == 0:
        return False
    before = text[at - 1]
    return (before.isprintable() and not is_invisible(before)
            and not (at + 1 < len(text) and _is_selector(text[at + 1])))


def _escape(match: re.Match[str]) -> str:
    if _shown_selector(match):
        return match.group()
    return escape_char(match.group())


def printable(value: object, *, keep_lines: bool = True) -> str:
    """``str(value)`` with every terminal control character shown as an escape (``\\x1b``, ``\\u202e``).

    ``keep_lines``: line feeds and tabs are kept (``False``: escaped too, for one-line output)."""
    value = str(value)
    if value.isascii() and value.isprintable():
        return value
    text_pattern, one_line_pattern, _ = _patterns()
    return (text_pattern if keep_lines else one_line_pattern).sub(_escape, value)


def text(value: object, *, style: str = "", names: tuple[str, ...] = ()) -> Text:
    """``value`` as a Rich :class:`~rich.text.Text`: printed as written (no markup, no emoji codes),
    control characters escaped (:func:`printable`); each place where one of ``names`` (the identities,
    realms, mobs, session keys ``value`` spells out) stands and that name may imitate another
    (:func:`meta_memory.mixed_script.name_mark`) styled :data:`NAME_MARK_STYLE`, whole; each other word
    mixing look-alike alphabets :data:`MARK_STYLE` (:func:`meta_memory.mixed_script.mixed_script_words`)."""
    from rich.text import Text

    shown = Text(printable(value), style=style)
    plain = shown.plain
    taken: list[tuple[int, int]] = []
    for each in {printable(n) for n in names if name_mark(n) is not None}:
        at = plain.find(each)
        while at >= 0:
            taken.append((at, at + len(each)))
            at = plain.find(each, at + len(each))
    for start, end in taken:
        shown.stylize(_name_mark_style(), start, end)
    for start, end, _ in mixed_script_words(plain):
        if not any(start < b and a < end for a, b in taken):
            shown.stylize(MARK_STYLE, start, end)
    return shown


def name_text(value: str, *, style: str = "") -> Text:
    """The name ``value`` (an identity, realm, mob, scope or session key) as :func:`text` shows it, marked
    whole when it may imitate another name (:func:`meta_memory.mixed_script.name_mark`)."""
    return text(value, style=style, names=(value,))


def _texts(renderable: object) -> Iterator[Text]:
    """The :class:`~rich.text.Text` pieces of ``renderable``: itself, a group's renderables' pieces, or a
    table's title, caption, headers and cells."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    if isinstance(renderable, Text):
        yield renderable
    elif isinstance(renderable, Group):
        for piece in renderable.renderables:
            yield from _texts(piece)
    elif isinstance(renderable, Table):
        for part in (renderable.title, renderable.caption,
                     *(c.header for c in renderable.columns), *(cell for c in renderable.columns for cell in c.cells)):
            yield from _texts(part)


def legend(*renderables: object) -> Text | None:
    """The legend of the words and names :func:`text` marked in ``renderables`` (texts and tables), or
    ``None`` when none is: one line per reason, in the order first met, naming its words or names (each
    once, at most five, then how many more): ``marked: maіn, Pаyroll (mixes Latin and Cyrillic letters:
    may imitate another word)``, ``marked: lead:ѕео (mixes Latin and Cyrillic letters, reads as lead:seo:
    may imitate another name)`` (as :func:`printable` shows them)."""
    found: dict[str, list[str]] = {}
    for piece in (t for r in renderables for t in _texts(r)):
        for span in sorted(piece.spans, key=lambda s: s.start):
            word = piece.plain[span.start:span.end]
            if span.style == _name_mark_style():
                why = name_mark(word)
                reason = None if why is None else f"{why}: may imitate another name"
            elif span.style == MARK_STYLE:
                scripts = mixed_scripts(word)
                reason = f"{describe(scripts)}: may imitate another word" if scripts else None
            else:
                continue
            if reason is not None and word not in found.setdefault(reason, []):
                found[reason].append(word)
    if not found:
        return None
    from rich.text import Text

    lines = Text()
    for reason, words in found.items():
        named = ", ".join(words[:_LEGEND_WORDS]) + (f" and {len(words) - _LEGEND_WORDS} more"
                                                     if len(words) > _LEGEND_WORDS else "")
        if lines:
            lines.append("\n")
        lines.append("marked: ")
        lines.append(named, style=MARK_STYLE)
        lines.append(f" ({reason})")
    return lines


def marked_console(**options: Any) -> Any:
    """A Rich console (``options`` as :class:`rich.console.Console` takes them) whose ``print`` is followed,
    when what it printed holds a marked word, by that print's :func:`legend`."""
    return _marked_console_class()(**options)


@lru_cache(maxsize=1)
def _marked_console_class() -> type:
    from rich.console import Console

    class MarkedConsole(Console):
        def print(self, *objects: Any, **kwargs: Any) -> None:
            super().print(*objects, **kwargs)
            note = legend(*objects)
            if note is not None:
                super().print(note)

    return MarkedConsole


def one_line(value: object) -> str:
    """``value`` for a plain one-line message: whitespace runs folded to one space, controls escaped."""
    return printable(" ".join(str(value).split()), keep_lines=False)


def json_text(value: Any, *, indent: int | None = 2) -> str:
    """``value`` as JSON text for a terminal: non-ASCII letters kept, every control character escaped
    (``\\u001b``, ``\\u009b``, ``\\u202e``), and a lone surrogate (``\\udcff``: a path's byte that is not
    UTF-8, as Python decodes it) too; the result is valid JSON that decodes to ``value``."""
    dumped = json.dumps(value, ensure_ascii=False, indent=indent)
    return _patterns()[2].sub(_json_escape, dumped)


def _json_escape(match: re.Match[str]) -> str:
    """A character as JSON's escape: ``\\uNNNN``, or its UTF-16 surrogate pair above U+FFFF."""
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
