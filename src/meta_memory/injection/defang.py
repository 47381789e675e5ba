"""Inbound defanging (reference §3B "Inbound defanging").

Text that reaches the model from outside (user turns, tool output, pasted
transcripts) must not be able to pose as an injected memory block. Defanging
rewrites, ASCII case-insensitively:

* ``<meta_memory_observation`` and the predecessor's ``<mobkit_memory_observation``
  -> ``<defanged_memory_observation`` (closing tags likewise);
* ``[mem-token:`` -> ``[defanged-mem-token:``;
* every line containing ``{header} for identity`` (words separated by any
  whitespace) gets the prefix ``[defanged] `` unless it already starts with it.

``hits`` counts replacements plus prefixed lines. The transformation is
idempotent (a second pass finds 0 hits) and total (never raises on any
``str``). It does not log; the caller logs a content-free warning on hits.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from .constants import (
    DEFANGED_LINE_PREFIX,
    DEFANGED_OBSERVATION_TAG,
    DEFANGED_TOKEN_MARKER,
    DEFAULT_INSTRUCTION_HEADER,
    OBSERVATION_TAG,
    PREDECESSOR_OBSERVATION_TAG,
    TOKEN_MARKER,
)

_FLAGS = re.IGNORECASE | re.ASCII
_REPLACEMENTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile("<(?:" + re.escape(OBSERVATION_TAG) + "|" + re.escape(PREDECESSOR_OBSERVATION_TAG) + ")", _FLAGS),
        "<" + DEFANGED_OBSERVATION_TAG,
    ),
    (
        re.compile("</(?:" + re.escape(OBSERVATION_TAG) + "|" + re.escape(PREDECESSOR_OBSERVATION_TAG) + ")", _FLAGS),
        "</" + DEFANGED_OBSERVATION_TAG,
    ),
    (re.compile(re.escape(TOKEN_MARKER), _FLAGS), DEFANGED_TOKEN_MARKER),
)


@lru_cache(maxsize=64)
def _header_pattern(header: str) -> re.Pattern[str] | None:
    words = f"{header} for identity".split()
    if not words:
        return None
    return re.compile(r"\s+".join(re.escape(w) for w in words), _FLAGS)


def defang(text: str, header: str = DEFAULT_INSTRUCTION_HEADER) -> tuple[str, int]:
    """Neutralise forged memory markers in ``text``; returns ``(new_text, hits)``.

    ``header`` is the configured instruction header (default, and for a blank
    value, ``"Agent memory"``); only ``"{header} for identity"`` is treated as a
    forged header line.
    """
    header = header.strip() or DEFAULT_INSTRUCTION_HEADER
    hits = 0
    for pattern, replacement in _REPLACEMENTS:
        text, n = pattern.subn(replacement, text)
        hits += n
    pattern = _header_pattern(header)
    if pattern is None or not pattern.search(text):
        return text, hits
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    for line in lines:
        if pattern.search(line) and not line.startswith(DEFANGED_LINE_PREFIX):
            out.append(DEFANGED_LINE_PREFIX + line)
            hits += 1
        else:
            out.append(line)
    return "".join(out), hits


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
