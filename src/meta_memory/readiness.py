"""Readiness: can this runtime serve its callers now? The answer of ``GET /v1/ready``.

``GET /v1/health`` says the process answers (liveness: cheap, never reads a store). Readiness asks
every component that can stop the gateway from doing its job, each through its own cheap check:

================  ==================================================================================
component         not ready when
================  ==================================================================================
``realm_database``  a realm's SQLite file is not a database, truncated, or fails its schema read
                  (:meth:`~meta_memory.agent_memory.store.base.AgentMemoryStore.readiness_problems`), or
                  failed its last background ``PRAGMA quick_check``
                  (:class:`~meta_memory.storage.integrity.IntegrityMonitor`)
``session_state``   its database does not answer a read, or taint is held in memory unwritten
``events``          the timeline database's last persist failed, or it does not answer a read
``ledger``          the ledger file was changed behind the runtime and no longer decodes
``postgres``        the PostgreSQL server does not answer ``SELECT 1``
``disk``            free space on the state directory's disk is below ``[gateway] min_free_disk_mb``
``state_dir``       the state directory was removed, moved or replaced while the runtime held it (its
                  lock file is gone or is another file)
``worker``          a background thread (upkeep, recall index, telemetry writer, vector indexer,
                  integrity check, steward schedule) ended although nobody stopped it
================  ==================================================================================

A report is computed at most once per :data:`TTL_S` (concurrent requests share it), so a flood of
unauthenticated probes costs one evaluation per interval. What a caller sees depends on who it is
(``server/http.py``): everyone gets ``status`` and the failing component kinds; a caller holding
``operator.status`` (everyone on a gateway without ``[access]``) also gets each check's name, problem
and fix, which can name realms and paths.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .storage.disk import disk_space
from .storage.integrity import IntegrityMonitor

if TYPE_CHECKING:  # pragma: no cover
    from .runtime import Runtime

__all__ = ["Check", "ReadinessReport", "Readiness", "TTL_S"]

#: How long one evaluation answers every request (seconds).
TTL_S = 1.0

_FIXES = {
    "realm_database": ("calls naming this realm are refused, other realms are served. Stop the gateway, run "
                       "`meta-memory doctor --state-dir <state dir>`, and restore the file from a backup (or move "
                       "it away: the realm then starts empty)"),
    "session_state": "free space on the state directory's disk; if the database is damaged, see `meta-memory doctor`",
    "events": "free space on the state directory's disk; if the database is damaged, see `meta-memory doctor`",
    "ledger": ("restore memory-ledger-state.json from a backup or fix the entry named, before the gateway next "
               "restarts (a malformed ledger refuses start-up)"),
    "postgres": "check the PostgreSQL server and the network to it; the gateway reconnects by itself",
    "disk": ("free space on that disk or grow it ([gateway] min_free_disk_mb is the floor); when it is full, "
             "writes are refused naming the disk and reads keep working"),
    "worker": "restart the gateway, and report the log lines written before the thread ended",
    "state_dir": ("stop the gateway: writes acknowledged since the directory went are not in it. Put the "
                  "directory back (a backup, or `meta-memory import` of an export), then restart the gateway"),
}


@dataclass(frozen=True, slots=True)
class Check:
    """One failing check: ``component`` (the kind, e.g. ``realm_database``), ``name`` (which one, e.g.
    ``realm:default``), ``problem`` and ``fix`` (sentences; may name realms and paths)."""

    component: str
    name: str
    problem: str
    fix: str

    def to_dict(self) -> dict[str, str]:
        return {"component": self.component, "name": self.name, "problem": self.problem, "fix": self.fix}


@dataclass(frozen=True, slots=True)
class ReadinessReport:
    """One evaluation: the failing checks (empty: ready) and when it was made (UTC epoch ms)."""

    failing: tuple[Check, ...]
    checked_at_ms: int

    @property
    def ready(self) -> bool:
        return not self.failing

    def public(self) -> dict[str, Any]:
        """What any caller may see: ``{status: "ready" | "not_ready", failing: [component kinds]}``."""
        return {"status": "ready" if self.ready else "not_ready",
                "failing": sorted({c.component for c in self.failing})}

    def detailed(self) -> dict[str, Any]:
        """:meth:`public` plus ``checks`` (every failing check with its name, problem and fix) and
        ``checked_at_ms`` (for ``operator.status`` holders)."""
        return {**self.public(), "checks": [c.to_dict() for c in self.failing], "checked_at_ms": self.checked_at_ms}


def _kind(name: str) -> str:
    """The component kind of a store's check name (``realm:x`` -> ``realm_database``, ``worker:x`` -> ``worker``)."""
    if name.startswith("realm:"):
        return "realm_database"
    if name.startswith("worker:"):
        return "worker"
    return name


class Readiness:
    """The readiness of one runtime (see the module docstring). Thread-safe.

    Args:
        runtime: the runtime whose components are asked.
        start_background: start the background ``PRAGMA quick_check`` (SQLite store,
            ``[gateway] integrity_check_interval_s`` > 0).
    """

    def __init__(self, runtime: Runtime, *, start_background: bool = True) -> None:
        self._runtime = runtime
        self._lock = threading.Lock()
        self._cached: tuple[float, ReadinessReport] | None = None
        self.integrity: IntegrityMonitor | None = None
        feature = runtime.agent_memory
        interval = runtime.config.gateway.integrity_check_interval_s
        realm_files = getattr(feature.store, "realm_files", None) if feature is not None else None
        if realm_files is not None and interval > 0:
            self.integrity = IntegrityMonitor(realm_files, float(interval))
            if start_background:
                self.integrity.start()

    def close(self) -> None:
        """Stop the background integrity check."""
        if self.integrity is not None:
            self.integrity.stop()

    def report(self) -> ReadinessReport:
        """The current report: computed now, or the one computed less than :data:`TTL_S` ago."""
        with self._lock:  # one evaluation at a time; the others wait for it and share it
            now = time.monotonic()
            if self._cached is not None and now - self._cached[0] < TTL_S:
                return self._cached[1]
            report = ReadinessReport(tuple(self._evaluate()), self._runtime.clock.now_ms())
            self._cached = (time.monotonic(), report)
            return report

    def _evaluate(self) -> list[Check]:
        runtime = self._runtime
        found: dict[str, tuple[str, str]] = {}  # name -> (kind, problem)
        feature = runtime.agent_memory
        if feature is not None:
            for name, problem in feature.store.readiness_problems().items():
                found[name] = (_kind(name), problem)
            if self.integrity is not None:
                for realm, problem in self.integrity.problems().items():
                    found.setdefault(f"realm:{realm}", ("realm_database", f"{problem} (background quick check)"))
                if self.integrity.died:
                    found["worker:integrity_check"] = ("worker", "the background thread ended unexpectedly")
            # on PostgreSQL the session state lives on the same server: once it does not answer, asking
            # again would only wait out the pool's timeout
            state = None if "postgres" in found else feature.firewall.state.readiness_problem()
            if state is not None:
                found["session_state"] = ("session_state", state)
            indexer = feature.recall.indexer
            if indexer is not None and getattr(indexer, "died", False):
                found["worker:vector_indexer"] = ("worker", "the background thread ended unexpectedly")
        if runtime.review is not None and runtime.review.schedule_died:
            found["worker:steward_schedule"] = ("worker", "the background thread ended unexpectedly")
        events = runtime.events.readiness_problem()
        if events is not None:
            found["events"] = ("events", events)
        moved = runtime.state_dir_problem()
        if moved is not None:
            found["state_dir"] = ("state_dir", moved)
        # the ledger file of a directory no longer this runtime's is never written again (every state-changing
        # call is refused): the state directory's problem is the one to report
        ledger = runtime.ledger.readiness_problem() if moved is None else None
        if ledger is not None:
            found["ledger"] = ("ledger", ledger)
        floor_mb = runtime.config.gateway.min_free_disk_mb
        if runtime.state_dir is not None and floor_mb > 0:
            space = disk_space(runtime.state_dir)
            if space is not None and space.free_mb < floor_mb:
                found["disk"] = ("disk", f"{space.describe()} is below the floor of {floor_mb} MiB "
                                         "([gateway] min_free_disk_mb)")
        return [Check(kind, name, problem, _FIXES.get(kind, "")) for name, (kind, problem) in sorted(found.items())]
