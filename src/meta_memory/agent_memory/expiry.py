"""Record expiry: the ``ttl_s`` rule and the background sweep.

A record may carry ``expires_at_ms`` (epoch ms, UTC, from the runtime's clock): ``ttl_s`` seconds
after the write that set it. From that instant it is no longer active: every read answering active
records (recall on every path, injection, list, the manifest, the panel, export's active lines, the
duplicate check of a remember) leaves it out at once, by the one rule
:func:`~meta_memory.agent_memory.model.is_expired` (its SQL form is
:func:`~meta_memory.agent_memory.store.dialect.unexpired`), and an update of it is refused like an
update of a forgotten record. The sweep then turns it into a tombstone through the same path as a
forget (one ``tombstone`` op, rationale ``"expired"``, one audit row each, and a
``memory.record.forgotten`` timeline event with ``reason: "expired"``), after which the tombstone
retention rules (:mod:`.retention`) apply as to any forgotten record.

Caps: ``ttl_s`` is an integer number of seconds, 1..``agent_memory.max_ttl_s`` for callers and
1..``agent_memory.tool_max_ttl_s`` for the model through the ``memory`` tool; a longer one is refused
naming the field and the cap, never clamped.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..clock import Clock
from ..errors import AgentMemoryError, ValueRuleBroken
from .batch import StagedBatch, TombstoneOp
from .fields import check_ttl_s
from .model import Author
from .scope_events import about_scope

if TYPE_CHECKING:  # pragma: no cover
    from ..events.bus import EventSink
    from .store.base import AgentMemoryStore

__all__ = ["EXPIRED_RATIONALE", "SWEEP_BATCH", "ExpirySweep", "expiry_from_ttl"]

log = logging.getLogger(__name__)

#: The rationale of the tombstone the sweep writes (audit detail) and the ``reason`` of its event.
EXPIRED_RATIONALE = "expired"
#: Records tombstoned per transaction by the sweep (one transaction per batch, so writers wait little).
SWEEP_BATCH = 500


def expiry_from_ttl(ttl_s: int | None, now_ms: int, cap_s: int, *, field: str = "ttl_s",
                    cap_key: str = "agent_memory.max_ttl_s") -> int | None:
    """``expires_at_ms`` for ``ttl_s`` seconds from ``now_ms`` (epoch ms), ``None`` for no ``ttl_s``.

    A ``ttl_s`` above ``cap_s`` (the configured cap named ``cap_key``) raises
    :class:`~meta_memory.errors.ValueRuleBroken` naming ``field`` and the cap (``-32602`` at the RPC
    layer); so does anything :func:`~meta_memory.agent_memory.fields.check_ttl_s` refuses."""
    if ttl_s is None:
        return None
    if isinstance(ttl_s, int) and not isinstance(ttl_s, bool) and ttl_s > cap_s:
        raise ValueRuleBroken(f"{field} must be at most {cap_s} seconds ({cap_key})", field)
    try:
        check_ttl_s(ttl_s, field, cap_s)  # the range named is the configured one, 1..cap_s
    except ValueError as exc:
        raise ValueRuleBroken(str(exc), field) from None
    return now_ms + ttl_s * 1000


def expiry_past_cap(expires_at_ms: int | None, now_ms: int, cap_s: int,
                    cap_key: str = "agent_memory.max_ttl_s") -> str | None:
    """Why a record brought whole from outside (an import) may not land with ``expires_at_ms``: the rule
    broken when it expires later than ``now_ms`` + ``cap_s`` seconds (the configured cap named
    ``cap_key``), else ``None``. The import's form of :func:`expiry_from_ttl`'s cap: a record lives no
    longer than a caller could have asked for now, and the expiry is never clamped."""
    if expires_at_ms is None or expires_at_ms <= now_ms + cap_s * 1000:
        return None
    return f"expires_at_ms is later than now + {cap_key} ({cap_s} s)"


class ExpirySweep:
    """Tombstone every active record past its expiry, realm by realm, ``batch`` records per transaction.

    ``sweep()`` returns how many records it tombstoned. ``events`` (optional, the runtime's event sink)
    gets one ``memory.record.forgotten`` ``{realm, record_id, reason: "expired"}`` per record (identity:
    the record's, for an identity scope), all of a batch at once after it commits. A record that changed
    under the sweep is left for the next run.
    """

    def __init__(self, store: AgentMemoryStore, clock: Clock, events: EventSink | None = None,
                 batch: int = SWEEP_BATCH) -> None:
        self.store = store
        self.clock = clock
        self.events = events
        self.batch = max(1, batch)

    def sweep(self) -> int:
        swept = 0
        for realm in self.store.list_realms():
            while True:
                try:
                    done = self._sweep_batch(realm)
                except AgentMemoryError as exc:  # a busy or failing realm: the next run sees it again
                    # busy is routine; a damaged realm or a full disk needs an operator (readiness says so too)
                    level = logging.WARNING if exc.reason in ("corrupt", "disk_full", "io") else logging.INFO
                    log.log(level, "expiry sweep skipped realm %s: %s", realm, exc)
                    break
                swept += done
                if done < self.batch:
                    break
        if swept:
            log.info("expiry sweep tombstoned %d record(s)", swept)
        return swept

    def _sweep_batch(self, realm: str) -> int:
        """One transaction: the realm's earliest ``batch`` due records, tombstoned together."""
        author = Author.application()
        with self.store.transaction(realm) as tx:
            due = tx.expired(self.batch)
            if not due:
                return 0
            ops = tuple(TombstoneOp(id=rec.id, rationale=EXPIRED_RATIONALE) for rec in due)
            tx.apply(StagedBatch(realm=realm, author=author, ops=ops))
        if self.events is not None:
            self.events.emit_many([
                about_scope("memory.record.forgotten", {"realm": realm, "record_id": rec.id,
                                                        "reason": EXPIRED_RATIONALE}, rec.scope)
                for rec in due
            ])
        return len(due)
