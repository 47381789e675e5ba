"""Injection options: the part of the validated ``[agent_memory]`` config the coordinator reads (reference §2A)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..agent_memory.config import AgentMemoryConfig
from ..identity import DEFAULT_REALM
from ..limits import DEFAULT_INSTRUCTION_HEADER, DEFAULT_MAX_ENTRIES, DEFAULT_RECALL_TIMEOUT_MS

__all__ = ["InjectionOptions", "compact_header"]


@dataclass(frozen=True, slots=True)
class InjectionOptions:
    """What the coordinator needs from ``agent_memory`` config.

    Attributes (defaults in brackets; ranges and spellings are the config's, checked once by
    :class:`~meta_memory.agent_memory.config.AgentMemoryConfig`):
        realm: default realm when a call names none [``"default"``].
        instruction_header: header word(s) [``None`` -> ``"Agent memory"``].
        per_turn_injection: ``"off"`` | ``"budgeted"`` [``budgeted``].
        defang_inbound: inbound defanging on, and labels allowed [``True``].
        selection: ``"always"`` | ``"contextual"`` [``contextual``].
        max_entries: records recalled per injection, 1..64 [8].
        recall_timeout_ms: provider deadline, 1..30,000 ms [500].
        recall_failure_policy: ``"skip"`` | ``"fail"`` [``skip``].
        operator_scope: ``"off"`` | ``"provisional"`` [``off``].

    Build it with :meth:`from_config` from the decoded config.
    """

    realm: str = DEFAULT_REALM
    instruction_header: str | None = None
    per_turn_injection: Literal["off", "budgeted"] = "budgeted"
    defang_inbound: bool = True
    selection: Literal["always", "contextual"] = "contextual"
    max_entries: int = DEFAULT_MAX_ENTRIES
    recall_timeout_ms: int = DEFAULT_RECALL_TIMEOUT_MS
    recall_failure_policy: Literal["fail", "skip"] = "skip"
    operator_scope: Literal["off", "provisional"] = "off"

    @property
    def header(self) -> str:
        """The effective header: the configured one when non-blank, else ``"Agent memory"``."""
        header = compact_header(self.instruction_header)
        return header or DEFAULT_INSTRUCTION_HEADER

    @classmethod
    def from_config(cls, config: AgentMemoryConfig) -> InjectionOptions:
        """The options of a decoded ``[agent_memory]`` section (already normalised and range-checked)."""
        return cls(
            realm=config.realm,
            instruction_header=config.instruction_header,
            per_turn_injection=config.per_turn_injection,
            defang_inbound=config.defang_inbound,
            selection=config.selection,
            max_entries=config.max_entries,
            recall_timeout_ms=config.recall_timeout_ms,
            recall_failure_policy=config.recall_failure_policy,
            operator_scope=config.operator_scope,
        )


def compact_header(value: str | None) -> str:
    """A header on one line (whitespace compacted); ``""`` for ``None`` or blank."""
    return " ".join(value.split()) if value else ""
