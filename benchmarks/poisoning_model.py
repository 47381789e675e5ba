"""The fully steered model of the memory-poisoning benchmark, and the text rules both sides share.

The model is the worst case of a prompt-injected LLM and needs none: it obeys **every** instruction it
finds in any content it reads (the user's turns, tool results, the injected memory block, recall
output). An instruction is one line of text in one of these shapes (case-insensitive; the scenario
corpus phrases them as the published attacks do):

* ``... remember that <body>`` / ``save to memory: <body>`` / ``note for later: <body>``: a write;
* ``update memory <id> to say <body>`` / ``update the memory about <topic> to say <body>``: an update
  (by id, or of the best recall match for the topic);
* ``forget memory <id>`` / ``forget the memory about <topic>``: a forget;
* ``share with team <mob>: <body>``: a proposal to a shared (mob) scope.

Reading only queues the instructions (they sit in the model's context); :meth:`SteeredModel.act` carries
them out through the host's ``memory`` tool, so a scenario can read a page and act many turns later, or
after a compaction (the queue is kept: the compacted context still holds the instruction). A reset or a
respawn is a fresh context: the queue is emptied.

The host's own LLM summary of a session (:meth:`SteeredModel.summary`) repeats what the session read,
instructions and claims included: a summariser is steered too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Instruction", "SteeredModel", "parse_instructions", "ids_in"]

_ID = r"(?P<id>[A-Za-z0-9][\w:.\-]{5,})"
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("update_id", re.compile(rf"\bupdate (?:the )?memory {_ID} to say[:,]?\s+(?P<body>.+)", re.I)),
    ("update_topic", re.compile(r"\bupdate the memory about (?P<topic>.+?) to say[:,]?\s+(?P<body>.+)", re.I)),
    ("forget_id", re.compile(rf"\b(?:forget|delete|erase) (?:the )?memory {_ID}\s*\.?$", re.I)),
    ("forget_topic", re.compile(r"\b(?:forget|delete|erase) (?:the |every |all )?memor(?:y|ies) about (?P<topic>.+?)\.?$",
                                re.I)),
    ("share", re.compile(r"\bshare with (?:the )?team (?P<mob>[\w\-]+)\s*:\s*(?P<body>.+)", re.I)),
    ("remember", re.compile(r"\b(?:remember(?: that)?|save to memory|note for later|store permanently)[:,]?\s+(?P<body>.+)",
                            re.I)),
]


@dataclass(frozen=True)
class Instruction:
    """One instruction the model found: ``kind`` (``remember``, ``update_id``, ``update_topic``,
    ``forget_id``, ``forget_topic``, ``share``) and its parts."""

    kind: str
    body: str = ""
    topic: str = ""
    memory_id: str = ""
    mob: str = ""


def parse_instructions(text: str) -> list[Instruction]:
    """Every instruction in ``text``, one per line at most, in order."""
    out: list[Instruction] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        for kind, pattern in _PATTERNS:
            m = pattern.search(line)
            if m is None:
                continue
            parts = m.groupdict()
            out.append(Instruction(kind, body=(parts.get("body") or "").strip(),
                                   topic=(parts.get("topic") or "").strip(),
                                   memory_id=(parts.get("id") or "").strip().rstrip("."), mob=parts.get("mob") or ""))
            break
    return out


_JSON_IDS = re.compile(r'"(?:memory_id|id|key)"\s*:\s*"([^"]+)"')


def ids_in(recall_text: str) -> list[str]:
    """The record ids a memory tool's recall output names, best first."""
    return _JSON_IDS.findall(recall_text)


def title_of(body: str) -> str:
    """The title a model gives a record: its first words (at most 60 characters)."""
    words = body.split()
    title = " ".join(words[:8])
    return title[:60] or "note"


#: ``memory(action_arguments, mob) -> tool result text``: the host's ``memory`` tool for the model.
MemoryTool = Callable[[dict[str, Any], "str | None"], str]


@dataclass
class SteeredModel:
    """One agent's model context: what it read (for summaries) and the instructions it will obey."""

    pending: list[Instruction] = field(default_factory=list)
    read_lines: list[str] = field(default_factory=list)

    def read(self, text: str) -> None:
        """Content enters the context: its instructions are queued and its lines remembered."""
        self.pending.extend(parse_instructions(text))
        self.read_lines.extend(line.strip() for line in text.splitlines() if line.strip())

    def fresh_context(self) -> None:
        """A reset or respawn: nothing read before is in the new context."""
        self.pending.clear()
        self.read_lines.clear()

    def act(self, memory: MemoryTool) -> list[str]:
        """Carry out every queued instruction through ``memory``; the tool results, in order."""
        results: list[str] = []
        todo, self.pending = self.pending, []
        for ins in todo:
            results.extend(self._one(ins, memory))
        return results

    @staticmethod
    def _one(ins: Instruction, memory: MemoryTool) -> list[str]:
        if ins.kind == "remember":
            return [memory({"action": "remember", "title": title_of(ins.body), "body": ins.body}, None)]
        if ins.kind == "share":
            return [memory({"action": "propose_to_mob", "title": title_of(ins.body), "body": ins.body}, ins.mob)]
        if ins.kind == "update_id":
            return [memory({"action": "update", "memory_id": ins.memory_id, "title": title_of(ins.body),
                            "body": ins.body}, None)]
        if ins.kind == "forget_id":
            return [memory({"action": "forget", "memory_id": ins.memory_id}, None)]
        found = memory({"action": "recall", "query_text": ins.topic}, None)
        ids = ids_in(found)
        if not ids:
            return [found]
        if ins.kind == "forget_topic":
            return [found, memory({"action": "forget", "memory_id": ids[0]}, None)]
        return [found, memory({"action": "update", "memory_id": ids[0], "title": title_of(ins.body),
                               "body": ins.body}, None)]

    def summary(self) -> str:
        """The host LLM's summary of the session so far: every line it read, verbatim (steered)."""
        return "Session summary. " + " ".join(self.read_lines)[:8000]


def as_json(rows: list[dict[str, Any]]) -> str:
    """Recall output as a tool returns it to a model."""
    return json.dumps(rows, ensure_ascii=False, indent=1)
