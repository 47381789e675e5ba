"""``[agent_memory.steward]``: the memory steward's configuration (reference §9 defaults).

::

    [agent_memory.steward]
    enabled = true
    cadence = "*/6h"            # or "*/30m", "12h", "1d", or an interval in seconds (int)
    kind = "policy"             # "policy" (default, deterministic) | "llm"
    base_url = "http://127.0.0.1:8080/v1"   # llm only: an OpenAI-compatible endpoint
    model = "qwen2.5-7b-instruct"           # llm only
    api_key_env = "STEWARD_API_KEY"         # llm only, optional: env var holding the key
    timeout_s = 30.0
    open_loop_age_days = 14
    caps = { proposals = 32, quarantine = 16, harvests = 4 }
    auto_accept_proposals = []  # mobs whose clean proposals the policy steward accepts ("*" = every scope)
    llm_release = "gated"       # llm only: a steward "release" stages a gated promotion ("direct" = opt out)

Parsing is strict: unknown keys, wrong types and inconsistent settings raise
:class:`~meta_memory.errors.ConfigError` naming the key.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from meta_memory.errors import ConfigError

__all__ = ["StewardCaps", "StewardConfig", "parse_cadence", "DEFAULT_CADENCE"]

DEFAULT_CADENCE = "*/6h"
_UNITS = {"s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_CADENCE = re.compile(r"^(?:\*/)?(\d+)\s*([smhd])$")


#: The longest accepted cadence: 30 days.
MAX_CADENCE_MS = 30 * 86_400_000


def parse_cadence(value: Any) -> int:
    """A cadence as an interval in milliseconds.

    ``"*/6h"`` / ``"6h"`` -> 21_600_000; units ``s m h d``; an ``int`` is seconds.
    Raises ``ValueError`` for anything else, for a zero interval, or above 30 days.
    """
    if isinstance(value, bool):
        raise ValueError("cadence must be like '*/6h' or a positive number of seconds")
    interval: int | None = None
    if isinstance(value, int):
        if value <= 0:
            raise ValueError("cadence must be a positive number of seconds")
        interval = value * 1_000
    elif isinstance(value, str):
        m = _CADENCE.match(value.strip())
        if m and int(m.group(1)) > 0:
            interval = int(m.group(1)) * _UNITS[m.group(2)]
    if interval is None:
        raise ValueError("cadence must be like '*/6h' (units s, m, h, d) or a positive number of seconds")
    if interval > MAX_CADENCE_MS:
        raise ValueError(f"cadence must be between 1 second and 30 days; got {value!r}")
    return interval


class StewardCaps(BaseModel):
    """Per-dream caps: how many proposals, quarantined records and harvests one dream considers."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    proposals: int = Field(default=32, ge=0, le=1024)
    quarantine: int = Field(default=16, ge=0, le=1024)
    harvests: int = Field(default=4, ge=0, le=1024)
    open_loops: int = Field(default=16, ge=0, le=1024)
    audit: int = Field(default=16, ge=0, le=1024)


class StewardConfig(BaseModel):
    """The steward section. ``interval_ms`` is the parsed ``cadence``."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    enabled: bool = False
    cadence: str | int = DEFAULT_CADENCE
    kind: Literal["policy", "llm"] = "policy"
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    timeout_s: float = Field(default=30.0, gt=0, le=600)
    open_loop_age_days: int = Field(default=14, ge=1, le=3650)
    caps: StewardCaps = StewardCaps()
    auto_accept_proposals: tuple[str, ...] = ()
    """Mob names whose clean (untainted) proposals the policy steward accepts on its own; ``"*"``
    accepts them for every scope. Default: none — proposals wait for an operator (held)."""
    llm_release: Literal["gated", "direct"] = "gated"
    """What the LLM steward's ``release`` of quarantined content does: ``gated`` (default) stages a
    gated promotion an operator decides through ``meta/gating/decide``, and its ``tombstone`` of a held
    forget leaves the forget held for an operator; ``direct`` (explicit opt-in) releases at once, as
    the policy steward's verdicts would, and lets it approve held forgets."""

    @field_validator("auto_accept_proposals", mode="before")
    @classmethod
    def _auto_accept(cls, value: Any) -> tuple[str, ...]:
        if isinstance(value, tuple):
            value = list(value)
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            raise ValueError("auto_accept_proposals must be a list of mob names (or \"*\")")
        return tuple(sorted({v.strip() for v in value}))

    def auto_accepts(self, scope_kind: str, scope_key: str) -> bool:
        """Whether the policy steward may accept a clean proposal for this scope on its own."""
        if "*" in self.auto_accept_proposals:
            return True
        return scope_kind == "mob" and scope_key in self.auto_accept_proposals

    @field_validator("cadence")
    @classmethod
    def _cadence(cls, value: str | int) -> str | int:
        parse_cadence(value)
        return value

    @field_validator("base_url")
    @classmethod
    def _base_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = value.strip()
        if not re.match(r"^https?://[^/\s]+", value):
            raise ValueError("base_url must be an http(s) URL")
        return value.rstrip("/")

    @model_validator(mode="after")
    def _llm_needs_endpoint(self) -> StewardConfig:
        if self.kind == "llm" and (not self.base_url or not (self.model or "").strip()):
            raise ValueError("kind 'llm' needs base_url and model")
        return self

    @property
    def interval_ms(self) -> int:
        return parse_cadence(self.cadence)

    @classmethod
    def parse(cls, raw: Any, *, section: str = "agent_memory.steward") -> StewardConfig:
        """Decode the section: ``None`` (absent, disabled), a bool (``true`` = enabled with defaults) or a table.

        Raises :class:`ConfigError` ``"<section>.<key>: <rule>"``.
        """
        if raw is None:
            return cls()
        if isinstance(raw, bool):
            return cls(enabled=raw)
        if not isinstance(raw, dict):
            raise ConfigError(f"{section} must be a table or a boolean")
        try:
            return cls.model_validate(raw)
        except ValidationError as exc:
            err = exc.errors(include_url=False)[0]
            loc = ".".join(str(p) for p in err.get("loc", ()))
            where = f"{section}.{loc}" if loc else section
            msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
            if err.get("type") == "extra_forbidden":
                msg = "unknown key"
            bounds = _bounds(cls, tuple(err.get("loc", ())))
            if bounds is not None and err.get("type") in _RANGE_ERRORS:
                msg = f"must be {bounds}; got {err.get('input')!r}"
            raise ConfigError(f"{where}: {msg}") from None


_RANGE_ERRORS = frozenset({"greater_than", "greater_than_equal", "less_than", "less_than_equal"})


def _bounds(model: type[BaseModel] | None, loc: tuple[Any, ...]) -> str | None:
    """The range declared on the field at ``loc`` (nested models followed) as words, or ``None``."""
    field = None
    for part in loc:
        if model is None or not isinstance(part, str) or part not in model.model_fields:
            return None
        field = model.model_fields[part]
        ann = field.annotation
        model = ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None
    if field is None:
        return None
    found: dict[str, Any] = {}
    for meta in field.metadata:
        for name in ("ge", "gt", "le"):
            if getattr(meta, name, None) is not None:
                found[name] = getattr(meta, name)
    if "le" not in found:
        return None
    if "ge" in found:
        return f"between {found['ge']} and {found['le']}"
    if "gt" in found:
        return f"above {found['gt']} and at most {found['le']}"
    return None
