"""Telemetry writes (usage marks, injection-ledger rows) are best effort: a read never fails for them.

A recall marks the records it returned and an injection appends its ledger rows; both are writes
caused by a read. When they cannot be written (a full disk, a busy writer past the deferral queue, a
database error) the read still answers: the write is dropped, counted here, and logged as a warning
on the 1st, 2nd, 4th, 8th, ... drop (never a flood of lines). ``meta/status`` reports the count
(``agent_memory.telemetry``).
"""

from __future__ import annotations

import logging
import threading

__all__ = ["TelemetryDrops"]

log = logging.getLogger("meta_memory.agent_memory.telemetry")


class TelemetryDrops:
    """A thread-safe count of dropped telemetry writes, with rate-limited warnings."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.dropped = 0

    def drop(self, realm: str, why: str) -> None:
        """Count one dropped telemetry write of ``realm`` and warn on a power-of-two count."""
        with self._lock:
            self.dropped += 1
            count = self.dropped
        if count & (count - 1) == 0:
            log.warning("agent memory: a usage mark or injection-ledger row of realm %s was not written (%s); "
                        "%d dropped so far. Reads are unaffected", realm, why, count)

    def stats(self) -> dict[str, int]:
        """``{dropped}``: telemetry writes dropped since the store opened."""
        with self._lock:
            return {"dropped": self.dropped}
