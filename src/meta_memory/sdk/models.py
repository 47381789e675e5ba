"""Typed results of the agent-memory methods, as the SDK returns them (pydantic v2).

Wire shapes (reference §2A "Wire-level record", §10 "Handle methods"):
``AgentMemoryRecord {memory_id, title, body, tags, created_at_ms, updated_at_ms}``,
``AgentMemoryForgetResult {memory_id, deleted}``,
``AgentMemoryUpdateResult {memory_id, supersedes}``,
``AgentMemoryRecordMeta {id, kind, title, description, age_days, rank}``.
Extra members the gateway adds (e.g. ``status``) are kept, not refused.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["AgentMemoryRecord", "AgentMemoryForgetResult", "AgentMemoryUpdateResult", "AgentMemoryRecordMeta"]

_OPEN = ConfigDict(extra="allow", frozen=True)


class AgentMemoryRecord(BaseModel):
    model_config = _OPEN
    memory_id: str = Field(min_length=1)
    title: str = Field(min_length=1)
    body: str = Field(min_length=1)
    tags: list[str] = Field(default_factory=list)
    created_at_ms: int
    updated_at_ms: int


class AgentMemoryForgetResult(BaseModel):
    model_config = _OPEN
    memory_id: str
    deleted: bool


class AgentMemoryUpdateResult(BaseModel):
    model_config = _OPEN
    memory_id: str
    supersedes: str


class AgentMemoryRecordMeta(BaseModel):
    model_config = _OPEN
    id: str
    kind: str
    title: str
    description: str = ""
    age_days: int
    rank: int | None = None
