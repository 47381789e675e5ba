"""Typed results of the host-surface methods (spec README, "The host surface").

Each is the method's result model (:mod:`meta_memory.rpc.results`) opened (:class:`OpenModel`): the
members are declared once, where the gateway holds its answers to them."""

from __future__ import annotations

from typing import Any

from ...rpc import results as wire
from ._base import OPEN, OpenModel

__all__ = [
    "SessionState",
    "SessionCompactedResult",
    "TurnToolResult",
    "InjectionBlock",
    "DefangResult",
    "MemoryToolResult",
    "MemoryToolDefinition",
]


class SessionState(wire.SessionResult, OpenModel):
    """``meta/session/note`` and ``meta/session/reset``: ``{identity, session_key, tainted, derived_tainted}``.

    ``session_key`` is ``None`` for a reset that named no session; ``tainted`` says whether the
    session's LLM writes carry taint after the call (so they land quarantined): its own taint, the
    identity's pending one, or another identity's taint of the same key in the realm that counts for it
    (``[agent_memory] shared_key_taint``; so a reset leaves it ``True`` when that other taint, or an
    ``"unreported"`` posture, is still there);
    ``derived_tainted`` whether content derived from it (``derived_from_sessions``) would land
    quarantined: tainted now, closed tainted by a reset, or another identity's session of the key that
    counts for it is tainted (as for ``tainted``)."""

    model_config = OPEN


class SessionCompactedResult(wire.CompactedResult, OpenModel):
    """``meta/session/compacted``: ``{identity, session_key, tainted}`` (compaction keeps taint)."""

    model_config = OPEN


class TurnToolResult(wire.ToolResultVerdict, OpenModel):
    """``meta/turn/tool_result``: ``{trusted, source?, session_tainted}``.

    ``source`` names why the result is untrusted (e.g. ``web tool 'web_fetch'``); ``None`` when
    trusted. ``session_tainted`` may be true for a trusted result: taint sticks to the session."""

    model_config = OPEN


class InjectionBlock(wire.InjectResult, OpenModel):
    """``meta/turn/inject``: ``{text, skip_reason, included_ids, rendered_bytes, surface}``.

    Exactly one of ``text`` (the quoted observation block, to deliver as a separate injected
    context body) and ``skip_reason`` is set. ``text`` carries the session's nonce, so ``repr``
    (what logs and debuggers show) gives only its length (``text_chars=812``); ``str(block)`` (and
    so ``print(block)``) is the text itself, or ``(no injection block: <skip_reason>)``."""

    model_config = OPEN

    def __repr_args__(self) -> Any:
        args = list(super().__repr_args__())
        shown = ("text_chars", None if self.text is None else len(self.text))
        return [shown, *args]

    def __str__(self) -> str:
        if self.text is not None:
            return self.text
        return f"(no injection block: {self.skip_reason})"


class DefangResult(wire.DefangResult, OpenModel):
    """``meta/turn/defang``: ``{text, hits}`` for a text, ``{blocks, hits}`` for content blocks."""

    model_config = OPEN


class MemoryToolResult(wire.ToolCallResult, OpenModel):
    """``meta/agent_memory/tool``: ``{text, is_error, exclude_from_indexing}``: what the model sees.

    Refusals (bad arguments, secrets, unknown records) are ``is_error = True`` results, not
    exceptions; ``exclude_from_indexing`` is always true (keep it out of semantic memory)."""

    model_config = OPEN


class MemoryToolDefinition(wire.ToolSchemaResult, OpenModel):
    """``meta/agent_memory/tool_schema``: ``{name, description, input_schema, protocol}``."""

    model_config = OPEN

    def for_model(self) -> dict[str, Any]:
        """``{name, description, input_schema}``: the shape most model APIs take for a tool."""
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}
