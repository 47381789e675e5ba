"""The ``memory`` recorder tool's definition: name, description, JSON input schema
and protocol instructions (seed: "The `memory` recorder tool"; reference notes §4).

A host offers the tool to any model by handing it :func:`memory_tool_definition`
(``{name, description, input_schema}``); the ``meta/agent_memory/tool_schema``
RPC returns the same object. Calls come back through
:class:`meta_memory.tool.recorder.RecorderTool`.
"""

from __future__ import annotations

import copy
from typing import Any, Final

from meta_memory.limits import MAX_MEMORY_ENTRIES

__all__ = [
    "ACTIONS",
    "ALLOWED_FIELDS",
    "EPISTEMIC_STATUSES",
    "MEMORY_TOOL_NAME",
    "MEMORY_TOOL_DESCRIPTION",
    "MEMORY_TOOL_PROVENANCE",
    "RECORD_KINDS",
    "RECORDER_PROTOCOL_INSTRUCTIONS",
    "memory_tool_definition",
    "memory_tool_schema",
]

#: The tool's name as models see it.
MEMORY_TOOL_NAME: Final = "memory"

#: Typed provenance of the tool in a host's catalog (``{kind, source_id}``).
MEMORY_TOOL_PROVENANCE: Final = {"kind": "memory", "source_id": "meta_agent_memory"}

#: Actions, in the order error messages list them.
ACTIONS: Final = ("remember", "update", "forget", "recall", "propose_to_mob")

#: Record kinds a model may choose (default ``fact``).
RECORD_KINDS: Final = ("preference", "fact", "gotcha", "procedure", "relationship", "open_loop", "reference")

#: How the model came to know the content (default ``observed``).
EPISTEMIC_STATUSES: Final = ("observed", "operator_said", "verified_claim")

#: Upper bound of ``max_entries`` for ``recall`` (larger values are clamped).

MEMORY_TOOL_DESCRIPTION: Final = (
    "Your durable memory, scoped to your own identity; it survives session resets and respawns. "
    "Actions: remember (store a new record: title and body), update (replace one of your records by "
    "memory_id: give its whole new title and body), "
    "forget (remove one of your records by memory_id), recall (search your records and, when you run in a "
    "mob, your mob's shared records, each of those marked with its mob; omit query_text to list the newest), "
    "propose_to_mob (suggest a record for your mob's shared memory; a steward or operator must commit it)."
)

_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "action": {
            "type": "string",
            "enum": list(ACTIONS),
            "description": "What to do.",
        },
        "title": {
            "type": "string",
            "description": "Short title of the record. Required for remember, update and propose_to_mob.",
        },
        "body": {
            "type": "string",
            "description": (
                "The record's content: one fact, preference or procedure per record. Required for remember, "
                "update (the whole new content) and propose_to_mob."
            ),
        },
        "description": {
            "type": "string",
            "description": "One-line retrieval hook: when should this record come back to mind?",
        },
        "tags": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Optional lowercase tags.",
        },
        "kind": {
            "type": "string",
            "enum": list(RECORD_KINDS),
            "description": "Kind of record (default fact). An open_loop says what resolves it.",
        },
        "epistemic": {
            "type": "string",
            "enum": list(EPISTEMIC_STATUSES),
            "description": (
                "How you know it: observed (default), operator_said (a person told you), or "
                "verified_claim (you checked it; give verification_evidence)."
            ),
        },
        "verification_evidence": {
            "type": "string",
            "description": "Required with epistemic=verified_claim: what you checked, and how.",
        },
        "memory_id": {
            "type": "string",
            "description": "Required for update and forget: the record to update or forget.",
        },
        "query_text": {
            "type": "string",
            "description": (
                "recall: what to look for (words from a title in your memory index find that record). "
                "Omit to list your newest records."
            ),
        },
        "ttl_s": {
            "type": "integer",
            "minimum": 1,
            "description": (
                "remember, update: seconds until the record expires and is forgotten (omit: it does not "
                "expire; an update without it keeps the record's expiry). Capped by the installation "
                "(30 days by default); a longer one is refused."
            ),
        },
        "max_entries": {
            "type": "integer",
            "minimum": 1,
            "description": f"recall: at most this many records (capped at {MAX_MEMORY_ENTRIES}).",
        },
    },
    "required": ["action"],
    "additionalProperties": False,
}

#: The fields the schema allows, in schema order.
ALLOWED_FIELDS: Final = tuple(_SCHEMA["properties"])

#: The recorder protocol: what a host adds to the model's instructions when it offers the tool
#: (``meta/agent_memory/tool_schema`` ``protocol``, and the build instructions). Our own wording.
RECORDER_PROTOCOL_INSTRUCTIONS: Final = """\
Memory recorder protocol: you have a `memory` tool for durable records that outlive session resets \
and respawns. Use it deliberately:
- Record knowledge worth having next time (facts, preferences, gotchas, procedures, relationships), \
not the steps of the task in front of you; keep one fact per record.
- Check the memory index (or recall) first. When a record already covers the subject, use action \
"update" with its memory_id instead of writing a near-duplicate.
- Give each record a short specific title and a one-line `description` naming the words you would \
search for later.
- Say how you know it: epistemic "operator_said" when a person told you, "observed" (the default) for \
what you saw yourself, and "verified_claim" only together with `verification_evidence` describing what \
you checked. None of these raises the record's trust.
- Write absolute dates (2026-03-14), never relative ones such as "today" or "next week".
- An open_loop record states its exit condition, phrased "resolved when ...".
- Do not record what the repository, configuration or documentation already holds, and never record \
credentials.
- Knowledge the whole mob should share goes through action "propose_to_mob"; a steward or operator \
reviews it before it becomes shared memory. Recall finds your mob's shared records too (a recalled one \
carries `mob`); they are not yours to update or forget.
"""


def memory_tool_schema() -> dict[str, Any]:
    """The tool's JSON input schema (a fresh deep copy the caller may mutate).

    Shape: ``{"type": "object", "properties": {...}, "required": ["action"],
    "additionalProperties": false}`` with the fields ``action`` (enum of
    :data:`ACTIONS`), ``title``, ``body``, ``description``, ``tags`` (array of
    strings), ``kind`` (enum of :data:`RECORD_KINDS`), ``epistemic`` (enum of
    :data:`EPISTEMIC_STATUSES`), ``verification_evidence``, ``memory_id``,
    ``query_text`` and ``max_entries`` (integer, minimum 1).
    """
    return copy.deepcopy(_SCHEMA)


def memory_tool_definition() -> dict[str, Any]:
    """``{name, description, input_schema}``: what a host hands its model.

    This is also the result of the ``meta/agent_memory/tool_schema`` RPC.
    """
    return {
        "name": MEMORY_TOOL_NAME,
        "description": MEMORY_TOOL_DESCRIPTION,
        "input_schema": memory_tool_schema(),
    }
