"""Observability of one runtime: Prometheus metrics, OpenTelemetry traces, request ids, JSON logs.

:class:`Observability` (:mod:`.core`) is what the method table calls around every call: it times the call,
counts it and its outcome (:mod:`.metrics`), runs it inside its span (:mod:`.tracing`) and knows whether
error responses name the request id (:mod:`.requests`). Configured by ``[telemetry]`` (:mod:`.config`); JSON
log lines are :mod:`.logs`.

The names below load on first use, so a command that only sets up its log lines (every ``meta-memory``
command does) does not import the Prometheus metrics a serving runtime needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy_names import lazy_names

if TYPE_CHECKING:  # pragma: no cover
    from .config import TelemetryConfig
    from .core import CallObservation, Observability, count_refused_write

__all__ = ["CallObservation", "Observability", "TelemetryConfig", "count_refused_write"]

#: Where each public name is defined (a module of this package).
_HOMES = {"CallObservation": "core", "Observability": "core", "count_refused_write": "core", "TelemetryConfig": "config"}


__getattr__, __dir__ = lazy_names(__name__, _HOMES)
