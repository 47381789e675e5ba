"""What the console's every-realm reads keep of each realm between calls: small per-realm summaries kept
with the :class:`~meta_memory.storage.integrity.FileSignature` of the realm's database files.

Seed: "Console Memory panel" (every read of every realm); a read of every realm must not open every realm
on every call, so each realm's summary (its scope counts, its scopes, the newest row of a listing, ...) is
kept and read again only once the realm's files change.

The rule (one place): a summary is kept only when the realm's files (the database and its ``-wal``) were
last written at least :data:`QUIET_NS` before the summary was read. A later write, from this process or
another, then moves their modification time past the kept one, however coarse the file system's clock, so
a kept summary is never trusted across a write. A realm without a database file (or whose name gives no
file) is never kept: it is read on every call.

The signature holds each file's change time and device besides its size, modification time and inode:
no write, rewrite in place, copy or restore leaves the change time as it was, even one that keeps the size
and sets the modification time back. So the same signature serves across a restart
(:mod:`meta_memory.panel.kept_summaries`): summaries a previous process kept are :meth:`RealmMemo.restore`-d
with the signature of the files they were read from, and each is used only when the realm's files have
exactly that signature when it is first asked for; any other is dropped unread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from ..storage.integrity import FileSignature, signature

__all__ = ["QUIET_NS", "RealmMemo", "quiet_since"]

#: A summary is kept only when the realm's files were last written at least this long before it was read
#: (ns): see the module docstring.
QUIET_NS = 2_000_000_000

T = TypeVar("T")


def quiet_since(sig: FileSignature, at_ns: int) -> bool:
    """Whether neither file of ``sig`` was written after ``at_ns`` (epoch ns)."""
    return sig.db[1] <= at_ns and (sig.wal is None or sig.wal[1] <= at_ns)


class RealmMemo:
    """Per-realm summaries, each under a hashable ``key``, kept with the realm's file signature.

    Args:
        path_of: the database file of a realm, or ``None`` (a name that gives no file): its summaries are
            never kept.
        unsettled: whether a realm has writes queued that are not in its files yet (telemetry a read of it
            lands first): nothing kept of it is used, and nothing read of it is kept.

    :meth:`read` answers a kept summary while the realm's files keep their signature; a realm whose files
    changed loses every summary kept of it. Thread-safe; a summary is computed outside the lock.
    ``loads`` counts the summaries read from a realm's files (``load`` called), ``restored`` the realms
    whose summaries of a previous process were used.
    """

    def __init__(self, path_of: Callable[[str], Path | None],
                 unsettled: Callable[[str], bool] = lambda realm: False) -> None:
        self._path_of = path_of
        self._unsettled = unsettled
        self._kept: dict[str, tuple[FileSignature, dict[Hashable, Any]]] = {}
        self._stored: dict[str, tuple[FileSignature, dict[Hashable, Any]]] = {}
        self._lock = threading.Lock()
        self.loads = 0
        self.restored = 0

    def restore(self, entries: Mapping[str, tuple[FileSignature, Mapping[Hashable, Any]]]) -> None:
        """Take summaries a previous process kept, each realm's with the signature of the files they were
        read from: a realm's are used at its first :meth:`read` if its files have exactly that signature
        then, else dropped (nothing kept of the realm in this process is replaced)."""
        with self._lock:
            for realm, (sig, summaries) in entries.items():
                if realm not in self._kept:
                    self._stored[realm] = (sig, dict(summaries))

    def entries(self) -> dict[str, tuple[FileSignature, dict[Hashable, Any]]]:
        """What a later process may :meth:`restore`: each realm's summaries (kept, or restored and not yet
        asked for) whose files still have the signature they were read under (one ``stat`` per realm)."""
        with self._lock:
            kept = {realm: (sig, dict(summaries)) for realm, (sig, summaries) in self._kept.items()}
            stored = dict(self._stored)
        out: dict[str, tuple[FileSignature, dict[Hashable, Any]]] = {}
        for realm, (sig, summaries) in kept.items():
            path = None if self._unsettled(realm) else self._path_of(realm)
            if path is not None and summaries and signature(path) == sig:
                out[realm] = (sig, summaries)
        for realm, (stored_sig, summaries) in stored.items():
            path = self._path_of(realm) if realm not in out else None
            if path is not None and signature(path) == stored_sig:
                out[realm] = (stored_sig, summaries)
        return out

    def _adopt(self, realm: str, before: FileSignature) -> None:
        """Use what a previous process kept of ``realm`` when its files are exactly as they were then."""
        with self._lock:
            stored = self._stored.pop(realm, None)
        if stored is None or stored[0] != before:
            return
        with self._lock:
            if realm not in self._kept:
                self._kept[realm] = (before, stored[1])
                self.restored += 1

    def read(self, realm: str, key: Hashable, load: Callable[[], T], keep: Callable[[T], bool] | None = None,
             fresh: Callable[[T], bool] | None = None) -> T:
        """The summary ``key`` of ``realm``: the kept one when the realm's files did not change since it
        was read (and ``fresh(value)``, when given, is still true: a summary that time alone can make
        wrong, such as counts of records that expire), else ``load()``, kept when the files were quiet for
        :data:`QUIET_NS` before it ran (and ``keep(value)``, when given, is true). A realm whose files
        changed loses every summary kept of it at once (an erase leaves none of its text here). Whatever
        ``load`` raises is raised, and nothing is kept."""
        path = None if self._unsettled(realm) else self._path_of(realm)
        before = signature(path) if path is not None else None
        if self._stored and path is not None and before is not None and realm in self._stored:
            self._adopt(realm, before)
        with self._lock:
            known = self._kept.get(realm)
            if before is None or (known is not None and known[0] != before):
                self._kept.pop(realm, None)
            elif known is not None and key in known[1] and (fresh is None or fresh(known[1][key])):
                return known[1][key]  # type: ignore[no-any-return]
            self.loads += 1
        now_ns = time.time_ns()
        value = load()
        if before is not None and quiet_since(before, now_ns - QUIET_NS) and (keep is None or keep(value)):
            with self._lock:
                known = self._kept.get(realm)
                if known is None or known[0] != before:
                    known = (before, {})
                    self._kept[realm] = known
                known[1][key] = value
        return value
