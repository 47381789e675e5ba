"""Prometheus metrics of one runtime, on a registry of its own (never the process-wide default).

Counted as calls run (cheap: a dictionary look-up and an increment; nothing reads a store):

==============================================  ==========================================================
``meta_memory_rpc_calls_total{method}``          calls answered, refused or failed, per method
``meta_memory_rpc_errors_total{method,kind}``    refusals and failures by ``data.kind``
``meta_memory_rpc_duration_seconds{method}``     latency histogram per method (parse to result)
``meta_memory_recall_duration_seconds{path}``    recall latency: ``path`` = ``recall`` (explicit) or ``inject``
``meta_memory_recall_budget_overruns_total``     ``{path, reason}``: a recall past its time budget
                                                 (``timeout``), an injection that ran out of its byte
                                                 budget (``budget_exhausted``) or skipped a failed recall
                                                 (``recall_failed``)
``meta_memory_writes_total{outcome,reason}``     ``created``, ``duplicate``, ``quarantined`` (the class of the
                                                 firewall's reason, :func:`~meta_memory.firewall.gate.reason_class`:
                                                 never a session key or tool name), ``refused`` (the refusal's reason) and
                                                 ``secret_refused`` (the secret class)
``meta_memory_taint_transitions_total{kind}``    ``tainted``, ``rotated_clean``, ``reset_boundary``
``meta_memory_held_forgets_total``               forgets held for review
==============================================  ==========================================================

Read at scrape time from memory (no store read): ``meta_memory_process_resident_bytes`` and
``meta_memory_process_peak_resident_bytes`` (the process's ``VmRSS`` and ``VmHWM``),
``meta_memory_memory_bytes{component}`` and ``meta_memory_memory_limit_bytes{component}`` (each bounded
component's memory and its configured bound: ``recall_index``, ``sqlite``, ``view_cache``, ``vector_cache``;
:mod:`meta_memory.memory_report`), ``meta_memory_ledger_assertions``,
``meta_memory_ledger_evictions_total``, ``meta_memory_ledger_file_bytes``,
``meta_memory_event_subscribers``, ``meta_memory_upkeep_pending_realms``,
``meta_memory_telemetry_rows_dropped_total``, ``meta_memory_panel_realm_reads_total`` (per-realm summaries
the console's reads of every realm read from a realm's files) and ``meta_memory_panel_realms_restored_total``
(realms whose summaries were taken from the previous start's, their files unchanged), and
``meta_memory_recall_degraded_total{reason}``:
recalls (explicit and for injection) answered with less than the full ranking, per ``degraded_reason``
— under hybrid recall, those the hybrid provider answered with the lexical ranking alone
(:data:`~meta_memory.recall.provider.DEGRADED_REASONS`), and the candidate rankings the store could not
prove the best (``approximate_ranking``: SQLite's one-scope FTS5 path, PostgreSQL's later rounds cut
short of the budget); every reason is reported, from 0.

The store census (:class:`StoreCensus`), reused for ``[telemetry] stats_ttl_s`` seconds and refreshed
on a background thread so a scrape never waits for a table count: ``meta_memory_records{realm,status}``,
``meta_memory_quarantine_queue_depth{realm}``, ``meta_memory_held_forgets_standing{realm}``,
``meta_memory_vector_backlog{realm}`` and ``meta_memory_census_age_seconds``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ..errors import AgentMemoryError
from ..firewall.gate import reason_class

if TYPE_CHECKING:  # pragma: no cover
    from ..events.bus import EventEnvelope
    from ..runtime import Runtime

__all__ = ["CONTENT_TYPE", "Metrics", "StoreCensus"]

log = logging.getLogger("meta_memory.metrics")

#: The Prometheus text exposition format's media type.
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_RECALL_PATHS = {"meta/agent_memory/recall": "recall", "meta/turn/inject": "inject"}
_WRITE_METHODS = frozenset({"meta/agent_memory/remember", "meta/agent_memory/remember_batch",
                            "meta/agent_memory/update", "meta/agent_memory/tool"})
#: Refusals before a write is judged (the call never reached the store): counted as errors, not as writes.
_NOT_WRITES = frozenset({"invalid_params", "access_denied", "method_not_found", "invalid_request"})
_OVERRUN_SKIPS = frozenset({"budget_exhausted", "recall_failed"})


class Metrics:
    """Counters, histograms and scrape-time gauges of one runtime (see the module docstring).

    ``registry`` is this runtime's own :class:`~prometheus_client.CollectorRegistry`; :meth:`render`
    is the ``/metrics`` body. ``enabled=False`` (``[telemetry] metrics = false``) counts nothing.
    """

    def __init__(self, *, enabled: bool = True, stats_ttl_s: float = 15.0) -> None:
        self.enabled = enabled
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.calls = Counter("meta_memory_rpc_calls", "JSON-RPC calls, per method.", ["method"], registry=r)
        self.errors = Counter("meta_memory_rpc_errors", "JSON-RPC refusals and failures, per method and data.kind.",
                              ["method", "kind"], registry=r)
        self.duration = Histogram("meta_memory_rpc_duration_seconds", "JSON-RPC call latency, per method.",
                                  ["method"], buckets=_LATENCY_BUCKETS, registry=r)
        self.recall_duration = Histogram("meta_memory_recall_duration_seconds",
                                         "Recall latency: explicit recalls and injections.", ["path"],
                                         buckets=_LATENCY_BUCKETS, registry=r)
        self.overruns = Counter("meta_memory_recall_budget_overruns",
                                "Recalls past their time budget and injections past their byte budget.",
                                ["path", "reason"], registry=r)
        self.writes = Counter("meta_memory_writes", "Agent-memory writes by outcome.", ["outcome", "reason"],
                              registry=r)
        self.taint = Counter("meta_memory_taint_transitions", "Session taint transitions, by kind.", ["kind"],
                             registry=r)
        self.held_forgets = Counter("meta_memory_held_forgets", "Forgets held for review.", registry=r)
        self._by_method: dict[str, tuple[Any, Any]] = {}
        self._by_path: dict[str, Any] = {}
        #: the ``created`` writes series, looked up at the first creation (a series appears once used)
        self._created: Any = None
        self._lock = threading.Lock()
        self.census = StoreCensus(stats_ttl_s)
        self._scrape = _ScrapeCollector(self.census)
        r.register(self._scrape)

    def bind(self, runtime: "Runtime") -> None:
        """Read the runtime's gauges at scrape time and count its timeline events."""
        self._scrape.runtime = runtime
        self.census.runtime = runtime
        if self.enabled:
            runtime.events.add_observer(self.observe_event)

    def watch_subscribers(self, count: Callable[[], int]) -> None:
        """Report ``count()`` as ``meta_memory_event_subscribers`` (the ``/events`` endpoint's open streams)."""
        self._scrape.subscribers = count

    # ------------------------------------------------------------------ per call

    def _series(self, method: str) -> tuple[Any, Any]:
        series = self._by_method.get(method)
        if series is None:
            with self._lock:
                series = self._by_method.get(method)
                if series is None:
                    series = (self.calls.labels(method), self.duration.labels(method))
                    self._by_method[method] = series
        return series

    def _recall_series(self, path: str) -> Any:
        series = self._by_path.get(path)
        if series is None:  # labels() gives one series per path: looked up once, as the calls' are
            series = self._by_path.setdefault(path, self.recall_duration.labels(path))
        return series

    def observe_call(self, method: str, seconds: float, result: Any, error: dict[str, Any] | None) -> None:
        """Count one call of ``method`` (a name the table knows, else :data:`.requests.UNKNOWN_METHOD`) that took
        ``seconds``; ``result`` is its JSON result (``None`` on error), ``error`` its JSON-RPC ``data``
        (``kind``, and ``reason`` and ``secret_class`` where the refusal has them)."""
        if not self.enabled:
            return
        calls, duration = self._series(method)
        calls.inc()
        duration.observe(seconds)
        path = _RECALL_PATHS.get(method)
        if error is not None:
            kind = str(error.get("kind") or "internal")
            reason = error.get("reason")
            self.errors.labels(method, kind).inc()
            if path is not None and reason == "timeout":
                self.overruns.labels(path, "timeout").inc()
            if method in _WRITE_METHODS and kind not in _NOT_WRITES:
                self._refused(str(reason or kind), error.get("secret_class"))
            return
        if path is not None:
            self._recall_series(path).observe(seconds)
            skip = result.get("skip_reason") if isinstance(result, dict) else None
            if path == "inject" and skip in _OVERRUN_SKIPS:
                self.overruns.labels(path, skip).inc()
        if method in _WRITE_METHODS and isinstance(result, dict):
            self._write_result(method, result)

    def refused_write(self, error: dict[str, Any]) -> None:
        """Count one refused write from its JSON-RPC ``data`` (``kind``, ``reason``, ``secret_class``)."""
        self._refused(str(error.get("reason") or error.get("kind") or "unknown"), error.get("secret_class"))

    def _refused(self, reason: str, secret_class: str | None = None) -> None:
        if reason == "secret_detected":
            self.writes.labels("secret_refused", secret_class or "unknown").inc()
        else:
            self.writes.labels("refused", reason).inc()

    def _write_result(self, method: str, result: dict[str, Any]) -> None:
        """Duplicates and per-item refusals (creations and quarantines come from the timeline)."""
        if method == "meta/agent_memory/remember" and result.get("created") is False:
            self.writes.labels("duplicate", "").inc()
        elif method == "meta/agent_memory/remember_batch":
            for item in result.get("results") or ():
                error = item.get("error") if isinstance(item, dict) else None
                if isinstance(error, dict):
                    data = error.get("data") or {}
                    self._refused(str(data.get("reason") or data.get("kind") or "unknown"), data.get("secret_class"))
                elif isinstance(item, dict) and item.get("created") is False:
                    self.writes.labels("duplicate", "").inc()

    # ------------------------------------------------------------------ timeline

    def observe_event(self, env: "EventEnvelope") -> None:
        """Count the outcomes the timeline reports (called by the event bus for every event)."""
        kind = env.event_type
        if kind == "memory.record.created":  # every remember's event: its series is looked up once
            created = self._created
            if created is None:
                created = self._created = self.writes.labels("created", "")
            created.inc()
        elif kind == "memory.write.quarantined":
            self.writes.labels("quarantined", reason_class(str(env.data.get("reason") or ""))).inc()
        elif kind == "memory.taint.transition":
            self.taint.labels(str(env.data.get("kind") or "unknown")).inc()
        elif kind == "memory.forget.held":
            self.held_forgets.inc()

    def render(self) -> bytes:
        """The registry in the Prometheus text format (the ``/metrics`` body)."""
        return generate_latest(self.registry)


class StoreCensus:
    """Per-realm counts that need a store read, reused for ``ttl_s`` seconds.

    :meth:`read` answers from the last census at once; when it is older than ``ttl_s`` one
    background refresh starts (never two at once), so scrapes at any rate cost at most one census
    per ``ttl_s``. The first read waits up to ``first_wait_s`` for the first census. A census reads
    each realm in one snapshot: ``GROUP BY status`` over the status index and the standing held
    forgets, plus the vector backlog when hybrid recall is on.
    """

    def __init__(self, ttl_s: float, *, first_wait_s: float = 2.0) -> None:
        self.ttl_s = ttl_s
        self.first_wait_s = first_wait_s
        self.runtime: "Runtime | None" = None
        self._lock = threading.Lock()
        self._refreshing: threading.Thread | None = None
        self._done = threading.Event()
        self._at: float | None = None
        self._realms: dict[str, dict[str, Any]] = {}
        self._backlog: dict[str, int] = {}
        self.refreshes = 0

    def read(self) -> tuple[dict[str, dict[str, Any]], dict[str, int], float | None]:
        """``(realms, vector_backlog, age_s)``: per realm ``{"records": {status: n}, "held_forgets": n}``."""
        now = time.monotonic()
        with self._lock:
            stale = self._at is None or now - self._at >= self.ttl_s
            if stale and self._refreshing is None:
                self._done.clear()
                self._refreshing = threading.Thread(target=self._refresh, name="meta-memory-census", daemon=True)
                self._refreshing.start()
            first = self._at is None
        if first:
            self._done.wait(self.first_wait_s)
        with self._lock:
            age = None if self._at is None else time.monotonic() - self._at
            return self._realms, self._backlog, age

    def _refresh(self) -> None:
        try:
            realms, backlog = self._take()
            with self._lock:
                self._realms, self._backlog, self._at = realms, backlog, time.monotonic()
                self.refreshes += 1
        except Exception:  # noqa: BLE001 - a failed census keeps the last one (its age tells)
            log.warning("the store census for /metrics failed", exc_info=True)
        finally:
            with self._lock:
                self._refreshing = None
            self._done.set()

    def _take(self) -> tuple[dict[str, dict[str, Any]], dict[str, int]]:
        runtime = self.runtime
        feature = runtime.agent_memory if runtime is not None else None
        if feature is None:
            return {}, {}
        realms: dict[str, dict[str, Any]] = {}
        for realm in feature.store.list_realms():
            if feature.store.realm_problem(realm) is not None:
                continue  # a realm that cannot be read has no figures; /v1/ready names it
            try:
                with feature.store.snapshot(realm) as tx:
                    realms[realm] = tx.panel.census()
            except AgentMemoryError as exc:  # a page damaged past what the open read: no figures either
                if exc.reason != "corrupt":
                    raise
        backlog: dict[str, int] = {}
        if feature.recall is not None:
            report = feature.recall.backlog()
            backlog = {str(r["realm"]): int(r["pending"]) for r in report.get("realms", [])}
        return realms, backlog


class _ScrapeCollector(Collector):
    """The gauges read at scrape time (see the module docstring)."""

    def __init__(self, census: StoreCensus) -> None:
        self.census = census
        self.runtime: "Runtime | None" = None
        self.subscribers: Callable[[], int] | None = None

    def describe(self) -> Iterable[Metric]:
        return []  # read at scrape time: no fixed description (the registry then does not call collect early)

    def collect(self) -> Iterator[Metric]:
        runtime = self.runtime
        if runtime is None:
            return
        stats = runtime.ledger.stats()
        yield _gauge("meta_memory_ledger_assertions", "Assertions held by the ledger.", stats["assertions"])
        yield _counter("meta_memory_ledger_evictions", "Ledger assertions evicted by its cap since start.",
                       stats["evicted"])
        layout = runtime.layout
        if layout is not None:
            try:
                size = layout.ledger_path.stat().st_size
            except OSError:
                size = 0
            yield _gauge("meta_memory_ledger_file_bytes", "Size of the ledger file in bytes.", size)
        if self.subscribers is not None:
            yield _gauge("meta_memory_event_subscribers", "Open /events streams.", self.subscribers())
        feature = runtime.agent_memory
        if feature is None:
            return
        store = feature.store
        yield _gauge("meta_memory_upkeep_pending_realms", "Realms waiting for their index merge and WAL checkpoint.",
                     int(getattr(store, "upkeep_pending", 0)))
        yield _counter("meta_memory_telemetry_rows_dropped",
                       "Usage marks and injection-ledger rows dropped (telemetry only; never a record).",
                       store.telemetry_snapshot()["dropped"])
        reads = getattr(runtime.memory_panel_store, "realm_reads", None)
        if isinstance(reads, dict):
            yield _counter("meta_memory_panel_realm_reads",
                           "Per-realm summaries the console's reads of every realm read from a realm's files.",
                           reads["read"])
            yield _counter("meta_memory_panel_realms_restored",
                           "Realms whose console summaries were taken from the previous start's (files unchanged).",
                           reads["restored"])
        yield from _memory_gauges(runtime.memory_report())
        degradations = getattr(feature.service.provider, "degradations", None)
        counts = dict(store.ranking_stats())
        labels: set[str] = set(counts)
        if callable(degradations):
            from ..recall.provider import DEGRADED_REASONS

            labels.update(DEGRADED_REASONS)
            for reason, n in degradations().items():
                counts[reason] = counts.get(reason, 0) + n
                labels.add(reason)
        if labels:
            degraded = CounterMetricFamily("meta_memory_recall_degraded",
                                           "Recalls answered with a fallback or unproven ranking, per reason.",
                                           labels=["reason"])
            for reason in sorted(labels):
                degraded.add_metric([reason], counts.get(reason, 0))
            yield degraded
        realms, backlog, age = self.census.read()
        records = GaugeMetricFamily("meta_memory_records", "Records per realm and status (store census).",
                                    labels=["realm", "status"])
        queue = GaugeMetricFamily("meta_memory_quarantine_queue_depth", "Quarantined records awaiting review.",
                                  labels=["realm"])
        held = GaugeMetricFamily("meta_memory_held_forgets_standing", "Held forgets awaiting review (standing).",
                                 labels=["realm"])
        for realm, figures in sorted(realms.items()):
            for status, n in sorted(figures["records"].items()):
                records.add_metric([realm, status], n)
            queue.add_metric([realm], figures["records"].get("quarantined", 0))
            held.add_metric([realm], figures["held_forgets"])
        yield records
        yield queue
        yield held
        vectors = GaugeMetricFamily("meta_memory_vector_backlog", "Active records still without a vector.",
                                    labels=["realm"])
        for realm, n in sorted(backlog.items()):
            vectors.add_metric([realm], n)
        yield vectors
        if age is not None:
            yield _gauge("meta_memory_census_age_seconds", "Age of the store census the gauges above report.", age)


def _memory_gauges(report: dict[str, Any] | None) -> Iterator[Metric]:
    """The process's resident memory and each bounded component's bytes and bound (``memory_report.py``)."""
    if report is None:
        return
    for key, name, doc in (("rss_bytes", "meta_memory_process_resident_bytes", "Resident memory of the process."),
                           ("peak_rss_bytes", "meta_memory_process_peak_resident_bytes",
                            "Peak resident memory of the process since start.")):
        if report.get(key) is not None:
            yield _gauge(name, doc, report[key])
    used = GaugeMetricFamily("meta_memory_memory_bytes", "Memory of a bounded component, in bytes.",
                             labels=["component"])
    bound = GaugeMetricFamily("meta_memory_memory_limit_bytes", "Configured bound of a component's memory, in bytes.",
                              labels=["component"])
    for component, figures in sorted(report["components"].items()):
        if figures.get("bytes") is not None:
            used.add_metric([component], figures["bytes"])
        bound.add_metric([component], figures.get("limit_bytes") or 0)
    yield used
    yield bound


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, value=value)


def _counter(name: str, doc: str, value: float) -> CounterMetricFamily:
    return CounterMetricFamily(name, doc, value=value)
