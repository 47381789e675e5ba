"""Typed results of the agent-memory methods, as the SDK returns them (pydantic v2).

Wire shapes (reference §2A "Wire-level record", §10 "Handle methods"):
``AgentMemoryRecord {memory_id, title, body, tags, created_at_ms, updated_at_ms}``,
``AgentMemoryForgetResult {memory_id, deleted}``,
``AgentMemoryUpdateResult {memory_id, supersedes}``,
``AgentMemoryRecordMeta {id, kind, title, description, age_days, rank}``,
``RememberBatchResult {results: [{op_index, memory_id?, created?, error?}], created, existing, refused}``.
Extra members the gateway adds (e.g. ``status``) are kept, not refused.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["AgentMemoryRecord", "AgentMemoryForgetResult", "AgentMemoryUpdateResult", "AgentMemoryRecordMeta",
           "AgentMemoryPage", "RememberBatchItemResult", "RememberBatchResult"]

_OPEN = ConfigDict(extra="allow", frozen=True)


class AgentMemoryRecord(BaseModel):
    model_config = _OPEN
    memory_id: str = Field(min_length=1)
    title: str = Field(min_length=1)
    body: str = Field(min_length=1)
    tags: list[str] = Field(default_factory=list)
    created_at_ms: int
    updated_at_ms: int


class RememberBatchItemResult(BaseModel):
    """One item of ``meta/agent_memory/remember_batch``: ``memory_id`` and ``created`` when the record was
    stored or deduplicated, else ``error`` (``{code, message, data}``, ``data.op_index`` = ``op_index``)."""

    model_config = _OPEN
    op_index: int
    memory_id: str | None = None
    created: bool | None = None
    error: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        """Whether the record is stored (created now or already there)."""
        return self.error is None


class RememberBatchResult(BaseModel):
    """``meta/agent_memory/remember_batch``: a result per record, in order, and the counts."""

    model_config = _OPEN
    results: list[RememberBatchItemResult]
    created: int
    existing: int
    refused: int


class AgentMemoryForgetResult(BaseModel):
    model_config = _OPEN
    memory_id: str
    deleted: bool


class AgentMemoryUpdateResult(BaseModel):
    model_config = _OPEN
    memory_id: str
    supersedes: str


class AgentMemoryPage(BaseModel):
    """``meta/agent_memory/list``: one page of records and the cursor of the next (``None`` at the end)."""

    model_config = _OPEN
    records: list[AgentMemoryRecord]
    next_cursor: str | None = None


class AgentMemoryRecordMeta(BaseModel):
    model_config = _OPEN
    id: str
    kind: str
    title: str
    description: str = ""
    age_days: int
    rank: int | None = None


# -- the host surface (spec README, "The host surface") ----------------------------------------

__all__ += [
    "SessionState",
    "SessionCompactedResult",
    "TurnToolResult",
    "InjectionBlock",
    "DefangResult",
    "MemoryToolResult",
    "MemoryToolDefinition",
]


class SessionState(BaseModel):
    """``meta/session/note`` and ``meta/session/reset``: ``{identity, session_key, tainted}``.

    ``session_key`` is ``None`` for a reset that named no session; ``tainted`` says whether the
    identity's session is tainted after the call (always ``False`` right after a reset)."""

    model_config = _OPEN
    identity: str
    session_key: str | None = None
    tainted: bool


class SessionCompactedResult(BaseModel):
    """``meta/session/compacted``: ``{identity, session_key, tainted}`` (compaction keeps taint)."""

    model_config = _OPEN
    identity: str | None = None
    session_key: str
    tainted: bool


class TurnToolResult(BaseModel):
    """``meta/turn/tool_result``: ``{trusted, source?, session_tainted}``.

    ``source`` names why the result is untrusted (e.g. ``web tool 'web_fetch'``); ``None`` when
    trusted. ``session_tainted`` may be true for a trusted result: taint sticks to the session."""

    model_config = _OPEN
    trusted: bool
    source: str | None = None
    session_tainted: bool


class InjectionBlock(BaseModel):
    """``meta/turn/inject``: ``{text, skip_reason, included_ids, rendered_bytes, surface}``.

    Exactly one of ``text`` (the quoted observation block, to deliver as a separate injected
    context body) and ``skip_reason`` is set. ``text`` carries the session's nonce, so it is
    left out of ``repr``."""

    model_config = _OPEN
    text: str | None = Field(default=None, repr=False)
    skip_reason: str | None = None
    included_ids: list[str] = Field(default_factory=list)
    rendered_bytes: int = 0
    surface: str = "turn"


class DefangResult(BaseModel):
    """``meta/turn/defang``: ``{text, hits}`` for a text, ``{blocks, hits}`` for content blocks."""

    model_config = _OPEN
    text: str | None = None
    blocks: list[Any] | None = None
    hits: int


class MemoryToolResult(BaseModel):
    """``meta/agent_memory/tool``: ``{text, is_error, exclude_from_indexing}``: what the model sees.

    Refusals (bad arguments, secrets, unknown records) are ``is_error = True`` results, not
    exceptions; ``exclude_from_indexing`` is always true (keep it out of semantic memory)."""

    model_config = _OPEN
    text: str
    is_error: bool = False
    exclude_from_indexing: bool = True


class MemoryToolDefinition(BaseModel):
    """``meta/agent_memory/tool_schema``: ``{name, description, input_schema, protocol}``."""

    model_config = _OPEN
    name: str
    description: str
    input_schema: dict[str, Any]
    protocol: str = ""

    def for_model(self) -> dict[str, Any]:
        """``{name, description, input_schema}``: the shape most model APIs take for a tool."""
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}
