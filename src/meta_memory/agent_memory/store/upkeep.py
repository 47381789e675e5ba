"""Index merges and WAL checkpoints off the write path, for the SQLite store.

Two kinds of upkeep grow with the store and used to land on whichever write happened to trigger
them, so the tail latency of a remember grew with the store:

* **Full-text segment merges.** FTS5 writes each transaction's terms as a new segment and, with
  its default ``automerge``, merges segments at commit; the merges that reach the large segments
  cost tens of milliseconds of CPU inside one commit. The store turns ``automerge`` off
  (:func:`apply_merge_settings`) and merges in small bounded steps instead (:func:`merge_step`: at
  most :data:`MERGE_STEP_PAGES` pages each, the write lock released between steps), a moment
  after commits, for at most :data:`MERGE_ROUND_S` per round. FTS5's ``crisismerge`` stays as a
  backstop, raised from 16 to :data:`CRISIS_MERGE_SEGMENTS`: at 16 a bulk load (each batch one large
  segment) left levels that the next single write's commit had to merge at once, about 0.2 s of CPU
  inside that commit at 100,000 records; at 64 the background rounds merge them first.
* **WAL checkpoints.** SQLite's default makes the commit that crosses 1,000 WAL pages copy them
  back into the database file, pages that are more scattered as the database grows. The writer
  connection never checkpoints (``wal_autocheckpoint = 0``); a ``PASSIVE`` checkpoint (it never
  waits for, nor blocks, readers and writers) runs on a connection of its own after the merges. When
  it copied every frame it saw, a second one runs under the write lock and copies the frames committed
  while the first ran (a few; none when no write came): SQLite starts the WAL over only when it is
  copied to its end, which a checkpoint beside a steady stream of writes never is, and a WAL that is
  never started over grows on every commit, whose ``fsync`` then also pays for the file's growth.

:class:`BackgroundUpkeep` is the thread doing both, per realm, for the realms that committed since
its last round. Durability does not depend on it: with ``synchronous = FULL`` every commit is on
disk in the WAL before it is acknowledged, a crash before a checkpoint replays the WAL at the next
open, and a merge step is one atomic transaction like any other. The WAL stays bounded when the
thread falls behind: past :data:`INLINE_CHECKPOINT_COMMITS` commits without a completed checkpoint
the writer checkpoints itself (:func:`needs_inline_checkpoint`).

A round that fails is retried after the realm's next commit. A full disk is an expected condition
(``AgentMemoryError`` reason ``disk_full``, naming the disk): it is logged as one warning line, on the
1st, 2nd, 4th, 8th, ... such failure (never a flood of lines, never a traceback); any other failure is
unexpected and logged with its traceback.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable

from meta_memory.errors import AgentMemoryError
from meta_memory.recall import fts

__all__ = [
    "UPKEEP_DELAY_S",
    "INLINE_CHECKPOINT_COMMITS",
    "MERGE_ROUND_S",
    "MERGE_STEP_PAGES",
    "CRISIS_MERGE_SEGMENTS",
    "BackgroundUpkeep",
    "apply_merge_settings",
    "merge_step",
    "needs_inline_checkpoint",
]

log = logging.getLogger(__name__)

#: How long (seconds) the upkeep thread waits after a commit before its round, gathering the commits
#: of that moment into one round.
UPKEEP_DELAY_S = 0.2
#: Pages of merged output one merge step writes (FTS5 ``merge``; about a millisecond each).
MERGE_STEP_PAGES = 16
#: Most time (seconds) one round spends merging one realm; work left over continues next round.
MERGE_ROUND_S = 0.05
#: Commits since the last completed checkpoint past which the writer checkpoints inline.
INLINE_CHECKPOINT_COMMITS = 4096
#: Segments on one level of the full-text index at which FTS5 merges that level inside the commit
#: that created the last of them (FTS5's ``crisismerge``; its default is 16).
CRISIS_MERGE_SEGMENTS = 64


def _setting(conn: sqlite3.Connection, key: str) -> int | None:
    row = conn.execute(f"SELECT v FROM {fts.FTS_TABLE}_config WHERE k = ?", (key,)).fetchone()
    return None if row is None else int(row[0])


def merge_settings_due(conn: sqlite3.Connection) -> bool:
    """Whether :func:`apply_merge_settings` is due: the realm's full-text index still merges at commit
    (FTS5's default ``automerge``), or its ``crisismerge`` is not :data:`CRISIS_MERGE_SEGMENTS`."""
    return _setting(conn, "automerge") != 0 or _setting(conn, "crisismerge") != CRISIS_MERGE_SEGMENTS


def apply_merge_settings(conn: sqlite3.Connection) -> None:
    """Stop merging segments at commit, and raise the crisis-merge backstop to
    :data:`CRISIS_MERGE_SEGMENTS` (persistent FTS5 settings; inside a write transaction)."""
    conn.execute(f"INSERT INTO {fts.FTS_TABLE}({fts.FTS_TABLE}, rank) VALUES ('automerge', 0)")
    conn.execute(f"INSERT INTO {fts.FTS_TABLE}({fts.FTS_TABLE}, rank) VALUES ('crisismerge', ?)",
                 (CRISIS_MERGE_SEGMENTS,))


def merge_step(conn: sqlite3.Connection, pages: int = MERGE_STEP_PAGES) -> bool:
    """One bounded FTS5 merge (inside a write transaction): merges segments of a level holding at
    least four, writing about ``pages`` pages. Returns whether there was anything to merge (FTS5
    reports work done as two or more changes)."""
    before = conn.total_changes
    conn.execute(f"INSERT INTO {fts.FTS_TABLE}({fts.FTS_TABLE}, rank) VALUES ('merge', ?)", (pages,))
    return conn.total_changes - before >= 2


def needs_inline_checkpoint(commits_since_checkpoint: int) -> bool:
    """Whether the writer must checkpoint itself: the background checkpoints have not kept up."""
    return commits_since_checkpoint >= INLINE_CHECKPOINT_COMMITS


class BackgroundUpkeep:
    """One daemon thread running the upkeep of the realms that committed since its last round.

    ``upkeep(realm)`` is one realm's round (the store's: merge steps, then a checkpoint; it skips a
    realm that is no longer open). :meth:`wrote` is what a commit calls (cheap: a set insert and a
    notify); the thread starts at the first one. :meth:`stop` ends it (the store's ``close``).
    """

    def __init__(self, upkeep: Callable[[str], None], delay_s: float = UPKEEP_DELAY_S) -> None:
        self._upkeep = upkeep
        self._delay_s = delay_s
        self._pending: set[str] = set()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stopped = False
        #: Rounds that found the disk full, since the thread started (a warning on each power of two).
        self.disk_full_rounds = 0

    def wrote(self, realm: str) -> None:
        """Realm ``realm`` committed (or has merging left): run its round within about ``delay_s``."""
        with self._cond:
            if self._stopped:
                return
            fresh = not self._pending
            self._pending.add(realm)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="agent-memory-upkeep", daemon=True)
                self._thread.start()
            elif fresh:
                self._cond.notify()

    @property
    def pending(self) -> int:
        """Realms waiting for their round."""
        with self._cond:
            return len(self._pending)

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
                    self._upkeep(realm)
                except Exception as exc:  # noqa: BLE001 - a failed round is retried after the next commit
                    self.failed(realm, exc)

    def failed(self, realm: str, exc: Exception) -> None:
        """Log the failed round of ``realm``: a full disk (``AgentMemoryError`` reason ``disk_full``) as
        one warning line quoting the store's refusal (it names the disk), on the 1st, 2nd, 4th, 8th, ...
        full-disk round only; any other error as a warning with its traceback."""
        if isinstance(exc, AgentMemoryError) and exc.reason == "disk_full":
            self.disk_full_rounds += 1
            count = self.disk_full_rounds
            if count & (count - 1) == 0:
                log.warning("agent memory upkeep of realm %s skipped (%d so far; retried after the next write): %s",
                            realm, count, exc.detail)
            return
        log.warning("index merge or WAL checkpoint of realm %s failed", realm, exc_info=exc)

    @property
    def died(self) -> bool:
        """True when the thread ended although :meth:`stop` was not called (``/v1/ready`` reports it)."""
        thread = self._thread
        return thread is not None and not thread.is_alive() and not self._stopped

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the thread (a round under way finishes first); later commits start none."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)
