"""The background embedder: fills the vectors of active records that lack one.

Why in the background rather than in the write: embedding a record costs
roughly 5-20 ms of CPU on the bundled model (more under load), and a write
holds its realm's write lock while it runs; doing it there would add that to
every ``remember`` and serialise other writers behind the model. Instead a
write commits the record (and its full-text row) at once, and this thread
embeds the records that have no vector yet, in batches (one forward pass for
up to ``batch`` records), writing each batch in one short transaction that
stores a vector only if its record is still active. Until its vector lands
(within ``max_poll_s`` plus the embedding time after the write; at once after
:meth:`VectorIndexer.kick`) a record is ranked lexically
only by the hybrid provider. Removing a vector never waits for this thread:
the store deletes it in the very transaction that takes the record out of
``active``.

The same loop backfills a realm that was written before ``hybrid`` was
selected, or under another model (vectors carry the model id).

A realm the store refuses to read or write (:data:`REALM_FAULTS`: a database
damaged at its header or part-way, a file that cannot be opened, a name that
breaks the realm-name rule, a writer that holds it too long, a full disk) is
left out of the pass, logged once (a warning; ``timeout`` at info) and tried
again after ``error_backoff_s``: the realms after it are still embedded. The
backlog report names it under ``skipped_realms`` while it is left out or its
count cannot be read. Any other failure (the embedder's, a closed store) fails
the pass.

Store contract (the SQLite store implements it): ``list_realms()``,
``missing_vectors(realm, model, limit) -> list[VectorJob]``,
``put_vectors(realm, model, [(rid, blob)]) -> int``, and
``vector_backlog(realm, model) -> int`` for :meth:`VectorIndexer.backlog`.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from meta_memory.errors import AgentMemoryError
from meta_memory.recall.semantic.embedder import Embedder
from meta_memory.recall.semantic.vectors import encode_vector

__all__ = ["REALM_FAULTS", "VectorIndexer"]

log = logging.getLogger(__name__)

#: ``AgentMemoryError.reason`` values that leave one realm out of a pass rather than fail it: the realm
#: cannot be read (``corrupt``, ``io``, ``invalid_record``: what ``realm_problem`` reports), its writer held
#: it past the busy timeout (``timeout``), or its vectors could not be written (``disk_full``).
REALM_FAULTS: frozenset[str] = frozenset({"corrupt", "io", "invalid_record", "timeout", "disk_full"})


class VectorIndexer:
    """Fills missing vectors of every realm of ``store`` with ``embedder``.

    Args:
        store: a store with the vector methods (see module doc).
        embedder: the embedder the hybrid provider uses (same ``model_id``).
        batch: records per embedding call.
        poll_s: seconds between scans right after work; each idle scan doubles the pause up to
            ``max_poll_s`` (a scan of a large realm is a join over its active records), and work
            or :meth:`kick` resets it.
        max_poll_s: longest pause between idle scans.
        error_backoff_s: pause after a failed pass, and before a realm left out of a pass
            (:data:`REALM_FAULTS`) is tried again.
    """

    def __init__(
        self, store: Any, embedder: Embedder, *, batch: int = 32, poll_s: float = 0.5, max_poll_s: float = 4.0,
        error_backoff_s: float = 5.0,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.batch = max(1, batch)
        self.poll_s = poll_s
        self.max_poll_s = max(poll_s, max_poll_s)
        self.error_backoff_s = error_backoff_s
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._idle = threading.Event()
        self._thread: threading.Thread | None = None
        self.embedded = 0
        # held while vectors are stored and counted, and while a report reads the store: a report never
        # shows a vector stored but not yet counted in ``embedded``
        self._counted = threading.Lock()
        self.last_error: str | None = None
        # realm -> (monotonic time before which it is not tried again, the refusal that left it out)
        self._faulted: dict[str, tuple[float, AgentMemoryError]] = {}

    def run_once(self) -> int:
        """One pass over every realm: embed and store up to ``batch`` records per realm.
        Returns how many vectors were stored. A realm the store refuses with a :data:`REALM_FAULTS`
        reason is left out (logged, tried again ``error_backoff_s`` later) and the others are embedded;
        raises anything else the embedder or store raise."""
        stored = 0
        model = self.embedder.model_id
        realms = self.store.list_realms()
        for gone in self._faulted.keys() - set(realms):  # a realm moved away is no longer reported
            del self._faulted[gone]
        for realm in realms:
            held = self._faulted.get(realm)
            if held is not None and time.monotonic() < held[0]:
                continue
            try:
                stored += self._embed_realm(realm, model)
            except AgentMemoryError as exc:
                if exc.reason not in REALM_FAULTS:
                    raise
                self._fault(realm, exc)
                continue
            if held is not None:
                del self._faulted[realm]
                log.info("semantic recall: realm %r is indexed again", realm)
        return stored

    def _embed_realm(self, realm: str, model: str) -> int:
        """Embed and store up to ``batch`` of ``realm``'s missing vectors; how many were stored."""
        jobs = self.store.missing_vectors(realm, model, self.batch)
        if not jobs:
            return 0
        embedded = self.embedder.embed([j.text for j in jobs])
        with self._counted:
            n: int = self.store.put_vectors(realm, model, [(j.rid, encode_vector(v)) for j, v in zip(jobs, embedded)])
            self.embedded += n
        return n

    def _fault(self, realm: str, exc: AgentMemoryError) -> None:
        """Leave ``realm`` out until ``error_backoff_s`` from now; log it when it is newly left out (or
        for a new reason)."""
        before = self._faulted.get(realm)
        self._faulted[realm] = (time.monotonic() + self.error_backoff_s, exc)
        self.last_error = f"realm {realm!r} left out: {exc.message}"
        if before is None or before[1].message != exc.message:
            level = logging.INFO if exc.reason == "timeout" else logging.WARNING
            log.log(level, "semantic recall: realm %r left out of vector indexing, tried again in %g s: %s",
                    realm, self.error_backoff_s, exc.message)

    def backlog(self) -> dict[str, Any]:
        """The hybrid completeness report (``meta/status`` ``agent_memory.vector_backlog``).

        Shape: ``{"provider": "hybrid", "model": str, "pending": int, "realms": [{"realm": str,
        "pending": int}],
        "complete": bool, "indexing": bool, "embedded": int, "last_error": str | None,
        "skipped_realms"?: [{"realm": str, "reason": str, "message": str}]}`` where
        ``pending`` counts active records that have no vector of ``model`` yet (ranked lexically
        until it lands), summed over ``realms`` (a list, so realm names stay values on every SDK; every open realm in
        ``list_realms`` order); ``skipped_realms`` (present only when not empty, in the same order) names
        each realm the store refused with a :data:`REALM_FAULTS` reason: one whose count cannot be read
        (left out of ``realms``) or that the indexer leaves out for now (still counted when it can be;
        its records keep waiting), with that refusal; ``complete`` is false while any is named;
        ``indexing`` is whether the background thread runs;
        ``embedded`` counts vectors stored since start. Raises any other store failure.
        """
        model = self.embedder.model_id
        realms: list[dict[str, Any]] = []
        skipped: list[dict[str, str]] = []
        with self._counted:
            for realm in self.store.list_realms():
                refused = self._faulted.get(realm, (0.0, None))[1]
                try:
                    realms.append({"realm": realm, "pending": int(self.store.vector_backlog(realm, model))})
                except AgentMemoryError as exc:
                    if exc.reason not in REALM_FAULTS:
                        raise
                    refused = exc
                if refused is not None:
                    skipped.append({"realm": realm, "reason": refused.reason, "message": refused.message})
            embedded = self.embedded
        pending = sum(r["pending"] for r in realms)
        thread = self._thread
        report: dict[str, Any] = {
            "provider": "hybrid", "model": model, "pending": pending, "realms": realms,
            "complete": pending == 0 and not skipped, "indexing": thread is not None and thread.is_alive(),
            "embedded": embedded, "last_error": self.last_error,
        }
        if skipped:
            report["skipped_realms"] = skipped
        return report

    def drain(self) -> int:
        """Run passes until nothing is missing (synchronous); returns the vectors stored."""
        total = 0
        while True:
            n = self.run_once()
            if n == 0:
                return total
            total += n

    def _loop(self) -> None:
        load = getattr(self.embedder, "load", None)
        try:
            if callable(load):
                load()
        except Exception as exc:  # the model cannot load: recall stays lexical
            self.last_error = f"{type(exc).__name__}: {exc}"
            log.error("semantic recall: the embedding model failed to load (%s); recall stays lexical", exc)
            return
        pause = self.poll_s
        while not self._stop.is_set():
            try:
                worked = self.run_once() > 0
            except Exception as exc:
                self.last_error = f"{type(exc).__name__}: {exc}"
                log.warning("semantic recall: vector indexing pass failed: %s", exc)
                self._stop.wait(self.error_backoff_s)
                continue
            if worked:
                self._idle.clear()
                pause = self.poll_s
                continue
            self._idle.set()
            if self._wake.wait(pause):
                pause = self.poll_s
            else:
                pause = min(self.max_poll_s, pause * 2)
            self._wake.clear()

    def start(self) -> None:
        """Start the daemon thread (loads the model first). Idempotent."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._loop, name="meta-memory-vector-indexer", daemon=True)
        self._thread.start()

    @property
    def died(self) -> bool:
        """True when the thread ended although :meth:`stop` was not called (``/v1/ready`` reports it)."""
        thread = self._thread
        return thread is not None and not thread.is_alive() and not self._stop.is_set()

    def kick(self) -> None:
        """Wake the thread for a pass now (e.g. after a write)."""
        self._wake.set()

    def wait_idle(self, timeout_s: float) -> bool:
        """Block until a pass found nothing to embed (True) or ``timeout_s`` passed (False)."""
        self._idle.clear()
        self.kick()
        return self._idle.wait(timeout_s)

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop the thread and wait for it (at most ``timeout_s``)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._thread = None
