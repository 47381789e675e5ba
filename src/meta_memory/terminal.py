"""What the command line prints of text it did not write: stored memory, a gateway's messages, file contents.

Stored titles, bodies and tags are written by models and by whoever fed them. A terminal must show
them as they are and never act on them:

* **no markup, no emoji codes**: text reaches Rich as :class:`rich.text.Text`, never as a markup
  string, so ``[/INST]`` (a prompt-format token) or ``[/foo]`` cannot raise a ``MarkupError``,
  ``[red]…[/red]`` is printed as written and ``:one:`` stays three words and two colons;
* **no terminal control**: C0 and C1 control characters (``ESC``, ``CSI``, ``BEL``, a bare carriage
  return, ``DEL``) and the Unicode bidirectional controls are shown as ``\\xNN`` / ``\\uNNNN``
  escapes, so an ANSI sequence cannot recolour, move the cursor, retitle the window, rewrite the
  line it sits on or reorder what the reader sees. Line feeds and tabs stay (a body keeps its
  lines) unless the text is meant for one line.

:func:`printable` is the one rule; :func:`text` hands it to Rich, :func:`one_line` to a plain
message line, :func:`json_text` to ``--json`` output (JSON already escapes C0; C1, ``DEL`` and the
bidi controls are escaped too).
"""

from __future__ import annotations

import json
import re
from typing import Any

from rich.text import Text

__all__ = ["printable", "text", "one_line", "json_text"]

#: Unicode bidirectional formatting characters (marks, embeddings, overrides, isolates).
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
#: Everything a terminal may act on, except line feed and tab.
_CONTROL = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]")
#: The same, line feeds and tabs included (for one-line output).
_CONTROL_ONE_LINE = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}]")
#: What JSON output leaves unescaped with ``ensure_ascii=False`` but a terminal may act on.
_JSON_UNSAFE = re.compile(f"[\x7f-\x9f{_BIDI}]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(value: object, *, keep_lines: bool = True) -> str:
    """``str(value)`` with every terminal control character shown as an escape (``\\x1b``, ``\\u202e``).

    ``keep_lines``: line feeds and tabs are kept (``False``: escaped too, for one-line output)."""
    return (_CONTROL if keep_lines else _CONTROL_ONE_LINE).sub(_escape, str(value))


def text(value: object, *, style: str = "") -> Text:
    """``value`` as a Rich :class:`~rich.text.Text`: printed as written (no markup, no emoji codes),
    control characters escaped (:func:`printable`)."""
    return Text(printable(value), style=style)


def one_line(value: object) -> str:
    """``value`` for a plain one-line message: whitespace runs folded to one space, controls escaped."""
    return printable(" ".join(str(value).split()), keep_lines=False)


def json_text(value: Any, *, indent: int | None = 2) -> str:
    """``value`` as JSON text for a terminal: non-ASCII letters kept, every control character escaped
    (``\\u001b``, ``\\u009b``, ``\\u202e``); the result is valid JSON that decodes to ``value``."""
    dumped = json.dumps(value, ensure_ascii=False, indent=indent)
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", dumped)
