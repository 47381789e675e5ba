"""Typed results of the host-surface methods (spec README, "The host surface")."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ._base import OpenModel

__all__ = [
    "SessionState",
    "SessionCompactedResult",
    "TurnToolResult",
    "InjectionBlock",
    "DefangResult",
    "MemoryToolResult",
    "MemoryToolDefinition",
]


class SessionState(OpenModel):
    """``meta/session/note`` and ``meta/session/reset``: ``{identity, session_key, tainted}``.

    ``session_key`` is ``None`` for a reset that named no session; ``tainted`` says whether the
    identity's session is tainted after the call (always ``False`` right after a reset)."""

    identity: str
    session_key: str | None = None
    tainted: bool


class SessionCompactedResult(OpenModel):
    """``meta/session/compacted``: ``{identity, session_key, tainted}`` (compaction keeps taint)."""

    identity: str | None = None
    session_key: str
    tainted: bool


class TurnToolResult(OpenModel):
    """``meta/turn/tool_result``: ``{trusted, source?, session_tainted}``.

    ``source`` names why the result is untrusted (e.g. ``web tool 'web_fetch'``); ``None`` when
    trusted. ``session_tainted`` may be true for a trusted result: taint sticks to the session."""

    trusted: bool
    source: str | None = None
    session_tainted: bool


class InjectionBlock(OpenModel):
    """``meta/turn/inject``: ``{text, skip_reason, included_ids, rendered_bytes, surface}``.

    Exactly one of ``text`` (the quoted observation block, to deliver as a separate injected
    context body) and ``skip_reason`` is set. ``text`` carries the session's nonce, so it is
    left out of ``repr``."""

    text: str | None = Field(default=None, repr=False)
    skip_reason: str | None = None
    included_ids: list[str] = Field(default_factory=list)
    rendered_bytes: int = 0
    surface: str = "turn"


class DefangResult(OpenModel):
    """``meta/turn/defang``: ``{text, hits}`` for a text, ``{blocks, hits}`` for content blocks."""

    text: str | None = None
    blocks: list[Any] | None = None
    hits: int


class MemoryToolResult(OpenModel):
    """``meta/agent_memory/tool``: ``{text, is_error, exclude_from_indexing}``: what the model sees.

    Refusals (bad arguments, secrets, unknown records) are ``is_error = True`` results, not
    exceptions; ``exclude_from_indexing`` is always true (keep it out of semantic memory)."""

    text: str
    is_error: bool = False
    exclude_from_indexing: bool = True


class MemoryToolDefinition(OpenModel):
    """``meta/agent_memory/tool_schema``: ``{name, description, input_schema, protocol}``."""

    name: str
    description: str
    input_schema: dict[str, Any]
    protocol: str = ""

    def for_model(self) -> dict[str, Any]:
        """``{name, description, input_schema}``: the shape most model APIs take for a tool."""
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}
