"""Unicode folding shared by the firewall's matchers (secret scan, tool-name classification).

An attacker can hide a marker, a key or a tool name behind characters a reader
never sees or reads as ASCII: zero-width spaces and joiners, the word joiner,
the BOM, soft hyphens, bidi controls and tag characters (Unicode category
``Cf``), fullwidth and other compatibility forms (folded by NFKC) and Unicode
dashes. :func:`fold` removes the first, applies NFKC and reads every dash as
``-``. It never raises; ASCII text is returned unchanged.
"""

from __future__ import annotations

import sys
import unicodedata
from functools import lru_cache

__all__ = ["fold", "fold_table"]


@lru_cache(maxsize=1)
def fold_table() -> dict[int, int | None]:
    """``str.translate`` table: every ``Cf`` code point deleted, every ``Pd`` dash and U+2212 as ``-``."""
    table: dict[int, int | None] = {}
    for cp in range(0x80, sys.maxunicode + 1):
        category = unicodedata.category(chr(cp))
        if category == "Cf":
            table[cp] = None
        elif category == "Pd":
            table[cp] = ord("-")
    table[0x2212] = ord("-")  # minus sign (Sm)
    return table


def fold(text: str) -> str:
    """NFKC, format characters removed, Unicode dashes as ``-`` (ASCII passes through untouched).

    The translate runs before and after NFKC: a compatibility form can decompose into a dash.
    """
    if text.isascii():
        return text
    table = fold_table()
    return unicodedata.normalize("NFKC", text.translate(table)).translate(table)
