"""Instruction texts that accompany memory at build time (reference §3B build-time, §4).

Both are our own wording. :data:`BUILD_MEMORY_PROTOCOL` precedes the memory
index inside the build injection; :data:`RECORDER_PROTOCOL_INSTRUCTIONS` is
added to the build instructions by the host when the ``memory`` recorder tool
is offered (``agent_memory.recorder_tool`` true and the store accepts
agent-authored writes).
"""

from __future__ import annotations

from typing import Final

BUILD_MEMORY_PROTOCOL: Final = (
    "Memory protocol: the index below lists your durable memory records by metadata only. "
    "The bodies of the records chosen for this build follow as quoted observations. "
    "For any other entry in the index, recall it on demand through the agent-memory recall surface, "
    "searching with words from its title, before you conclude that you do not know it."
)

MEMORY_INDEX_TITLE: Final = "Memory index (metadata only; bodies are not loaded):"

RECORDER_PROTOCOL_INSTRUCTIONS: Final = "\n".join(
    [
        "Memory recorder protocol: the `memory` tool keeps durable records that outlive session "
        "resets and respawns. Use it deliberately:",
        "- Record knowledge worth having next time (preferences, facts, gotchas, procedures, "
        "relationships), not the steps of the task in front of you.",
        "- Check the memory index first. When a record already covers the subject, use action "
        '"update" with its memory_id instead of writing a near-duplicate.',
        "- Keep one fact per record, with a short specific title and a one-line `description` "
        "naming the words you would search for later.",
        "- Say how you know it: epistemic \"operator_said\" when a person told you, the default "
        "\"observed\" for what you saw yourself, and \"verified_claim\" only together with "
        "`verification_evidence` describing what you checked. None of these raises the record's trust.",
        "- Write absolute dates (2026-03-14), never relative ones such as \"yesterday\" or \"next week\".",
        "- An open_loop record states its exit condition, phrased \"resolved when ...\".",
        "- Do not store what the repository, configuration or documentation already holds.",
        "- Knowledge the whole mob should share goes through action \"propose_to_mob\"; a steward "
        "or operator reviews it before it becomes shared memory.",
    ]
)
