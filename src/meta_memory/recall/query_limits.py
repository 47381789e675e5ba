"""The one query-size rule of every recall path (RPC recall, ``meta/turn/inject``, the ``memory`` tool, MCP).

Two limits, enforced here and nowhere else:

- **bytes**: the query (``query_text`` plus every ``query_terms`` entry, UTF-8)
  is at most :data:`MAX_QUERY_BYTES` (16 KiB). An explicit recall past it
  (``meta/agent_memory/recall``, the tool's and MCP's ``recall`` action) is
  refused with the field named (JSON-RPC -32602 / a tool error result).
  ``meta/turn/inject`` searches with the first :data:`MAX_QUERY_BYTES` of its
  turn text instead (cut at a character boundary): its text is the user's turn,
  not a query the caller composed, and a long turn must still get its memory.
- **distinct terms**: at most :data:`MAX_QUERY_TERMS` (64) distinct normalised
  terms are searched: the first 64 in query order (``query_text`` first, then
  ``query_terms`` in order); later terms are ignored. This is a documented
  truncation on every path, so a long question still recalls by its opening words.

Both bounds keep one recall's full-text work (an ``OR`` of the terms) and its
re-ranking cheap whatever a client sends.
"""

from __future__ import annotations

from collections.abc import Iterable

from meta_memory.recall.text import query_tokens

__all__ = [
    "MAX_QUERY_BYTES",
    "MAX_QUERY_TERMS",
    "MAX_QUERY_TERM_ENTRIES",
    "MAX_QUERY_TERM_BYTES",
    "query_bytes",
    "query_size_error",
    "truncate_query_text",
    "bounded_terms",
]

#: Most UTF-8 bytes of one recall query (``query_text`` and ``query_terms`` together).
MAX_QUERY_BYTES = 16_384

#: Most distinct normalised terms one recall searches (the rest are ignored).
MAX_QUERY_TERMS = 64

#: Most entries of a ``query_terms`` array.
MAX_QUERY_TERM_ENTRIES = 256

#: Most UTF-8 bytes of one ``query_terms`` entry.
MAX_QUERY_TERM_BYTES = 1024


def _nbytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def query_bytes(query_text: str | None, query_terms: Iterable[str] = ()) -> int:
    """UTF-8 bytes of ``query_text`` plus every entry of ``query_terms``."""
    return _nbytes(query_text or "") + sum(_nbytes(t) for t in query_terms)


def query_size_error(query_text: str | None, query_terms: Iterable[str] | None = None) -> tuple[str, str] | None:
    """``(field, rule)`` when the query breaks the byte rule, else ``None``.

    ``field`` is ``"query_text"`` when the text alone is too large, else ``"query_terms"``;
    ``rule`` is the message, e.g. ``"query_text must be at most 16384 bytes (got 262144)"``.
    """
    text_bytes = _nbytes(query_text or "")
    if text_bytes > MAX_QUERY_BYTES:
        return "query_text", f"query_text must be at most {MAX_QUERY_BYTES} bytes (got {text_bytes})"
    terms = list(query_terms or ())
    if len(terms) > MAX_QUERY_TERM_ENTRIES:
        return "query_terms", f"query_terms must contain at most {MAX_QUERY_TERM_ENTRIES} entries"
    total = text_bytes + sum(_nbytes(t) for t in terms)
    if total > MAX_QUERY_BYTES:
        return "query_terms", (
            f"query_text and query_terms together must be at most {MAX_QUERY_BYTES} bytes (got {total})"
        )
    return None


def truncate_query_text(text: str) -> str:
    """``text`` cut to at most :data:`MAX_QUERY_BYTES` UTF-8 bytes at a character boundary (unchanged when shorter)."""
    if len(text) * 4 <= MAX_QUERY_BYTES or _nbytes(text) <= MAX_QUERY_BYTES:
        return text
    return text.encode("utf-8", "surrogatepass")[:MAX_QUERY_BYTES].decode("utf-8", "ignore")


def bounded_terms(query_text: str | None, query_terms: Iterable[str] = ()) -> list[str]:
    """The sorted distinct search terms of a query, at most :data:`MAX_QUERY_TERMS`.

    Terms come from :func:`meta_memory.recall.text.query_tokens` (the one normalisation, query side),
    ``query_text`` first and then each ``query_terms`` entry; once 64 distinct terms
    are collected the rest are ignored. Stopword-only queries yield ``[]``.
    """
    seen: dict[str, None] = {}
    sources = [query_text] if query_text else []
    sources.extend(t for t in query_terms if isinstance(t, str) and t)
    for source in sources:
        for token in query_tokens(truncate_query_text(source)):
            if token not in seen:
                seen[token] = None
                if len(seen) >= MAX_QUERY_TERMS:
                    return sorted(seen)
    return sorted(seen)
