"""``[telemetry]``: metrics, traces and log format, decoded strictly.

Keys (all optional):

=====================  ===========================================================  ==========
key                    meaning                                                      default
=====================  ===========================================================  ==========
``metrics``            count calls, errors, latencies and outcomes for ``/metrics`` ``true``
``stats_ttl_s``        seconds a store census (records per realm and status, held   ``15``
                       forgets, vector backlog) is reused before it is read again
``traces``             ``"off"``, ``"otlp"`` (OTLP over HTTP, the standard          ``"off"``
                       ``OTEL_EXPORTER_OTLP_*`` variables) or ``"console"``
                       (spans as JSON on stderr); needs the ``otel`` extra
``service_name``       the traces' ``service.name`` resource attribute              ``"meta-memory"``
``log_format``         ``"text"`` or ``"json"`` (one object per line, with the      ``"text"``
                       request id)
=====================  ===========================================================  ==========

Without ``traces`` in the file, the standard ``OTEL_TRACES_EXPORTER`` variable (``otlp`` or
``console``) turns traces on, and ``OTEL_SDK_DISABLED=true`` keeps them off whatever the file says.
A refusal is a :class:`~meta_memory.errors.ConfigError` naming ``telemetry.<key>`` and the rule.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import ConfigError, known_keys

__all__ = ["TelemetryConfig", "parse_telemetry_section", "traces_from_env"]

TraceExporter = Literal["off", "otlp", "console"]
LogFormat = Literal["text", "json"]

_TRACES = ("off", "otlp", "console")
_LOG_FORMATS = ("text", "json")
_MAX_TTL_S = 3600.0


@dataclass(frozen=True)
class TelemetryConfig:
    """``[telemetry]`` (see the module docstring for each key, its unit and default)."""

    metrics: bool = True
    stats_ttl_s: float = 15.0
    traces: TraceExporter | None = None  # None: not in the file (the OTEL_* variables decide)
    service_name: str = "meta-memory"
    log_format: LogFormat = "text"

    def trace_exporter(self, env: Mapping[str, str] | None = None) -> TraceExporter:
        """The exporter in force: ``OTEL_SDK_DISABLED=true`` wins, then the file, then ``OTEL_TRACES_EXPORTER``."""
        environ = os.environ if env is None else env
        if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
            return "off"
        if self.traces is not None:
            return self.traces
        return traces_from_env(environ)


def traces_from_env(env: Mapping[str, str]) -> TraceExporter:
    """``OTEL_TRACES_EXPORTER`` read as one of ours: ``otlp``/``console`` (the first of a list), else ``off``."""
    first = env.get("OTEL_TRACES_EXPORTER", "").split(",")[0].strip().lower()
    return first if first in ("otlp", "console") else "off"  # type: ignore[return-value]


def parse_telemetry_section(raw: Any) -> TelemetryConfig:
    """Decode ``[telemetry]``. Raises :class:`ConfigError` naming the first bad key."""
    if not isinstance(raw, dict):
        raise ConfigError("[telemetry] must be a table")
    known = ("metrics", "stats_ttl_s", "traces", "service_name", "log_format")
    unknown = sorted(set(raw) - set(known))
    if unknown:
        raise ConfigError(f"unknown key telemetry.{unknown[0]} {known_keys(known)}")
    values: dict[str, Any] = {}
    if "metrics" in raw:
        if not isinstance(raw["metrics"], bool):
            raise ConfigError("telemetry.metrics must be true or false")
        values["metrics"] = raw["metrics"]
    if "stats_ttl_s" in raw:
        ttl = raw["stats_ttl_s"]
        if not isinstance(ttl, (int, float)) or isinstance(ttl, bool) or not 1 <= ttl <= _MAX_TTL_S:
            raise ConfigError(f"telemetry.stats_ttl_s must be a number of seconds from 1 to {_MAX_TTL_S:g}")
        values["stats_ttl_s"] = float(ttl)
    for key, allowed in (("traces", _TRACES), ("log_format", _LOG_FORMATS)):
        if key in raw:
            value = raw[key]
            if not isinstance(value, str) or value.strip().lower() not in allowed:
                raise ConfigError(f"telemetry.{key} must be one of {', '.join(repr(a) for a in allowed)}")
            values[key] = value.strip().lower()
    if "service_name" in raw:
        name = raw["service_name"]
        if not isinstance(name, str) or not name.strip() or len(name) > 128 or not name.isprintable():
            raise ConfigError("telemetry.service_name must be a printable string of 1 to 128 characters")
        values["service_name"] = name.strip()
    return TelemetryConfig(**values)
