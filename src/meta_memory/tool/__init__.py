"""The ``memory`` recorder tool: schema, argument parsing and dispatch
(seed: "The `memory` recorder tool")."""

from meta_memory.tool.args import RecordDraft, ToolArgumentError, parse_arguments
from meta_memory.tool.recorder import RecorderOps, RecorderTool, ToolResult, WriteOutcome
from meta_memory.tool.schema import (
    MEMORY_TOOL_NAME,
    RECORDER_PROTOCOL_INSTRUCTIONS,
    memory_tool_definition,
    memory_tool_schema,
)

__all__ = [
    "MEMORY_TOOL_NAME",
    "RECORDER_PROTOCOL_INSTRUCTIONS",
    "RecordDraft",
    "RecorderOps",
    "RecorderTool",
    "ToolArgumentError",
    "ToolResult",
    "WriteOutcome",
    "memory_tool_definition",
    "memory_tool_schema",
    "parse_arguments",
]
