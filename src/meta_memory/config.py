"""The configuration file: one TOML document, decoded strictly.

Top-level tables, each owned and validated by its domain:

``[memory]``        the assertion ledger (:mod:`meta_memory.ledger.config`)
``[agent_memory]``  agent memory, injection, firewall, steward (:mod:`meta_memory.agent_memory.config`)
``[access]``        authentication and access control (:mod:`meta_memory.access.config`)
``[gateway]``       transport limits and the HTTP perimeter (:mod:`meta_memory.server.config`)
``[telemetry]``     metrics, traces and the log format (:mod:`meta_memory.observability.config`)

Unknown tables and unknown keys anywhere are refused with a
:class:`~meta_memory.errors.ConfigError` naming them; nothing is ignored.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .access.config import AccessConfig, parse_access_section
from .agent_memory.config import AgentMemoryConfig, parse_agent_memory_section
from .errors import ConfigError, known_keys
from .ledger.config import LedgerConfig, parse_memory_section
from .observability.config import TelemetryConfig, parse_telemetry_section
from .server.config import DEFAULT_MAX_REQUEST_BYTES, GatewayConfig, parse_gateway_section

__all__ = ["DEFAULT_MAX_REQUEST_BYTES", "GatewayConfig", "MetaConfig", "load_config", "parse_config"]


@dataclass(frozen=True)
class MetaConfig:
    """The whole configuration. ``memory is None`` means "no ledger backend": the
    ledger is held in memory only (the SDK builder without ``.memory(...)``);
    ``meta-memory serve`` fills in ``local_json`` under its state dir."""

    memory: LedgerConfig | None = None
    agent_memory: AgentMemoryConfig | None = None
    access: AccessConfig | None = None
    gateway: GatewayConfig = field(default_factory=GatewayConfig)
    telemetry: TelemetryConfig = field(default_factory=TelemetryConfig)

    def with_memory(self, memory: LedgerConfig | None) -> MetaConfig:
        """This config with ``[memory]`` replaced (``serve`` fills in ``local_json`` under its state dir)."""
        return replace(self, memory=memory)


def parse_config(raw: dict[str, Any]) -> MetaConfig:
    """Decode a TOML document (already parsed into a dict). Raises :class:`ConfigError`."""
    known = {"memory", "agent_memory", "access", "gateway", "telemetry"}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ConfigError(f"unknown configuration table [{unknown[0]}] {known_keys(known)}")
    memory = parse_memory_section(raw["memory"]) if "memory" in raw else None
    agent_memory = parse_agent_memory_section(raw["agent_memory"]) if "agent_memory" in raw else None
    access = parse_access_section(raw["access"]) if "access" in raw else None
    gateway = parse_gateway_section(raw["gateway"]) if "gateway" in raw else GatewayConfig()
    telemetry = parse_telemetry_section(raw["telemetry"]) if "telemetry" in raw else TelemetryConfig()
    return MetaConfig(memory=memory, agent_memory=agent_memory, access=access, gateway=gateway, telemetry=telemetry)


def load_config(path: Path | str) -> MetaConfig:
    """Read and decode a TOML config file (UTF-8, a leading byte-order mark allowed). Raises
    :class:`ConfigError` naming the file on a read or syntax error, or naming the key on a rule violation."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read config file {p}: {exc.strerror}") from None
    try:
        raw = tomllib.loads(data.decode("utf-8-sig"))  # a leading byte-order mark (some editors write one) is skipped
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"config file {p} is not valid TOML: {exc}") from None
    return parse_config(raw)
