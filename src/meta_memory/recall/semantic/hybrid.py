"""The hybrid recall provider: the lexical ranking re-ranked with embeddings, plus a few dense-only candidates.

Contextual selection, for a request with at least one search term:

1. the lexical provider ranks its candidates as usual (bm25 candidates,
   field score, write-order context), keeping up to ``candidate_limit``;
2. the query text (plus any extra terms) is embedded (an LRU keeps recent
   query vectors), and its cosine with every vector of the scope is computed
   (one matrix product over the scope's cached, unit-length vectors);
3. each lexical candidate scores ``lexical / best lexical + dense_weight x cosine``;
   a candidate whose record has no vector yet (the background indexer has not
   reached it) gets the mean cosine of the candidates that have one, so it
   is neither helped nor hurt;
4. the ``dense_candidates`` records of the scope nearest the query that the
   lexical ranking did not find, with a cosine of at least ``dense_min_cosine``,
   join with ``dense_prior + dense_weight x cosine``
   (``dense_prior`` is on the normalised lexical scale: a dense-only record
   counts as half as relevant, lexically, as the best lexical match);
5. order by score desc, then ``updated_at_ms`` desc and id; keep ``max_entries``.

Anything that prevents the semantic part — a reader with no vector access, no
vector in the scope — yields the lexical ranking unchanged. ``always``
selection and term-less queries are the lexical provider's answers.

The time budget. The dense side (steps 2-4: reading the scope's vectors,
embedding the query, fetching the records only it found) gets
``dense_budget_share`` of what the recall's budget (:mod:`meta_memory.deadline`)
still holds once the lexical ranking is done; the rest stays for fusing, the
runtime's scope re-check and the answer. The query is embedded on a daemon
thread the recall waits for at most that long, and the store reads of the dense
side run under that earlier deadline. When the dense side cannot finish in
time, or cannot run at all, the recall answers with the lexical ranking alone
and says why in ``degraded_reason`` (labels:
:data:`~meta_memory.recall.provider.DEGRADED_REASONS`): it never fails a recall
the lexical side answered. An embedding that finishes late still fills the
query cache, so the same query asked again is fused; at most
``max_pending_embeddings`` embeddings run at once (past that: ``embedder_busy``,
nothing is started). Degradations are counted per reason (:meth:`degradations`,
exported as ``meta_memory_recall_degraded_total``) and logged as a warning at
most once a minute per reason.

Why this fusion (LoCoMo dev file, recall@8, categories 1-4, one run of
``benchmarks/locomo_recall.py --provider hybrid --sweep``): lexical alone 0.763;
dense (cosine) alone 0.600; re-ranking the lexical candidates only 0.767-0.774
(``dense_weight`` 1.0-0.3); with dense-only candidates 0.776-0.779 across
``dense_weight`` 0.3-0.5, ``dense_candidates`` 10-40 and ``dense_prior`` 0.3-0.5,
but 0.742 with ``dense_prior`` 0.7 (dense-only records then crowd out lexical
matches). Defaults sit in the middle of the plateau: 0.779, recall@10 0.801
(lexical 0.776). Offline, reciprocal-rank fusion scored 0.70-0.77 and min-max
weighted fusion 0.76-0.77, both below this. The ``dense_min_cosine`` floor
(0.35) costs one question in 760 and keeps a query that matches nothing from
returning arbitrary records. Those figures predate the lexical ranking's
reply, rarity and date signals: over them, leave-one-conversation-out recall@8
is 0.791 hybrid vs 0.796 lexical (``docs/benchmarks.md``, "Lexical or hybrid?").
Score-level fusion (``fusion = "weighted"``, its weight chosen leave-one-conversation-out)
scored a held-out fold mean of 0.793 against this fusion's 0.794 (``docs/benchmarks.md``,
"Score-level fusion"): not adopted.

Spec: the optional semantic extra (fusion justified by measurement); the
provider contract of :mod:`meta_memory.recall.provider` (read only through
the reader; the runtime re-checks every record returned).
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Hashable, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from meta_memory import deadline
from meta_memory.errors import AgentMemoryError
from meta_memory.limits import DEFAULT_VECTOR_CACHE_MB
from meta_memory.recall.lexical import LexicalRecallProvider
from meta_memory.recall.provider import (
    MAX_ENTRIES_LIMIT,
    RecallOutcome,
    RecallReader,
    RecallRequest,
    ScoredRecord,
    record_id,
)
from meta_memory.recall.semantic.embedder import Embedder

__all__ = ["HybridConfig", "HybridRecallProvider", "VectorSource", "vector_source"]

log = logging.getLogger("meta_memory.recall.hybrid")

#: Seconds between two warnings about degraded recalls of one reason (the rest are counted, not logged).
WARN_INTERVAL_S = 60.0


class _DenseUnavailable(Exception):
    """The dense side cannot contribute to this recall; ``reason`` is a ``degraded_reason`` label."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class HybridConfig:
    """Tuning of :class:`HybridRecallProvider` (defaults measured on LoCoMo; see module doc).

    ``candidate_limit``: lexical candidates re-ranked (1..512).
    ``dense_weight``: weight of the cosine (unit vectors) beside the normalised lexical score.
    ``dense_candidates``: nearest records added without a lexical match (0 = pure re-ranking).
    ``dense_prior``: normalised lexical score credited to a dense-only candidate.
    ``dense_min_cosine``: a dense-only candidate needs at least this cosine (so a query that
    matches nothing does not return the scope's least-unrelated records).
    ``query_cache``: query vectors kept (LRU). ``scope_cache``: scope matrices kept (LRU).
    ``cache_bytes``: memory of the kept scope matrices and query vectors together (bytes; ``[agent_memory]
    vector_cache_mb``): past it the least recently used are dropped, and a scope's matrix larger than it is
    used for its recall and not kept (:meth:`HybridRecallProvider.memory_stats`).
    ``dense_budget_share``: share (0 < share <= 1) of the recall's remaining time budget, after the
    lexical ranking, that the dense side may use (see the module doc; no budget: no limit).
    ``max_pending_embeddings``: query embeddings that may run at once (a recall finding them all
    still running answers lexically, ``embedder_busy``). One by default: an embedding the recall no
    longer waits for still takes a core and the interpreter lock from the recalls that follow, and on
    a loaded machine a second one made the following recalls' lexical side miss the budget
    (``benchmarks/hybrid_budget.py``, ``docs/benchmarks.md``).
    ``fusion``: ``"rerank"`` (the default: steps 3-4 of the module doc) or ``"weighted"``: a weighted
    sum ``(1 - fusion_weight) x lexical + fusion_weight x cosine`` of the two scores, each min-max
    normalised over the candidates (the lexical ones and the ``candidate_limit`` nearest records with a
    cosine of at least ``dense_min_cosine``); a record one side did not find scores 0 on that side.
    Measured against ``"rerank"`` in ``docs/benchmarks.md`` ("Score-level fusion").
    """

    candidate_limit: int = 100
    dense_weight: float = 0.4
    dense_candidates: int = 20
    dense_prior: float = 0.5
    dense_min_cosine: float = 0.35
    query_cache: int = 256
    scope_cache: int = 32
    cache_bytes: int = DEFAULT_VECTOR_CACHE_MB * 1024 * 1024
    dense_budget_share: float = 0.6
    max_pending_embeddings: int = 1
    fusion: str = "rerank"
    fusion_weight: float = 0.5

    def __post_init__(self) -> None:
        if self.fusion not in ("rerank", "weighted"):
            raise ValueError("fusion must be 'rerank' or 'weighted'")
        if not 0.0 <= self.fusion_weight <= 1.0:
            raise ValueError("fusion_weight must be between 0 and 1")
        if not 0.0 < self.dense_budget_share <= 1.0:
            raise ValueError("dense_budget_share must be > 0 and <= 1")
        if self.max_pending_embeddings < 1:
            raise ValueError("max_pending_embeddings must be at least 1")
        if self.cache_bytes < 0:
            raise ValueError("cache_bytes must be >= 0")


@runtime_checkable
class VectorSource(Protocol):
    """Vector access for one scope (what the hybrid provider needs beyond a recall reader).

    ``cache_key``: identifies the scope (and its database) for the provider's matrix cache.
    """

    @property
    def cache_key(self) -> Hashable: ...

    def vector_signature(self, model: str) -> tuple[int, int]:
        """Changes whenever a vector of ``model`` in the scope is added or removed."""
        ...

    def vectors(self, model: str) -> list[tuple[str, bytes]]:
        """``(memory_id, float32 blob)`` of every active record of the scope with a vector of ``model``."""
        ...

    def records(self, ids: Sequence[str]) -> dict[str, Any]:
        """The active records of the scope among ``ids``, by id."""
        ...


class _StoreVectors:
    """:class:`VectorSource` over a record store's vector methods for one ``(realm, scope)``."""

    def __init__(self, store: Any, realm: str, scope: Any, reader: Any = None) -> None:
        self.store, self.realm, self.scope = store, realm, scope
        #: a filtered recall's reader (its ``admits``): only the matching records' vectors are scored
        self.reader = reader if getattr(reader, "where", None) is not None else None

    @property
    def cache_key(self) -> Hashable:
        if self.reader is not None:  # a filtered matrix is cached under its own key
            return (id(self.store), self.realm, self.scope.storage(), "where", repr(self.reader.where))
        return (id(self.store), self.realm, self.scope.storage())

    def vector_signature(self, model: str) -> tuple[int, int]:
        signature: tuple[int, int] = self.store.vector_signature(self.realm, self.scope, model)
        return signature

    def vectors(self, model: str) -> list[tuple[str, bytes]]:
        found: list[tuple[str, bytes]] = self.store.scope_vectors(self.realm, self.scope, model)
        if self.reader is not None:
            ok = self.reader.admitted([memory_id for memory_id, _ in found])
            return [(memory_id, vec) for memory_id, vec in found if memory_id in ok]
        return found

    def records(self, ids: Sequence[str]) -> dict[str, Any]:
        """The records of ``ids`` active and unexpired in the scope now (an expired one is no candidate)."""
        out = {}
        now = self.store.clock.now_ms()
        for memory_id in ids:
            if self.reader is not None and not self.reader.admits(memory_id):
                continue
            rec = self.store.get(self.realm, memory_id)
            if rec is not None and rec.scope == self.scope and rec.is_live(now):
                out[memory_id] = rec
        return out


def vector_source(reader: Any) -> VectorSource | None:
    """The vector access behind ``reader``: the reader itself when it is a :class:`VectorSource`,
    else its ``store`` (a store reader over a store with ``scope_vectors``), else ``None``."""
    if isinstance(reader, VectorSource):
        return reader
    store = getattr(reader, "store", None)
    if store is not None and hasattr(store, "scope_vectors") and hasattr(reader, "scope"):
        return _StoreVectors(store, reader.realm, reader.scope, reader)
    return None


#: Measured memory of one record of a kept scope matrix beyond its vector: its id string, its place in the
#: id list and its entry in the id -> row map (CPython 3.11), rounded up.
MATRIX_ROW_BYTES = 200
#: Memory of one kept query vector beyond its floats and its text (the map's entry, the array object).
QUERY_BYTES = 240


@dataclass
class _Matrix:
    signature: tuple[int, int]
    ids: list[str]
    rows: dict[str, int]
    values: Any  # numpy float32 (n, dim)

    @property
    def nbytes(self) -> int:
        """The memory it is counted for: its vectors plus :data:`MATRIX_ROW_BYTES` a record."""
        return int(self.values.nbytes) + len(self.ids) * MATRIX_ROW_BYTES


def _query_bytes(text: str, vec: Any) -> int:
    return QUERY_BYTES + sys.getsizeof(text) + int(vec.nbytes)


def _order_key(item: ScoredRecord[Any]) -> tuple[float, int, str]:
    return (-item.score, -getattr(item.record, "updated_at_ms", 0), record_id(item.record) or "")


class HybridRecallProvider:
    """A :class:`~meta_memory.recall.provider.RecallProvider` fusing the lexical ranking with
    embeddings (see the module doc). Thread-safe; needs ``numpy``.

    Args:
        embedder: the :class:`~meta_memory.recall.semantic.embedder.Embedder` that also filled the
            stored vectors (same ``model_id``).
        config: :class:`HybridConfig`.
        lexical: the lexical provider to fuse with (default configuration by default).
    """

    def __init__(
        self, embedder: Embedder, config: HybridConfig | None = None, lexical: LexicalRecallProvider | None = None
    ) -> None:
        import numpy  # noqa: F401  - fail at construction, not at the first recall

        self.embedder = embedder
        self.config = config or HybridConfig()
        self.lexical = lexical or LexicalRecallProvider()
        self._lock = threading.Lock()
        #: query vectors by (the scope's cache key, the query's text): one scope's recall never finds another
        #: scope's query embedded (a cache hit is a fast answer, so a shared one would tell whether another
        #: identity or realm asked the same words)
        self._queries: OrderedDict[tuple[Hashable, str], Any] = OrderedDict()
        self._matrices: OrderedDict[Hashable, _Matrix] = OrderedDict()
        self._cache_bytes = 0  # of the kept matrices and query vectors (cache_bytes bounds it)
        self._pending: dict[tuple[Hashable, str], Future[Any]] = {}
        self._degraded: Counter[str] = Counter()
        self._warned_at: dict[str, float] = {}

    # -- degradations -----------------------------------------------------------------------------
    def degradations(self) -> dict[str, int]:
        """Recalls answered with the lexical ranking alone since start, per ``degraded_reason``."""
        with self._lock:
            return dict(self._degraded)

    def _degrade(self, reason: str) -> None:
        """Count one degraded recall; warn at most once per :data:`WARN_INTERVAL_S` per reason."""
        now = time.monotonic()
        with self._lock:
            self._degraded[reason] += 1
            last = self._warned_at.get(reason)
            if last is not None and now - last < WARN_INTERVAL_S:
                return
            self._warned_at[reason] = now
            total = self._degraded[reason]
        log.warning("hybrid recall answered lexically (%s); %d such recalls since start", reason, total)

    # -- caches ---------------------------------------------------------------------------------
    def _embed(self, key: tuple[Hashable, str], future: Future[Any]) -> None:
        """Embed ``key``'s text into ``future`` (a daemon thread's work) and keep the vector in the query
        cache under ``key`` (the scope's cache key and the text)."""
        import numpy as np

        text = key[1]
        try:
            vec = np.asarray(self.embedder.embed([text])[0], dtype=np.float32)
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting recall
            with self._lock:
                self._pending.pop(key, None)
            future.set_exception(exc)
            return
        with self._lock:
            self._pending.pop(key, None)
            if key not in self._queries and _query_bytes(text, vec) <= self.config.cache_bytes:
                self._queries[key] = vec
                self._cache_bytes += _query_bytes(text, vec)
            while len(self._queries) > self.config.query_cache:
                old, old_vec = self._queries.popitem(last=False)
                self._cache_bytes -= _query_bytes(old[1], old_vec)
            self._shrink()
        future.set_result(vec)

    def _shrink(self) -> None:
        """Drop the least recently used matrices, then query vectors, until the cache's memory is within
        ``cache_bytes`` (caller holds the lock)."""
        while self._cache_bytes > self.config.cache_bytes and self._matrices:
            self._cache_bytes -= self._matrices.popitem(last=False)[1].nbytes
        while self._cache_bytes > self.config.cache_bytes and self._queries:
            old, old_vec = self._queries.popitem(last=False)
            self._cache_bytes -= _query_bytes(old[1], old_vec)

    def memory_stats(self) -> dict[str, int]:
        """``{bytes, limit_bytes, scopes, queries}``: the memory of the kept scope matrices and query vectors
        (bytes, as counted against ``cache_bytes``), the bound, and how many of each are kept."""
        with self._lock:
            return {"bytes": self._cache_bytes, "limit_bytes": self.config.cache_bytes,
                    "scopes": len(self._matrices), "queries": len(self._queries)}

    def _query_vector(self, scope_key: Hashable, text: str, until: float | None) -> Any:
        """The query's unit vector for the scope whose cache key is ``scope_key``: from the cache, kept per
        scope, else embedded on a daemon thread (one per distinct scope and text in flight) that this recall
        waits for until the monotonic instant ``until`` (``None``: no limit). Raises
        :class:`_DenseUnavailable` (``embedding_timeout``, ``embedder_busy``, ``embedder_failed``)."""
        key = (scope_key, text)
        with self._lock:
            hit = self._queries.get(key)
            if hit is not None:
                self._queries.move_to_end(key)
                return hit
            future = self._pending.get(key)
            if future is None:
                if len(self._pending) >= self.config.max_pending_embeddings:
                    raise _DenseUnavailable("embedder_busy")
                future = Future()
                self._pending[key] = future
                started = True
            else:
                started = False
        if started:
            try:
                threading.Thread(target=self._embed, args=(key, future), name="meta-memory-query-embedding",
                                 daemon=True).start()
            except BaseException:
                with self._lock:
                    self._pending.pop(key, None)
                raise
        try:
            return future.result(None if until is None else max(0.0, until - time.monotonic()))
        except FutureTimeout:
            raise _DenseUnavailable("embedding_timeout") from None
        except Exception as exc:  # noqa: BLE001 - whatever the embedder raised: answer lexically
            log.debug("query embedding failed: %s: %s", type(exc).__name__, exc)
            raise _DenseUnavailable("embedder_failed") from None

    def _matrix(self, source: VectorSource, model: str) -> _Matrix | None:
        import numpy as np

        key = (source.cache_key, model)
        signature = source.vector_signature(model)
        with self._lock:
            cached = self._matrices.get(key)
            if cached is not None and cached.signature == signature:
                self._matrices.move_to_end(key)
                return cached
        rows = source.vectors(model)
        dim = self.embedder.dim
        rows = [(m, b) for m, b in rows if len(b) == 4 * dim]
        if not rows:
            return None
        values = np.frombuffer(b"".join(b for _, b in rows), dtype="<f4").reshape(len(rows), dim)
        ids = [m for m, _ in rows]
        matrix = _Matrix(signature, ids, {m: i for i, m in enumerate(ids)}, values)
        with self._lock:
            old = self._matrices.pop(key, None)
            if old is not None:
                self._cache_bytes -= old.nbytes
            if matrix.nbytes <= self.config.cache_bytes:  # a larger one serves this recall, unkept
                self._matrices[key] = matrix
                self._cache_bytes += matrix.nbytes
            while len(self._matrices) > self.config.scope_cache:
                self._cache_bytes -= self._matrices.popitem(last=False)[1].nbytes
            self._shrink()
        return matrix

    # -- recall ---------------------------------------------------------------------------------
    def recall(self, request: RecallRequest, reader: RecallReader[Any]) -> RecallOutcome[Any]:
        """Rank ``reader``'s records for ``request`` (see the module doc)."""
        if request.selection == "always" or not request.terms():
            return self.lexical.recall(request, reader)
        cfg = self.config
        wide = RecallRequest(
            identity=request.identity,
            realm=request.realm,
            query_text=request.query_text,
            query_terms=request.query_terms,
            selection=request.selection,
            max_entries=min(MAX_ENTRIES_LIMIT, max(cfg.candidate_limit, request.max_entries)),
        )
        lexical = self.lexical.recall(wide, reader)
        source = vector_source(reader)
        if source is None:
            return RecallOutcome(lexical.records[: request.max_entries], lexical.skip_reason)
        try:
            fused = self._dense(request, lexical.records, source)
        except _DenseUnavailable as exc:
            self._degrade(exc.reason)
            return RecallOutcome(lexical.records[: request.max_entries], lexical.skip_reason, exc.reason)
        if fused is None:
            return RecallOutcome(lexical.records[: request.max_entries], lexical.skip_reason)
        return RecallOutcome(fused)

    def _dense_until(self) -> float | None:
        """The monotonic instant the dense side must end by: ``dense_budget_share`` of what is left of the
        recall's budget (``None`` without a budget). Raises :class:`_DenseUnavailable` (``budget_spent``)
        when nothing is left."""
        left = deadline.remaining_ms()
        if left is None:
            return None
        share = left * self.config.dense_budget_share
        if share < 1:
            raise _DenseUnavailable("budget_spent")
        return time.monotonic() + share / 1000

    def _dense(self, request: RecallRequest, lexical: list[ScoredRecord[Any]],
               source: VectorSource) -> list[ScoredRecord[Any]] | None:
        """The fused ranking, or ``None`` when the scope has no vector yet; raises :class:`_DenseUnavailable`
        when the dense side cannot contribute in time (the caller answers lexically)."""
        if not self.embedder.ready:
            raise _DenseUnavailable("model_loading")
        until = self._dense_until()
        try:
            with deadline.sooner(until):
                matrix = self._matrix(source, self.embedder.model_id)
                if matrix is None:
                    return None
                query = " ".join(p for p in (request.query_text or "", " ".join(request.query_terms)) if p.strip())
                cosines = matrix.values @ self._query_vector(source.cache_key, query, until)
                deadline.check()
                if self.config.fusion == "weighted":
                    return self._fuse_weighted(lexical, matrix, cosines, source, request.max_entries)
                return self._fuse(lexical, matrix, cosines, source, request.max_entries)
        except AgentMemoryError as exc:
            # a store read stopped at a deadline: the dense side's (answer lexically) or the recall's own
            if exc.reason != "timeout" or deadline.expired():
                raise
            raise _DenseUnavailable("vector_search_timeout") from None

    def _fuse(
        self, lexical: list[ScoredRecord[Any]], matrix: _Matrix, cosines: Any, source: VectorSource, max_entries: int
    ) -> list[ScoredRecord[Any]]:
        import numpy as np

        cfg = self.config
        best = max((s.score for s in lexical), default=0.0)
        known = [float(cosines[matrix.rows[rid]]) for s in lexical if (rid := record_id(s.record)) in matrix.rows]
        neutral = sum(known) / len(known) if known else 0.0
        scored: list[ScoredRecord[Any]] = []
        seen: set[str] = set()
        for item in lexical:
            rid = record_id(item.record) or ""
            seen.add(rid)
            row = matrix.rows.get(rid)
            cos = float(cosines[row]) if row is not None else neutral
            lex = item.score / best if best > 0 else 0.0
            scored.append(ScoredRecord(item.record, lex + cfg.dense_weight * cos))
        dense_only: dict[str, float] = {}
        if cfg.dense_candidates > 0:
            n = min(len(matrix.ids), cfg.dense_candidates + len(seen))
            top = np.argpartition(-cosines, n - 1)[:n] if n < len(matrix.ids) else np.arange(len(matrix.ids))
            for i in sorted(top.tolist(), key=lambda j: -float(cosines[j])):
                cos = float(cosines[i])
                if cos < cfg.dense_min_cosine or len(dense_only) >= cfg.dense_candidates:
                    break
                if matrix.ids[i] not in seen:
                    dense_only[matrix.ids[i]] = cfg.dense_prior + cfg.dense_weight * cos
        # Fetch records only for dense-only ids that can still make the cut.
        floor = sorted((s.score for s in scored), reverse=True)[max_entries - 1] if len(scored) >= max_entries else None
        wanted = [rid for rid, score in dense_only.items() if floor is None or score >= floor]
        if wanted:
            for rid, rec in source.records(wanted).items():
                scored.append(ScoredRecord(rec, dense_only[rid]))
        scored.sort(key=_order_key)
        return scored[:max_entries]

    def _fuse_weighted(
        self, lexical: list[ScoredRecord[Any]], matrix: _Matrix, cosines: Any, source: VectorSource, max_entries: int
    ) -> list[ScoredRecord[Any]]:
        """``fusion = "weighted"``: min-max normalised lexical and dense scores, summed with ``fusion_weight``."""
        import numpy as np

        cfg = self.config
        alpha = cfg.fusion_weight
        lex = {rid: item.score for item in lexical if (rid := record_id(item.record))}
        records = {rid: item.record for item in lexical if (rid := record_id(item.record))}
        n = min(len(matrix.ids), cfg.candidate_limit)
        top = np.argpartition(-cosines, n - 1)[:n] if n < len(matrix.ids) else np.arange(len(matrix.ids))
        dense = {matrix.ids[i]: float(cosines[i]) for i in top.tolist() if float(cosines[i]) >= cfg.dense_min_cosine}
        for rid in lex:
            row = matrix.rows.get(rid)
            if row is not None:
                dense.setdefault(rid, float(cosines[row]))

        def scaled(values: dict[str, float]) -> dict[str, float]:
            if not values:
                return {}
            low, high = min(values.values()), max(values.values())
            return {k: (v - low) / (high - low) if high > low else 1.0 for k, v in values.items()}

        lex_n, dense_n = scaled(lex), scaled(dense)
        fused = {rid: (1 - alpha) * lex_n.get(rid, 0.0) + alpha * dense_n.get(rid, 0.0) for rid in {*lex, *dense}}
        ranked = sorted(fused.items(), key=lambda kv: -kv[1])
        wanted = [rid for rid, _ in ranked[: max_entries + len(lex)] if rid not in records]
        if wanted:
            records.update(source.records(wanted))
        scored = [ScoredRecord(records[rid], score) for rid, score in fused.items() if rid in records]
        scored.sort(key=_order_key)
        return scored[:max_entries]
