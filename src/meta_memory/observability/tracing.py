"""OpenTelemetry traces (the optional ``otel`` extra): one span per call, child spans for its stages.

Off unless configured (:class:`~.config.TelemetryConfig`): then nothing of OpenTelemetry is
imported and every span helper is a shared no-op. On, each JSON-RPC call is one span named after
its method (kind ``SERVER`` over a transport, ``INTERNAL`` embedded) with ``rpc.system = "jsonrpc"``,
``rpc.method``, ``meta_memory.request_id`` and ``meta_memory.transport``; an error sets the span's
status to ``ERROR`` with ``error.type`` (the refusal's ``data.kind``) and ``rpc.jsonrpc.error_code``.
Its children: ``params`` and ``access`` (parsing and authorising), ``store.transaction`` /
``store.snapshot`` (one per store transaction, ``db.system.name`` and ``db.namespace`` = the realm),
``recall.search`` / ``recall.recheck`` (the provider's candidates, the runtime's re-check) and
``inject.render`` (the quoted observation block).

The OpenTelemetry GenAI semantic conventions name the call's subject where they have a term for it:
``gen_ai.operation.name`` (``retrieval`` for a recall or an injection, ``execute_tool`` for the
``memory`` tool, with ``gen_ai.tool.name = "memory"``), ``gen_ai.agent.id`` (the identity),
``gen_ai.conversation.id`` (the session key; left out when the secret scanner finds a credential in it,
which is never recorded: :func:`~meta_memory.session_ref.recorded_session_key`) and
``gen_ai.data_source.id`` (the realm). No span
holds a token, a query or memory content; exceptions are not recorded as span events (their
messages could quote a value).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

from ..errors import ConfigError
from ..session_ref import session_key_secret
from .config import TelemetryConfig

__all__ = ["INSTALL_HINT", "Tracing", "current_trace_ids", "span"]

INSTALL_HINT = "pip install 'meta-memory[otel]'"
_INSTRUMENTATION = "meta_memory"
_NULL = contextlib.nullcontext()

#: The tracing of the call running on this thread or task (``None``: not traced).
_ACTIVE: ContextVar["Tracing | None"] = ContextVar("meta_memory_tracing", default=None)

#: ``gen_ai.operation.name`` of the methods the GenAI conventions have a term for.
_OPERATIONS = {
    "meta/agent_memory/recall": "retrieval",
    "meta/turn/inject": "retrieval",
    "meta/agent_memory/tool": "execute_tool",
}


def _genai_attributes(method: str, parsed: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    operation = _OPERATIONS.get(method)
    if operation is not None:
        out["gen_ai.operation.name"] = operation
        if operation == "execute_tool":
            out["gen_ai.tool.name"] = "memory"
    for attr, name in (("identity", "gen_ai.agent.id"), ("session_key", "gen_ai.conversation.id"),
                       ("realm", "gen_ai.data_source.id")):
        value = getattr(parsed, attr, None)
        if isinstance(value, str) and value and not (attr == "session_key" and session_key_secret(value)):
            out[name] = value
    return out


class Tracing:
    """The traces of one runtime.

    Args:
        config: ``[telemetry]`` (its :meth:`~.config.TelemetryConfig.trace_exporter` decides).
        provider: an OpenTelemetry SDK ``TracerProvider`` to use instead (an embedding application's,
            or a test's with the SDK's in-memory exporter); the runtime then does not shut it down.

    Raises:
        ConfigError: traces are configured but the ``otel`` extra is not installed (names the hint).
    """

    def __init__(self, config: TelemetryConfig, provider: Any = None) -> None:
        self._owned: Any = None
        self._tracer: Any = None
        if provider is None:
            exporter = config.trace_exporter()
            if exporter == "off":
                return
            provider = self._owned = _build_provider(exporter, config.service_name)
        from opentelemetry.trace import SpanKind, Status, StatusCode

        self._kinds = (SpanKind.SERVER, SpanKind.INTERNAL)
        self._error = Status(StatusCode.ERROR)
        self._tracer = provider.get_tracer(_INSTRUMENTATION)

    @property
    def enabled(self) -> bool:
        """Whether calls are traced."""
        return self._tracer is not None

    @contextlib.contextmanager
    def call_span(self, method: str, request_id: str | None, transport: str) -> Iterator[Any]:
        """The span of one call (``None`` when off), current while the block runs."""
        if self._tracer is None:
            yield None
            return
        attributes = {"rpc.system": "jsonrpc", "rpc.method": method, "meta_memory.transport": transport}
        if request_id is not None:
            attributes["meta_memory.request_id"] = request_id
        kind = self._kinds[1] if transport == "embedded" else self._kinds[0]
        token = _ACTIVE.set(self)
        try:
            with self._tracer.start_as_current_span(method, kind=kind, attributes=attributes,
                                                    record_exception=False, set_status_on_exception=False) as current:
                yield current
        finally:
            _ACTIVE.reset(token)

    def describe(self, current: Any, method: str, parsed: Any) -> None:
        """Name the call's subject on its span (GenAI attributes from the parsed params)."""
        if current is not None:
            current.set_attributes(_genai_attributes(method, parsed))

    def failed(self, current: Any, kind: str, code: int) -> None:
        """Mark the call's span as failed with refusal ``kind`` and JSON-RPC ``code``."""
        if current is not None:
            current.set_attributes({"error.type": kind, "rpc.jsonrpc.error_code": code})
            current.set_status(self._error)

    def child(self, name: str, attributes: dict[str, Any] | None) -> Any:
        """A child span of the current one (a context manager)."""
        return self._tracer.start_as_current_span(name, attributes=attributes, record_exception=False)

    def close(self) -> None:
        """Flush and stop the provider this runtime built (not one it was given)."""
        if self._owned is not None:
            self._owned.shutdown()
            self._owned = None


def span(name: str, **attributes: Any) -> Any:
    """A child span ``name`` of the running call (a shared no-op context manager when it is not traced)."""
    tracing = _ACTIVE.get()
    if tracing is None:
        return _NULL
    return tracing.child(name, attributes or None)


def current_trace_ids() -> tuple[str, str] | None:
    """``(trace_id, span_id)`` in hex of the span recording on this thread, else ``None`` (never imports
    OpenTelemetry: without it loaded there is no span)."""
    if _ACTIVE.get() is None or "opentelemetry.trace" not in sys.modules:
        return None
    from opentelemetry import trace

    ctx = trace.get_current_span().get_span_context()
    if not ctx.is_valid:
        return None
    return f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}"


def _build_provider(exporter: str, service_name: str) -> Any:
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SimpleSpanProcessor
    except ImportError:
        raise ConfigError(f"telemetry.traces = {exporter!r} needs the OpenTelemetry SDK: {INSTALL_HINT}") from None
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    if exporter == "console":
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(
            out=sys.stderr, formatter=lambda s: s.to_json(indent=None) + "\n")))
    else:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError:
            raise ConfigError("telemetry.traces = 'otlp' needs the OTLP exporter "
                              f"(opentelemetry-exporter-otlp-proto-http): {INSTALL_HINT}") from None
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider
