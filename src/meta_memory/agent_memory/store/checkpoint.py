"""WAL checkpoints off the write path, for the SQLite store.

A WAL database grows its ``-wal`` file with every commit until a checkpoint copies the committed
pages back into the database file. SQLite's default makes the commit that crosses 1,000 WAL pages
run that checkpoint itself, so one write in a few dozen waits for it; as the database grows the
pages it copies are more scattered and that write's latency (the tail of every writer) grows with
the store. Here the writer connection never checkpoints (``wal_autocheckpoint = 0``): each commit
only tells a :class:`WalCheckpointer`, whose thread runs a ``PASSIVE`` checkpoint (it never waits
for, nor blocks, readers and writers) on a connection of its own a moment later, covering every
commit of that moment at once.

Durability does not depend on it: with ``synchronous = FULL`` every commit is on disk in the WAL
before it is acknowledged, and a crash before a checkpoint replays the WAL at the next open. The WAL
stays bounded when the thread falls behind: past :data:`INLINE_CHECKPOINT_COMMITS` commits without a
completed checkpoint the writer checkpoints itself (:func:`needs_inline_checkpoint`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

__all__ = ["CHECKPOINT_DELAY_S", "INLINE_CHECKPOINT_COMMITS", "WalCheckpointer", "needs_inline_checkpoint"]

log = logging.getLogger(__name__)

#: How long (seconds) the checkpointer waits after a commit before checkpointing, gathering the
#: commits of that moment into one checkpoint.
CHECKPOINT_DELAY_S = 0.2
#: Commits since the last completed checkpoint past which the writer checkpoints inline.
INLINE_CHECKPOINT_COMMITS = 4096


def needs_inline_checkpoint(commits_since_checkpoint: int) -> bool:
    """Whether the writer must checkpoint itself: the background checkpoints have not kept up."""
    return commits_since_checkpoint >= INLINE_CHECKPOINT_COMMITS


class WalCheckpointer:
    """One daemon thread checkpointing the realms that committed since its last round.

    ``checkpoint(realm)`` runs one realm's checkpoint (the store's; it skips a realm that is no
    longer open). :meth:`wrote` is what a commit calls (cheap: a set insert and a notify); the thread
    starts at the first one. :meth:`stop` ends it (the store's ``close``).
    """

    def __init__(self, checkpoint: Callable[[str], None], delay_s: float = CHECKPOINT_DELAY_S) -> None:
        self._checkpoint = checkpoint
        self._delay_s = delay_s
        self._pending: set[str] = set()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stopped = False

    def wrote(self, realm: str) -> None:
        """Realm ``realm`` committed: checkpoint it within about ``delay_s``."""
        with self._cond:
            if self._stopped:
                return
            fresh = not self._pending
            self._pending.add(realm)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="agent-memory-wal-checkpoint", daemon=True)
                self._thread.start()
            elif fresh:
                self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._stopped:
                    self._cond.wait()
                if self._stopped:
                    return
                self._cond.wait(self._delay_s)  # gather this moment's commits (a stop wakes it early)
                if self._stopped:
                    return
                realms, self._pending = self._pending, set()
            for realm in sorted(realms):
                try:
                    self._checkpoint(realm)
                except Exception:  # noqa: BLE001 - a failed checkpoint is retried at the next commit
                    log.warning("WAL checkpoint of realm %s failed", realm, exc_info=True)

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the thread (a checkpoint under way finishes first); later commits start none."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)
