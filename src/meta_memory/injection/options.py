"""Injection options, decoded from the ``agent_memory`` config (reference §2A)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from .constants import DEFAULT_INSTRUCTION_HEADER

DEFAULT_MAX_ENTRIES = 8
MAX_MEMORY_ENTRIES = 64
DEFAULT_RECALL_TIMEOUT_MS = 500
MAX_RECALL_TIMEOUT_MS = 30_000

_CHOICES = {
    "per_turn_injection": ("off", "budgeted"),
    "selection": ("always", "contextual"),
    "recall_failure_policy": ("fail", "skip"),
    "operator_scope": ("off", "provisional"),
}


@dataclass(frozen=True, slots=True)
class InjectionOptions:
    """What the coordinator needs from ``agent_memory`` config.

    Attributes (defaults in brackets):
        realm: default realm when a call names none [``"default"``].
        instruction_header: header word(s) [``None`` -> ``"Agent memory"``].
        per_turn_injection: ``"off"`` | ``"budgeted"`` [``budgeted``].
        defang_inbound: inbound defanging on, and labels allowed [``True``].
        selection: ``"always"`` | ``"contextual"`` [``contextual``].
        max_entries: records recalled per injection; 0 -> 8, > 64 -> 64 [8].
        recall_timeout_ms: provider deadline; 0 -> 500, > 30,000 -> 30,000 [500].
        recall_failure_policy: ``"skip"`` | ``"fail"`` [``skip``].
        operator_scope: ``"off"`` | ``"provisional"`` [``off``].

    Construct with :meth:`create` (normalises and validates) or
    :meth:`from_config`. Bad enum values raise :class:`ConfigError` naming the key.
    """

    realm: str = "default"
    instruction_header: str | None = None
    per_turn_injection: str = "budgeted"
    defang_inbound: bool = True
    selection: str = "contextual"
    max_entries: int = DEFAULT_MAX_ENTRIES
    recall_timeout_ms: int = DEFAULT_RECALL_TIMEOUT_MS
    recall_failure_policy: str = "skip"
    operator_scope: str = "off"

    def __post_init__(self) -> None:
        for key, allowed in _CHOICES.items():
            value = getattr(self, key)
            if value not in allowed:
                raise ConfigError(f"agent_memory.{key} must be one of {', '.join(allowed)} (got {value!r})")
        for key in ("max_entries", "recall_timeout_ms"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(f"agent_memory.{key} must be a non-negative integer")
        if not isinstance(self.defang_inbound, bool):
            raise ConfigError("agent_memory.defang_inbound must be a boolean")
        max_entries = self.max_entries or DEFAULT_MAX_ENTRIES
        object.__setattr__(self, "max_entries", min(max_entries, MAX_MEMORY_ENTRIES))
        timeout = self.recall_timeout_ms or DEFAULT_RECALL_TIMEOUT_MS
        object.__setattr__(self, "recall_timeout_ms", min(timeout, MAX_RECALL_TIMEOUT_MS))
        realm = (self.realm or "").strip() or "default"
        object.__setattr__(self, "realm", realm)

    @property
    def header(self) -> str:
        """The effective header: the configured one when non-blank, else ``"Agent memory"``."""
        header = compact_header(self.instruction_header)
        return header or DEFAULT_INSTRUCTION_HEADER

    @classmethod
    def from_config(cls, config: Any) -> InjectionOptions:
        """Read the fields above from a mapping or an object's attributes (missing -> default)."""
        values: dict[str, Any] = {}
        for name in cls.__dataclass_fields__:
            if isinstance(config, Mapping):
                if name in config:
                    values[name] = config[name]
            elif hasattr(config, name):
                values[name] = getattr(config, name)
        return cls(**values)


def compact_header(value: str | None) -> str:
    """A header on one line (whitespace compacted); ``""`` for ``None`` or blank."""
    return " ".join(value.split()) if value else ""
