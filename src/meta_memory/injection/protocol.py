"""Instruction texts that accompany memory at build time (reference §3B build-time, §4).

Both are our own wording. :data:`BUILD_MEMORY_PROTOCOL` precedes the memory
index inside the build injection; :data:`RECORDER_PROTOCOL_INSTRUCTIONS` (defined
once, with the tool, in :mod:`meta_memory.tool.schema`) is added to the build
instructions by the host when the ``memory`` recorder tool is offered
(``agent_memory.recorder_tool`` true and the store accepts agent-authored writes).
"""

from __future__ import annotations

from typing import Final

from ..tool.schema import RECORDER_PROTOCOL_INSTRUCTIONS

__all__ = ["BUILD_MEMORY_PROTOCOL", "MEMORY_INDEX_TITLE", "RECORDER_PROTOCOL_INSTRUCTIONS"]

BUILD_MEMORY_PROTOCOL: Final = (
    "Memory protocol: the index below lists your durable memory records by metadata only, "
    "each entry a quoted observation of its own (id, kind, age, title, description). "
    "The bodies of the records chosen for this build follow as quoted observations. "
    "For any other entry in the index, recall it on demand through the agent-memory recall surface, "
    "searching with words from its title, before you conclude that you do not know it."
)

MEMORY_INDEX_TITLE: Final = "Memory index (metadata only; bodies are not loaded):"
