"""Decoding of the ``[memory]`` configuration table (seed: Architecture; reference §1.9–1.11).

The assertion ledger has one backend kind, ``local_json``. Its state file is
not configurable: the runtime derives it as
``<persistent_state>/memory-ledger-state.json`` (see
:class:`meta_memory.storage.layout.StorageLayout`). The only other key is an
optional HTTP health-check base URL.

Example TOML::

    [memory]
    kind = "local_json"
    health_check_endpoint = "http://localhost:3000"
"""

from __future__ import annotations

from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator
from pydantic_core import PydanticCustomError

from meta_memory.errors import ConfigError, shown_config_value
from meta_memory.ledger.normalise import trim

__all__ = [
    "LedgerConfig",
    "parse_memory_section",
    "validate_health_check_endpoint",
    "DEFAULT_MAX_STATE_BYTES",
    "MIN_MAX_STATE_BYTES",
    "MAX_MAX_STATE_BYTES",
]

#: Keys the predecessor accepted that never had an effect; refused so they do not become silent no-ops.
UNSUPPORTED_KEYS: tuple[str, ...] = ("stores", "space_id", "collection")

_KNOWN_KEYS: frozenset[str] = frozenset({"kind", "health_check_endpoint", "max_state_bytes"})
_OWN_MESSAGE_KEYS: frozenset[str] = frozenset({*UNSUPPORTED_KEYS, "state_path", "endpoint"})

#: Default of ``max_state_bytes``: the serialised assertions and conflict signals together (64 MiB).
DEFAULT_MAX_STATE_BYTES = 64 * 1024 * 1024
#: Smallest accepted ``max_state_bytes`` (room for a few maximal assertions).
MIN_MAX_STATE_BYTES = 1024 * 1024
#: Largest accepted ``max_state_bytes`` (every index rewrites the file: 1 GiB is already slow).
MAX_MAX_STATE_BYTES = 1024 * 1024 * 1024


class LedgerConfig(BaseModel):
    """The validated ``[memory]`` table.

    Attributes:
        kind: always ``"local_json"``.
        health_check_endpoint: HTTP(S) base URL whose ``/v1/health`` must answer
            2xx at the startup load and before every persist; ``None`` disables
            the check. Stored trimmed.
        max_state_bytes: bound on the serialised assertions and conflict signals
            (1 MiB .. 1 GiB, default 64 MiB): older assertions are evicted to stay
            under it, and a write that cannot fit beside the conflict signals is refused.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["local_json"] = "local_json"
    health_check_endpoint: str | None = None
    max_state_bytes: int = DEFAULT_MAX_STATE_BYTES

    @field_validator("health_check_endpoint", mode="before")
    @classmethod
    def _endpoint(cls, value: object) -> str | None:
        if value is None:
            return None
        try:
            return validate_health_check_endpoint(value)
        except ConfigError as exc:
            raise PydanticCustomError("config_rule", str(exc)) from None

    @field_validator("max_state_bytes", mode="before")
    @classmethod
    def _state_bytes(cls, value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not MIN_MAX_STATE_BYTES <= value <= MAX_MAX_STATE_BYTES:
            raise PydanticCustomError(
                "config_rule",
                f"memory.max_state_bytes must be an integer between {MIN_MAX_STATE_BYTES} and {MAX_MAX_STATE_BYTES}"
                f" (bytes); got {shown_config_value(value)}",
            )
        return value


def validate_health_check_endpoint(value: object, key: str = "memory.health_check_endpoint") -> str:
    """Check a health-check base URL and return it trimmed.

    Rules: a string; not empty or blank ("memory backend health_check_endpoint
    must not be empty when provided"); starts with ``http://`` or ``https://``;
    names a host.

    Raises:
        ConfigError: naming ``key`` and the broken rule.
    """
    if not isinstance(value, str):
        raise ConfigError(f"{key} must be a string (got {shown_config_value(value)})")
    endpoint = trim(value)
    if not endpoint:
        raise ConfigError("memory backend health_check_endpoint must not be empty when provided")
    if not (endpoint.startswith("http://") or endpoint.startswith("https://")):
        raise ConfigError(f"{key} must start with http:// or https:// (got '{endpoint}')")
    try:
        parts = urlsplit(endpoint)
        _ = parts.port  # raises ValueError on a non-numeric or out-of-range port
    except ValueError as exc:
        raise ConfigError(f"{key} is not a valid URL (got '{endpoint}'): {exc}") from None
    if not parts.hostname:
        raise ConfigError(f"{key} must name a host (got '{endpoint}')")
    if parts.query or parts.fragment:
        raise ConfigError(f"{key} must be a base URL without query or fragment (got '{endpoint}')")
    return endpoint


def _refuse_unknown_keys(raw: dict[str, Any]) -> None:
    """Raise :class:`ConfigError` naming the first key (sorted) that ``[memory]`` does not know; the keys
    refused with a message of their own (``stores``, ``state_path``, ``endpoint``, ...) are left to it."""
    for key in sorted(raw):
        if key not in _KNOWN_KEYS and key not in _OWN_MESSAGE_KEYS:
            raise ConfigError(
                f"memory.{key} is an unknown key (allowed: kind, health_check_endpoint, max_state_bytes)"
            )


def parse_memory_section(raw: dict[str, Any]) -> LedgerConfig:
    """Decode the TOML ``[memory]`` table strictly.

    Args:
        raw: the table as decoded by ``tomllib`` (``{"kind": ..., ...}``).

    Returns:
        The frozen :class:`LedgerConfig`.

    Raises:
        ConfigError: ``kind`` missing or not ``"local_json"`` (the removed
            ``"elephant"`` kind gets a message naming ``local_json`` and telling
            to move ``endpoint`` to ``health_check_endpoint``); one of
            ``stores``/``space_id``/``collection`` present ("unsupported");
            ``state_path`` present (it is derived); any other unknown key; an
            invalid ``health_check_endpoint``.
    """
    if not isinstance(raw, dict):
        raise ConfigError("[memory] must be a table")
    kind = raw.get("kind")
    if kind is None:
        _refuse_unknown_keys(raw)  # a misspelt ``kind`` is named as the unknown key it is
        raise ConfigError('memory.kind is required: the only backend kind is "local_json"')
    if kind == "elephant":
        hint = ""
        if isinstance(raw.get("endpoint"), str) and raw["endpoint"].strip():
            hint = f' (here: health_check_endpoint = "{raw["endpoint"].strip()}")'
        raise ConfigError(
            'memory.kind = "elephant" was removed and has no alias: '
            'set kind = "local_json" and move endpoint to health_check_endpoint' + hint
        )
    if kind != "local_json":
        raise ConfigError(f'memory.kind {kind!r} is unsupported: the only backend kind is "local_json"')
    for key in UNSUPPORTED_KEYS:
        if key in raw:
            raise ConfigError(
                f"memory.{key} is unsupported: the assertion ledger has no per-store, space or collection "
                "settings; remove it"
            )
    if "state_path" in raw:
        raise ConfigError(
            "memory.state_path is unsupported: the ledger file is always "
            "<persistent_state>/memory-ledger-state.json; remove it"
        )
    if "endpoint" in raw:
        raise ConfigError("memory.endpoint is unsupported: rename it to health_check_endpoint")
    _refuse_unknown_keys(raw)
    try:
        return LedgerConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(exc.errors(include_url=False)[0]["msg"]) from None
