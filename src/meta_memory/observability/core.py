"""Observability of one runtime (the names :mod:`meta_memory.observability` gives on first use).

:class:`Observability` is what the method table calls around every call (:meth:`Observability.call`):
it times the call, counts it and its outcome (:mod:`.metrics`), runs it inside its span
(:mod:`.tracing`) and knows whether error responses name the request id (:mod:`.requests`).
Configured by ``[telemetry]`` (:mod:`.config`); JSON log lines are :mod:`.logs`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from ..errors import MetaError
from .config import TelemetryConfig
from .metrics import Metrics
from .requests import UNKNOWN_METHOD, current_request_id
from .tracing import Tracing

if TYPE_CHECKING:  # pragma: no cover
    from ..runtime import Runtime

__all__ = ["CallObservation", "Observability", "TelemetryConfig", "count_refused_write"]

#: The span of an untraced call: none (a shared context manager giving ``None``).
_UNTRACED = contextlib.nullcontext()

#: The metrics of the call running on this thread or task (``None`` outside a call).
_METRICS: ContextVar[Metrics | None] = ContextVar("meta_memory_call_metrics", default=None)


def count_refused_write(error: MetaError) -> None:
    """Count a write refused inside a call that answers it as a result rather than an error (the
    ``memory`` tool's ``is_error`` texts): ``refused`` by its reason, or ``secret_refused``."""
    metrics = _METRICS.get()
    if metrics is not None and metrics.enabled:
        metrics.refused_write({"kind": error.kind, **error.data})


class CallObservation:
    """One call being observed: :meth:`describe` once params parse, :meth:`done` with the result."""

    __slots__ = ("method", "span", "result", "known", "_tracing")

    def __init__(self, method: str, span: Any, tracing: Tracing) -> None:
        self.method = method
        self.span = span
        self.result: Any = None
        self.known = False
        self._tracing = tracing

    def describe(self, parsed: Any) -> None:
        """The method is known and its params parsed: name the call's subject on its span."""
        if self.span is not None:
            self._tracing.describe(self.span, self.method, parsed)

    def done(self, result: Any) -> None:
        self.result = result


class Observability:
    """Metrics, traces and request ids of one runtime (``runtime.observability``).

    Args:
        config: ``[telemetry]``.
        tracer_provider: an OpenTelemetry SDK ``TracerProvider`` to trace into instead of building one
            from the configuration (an embedding application's, or a test's in-memory exporter).

    Raises:
        ConfigError: traces configured without the ``otel`` extra installed.
    """

    def __init__(self, config: TelemetryConfig | None = None, *, tracer_provider: Any = None) -> None:
        self.config = config or TelemetryConfig()
        self.metrics = Metrics(enabled=self.config.metrics, stats_ttl_s=self.config.stats_ttl_s)
        self.tracing = Tracing(self.config, tracer_provider)

    @property
    def names_request_ids(self) -> bool:
        """Whether error responses carry ``data.request_id``: when the logs are JSON or calls are traced,
        so there is something to find it in."""
        return self.config.log_format == "json" or self.tracing.enabled

    def bind(self, runtime: "Runtime") -> None:
        self.metrics.bind(runtime)

    @contextlib.contextmanager
    def call(self, method: str, transport: str, request_id: str | None = None) -> Iterator[CallObservation]:
        """Observe one call (``request_id``: the transport's, else the one bound to the running request):
        its span is current inside the block; on exit it is counted (its error by ``data.kind``; a
        method the table does not advertise under :data:`UNKNOWN_METHOD`)."""
        started = time.perf_counter()
        token = _METRICS.set(self.metrics)
        try:
            traced = (self.tracing.call_span(method, request_id or current_request_id(), transport)
                      if self.tracing.enabled else _UNTRACED)  # untraced: no span to open, nothing to restore
            with traced as span:
                obs = CallObservation(method, span, self.tracing)
                try:
                    yield obs
                except MetaError as exc:
                    self._failed(obs, started, exc.kind, exc.code, {"kind": exc.kind, **exc.data})
                    raise
                except Exception:
                    self._failed(obs, started, "internal", -32603, {"kind": "internal"})
                    raise
        finally:
            _METRICS.reset(token)
        self.metrics.observe_call(method if obs.known else UNKNOWN_METHOD, time.perf_counter() - started,
                                  obs.result, None)

    def _failed(self, obs: CallObservation, started: float, kind: str, code: int, data: dict[str, Any]) -> None:
        self.tracing.failed(obs.span, kind, code)
        self.metrics.observe_call(obs.method if obs.known else UNKNOWN_METHOD, time.perf_counter() - started,
                                  None, data)

    def close(self) -> None:
        self.tracing.close()
