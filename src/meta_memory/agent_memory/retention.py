"""Tombstone retention: erase tombstoned content after ``agent_memory.erase_tombstoned_after_days``.

By default tombstoned records are kept (the spec: reviewers may still read them). With the key set,
a background sweep (every hour, and once at start-up) erases, realm by realm, every tombstoned record
whose whole content closure is out of use — every version tombstoned or superseded, each tombstone
older than the retention — through the same :meth:`~meta_memory.agent_memory.store.base.AgentMemoryStore.erase`
as ``meta/agent_memory/erase`` (author ``retention``). A tombstoned original whose released successor
is still active is kept: its content is still in use. The erasure register keeps the swept ids out of a
later import, but not their content: an identity may learn again what it forgot long ago.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..clock import Clock
from ..errors import AgentMemoryError, RecordNotFound
from ..limits import DAY_MS
from .scope_events import about_scope
from .store.base import AgentMemoryStore

if TYPE_CHECKING:
    from ..events.bus import EventSink

__all__ = ["TombstoneRetention", "SWEEP_INTERVAL_MS"]

log = logging.getLogger(__name__)

#: How often the background sweep runs (ms).
SWEEP_INTERVAL_MS = 60 * 60 * 1000


class TombstoneRetention:
    """Erase tombstoned content older than ``after_days`` from every realm of ``store``.

    ``sweep()`` returns the number of records erased; ``events`` (optional) is where one
    ``memory.record.erased`` timeline event per erased closure is published, about the closure's scope
    (:func:`~meta_memory.agent_memory.scope_events.about_scope`: shown to that scope's readers alone);
    ``on_erased(realm, ids)`` (optional) hears of every erased id (the session state forgets them).
    """

    def __init__(self, store: AgentMemoryStore, after_days: int, clock: Clock,
                 events: EventSink | None = None,
                 on_erased: Callable[[str, Sequence[str]], object] | None = None) -> None:
        self.store = store
        self.after_days = after_days
        self.clock = clock
        self.events = events
        self.on_erased = on_erased

    def sweep(self) -> int:
        cutoff = self.clock.now_ms() - self.after_days * DAY_MS
        erased = 0
        for realm in self.store.list_realms():
            if (problem := self.store.realm_problem(realm)) is not None:  # the others are still swept
                log.warning("retention skipped realm %s: %s", realm, problem)
                continue
            try:
                due = list(self.store.tombstoned_closures_before(realm, cutoff))
            except AgentMemoryError as exc:  # damaged past its header, busy, a full disk: the others still swept
                log.warning("retention skipped realm %s: %s", realm, exc)
                continue
            for memory_id in due:
                try:
                    rec = self.store.get(realm, memory_id)
                    if rec is None:  # erased with an earlier closure of this sweep
                        continue
                    report = self.store.erase(realm, rec.scope, memory_id, erased_by="retention",
                                              reason=f"tombstoned more than {self.after_days} days ago",
                                              keep_out_content=False)
                except (RecordNotFound, AgentMemoryError) as exc:  # changed under us: the next sweep sees it again
                    log.info("retention skipped %s in realm %s: %s", memory_id, realm, exc)
                    continue
                erased += len(report.records)
                if self.on_erased is not None:
                    self.on_erased(realm, [r.memory_id for r in report.records])
                if self.events is not None:
                    self.events.emit_many([about_scope("memory.record.erased", {
                        "realm": realm, "count": len(report.records), "by": "retention",
                        "memory_ids": [r.memory_id for r in report.records][:100]}, rec.scope)])
        if erased:
            log.info("tombstone retention erased %d record(s)", erased)
        return erased
