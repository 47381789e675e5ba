"""The in-process full-text index: FTS5's candidate query answered from memory.

Recall's candidate stage (:meth:`RecallReader.search`) asks for a scope's best
``limit`` active records by weighted bm25 over that scope's statistics
(:mod:`meta_memory.recall.bm25`). On a large realm that query is most of a recall's
time. This module keeps, per realm, the full-text index in memory — postings in numpy
arrays, bm25 scored vectorised — and answers with the *same* candidates, scores and
order as the FTS5 path (:func:`meta_memory.recall.bm25.scoped_candidates`):

* the documents are read from the full-text table itself (its columns hold the
  tokens of :mod:`meta_memory.recall.text`, space-joined), so tokenisation and
  normalisation cannot drift from the FTS path;
* scores follow :mod:`meta_memory.recall.bm25` step by step, in the same floating-point
  order (its :func:`~meta_memory.recall.bm25.idf` and :func:`~meta_memory.recall.bm25.term_score`
  applied to arrays): per phrase ``i`` (in the ``MATCH`` order) the idf from ``n_i``, the
  scope's rows holding it (the phrase's postings of that scope), with ``N`` and ``avgdl``
  the scope's row count and tokens per row (kept per scope as rows come and go); rows of
  other scopes change neither; ties by ``rid``. A phrase's per-posting scores for one
  scope are kept until a row of that scope changes; those of the mid-frequency words of a
  realm's largest scope are computed as soon as it is built (:meth:`_RealmIndex.prepare`),
  so no search pays for meeting them first;
* when the query's terms hold more than :data:`PRUNE_MIN_POSTINGS` postings (fewer are summed in one
  vectorised pass, cheaper than the pruning's set-up),
  rows that cannot enter the best ``limit`` are skipped (MaxScore, :meth:`_RealmIndex._pruned`):
  per-phrase upper bounds of its share, a threshold from real rows' exact scores (raised as the
  phrases of largest bound are summed), and the phrases whose bounds together stay below it read
  only at the remaining candidates, which drop out as soon as they can no longer reach it. Each
  candidate's score is still summed phrase by phrase in the ``MATCH`` order, so the answer is the
  exhaustive one bit for bit (``tests/recall/test_index_pruning.py``). The phrases held by a quarter of
  the rows or more keep their per-row scores as one array over every slot from the realm's build until
  a row of the scope changes (:data:`DENSE_MIN_SHARE`, within :data:`DENSE_SHARE` of the budget), so
  their shares at the candidates are read by slot, not by binary search.

Two more answers come from the same memory: which columns of a candidate's row hold each
query term (a byte per posting, handed to re-ranking as one table for all candidates,
:mod:`meta_memory.recall.term_columns`, so it reads no full-text row), and the rows'
write order (``created_at_ms``, then ``rid``) for recall's write-order neighbours.

Coherence with the durable store (SQLite stays the source of truth):

* every insert into or delete from the full-text table writes the change log
  (:func:`meta_memory.recall.fts.note_change`, same transaction). Each search reads
  ``max(seq)`` inside the caller's read transaction and, when it moved, re-reads the
  changed rows in that same snapshot before scoring — so writes of this process
  and of any other process or connection are seen by the next search;
* a realm's first search starts its build on a worker thread (a realm with a change
  log shorter than :data:`MIN_ROWS` is left to FTS5, fast at that size); past
  :data:`CATCH_UP_LIMIT` changes the worker catches the realm up, and with many
  removed rows rebuilds it; while a realm is cold, behind, being rebuilt or evicted,
  :meth:`LexicalIndexes.search` returns ``None`` and the caller runs the FTS5 query;
* the caller re-checks every candidate against the store's current rows (active,
  same scope) before returning it, so a tombstoned, superseded, quarantined, erased
  or other-scope record can never come back, whatever the index holds.

Memory: each realm's index is sized (:meth:`_RealmIndex.nbytes`, an estimate of
its arrays, vocabulary and kept scores, those computed at the build included: the index grows
with those to at most :data:`PREPARE_SHARE` of the budget) and the realms together are kept under ``max_bytes``
(``[agent_memory] recall_index_mb``, :data:`DEFAULT_MAX_BYTES`) by evicting the
least recently searched; a realm larger than the whole budget stays on FTS5. A build tokenises
each row as it reads it and merges the postings into the arrays a chunk at a time (at most
:data:`BUILD_CHUNK` rows or :func:`chunk_bytes`, a quarter of the budget), and gives up as soon as
the index and its chunk together pass the budget, so a build never holds more than the budget and
a realm that does not fit costs at most that, not a whole realm's objects. A realm evicted or
refused is not built again for :data:`RETRY_REFUSED_S` (realms that do not fit together would
otherwise rebuild each other in turn). The builder thread keeps the process's scheduling priority: at a
lower one, on a machine busy with other processes, it was starved while holding the interpreter lock the
recalls waited for, and builds took several times longer.

Spec: README "Going beyond the reference" (recall speed); reference notes §3.3.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from meta_memory import deadline
from meta_memory.recall import bm25, fts
from meta_memory.recall.term_columns import TermColumns
from meta_memory.recall.text import is_word_run, normalize
from meta_memory.recall.word_runs import MAX_TERMS, MIN_RUN_CHARS, WordRuns

if TYPE_CHECKING:  # numpy is imported where first used: opening a store does not load it
    import numpy as np

__all__ = [
    "DEFAULT_MAX_BYTES",
    "CATCH_UP_LIMIT",
    "MIN_ROWS",
    "LexicalIndexes",
    "bm25_top",
]

#: Default memory budget of all realms' indexes together (256 MiB).
DEFAULT_MAX_BYTES = 256 * 1024 * 1024

#: Most logged changes a search applies in place (a few ms); past it the worker catches the realm up
#: while FTS5 answers, so a large batch never holds a recall inside its time budget.
CATCH_UP_LIMIT = 500

#: A realm whose change log is shorter than this (so it holds fewer rows) stays on FTS5, fast there.
MIN_ROWS = 2000

#: Share of a recall's remaining time budget it waits for a realm's index while another thread holds it
#: (the worker applying a large batch, or a rebuild's catch-up): past it the recall asks FTS5, which stops
#: at the deadline, so a busy index never holds a recall past its budget.
LOCK_WAIT_SHARE = 0.5

#: Rows a build reads or indexes between two looks at whether a recall is being answered by FTS5 meanwhile
#: (:meth:`LexicalIndexes.answering`): it then waits, up to :data:`PAUSE_MAX_S` at a time, so that recall has the
#: interpreter to itself (a realm's build takes it for a minute or more at a million rows; a recall on FTS5 beside it
#: ran three to five times slower and past its budget).
PAUSE_ROWS = 256
PAUSE_MAX_S = 0.5
#: A build's pauses together stay within :data:`PAUSE_CREDIT_S` plus this share of its time so far: a recall right
#: after a restart has the interpreter to itself, while a steady stream of FTS5 recalls slows a build at most about
#: twofold instead of stopping it (which kept every recall on FTS5 and the build's snapshot open for an hour).
PAUSE_SHARE = 0.5
PAUSE_CREDIT_S = 2.0

#: Most rows a build tokenises before merging their postings into the terms' arrays (:class:`_Chunk`; about
#: 150 MB of Python objects for 50,000 synthetic rows of 45 terms, so the chunk is also cut by its bytes:
#: :func:`chunk_bytes`).
BUILD_CHUNK = 50_000
#: Bounds of the bytes of postings a build holds unmerged (:func:`chunk_bytes`: a quarter of the budget).
MIN_CHUNK_BYTES = 256 * 1024
MAX_CHUNK_BYTES = 64 * 1024 * 1024
#: Measured memory of one term of a build's chunk beyond its postings: three dict entries and three lists.
CHUNK_TERM_BYTES = 320

#: Rows whose exact scores set the threshold of a pruned search (:meth:`_RealmIndex._pruned`): at least this many
#: (the holders of the query's terms of largest bound), more giving a higher threshold and fewer candidates.
PRUNE_POOL = 512

#: Postings of the essential terms still to be summed (:meth:`_RealmIndex._pruned`) from which the threshold is
#: raised first (about two milliseconds of work: a partial sort of the holders of the term of largest bound and
#: the exact scores of a few hundred rows), since a higher threshold may leave those terms unread.
REFRESH_POSTINGS = 100_000

#: Cost of looking one candidate up in one term's postings (a binary search and a gather) against adding one
#: posting on the exhaustive path: a pruned search with more candidates than its terms' postings over this per
#: term scores every posting instead.
LOOKUP_COST = 4

#: Postings of a query's terms (all scopes, repeats counted) up to which a search scores every posting without
#: trying to prune: summing a few tens of thousands of postings in one vectorised pass costs less than the
#: pruned path's set-up (bounds, a threshold pool, candidate look-ups: about 0.2 ms in many small numpy calls),
#: measured on the synthetic corpora of ``benchmarks/recall.py`` (3,000 to 30,000 rows: the exhaustive path 2-4x
#: faster; 100,000 rows, about 150,000 postings a query: the pruned path faster).
PRUNE_MIN_POSTINGS = 50_000

#: Postings (all scopes) from which a term's per-row scores are computed as soon as its realm is built
#: (:meth:`_RealmIndex.prepare`) instead of by the first search that meets it: below it that first
#: computation costs a search well under a millisecond, above it several (about 10 ns a posting, so a query
#: of a few words each in 5-30 % of a million rows spent 10-20 ms on them).
PREPARE_MIN_POSTINGS = 4096

#: Postings of a whole realm up to which :meth:`_RealmIndex.prepare` computes every term's per-row scores, not only
#: those of :data:`PREPARE_MIN_POSTINGS` or more: a small realm's scores take a few MB and a few tens of ms of the
#: build, and a search then computes none on its first meeting a rare word (about a tenth of a small realm's
#: first recall of a query).
PREPARE_ALL_POSTINGS = 500_000

#: Share of the memory budget (``max_bytes``) up to which a built realm's index may grow with the scores
#: computed ahead (:meth:`_RealmIndex.prepare`): the rest stays for other realms and for the scores searches
#: compute later.
PREPARE_SHARE = 0.5

#: A term whose postings in a realm's largest scope number at least this share of the realm's slots has its
#: per-row scores kept as one array over every slot when the realm is built (:meth:`_RealmIndex.prepare_dense`; at
#: most ``1 / DENSE_MIN_SHARE`` times the bytes of its scores kept per posting), until a row of the scope changes:
#: the candidates' shares are then read by their slots, with no binary search into postings held by a quarter to
#: all of the rows (about 2-8 ms of the heaviest queries at a million rows), and an essential term is summed into
#: the accumulator as one contiguous array.
DENSE_MIN_SHARE = 0.25
#: Candidates from which a term's shares are read from its dense array; fewer are looked up by binary search, as
#: cheap.
DENSE_MIN_CANDIDATES = 64
#: Share of the memory budget (``recall_index_mb``) a realm's dense arrays may hold together (never more than the
#: built index leaves of the budget): 256 MB of a 2 GB budget, 32 terms
#: of a million-row realm (the synthetic million holds 20 words in a quarter of its rows or more).
DENSE_SHARE = 1 / 8

#: Relative margin on every bound comparison of a pruned search: covers the rounding of sums of a few hundred
#: floats (about 1e-13 relative) many times over, so a row is skipped only when it surely scores lower.
BOUND_MARGIN = 1e-9

#: Rows a write-order neighbour walk reads one by one before it reads in chunks (most walks end within a few
#: rows: the anchor's scope's own, nearest first).
SIDE_STEPS = 8
#: Write-order walks a realm index keeps while no row is added or removed (:meth:`_RealmIndex.neighbours`): the
#: same anchors recur from recall to recall (half of a small identity's anchors in one pass of its queries).
NEAR_KEPT = 4096
#: Measured memory of one kept walk (CPython 3.11: its key of four ints, a list of up to four rids, the map's
#: entry), rounded up.
NEAR_BYTES = 320

#: Slots (rows added since the realm's build, removed ones included) up to which a realm index keeps its rows' runs of
#: word characters (:mod:`meta_memory.recall.word_runs`, about 1.5 MB a thousand rows of 500 characters):
#: past it re-ranking reads the candidates' texts for the substring rule, as without them.
RUNS_MAX_ROWS = 20_000

#: Rows of a built realm index from which the process's objects are then moved out of the cyclic garbage
#: collector's reach (:func:`_settle`): a full collection walks every tracked object of the process, and at a
#: million rows (the index's vocabulary and row map beside the gateway's own) one took 90-160 ms and landed in
#: whichever recall was running, about one in every 300-600 recalls.
SETTLE_MIN_ROWS = 100_000

#: Whether a large build settles the heap (:func:`_settle`). Off by default: the freeze is process-wide, and
#: in a host that embeds the store a reference cycle of its own alive at that moment would never be collected
#: once dropped. The gateway processes (``meta-memory serve``, ``gateway --stdio``), whose every object is
#: the runtime's, turn it on (:func:`settle_after_large_builds`).
_SETTLE = False


def settle_after_large_builds(enabled: bool = True) -> None:
    """Let a realm build of :data:`SETTLE_MIN_ROWS` rows or more run a full collection and freeze the
    process's objects (:func:`gc.freeze`), for a process that is a gateway and nothing else."""
    global _SETTLE
    _SETTLE = enabled

#: A realm refused for its size, or evicted to make room for another, is built again only after this long
#: (seconds; FTS5 answers it meanwhile): realms that do not fit the budget together would otherwise rebuild
#: each other in turn, each build taking a core from the recalls FTS5 answers beside it.
RETRY_REFUSED_S = 300.0

#: Measured memory (CPython 3.12, numpy 2) of one vocabulary term beyond its characters: its dict entry,
#: key string, :class:`_Postings` object (with its score-bound and dense-array fields), three numpy arrays and three empty lists (slots, frequencies,
#: columns). Many rare terms (a realm of distinct words, e.g. ids or generated text) cost this each, however
#: few postings they hold.
TERM_BYTES = 784
#: Measured memory of a term's per-scope scores beyond their 12 bytes a posting: the headers of the score and
#: slot arrays (a realm of many one-posting words scored ahead holds one per word).
SCORED_TERM_BYTES = 240
#: Measured memory of one posting appended since the term's arrays were last merged (an int and a float object
#: and a shared small int in three Python lists, with the lists' spare room), beyond the 9 bytes it takes once
#: merged.
PENDING_POSTING_BYTES = 96

_ROW_COLUMNS = ", ".join(f"f.{c}" for c in fts.COLUMNS)
#: the record's own title, description and body after its full-text columns (the substring rule's texts:
#: :mod:`meta_memory.recall.word_runs`)
_TEXT_COLUMNS = "r.title, r.description, r.body"
#: where a row's full-text columns end and its own texts begin
_TEXTS_AT = 4 + len(fts.COLUMNS)
#: every indexed row with its scope (a full-text row exists iff its record is active); CROSS JOIN: read the
#: full-text table in order, each record by its primary key
_ALL_ROWS = (f"SELECT f.rowid, r.scope_kind, r.scope_key, r.created_at_ms, {_ROW_COLUMNS}{{texts}} FROM {fts.FTS_TABLE} "
             "f CROSS JOIN records r ON r.rid = f.rowid")
_HEAD = f"SELECT COALESCE(MAX(seq), 0) FROM {fts.CHANGES_TABLE}"

_log = logging.getLogger(__name__)

Snapshot = Callable[[str], contextlib.AbstractContextManager[Any]]


def chunk_bytes(max_bytes: int | None) -> int:
    """Bytes of postings a build holds as Python objects before merging them (:class:`_Chunk`): a quarter of
    the budget ``max_bytes``, between :data:`MIN_CHUNK_BYTES` and :data:`MAX_CHUNK_BYTES`."""
    if max_bytes is None:
        return MAX_CHUNK_BYTES
    return max(MIN_CHUNK_BYTES, min(MAX_CHUNK_BYTES, max_bytes // 4))


class _Chunk:
    """The postings of the rows a build tokenised and has not merged yet, as Python lists per term."""

    __slots__ = ("slots", "freqs", "fields", "rows", "postings")

    def __init__(self) -> None:
        self.slots: dict[str, list[int]] = {}
        self.freqs: dict[str, list[float]] = {}
        self.fields: dict[str, list[int]] = {}
        self.rows = 0
        self.postings = 0

    def add(self, slot: int, freq: dict[str, float], bits: dict[str, int]) -> None:
        slots, freqs, fields = self.slots, self.freqs, self.fields
        for term, f in freq.items():
            s = slots.get(term)
            if s is None:
                slots[term] = [slot]
                freqs[term] = [f]
                fields[term] = [bits[term]]
            else:
                s.append(slot)
                freqs[term].append(f)
                fields[term].append(bits[term])
        self.rows += 1
        self.postings += len(freq)

    def nbytes(self) -> int:
        """Memory of the chunk's objects in bytes, from measured costs (:data:`PENDING_POSTING_BYTES` a
        posting, :data:`CHUNK_TERM_BYTES` a term)."""
        return self.postings * PENDING_POSTING_BYTES + len(self.slots) * CHUNK_TERM_BYTES


class _Postings:
    """One term's postings: slots (ascending), column-weighted frequencies and the columns holding the
    term (bit ``i`` = ``fts.COLUMNS[i]``), plus appends not yet merged."""

    __slots__ = ("slots", "freqs", "fields", "more_slots", "more_freqs", "more_fields", "scope", "scope_version",
                 "scope_slots", "scope_scores", "scope_max", "peak_of", "peak_freq", "peak_short", "dense",
                 "dense_key")

    def __init__(self, slots: np.ndarray, freqs: np.ndarray, fields: np.ndarray) -> None:
        self.slots = slots
        self.freqs = freqs
        self.fields = fields
        self.more_slots: list[int] = []
        self.more_freqs: list[float] = []
        self.more_fields: list[int] = []
        # the postings of one scope (the last one searched) and their bm25 shares over that scope's statistics,
        # as of the scope's version (a change to one of its rows moves N, avgdl and maybe n_i: recomputed then)
        self.scope = -1
        self.scope_version = -1
        self.scope_slots: np.ndarray | None = None
        self.scope_scores: np.ndarray | None = None
        self.scope_max = 0.0  # the largest of scope_scores
        # the largest frequency and the shortest row among the first ``peak_of`` postings (a score's upper bound)
        self.peak_of = 0
        self.peak_freq = 0.0
        self.peak_short = 0.0
        # the scope's per-row scores over every slot (0.0 where the row lacks the term), as of ``dense_key``
        # (scope number, scope version): made when the realm is built (:meth:`_RealmIndex.prepare`)
        self.dense: np.ndarray | None = None
        self.dense_key = (-1, -1)

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        import numpy as np
        if self.more_slots:
            self.slots = np.concatenate([self.slots, np.asarray(self.more_slots, dtype=np.int32)])
            self.freqs = np.concatenate([self.freqs, np.asarray(self.more_freqs, dtype=np.float32)])
            self.fields = np.concatenate([self.fields, np.asarray(self.more_fields, dtype=np.uint8)])
            self.more_slots, self.more_freqs, self.more_fields = [], [], []
        return self.slots, self.freqs


class _RealmIndex:
    """The postings of one realm's full-text rows at change-log position ``seq``.

    Rows live in slots (``slot_rid``, ``slot_scope``: the scope's number, -1 once removed,
    ``slot_len``: token count, ``slot_at``: the record's ``created_at_ms``). Per scope number:
    ``scope_rows`` and ``scope_tokens`` (its live rows and their tokens: bm25's ``N`` and ``avgdl``)
    and ``scope_version`` (the index ``version`` of its last change). ``order`` lists the
    first ``ordered`` slots in write order (``created_at_ms``, then ``rid``) and ``rank`` is each
    slot's place in it. Not thread-safe: :class:`LexicalIndexes` holds ``lock``.
    """

    def __init__(self, seq: int) -> None:
        import numpy as np
        self.seq = seq
        self.lock = threading.Lock()
        self.postings: dict[str, _Postings] = {}
        self.scopes: dict[tuple[str, str], int] = {}
        self.scope_rows: list[int] = []
        self.scope_tokens: list[int] = []
        self.scope_version: list[int] = []
        self.slot_of: dict[int, int] = {}
        self.slot_rid = np.zeros(0, dtype=np.int64)
        self.slot_scope = np.zeros(0, dtype=np.int32)
        self.slot_len = np.zeros(0, dtype=np.float64)
        self.slot_at = np.zeros(0, dtype=np.int64)
        self.order = np.zeros(0, dtype=np.int64)
        self.rank = np.zeros(0, dtype=np.int64)
        self.ordered = 0
        self.used = 0  # slots in use (live or removed)
        self.live = 0  # rows in the index
        self.tokens = 0  # tokens of the live rows
        self.removed = 0
        self.n_postings = 0
        self.term_chars = 0
        self.version = 0  # moves with every added or removed row
        self.cached = 0  # postings held in the per-scope score caches
        self.scored = 0  # terms holding per-scope scores (each two arrays' headers: SCORED_TERM_BYTES)
        self.pending = 0  # postings appended to Python lists, not yet merged into their term's arrays
        #: the terms holding a dense score array (:meth:`_make_dense`), and those arrays' bytes
        self.dense_terms: dict[int, _Postings] = {}
        self.dense_bytes = 0
        #: most bytes the dense arrays may hold together (0: none are made); :class:`LexicalIndexes` sets it from its
        #: budget (:data:`DENSE_SHARE`) before :meth:`prepare_dense`
        self.dense_limit = 0
        self.caught_up_to: object = None  # the read transaction (its caller's token) the index last caught up to
        #: ``(scope number, rid, span, window_ms) -> neighbour rids`` of the walks made at ``near_version``
        self.near: dict[tuple[int, int, int, int], list[int]] = {}
        self.near_version = -1
        #: each slot's runs of word characters in its title and body (``None``: not kept for this realm)
        self.runs: WordRuns | None = WordRuns()

    # ------------------------------------------------------------------ building

    @classmethod
    def build(cls, seq: int, rows: Iterable[Sequence[Any]], max_bytes: int | None = None,
              pause: Callable[[], None] | None = None) -> _RealmIndex | None:
        """An index of ``rows`` (``rid, scope_kind, scope_key, created_at_ms, *columns``) at ``seq``, or ``None``
        as soon as its memory (:meth:`nbytes`) together with the build's own (the postings tokenised and not yet
        merged, :class:`_Chunk`) passes ``max_bytes``. Each row is tokenised as it is read; its postings wait in
        a chunk merged into the terms' arrays once it holds :data:`BUILD_CHUNK` rows or
        :func:`chunk_bytes` bytes, so a build holds at most one chunk of Python objects beside the arrays,
        and never more than ``max_bytes`` in all: a realm that does not fit costs at most the budget, not a
        whole realm's objects. ``pause`` is called every :data:`PAUSE_ROWS` rows (it may sleep: see
        :meth:`LexicalIndexes.answering`)."""
        import numpy as np
        index = cls(seq)
        limit = chunk_bytes(max_bytes)
        chunk = _Chunk()
        for row in rows:
            index._tokenise(chunk, row)
            if chunk.rows % PAUSE_ROWS == 0:
                if pause is not None:
                    pause()
                if index._over(max_bytes, chunk.nbytes()):
                    return None
            if chunk.rows >= BUILD_CHUNK or chunk.nbytes() >= limit:
                index._merge(chunk)
                chunk = _Chunk()
                if index._over(max_bytes):
                    return None
        if index._over(max_bytes, chunk.nbytes()):
            return None
        index._merge(chunk)
        if index._over(max_bytes):
            return None
        if len(index.slot_rid) > index.used:  # the doubling's spare room is not kept
            for name in ("slot_rid", "slot_scope", "slot_len", "slot_at"):
                setattr(index, name, np.ascontiguousarray(getattr(index, name)[: index.used]))
        if index.runs is not None:
            index.runs.merge()
        return index

    def _over(self, max_bytes: int | None, more: int = 0) -> bool:
        """Whether :meth:`nbytes` and ``more`` pass ``max_bytes`` (``None``: no limit) once the rows' runs, if the
        two pass it with them, are dropped: a realm fits the budget without its runs before it is refused."""
        if max_bytes is None or self.nbytes() + more <= max_bytes:
            return False
        if self.runs is not None:
            self.runs = None
        return self.nbytes() + more > max_bytes

    def _tokenise(self, chunk: _Chunk, row: Sequence[Any]) -> None:
        """Place ``row`` (a new rid) in the next slot and add its postings to ``chunk``."""
        slot = self.used
        self._grow(slot + 1)
        freq, size, bits = bm25.weighted(row[4:_TEXTS_AT])
        self._place(slot, row[0], (row[1], row[2]), row[3], size)
        self._note_runs(slot, row)
        self.used = slot + 1
        chunk.add(slot, freq, bits)

    def _merge(self, chunk: _Chunk) -> None:
        """Append ``chunk``'s postings to their terms' arrays."""
        import numpy as np
        for term, s in chunk.slots.items():
            new = (np.asarray(s, dtype=np.int32), np.asarray(chunk.freqs[term], dtype=np.float32),
                   np.asarray(chunk.fields[term], dtype=np.uint8))
            p = self.postings.get(term)
            if p is None:
                self.postings[term] = _Postings(*new)
                self.term_chars += len(term)
            else:
                p.slots = np.concatenate([p.slots, new[0]])
                p.freqs = np.concatenate([p.freqs, new[1]])
                p.fields = np.concatenate([p.fields, new[2]])
            self.n_postings += len(s)

    def _grow(self, need: int) -> None:
        import numpy as np
        if need <= len(self.slot_rid):
            return
        size = max(need, 2 * len(self.slot_rid), 64)
        for name, dtype in (("slot_rid", np.int64), ("slot_scope", np.int32), ("slot_len", np.float64),
                            ("slot_at", np.int64)):
            old = getattr(self, name)
            new = np.zeros(size, dtype=dtype)
            new[: len(old)] = old
            setattr(self, name, new)

    def _place(self, slot: int, rid: int, scope: tuple[str, str], created_at_ms: int, size: int) -> None:
        sid = self.scopes.get(scope)
        if sid is None:
            sid = self.scopes[scope] = len(self.scopes)
            self.scope_rows.append(0)
            self.scope_tokens.append(0)
            self.scope_version.append(0)
        self.slot_rid[slot] = rid
        self.slot_at[slot] = created_at_ms
        self.slot_scope[slot] = sid
        self.slot_len[slot] = size
        self.slot_of[rid] = slot
        self.live += 1
        self.tokens += size
        self.version += 1
        self.scope_rows[sid] += 1
        self.scope_tokens[sid] += size
        self.scope_version[sid] = self.version

    def prepare(self, max_bytes: int | None = None, pause: Callable[[], None] | None = None) -> int:
        """Compute now, for the realm's largest scope, what a search would compute the first time it meets each
        term of at least :data:`PREPARE_MIN_POSTINGS` postings (every term, the common ones too, in a realm of at
        most :data:`PREPARE_ALL_POSTINGS` postings, whose searches score every posting of their terms): the peaks its score bound is taken from and,
        for a term of idf above bm25's floor (held by under half the scope's rows), its per-row scores
        (:meth:`_term`, kept as a search keeps them, counted in :meth:`nbytes` at 12 bytes a posting). Terms
        are taken from the most postings down; a term's scores are skipped when they would take
        :meth:`nbytes` past ``max_bytes`` (``None``: no limit). The answers are unchanged (a search computes
        the same arrays); a change to a row of the scope makes them stale as it does the lazily computed ones.
        ``pause`` is called between terms (it may sleep). Returns the postings whose scores were computed."""
        if not self.scope_rows:
            return 0
        sid = max(range(len(self.scope_rows)), key=self.scope_rows.__getitem__)
        n_rows = self.scope_rows[sid]
        if n_rows <= 0:
            return 0
        whole = len(self.scopes) == 1 and self.removed == 0
        least = 1 if self.n_postings <= PREPARE_ALL_POSTINGS else PREPARE_MIN_POSTINGS
        terms = sorted((p for p in self.postings.values() if len(p.slots) + len(p.more_slots) >= least),
                       key=lambda p: -(len(p.slots) + len(p.more_slots)))
        done = 0
        for p in terms:
            if pause is not None:
                pause()
            n = len(p.slots) + len(p.more_slots)
            if whole:
                self._bound(p, sid, whole)
            if least > 1 and bm25.idf(n_rows, min(n, n_rows)) <= bm25.IDF_FLOOR:
                continue  # a common word of a large realm: read at a search's few candidates, never scored whole
            if max_bytes is not None and self.nbytes() + n * 12 + SCORED_TERM_BYTES > max_bytes:
                continue
            scored = self._term(p, sid, whole)
            done += 0 if scored is None else len(scored[1])
        return done

    def prepare_dense(self, pause: Callable[[], None] | None = None) -> int:
        """Keep, for the realm's largest scope, the dense score arrays (:meth:`_make_dense`) of its words held by
        at least :data:`DENSE_MIN_SHARE` of the slots, most postings first, within :attr:`dense_limit`: made
        here, while the realm is built, so that no search pays for one (a change to a row of the scope makes them
        stale: searches then drop them and read those words' shares as before). ``pause`` is called between
        words. Returns how many were kept."""
        if not self.scope_rows or self.dense_limit <= 0:
            return 0
        sid = max(range(len(self.scope_rows)), key=self.scope_rows.__getitem__)
        if self.scope_rows[sid] <= 0:
            return 0
        whole = len(self.scopes) == 1 and self.removed == 0
        least = DENSE_MIN_SHARE * self.used
        kept = 0
        for p in sorted((p for p in self.postings.values() if len(p.slots) + len(p.more_slots) >= least),
                        key=lambda p: -(len(p.slots) + len(p.more_slots))):
            if self.dense_bytes + self.used * 8 > self.dense_limit:
                break
            if pause is not None:
                pause()
            kept += self._make_dense(p, sid, whole, None)
        return kept

    # ------------------------------------------------------------------ changes

    def remove(self, rid: int) -> None:
        slot = self.slot_of.pop(rid, None)
        if slot is None:
            return
        sid = int(self.slot_scope[slot])
        size = int(self.slot_len[slot])
        self.slot_scope[slot] = -1
        self.live -= 1
        self.tokens -= size
        self.removed += 1
        self.version += 1
        self.scope_rows[sid] -= 1
        self.scope_tokens[sid] -= size
        self.scope_version[sid] = self.version

    def add(self, row: Sequence[Any]) -> None:
        """Index one row (``rid, scope_kind, scope_key, created_at_ms, *columns``), replacing the rid's old row."""
        import numpy as np
        self.remove(row[0])
        slot = self.used
        self._grow(slot + 1)
        freq, size, bits = bm25.weighted(row[4:_TEXTS_AT])
        self._place(slot, row[0], (row[1], row[2]), row[3], size)
        self._note_runs(slot, row)
        self.used += 1
        for term, f in freq.items():
            p = self.postings.get(term)
            if p is None:
                p = self.postings[term] = _Postings(np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32),
                                                    np.zeros(0, dtype=np.uint8))
                self.term_chars += len(term)
            p.more_slots.append(slot)
            p.more_freqs.append(f)
            p.more_fields.append(bits[term])
            self.n_postings += 1
            self.pending += 1

    def _note_runs(self, slot: int, row: Sequence[Any]) -> None:
        """Add slot ``slot``'s runs (:mod:`meta_memory.recall.word_runs`) from the row's own title, description and
        body (after its full-text columns); a row without them, or a slot past :data:`RUNS_MAX_ROWS`, leaves the
        realm without runs (re-ranking then reads the candidates' texts, as before)."""
        runs = self.runs
        if runs is None:
            return
        texts = row[_TEXTS_AT:_TEXTS_AT + 3]
        if slot >= RUNS_MAX_ROWS or len(texts) < 3 or len(runs) != slot:
            self.runs = None
            return
        title, description, body = texts
        if not (isinstance(title, str) and isinstance(body, str) and isinstance(description, (str, type(None)))):
            self.runs = None
            return
        # the texts re-ranking normalises (``lexical._body_text``): the description, when there is one, before the body
        runs.add(slot, normalize(title), normalize(description + "\n" + body if description else body))

    def needs_rebuild(self) -> bool:
        """Many removed rows: their postings cost memory and time until a rebuild drops them."""
        return self.removed > max(1000, self.used // 4)

    def nbytes(self) -> int:
        """Memory of the index in bytes (arrays, postings, postings not yet merged, vocabulary, rid map,
        write order), from measured per-item costs (:data:`TERM_BYTES`, :data:`PENDING_POSTING_BYTES`):
        what the budget is held to, so a realm of many distinct words cannot take more than it says."""
        return (self.n_postings * 9 + self.pending * PENDING_POSTING_BYTES + self.cached * 12 + self.scored * SCORED_TERM_BYTES
                + len(self.slot_rid) * 44 + len(self.slot_of) * 100
                + len(self.postings) * TERM_BYTES + self.term_chars + len(self.near) * NEAR_BYTES + self.dense_bytes
                + (self.runs.nbytes() if self.runs is not None else 0))

    def _term(self, p: _Postings, sid: int, whole: bool) -> tuple[np.ndarray, np.ndarray] | None:
        """``(slots, per-posting score)`` of one term's postings in scope ``sid`` (``None`` when no live row
        of the scope holds it): :func:`meta_memory.recall.bm25.term_score` over the scope's statistics,
        recomputed only after a row of the scope changed. ``whole``: every posting is live and in ``sid``."""
        import numpy as np

        if p.scope == sid and p.scope_version == self.scope_version[sid]:
            return None if p.scope_slots is None or p.scope_scores is None else (p.scope_slots, p.scope_scores)
        self.pending -= len(p.more_slots)
        slots, freqs = p.arrays()
        if not whole:
            mine = self.slot_scope[slots] == sid
            slots, freqs = slots[mine], freqs[mine]
        if p.scope_scores is not None:
            self.cached -= len(p.scope_scores)
            self.scored -= 1
        p.scope, p.scope_version = sid, self.scope_version[sid]
        p.scope_slots = p.scope_scores = None
        if not len(slots):
            return None
        n_rows = self.scope_rows[sid]
        avgdl = self.scope_tokens[sid] / n_rows
        scores = bm25.term_score(bm25.idf(n_rows, len(slots)), freqs.astype(np.float64), self.slot_len[slots], avgdl)
        p.scope_slots, p.scope_scores = slots, scores
        p.scope_max = float(scores.max())
        self.cached += len(scores)
        self.scored += 1
        return slots, scores

    # ------------------------------------------------------------------ search

    def top(self, scope: tuple[str, str], terms: Sequence[str], limit: int,
            only: Collection[int] | None = None, *, exhaustive: bool = False) -> list[tuple[int, float]]:
        """The scope's best ``limit`` rows for the ``OR`` of ``terms``: ``(rid, bm25)`` over the scope's
        statistics, best first, ties by ``rid`` (as :func:`meta_memory.recall.bm25.scoped_candidates`);
        with ``only``, the best among those rids alone (scores unchanged).

        Without ``only``, and when the terms hold more than :data:`PRUNE_MIN_POSTINGS` postings, the rows that
        cannot enter the best ``limit`` are skipped unscored (MaxScore: :meth:`_pruned`); the answer is the same, scores bit for bit and ties alike, as scoring every
        posting (``exhaustive=True``, and always with ``only``)."""
        sid = self.scopes.get(scope)
        if sid is None or self.scope_rows[sid] <= 0 or limit <= 0:
            return []
        if self.dense_terms:  # the arrays of a scope changed since: dropped, their memory with them
            for p in [p for p in self.dense_terms.values() if p.dense_key[1] != self.scope_version[p.dense_key[0]]]:
                self._drop_dense(p)
        whole = len(self.scopes) == 1 and self.removed == 0  # every posting is live and in this scope
        if only is None and not exhaustive and self._postings_of(terms) > PRUNE_MIN_POSTINGS:
            found = self._pruned(sid, terms, limit, whole)
            if found is not None:
                return found
        return self._exhaustive(sid, terms, limit, only, whole)

    def _postings_of(self, terms: Sequence[str]) -> int:
        """How many postings ``terms`` hold in every scope (a term counted at each of its repeats)."""
        total = 0
        for term in terms:
            p = self.postings.get(term)
            if p is not None:
                total += len(p.slots) + len(p.more_slots)
        return total

    def _exhaustive(self, sid: int, terms: Sequence[str], limit: int, only: Collection[int] | None,
                    whole: bool) -> list[tuple[int, float]]:
        """:meth:`top` by scoring every posting of every term."""
        import numpy as np
        hit_slots: list[np.ndarray] = []
        hit_scores: list[np.ndarray] = []
        for term in terms:
            p = self.postings.get(term)
            if p is None:
                continue  # no row has it: it adds 0 to every score
            scored = self._term(p, sid, whole)
            if scored is None:
                continue
            hit_slots.append(scored[0])
            hit_scores.append(scored[1])
        if not hit_slots:
            return []
        # per slot, the terms' scores summed in the query's order (bincount adds in input order)
        acc = np.bincount(np.concatenate(hit_slots), weights=np.concatenate(hit_scores), minlength=self.used)
        if only is not None:
            wanted = np.fromiter(only, dtype=self.slot_rid.dtype, count=len(only))
            acc = np.where(np.isin(self.slot_rid[: self.used], wanted), acc, 0.0)
        return bm25_top(acc, self.slot_rid[: self.used], limit)

    def _pruned(self, sid: int, terms: Sequence[str], limit: int, whole: bool) -> list[tuple[int, float]] | None:
        """:meth:`top` without ``only``, by MaxScore; ``None`` when nothing can be skipped (the caller scores
        every posting).

        1. Each distinct term gets an upper bound of its share of any row's score (times its repeats in
           the query): :meth:`_bound`. Terms are taken from the largest bound down.
        2. A threshold ``theta``: the ``limit``-th best exact score among a pool of real rows (the holders
           of the terms of largest bound first, :data:`PRUNE_POOL` rows at most), so the ``limit`` best
           of the scope all score at least ``theta``.
        3. The terms of smallest bound whose bounds sum below ``theta`` (with a relative margin of
           :data:`BOUND_MARGIN` for rounding) are *non-essential*: a row holding none of the others
           scores below ``theta`` and cannot be among the best. The essential terms' shares are summed
           per row, largest bound first; before each further term of many postings (:data:`REFRESH_POSTINGS`)
           ``theta`` is raised to the ``limit``-th best exact score among the rows of largest partial sum
           (:meth:`_raised`), and the terms left whose bounds now sum below it join the non-essential ones
           unread. Candidates are the rows whose partial sum plus the unread terms' bounds reach ``theta``;
           ``theta`` is raised once more to the ``limit``-th largest partial sum among them (``limit`` rows
           score at least their partial sum: every share is positive). When the candidates are too many
           to look up (:data:`LOOKUP_COST`), nothing is gained: ``None``.
        4. Each candidate is scored exactly (:meth:`_exact`: every term, in the query's order, so the sum
           rounds as the exhaustive path's does) and the best ``limit`` kept, ties by ``rid``.

        The heavy postings of common words (idf near its floor) are then read only at the candidates'
        places (a binary search each), never summed in full."""
        import numpy as np
        groups: dict[str, list[Any]] = {}  # term -> [postings, repeats, bound]
        for term in terms:
            g = groups.get(term)
            if g is not None:
                g[1] += 1
                continue
            p = self.postings.get(term)
            if p is None:
                continue
            bound = self._bound(p, sid, whole)
            if bound is not None:
                groups[term] = [p, 1, bound]
        if len(groups) < 2:
            return None
        ranked = sorted(groups.values(), key=lambda g: -g[1] * g[2])
        occurrences = [groups[t][0] for t in terms if t in groups]
        sizes = [len(self._slots(g[0], sid, whole)) for g in ranked]
        rest = [0.0] * (len(ranked) + 1)  # rest[j]: the bounds of ranked[j:] summed
        for j in range(len(ranked) - 1, -1, -1):
            rest[j] = rest[j + 1] + ranked[j][1] * ranked[j][2]

        def essential(theta: float) -> int:
            """How many terms of largest bound a row must hold one of to reach ``theta``."""
            e = len(ranked)
            while e > 0 and rest[e - 1] * (1.0 + BOUND_MARGIN) < theta:
                e -= 1
            return e

        # 2. the threshold, from the rows holding the terms of largest bound
        pool_parts: list[np.ndarray] = []
        pool_size = 0
        for g in ranked:
            slots = self._slots(g[0], sid, whole)[: max(limit, PRUNE_POOL) - pool_size]  # any real rows will do
            pool_parts.append(slots)
            pool_size += len(slots)
            if pool_size >= max(limit, PRUNE_POOL):
                break
        pool = _distinct(np.concatenate(pool_parts))
        if len(pool) < limit:
            return None
        scores = self._exact(occurrences, sid, whole, pool)
        theta = float(np.partition(scores, len(scores) - limit)[len(scores) - limit])
        # 3. the essential terms' shares summed, theta raised on the way
        total = sum(len(self._slots(p, sid, whole)) for p in occurrences)  # what the exhaustive path reads
        end = essential(theta)
        dense = sum(sizes[:end]) * 8 >= self.used  # many rows: one array over every slot
        acc = np.zeros(self.used if dense else 0, dtype=np.float64)
        parts: list[tuple[np.ndarray, np.ndarray]] = []
        read = 0
        while read < end:
            g = ranked[read]
            scored = self._term(g[0], sid, whole)
            assert scored is not None  # a bound was found, so the scope holds the term
            whole_term = self._dense(g[0], sid, whole) if dense else None
            if whole_term is not None:  # one contiguous pass; the rows lacking the term add 0.0
                acc[:len(whole_term)] += whole_term if g[1] == 1 else g[1] * whole_term
            elif dense:
                acc[scored[0]] += scored[1] if g[1] == 1 else g[1] * scored[1]  # a term's slots are distinct
            else:
                parts.append((scored[0], scored[1] if g[1] == 1 else g[1] * scored[1]))
            read += 1
            if dense and read < end and sum(sizes[read:end]) >= REFRESH_POSTINGS:
                theta = max(theta, self._raised(acc, self._slots(ranked[0][0], sid, whole), occurrences, sid, whole,
                                                limit))
                end = max(read, essential(theta))
        unread = rest[read]  # rows holding none of the terms read stay below theta (rest[end] is under it)
        if dense:  # a first cut a little below the bound, then the bound itself on the rows left
            cut = theta / (1.0 + BOUND_MARGIN) - unread
            cand: np.ndarray = np.flatnonzero(acc >= cut - (theta + unread) * BOUND_MARGIN)
            partial: np.ndarray = acc[cand]
        else:
            cand, partial = _summed(parts)
        keep = (partial + unread) * (1.0 + BOUND_MARGIN) >= theta
        cand, partial = cand[keep].astype(np.int32), partial[keep]
        raised = len(cand) > limit
        if raised:  # the best rows by their partial sums, scored exactly
            theta = max(theta, self._raised(partial, None, occurrences, sid, whole, limit, cand))
        # 4. the unread terms, largest bound first, added at the candidates while that may still drop one
        while len(cand) > limit:
            if len(cand) * LOOKUP_COST > total:
                return None  # so many candidates that summing every posting is cheaper
            if not raised:  # (just raised from these partial sums: already at least their limit-th largest)
                theta = max(theta, float(np.partition(partial, len(partial) - limit)[len(partial) - limit]))
            raised = False
            if read == len(ranked) or float(partial.min()) * (1.0 + BOUND_MARGIN) >= theta:
                break  # every candidate reaches theta already: none can be dropped
            g = ranked[read]
            if dense and len(cand) * LOOKUP_COST > sizes[read]:  # cheaper to add the whole term
                whole_term = self._dense(g[0], sid, whole)
                if whole_term is not None:
                    acc[:len(whole_term)] += whole_term if g[1] == 1 else g[1] * whole_term
                else:
                    scored = self._term(g[0], sid, whole)
                    assert scored is not None
                    acc[scored[0]] += scored[1] if g[1] == 1 else g[1] * scored[1]
                partial = acc[cand]
            else:
                share = self._shares(g[0], sid, whole, cand)
                partial = partial + (share if g[1] == 1 else g[1] * share)
                if dense:
                    acc[cand] = partial  # the candidates' sums, for a whole term added later
            read += 1
            keep = (partial + rest[read]) * (1.0 + BOUND_MARGIN) >= theta
            cand, partial = cand[keep], partial[keep]
        if len(cand) * len(occurrences) * LOOKUP_COST > total:
            return None
        # 5. the candidates' exact scores
        acc = self._exact(occurrences, sid, whole, cand)
        return bm25_top(acc, self.slot_rid[cand], limit)

    def _raised(self, acc: np.ndarray, among: np.ndarray | None, occurrences: Sequence[_Postings], sid: int,
                whole: bool, limit: int, slots: np.ndarray | None = None) -> float:
        """A threshold: the ``limit``-th best exact score among the ``2 * limit`` places of ``among`` (``None``:
        every place of ``acc``) of largest partial sum in ``acc`` (places are slots, or indexes into ``slots``);
        0.0 when ``among`` holds fewer than ``limit``. It is at least the ``limit``-th largest partial sum
        among them (a row's exact score adds its other terms' shares, none negative)."""
        import numpy as np
        n = len(acc) if among is None else len(among)
        if n < limit:
            return 0.0
        take = min(n, 2 * limit)
        if among is None:
            best = np.argpartition(acc, n - take)[n - take:]
        else:
            best = among[np.argpartition(acc[among], n - take)[n - take:]]
        rows = best if slots is None else slots[best]
        scores = self._exact(occurrences, sid, whole, np.sort(rows))
        return float(np.partition(scores, len(scores) - limit)[len(scores) - limit])

    def _slots(self, p: _Postings, sid: int, whole: bool) -> np.ndarray:
        """The term's posting slots in scope ``sid`` (ascending)."""
        if whole:
            self.pending -= len(p.more_slots)
            return p.arrays()[0]
        scored = self._term(p, sid, whole)
        assert scored is not None  # a bound was found, so the scope holds the term
        return scored[0]

    def _bound(self, p: _Postings, sid: int, whole: bool) -> float | None:
        """An upper bound of the term's share of any row's score in scope ``sid`` (``None``: no live row of
        the scope holds it). ``whole``: from the term's largest frequency and shortest row (bm25's share
        grows with the one, falls with the other), so a common word's postings are not scored; else the
        largest of its cached scores."""
        if not whole:
            scored = self._term(p, sid, whole)
            return None if scored is None else p.scope_max
        self.pending -= len(p.more_slots)
        slots, freqs = p.arrays()
        if not len(slots):
            return None
        if p.peak_of != len(slots):
            p.peak_freq = float(freqs.max())
            p.peak_short = float(self.slot_len[slots].min())
            p.peak_of = len(slots)
        n_rows = self.scope_rows[sid]
        avgdl = self.scope_tokens[sid] / n_rows
        return bm25.term_score(bm25.idf(n_rows, len(slots)), p.peak_freq, p.peak_short, avgdl)

    def _exact(self, occurrences: Sequence[_Postings], sid: int, whole: bool, cand: np.ndarray) -> np.ndarray:
        """The bm25 of the rows in slots ``cand`` (ascending), each term's share added in the query's order
        (a term the row lacks adds 0.0, which changes no sum): bit for bit the exhaustive path's scores."""
        import numpy as np
        acc = np.zeros(len(cand), dtype=np.float64)
        if not len(cand):
            return acc
        for p in occurrences:
            acc += self._shares(p, sid, whole, cand)
        return acc

    def _shares(self, p: _Postings, sid: int, whole: bool, cand: np.ndarray) -> np.ndarray:
        """The term's share of the score of each row in slots ``cand`` (ascending; 0.0 where the row lacks it),
        computed as the exhaustive path computes it: read from its dense array (:meth:`_dense`) at many
        candidates, else from the scope's cached scores, or (one scope, not cached) at the candidates alone by
        binary search into the term's postings."""
        import numpy as np
        if not len(cand):
            return np.zeros(0, dtype=np.float64)
        if len(cand) >= DENSE_MIN_CANDIDATES:
            dense = self._dense(p, sid, whole)
            if dense is not None:
                shares: np.ndarray = dense[cand]
                return shares
        cached = p.scope == sid and p.scope_version == self.scope_version[sid] and p.scope_slots is not None
        if cached or not whole:
            scored = self._term(p, sid, whole)
            if scored is None:
                return np.zeros(len(cand), dtype=np.float64)
            slots, scores = scored
            at = np.minimum(np.searchsorted(slots, cand), len(slots) - 1)
            return np.where(slots[at] == cand, scores[at], 0.0)
        n_rows = self.scope_rows[sid]
        avgdl = self.scope_tokens[sid] / n_rows
        self.pending -= len(p.more_slots)
        slots, freqs = p.arrays()
        at = np.minimum(np.searchsorted(slots, cand), len(slots) - 1)
        share = bm25.term_score(bm25.idf(n_rows, len(slots)), freqs[at].astype(np.float64), self.slot_len[slots[at]],
                                avgdl)
        return np.where(slots[at] == cand, share, 0.0)

    def _dense(self, p: _Postings, sid: int, whole: bool) -> np.ndarray | None:
        """The term's dense score array (:meth:`_make_dense`) when it holds the scores of scope ``sid`` at the
        scope's current version; ``None`` otherwise (:meth:`top` drops stale ones; searches never make one, so
        no search pays for it)."""
        if p.dense is not None and p.dense_key == (sid, self.scope_version[sid]):
            return p.dense
        return None

    def _make_dense(self, p: _Postings, sid: int, whole: bool, max_bytes: int | None) -> bool:
        """Keep the term's shares of the rows of scope ``sid`` as one float64 array indexed by slot (0.0 where a
        row lacks the term; rows added later, of other scopes, lie past its end), each valued as :meth:`_shares`
        values it, so reading it changes no score by a bit; ``True`` when kept. Not kept when the term holds under
        :data:`DENSE_MIN_SHARE` of the slots, or when the array would take the dense arrays past
        :attr:`dense_limit` or :meth:`nbytes` past ``max_bytes`` (``None``: no limit)."""
        import numpy as np
        size = self.used * 8
        if (self.dense_bytes + size > self.dense_limit or (max_bytes is not None and self.nbytes() + size > max_bytes)
                or len(p.slots) + len(p.more_slots) < DENSE_MIN_SHARE * self.used):
            return False
        cached = p.scope == sid and p.scope_version == self.scope_version[sid] and p.scope_slots is not None
        if cached or not whole:
            scored = self._term(p, sid, whole)
            if scored is None:
                return False
            slots, scores = scored
        else:  # a common word of one scope, never scored whole: its scores as the binary search computes them
            self.pending -= len(p.more_slots)
            slots, freqs = p.arrays()
            n_rows = self.scope_rows[sid]
            scores = bm25.term_score(bm25.idf(n_rows, len(slots)), freqs.astype(np.float64), self.slot_len[slots],
                                     self.scope_tokens[sid] / n_rows)
        if len(slots) < DENSE_MIN_SHARE * self.used:
            return False
        self._drop_dense(p)
        dense = np.zeros(self.used, dtype=np.float64)
        dense[slots] = scores
        p.dense, p.dense_key = dense, (sid, self.scope_version[sid])
        self.dense_terms[id(p)] = p
        self.dense_bytes += size
        return True

    def _drop_dense(self, p: _Postings) -> None:
        """Forget the term's dense array (:meth:`_dense`), if it has one."""
        if p.dense is not None:
            self.dense_bytes -= len(p.dense) * 8
            p.dense = None
            self.dense_terms.pop(id(p), None)

    def term_columns(self, terms: Sequence[str], rids: Sequence[int]) -> TermColumns:
        """Per distinct term of ``terms`` and rid of ``rids`` (indexed), the columns of the rid's full-text row
        holding the term (bit ``i`` = ``fts.COLUMNS[i]``; 0 when it does not hold it), as one table."""
        import numpy as np
        slot_of = self.slot_of
        want = np.fromiter(map(slot_of.__getitem__, rids), dtype=np.int32, count=len(rids))
        distinct = list(dict.fromkeys(terms))
        bits = np.zeros((len(distinct), len(rids)), dtype=np.uint8)
        for t, term in enumerate(distinct):
            p = self.postings.get(term)
            if p is None:
                continue
            self.pending -= len(p.more_slots)
            slots, _ = p.arrays()
            if not len(slots):
                continue
            at = np.minimum(np.searchsorted(slots, want), len(slots) - 1)
            bits[t] = np.where(slots[at] == want, p.fields[at], 0)
        table = TermColumns(distinct, bits)
        if self.runs is not None:
            long_terms = [term for term in distinct if len(term) >= MIN_RUN_CHARS and is_word_run(term)]
            if long_terms and len(long_terms) <= MAX_TERMS:
                table.inside_terms = long_terms
                table.inside = self.runs.inside(long_terms, want)
        return table

    # ------------------------------------------------------------------ write order

    def _write_order(self) -> None:
        """Bring ``order``/``rank`` up to every used slot: new slots written after the last ordered one
        (the usual case) are appended; otherwise the whole order is sorted again."""
        import numpy as np
        if self.ordered == self.used:
            return
        new = np.arange(self.ordered, self.used, dtype=np.int64)
        at, rid = self.slot_at[new], self.slot_rid[new]
        key_sorted = bool(np.all((at[1:] > at[:-1]) | ((at[1:] == at[:-1]) & (rid[1:] > rid[:-1]))))
        if self.ordered and key_sorted:
            last = int(self.order[self.ordered - 1])
            first_at, last_at = int(at[0]), int(self.slot_at[last])
            key_sorted = first_at > last_at or (first_at == last_at and int(rid[0]) > int(self.slot_rid[last]))
        if key_sorted:
            self.order = np.concatenate([self.order[: self.ordered], new])
        else:
            used = self.used
            self.order = np.lexsort((self.slot_rid[:used], self.slot_at[:used])).astype(np.int64)
        self.rank = np.empty(self.used, dtype=np.int64)
        self.rank[self.order] = np.arange(self.used, dtype=np.int64)
        self.ordered = self.used

    def neighbours(self, scope: tuple[str, str], rid: int, span: int, window_ms: int) -> list[int] | None:
        """The rids of the scope's rows written just before and after row ``rid``: at most ``span`` per
        side in write order (``created_at_ms``, then ``rid``), each within ``window_ms`` of it, nearest
        first and the sides alternating (before, after, before, ...). ``None`` when ``rid`` is not
        indexed.

        A walk is kept (:data:`NEAR_KEPT` at most) until a row is added or removed: nothing else moves the write
        order or a row's scope, so a kept walk is the one a new walk would make."""
        from itertools import zip_longest
        slot = self.slot_of.get(rid)
        sid = self.scopes.get(scope)
        if slot is None or sid is None:
            return None
        if self.near_version != self.version or len(self.near) >= NEAR_KEPT:
            self.near = {}
            self.near_version = self.version
        key = (sid, rid, span, window_ms)
        kept = self.near.get(key)
        if kept is not None:
            return list(kept)
        self._write_order()
        at = int(self.slot_at[slot])
        place = int(self.rank[slot])
        earlier = self._side(sid, place, -1, span, at - window_ms, at + window_ms)
        later = self._side(sid, place, 1, span, at - window_ms, at + window_ms)
        found = [int(r) for pair in zip_longest(earlier, later) for r in pair if r is not None]
        self.near[key] = found
        return list(found)

    def _side(self, sid: int, place: int, step: int, span: int, low: int, high: int) -> list[int]:
        """Up to ``span`` rids of scope ``sid`` from write-order position ``place`` (excluded) in
        direction ``step`` (-1 or 1), nearest first, while ``created_at_ms`` stays in ``[low, high]``."""
        import numpy as np
        found: list[int] = []
        start = place + step
        order, slot_at, slot_scope = self.order, self.slot_at, self.slot_scope
        for _ in range(SIDE_STEPS):  # the usual case, a few rows of the scope next to the anchor: row by row
            if len(found) >= span or not 0 <= start < self.ordered:
                return found
            slot = order[start]
            at = slot_at[slot]
            if at < low or at > high:
                return found  # write order is by time: past the window, no more
            if slot_scope[slot] == sid:
                found.append(int(self.slot_rid[slot]))
            start += step
        chunk = 16  # many rows of other scopes in between: in chunks
        while len(found) < span and 0 <= start < self.ordered:
            if step < 0:
                stop = max(start - chunk, -1)
                slots = self.order[stop + 1:start + 1][::-1]
            else:
                stop = min(start + chunk, self.ordered)
                slots = self.order[start:stop]
            at = self.slot_at[slots]
            inside = (at >= low) & (at <= high)
            ends = not bool(inside.all())
            if ends:
                slots = slots[: int(np.argmin(inside))]  # write order is by time: past the window, no more
            mine = slots[self.slot_scope[slots] == sid]
            found += (int(r) for r in self.slot_rid[mine[: span - len(found)]])
            if ends:
                break
            start, chunk = stop, chunk * 4
        return found


def _all_rows(texts: bool) -> str:
    """:data:`_ALL_ROWS`, with the records' own texts after the full-text columns when ``texts``."""
    return _ALL_ROWS.format(texts=f", {_TEXT_COLUMNS}" if texts else "")


def _changes(conn: Any, seq: int, limit: int | None, texts: bool = True) -> tuple[int, list[int], list[Any]] | None:
    """``(head, changed rids, their current full-text rows)`` since change-log position ``seq`` in
    ``conn``'s snapshot, or ``None`` when more than ``limit`` rows changed. ``texts``: each row with its
    record's own title, description and body after its full-text columns (for the index's runs)."""
    head = int(conn.execute(_HEAD).fetchone()[0])
    if head <= seq:
        return head, [], []  # current (or newer than this snapshot: the caller's re-check fails closed)
    changed = [r[0] for r in conn.execute(
        f"SELECT rid FROM {fts.CHANGES_TABLE} WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?",
        (seq, head, -1 if limit is None else limit + 1)).fetchall()]
    if limit is not None and len(changed) > limit:
        return None
    rows: list[Any] = []
    for i in range(0, len(changed), 500):
        part = changed[i:i + 500]
        rows += conn.execute(
            f"SELECT r.rid, r.scope_kind, r.scope_key, r.created_at_ms, {_ROW_COLUMNS}"
            f"{', ' + _TEXT_COLUMNS if texts else ''} FROM records r "
            f"JOIN {fts.FTS_TABLE} f ON f.rowid = r.rid WHERE r.rid IN ({', '.join('?' * len(part))})",
            part).fetchall()
    return head, changed, rows


def _apply(index: _RealmIndex, head: int, changed: Sequence[int], rows: Sequence[Any]) -> None:
    """Apply :func:`_changes`' result: a changed rid without a full-text row left the index."""
    if head <= index.seq:
        return
    present = {row[0] for row in rows}
    for rid in changed:
        if rid not in present:
            index.remove(rid)
    for row in rows:
        index.add(row)
    index.seq = head


def _settle() -> None:
    """One full collection, then every object the process holds is frozen (:func:`gc.freeze`): later
    collections walk only objects made since. The index and what the process held until it was built are
    long-lived; what is freed later is still freed by reference counting (only a reference cycle among the
    frozen objects is kept, and the collection before the freeze has just cleared those)."""
    import gc
    gc.collect()
    gc.freeze()


def _acquire(lock: threading.Lock) -> bool:
    """Take a realm index's ``lock`` for a search: without a time budget, wait as long as it takes;
    under one (:mod:`meta_memory.deadline`), wait at most :data:`LOCK_WAIT_SHARE` of what is left of it
    and answer ``False`` past that (the caller asks the database, which stops at the deadline)."""
    left_ms = deadline.remaining_ms()
    if left_ms is None:
        return lock.acquire()
    return lock.acquire(timeout=left_ms * LOCK_WAIT_SHARE / 1000)


def _summed(parts: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """``(slots, sums)``: each slot of the ``parts`` (``(slots, values)`` pairs, each part's slots ascending and
    distinct) once, ascending, with its values summed in the parts' order (as ``np.bincount`` over their
    concatenation adds them). The parts are merged by a stable sort (runs already in order: far cheaper than
    ``np.unique``'s sort of the whole)."""
    import numpy as np
    if len(parts) == 1:
        return parts[0][0], parts[0][1].astype(np.float64)
    every = np.concatenate([slots for slots, _ in parts])
    order = np.argsort(every, kind="stable")
    every = every[order]
    first = np.empty(len(every), dtype=bool)
    if len(every):
        first[0] = True
        np.not_equal(every[1:], every[:-1], out=first[1:])
    group = np.cumsum(first) - 1
    values = np.concatenate([values for _, values in parts])[order]
    return every[first], np.bincount(group, weights=values, minlength=int(group[-1]) + 1 if len(group) else 0)


def _distinct(values: np.ndarray) -> np.ndarray:
    """``values`` sorted, each once (``np.unique`` of a short array, without its hashing set-up)."""
    import numpy as np
    values = np.sort(values)
    if len(values) < 2:
        return values
    keep = np.empty(len(values), dtype=bool)
    keep[0] = True
    np.not_equal(values[1:], values[:-1], out=keep[1:])
    return values[keep]


def bm25_top(acc: np.ndarray, rids: np.ndarray, limit: int) -> list[tuple[int, float]]:
    """``(rid, -acc)`` of the ``limit`` largest positive ``acc`` entries, ties by ``rid`` ascending."""
    import numpy as np
    cand = np.flatnonzero(acc > 0.0)
    if len(cand) > limit:
        values = acc[cand]
        kth = np.partition(values, len(values) - limit)[len(values) - limit]
        cand = cand[values >= kth]  # every tie at the boundary, ordered below
    order = np.lexsort((rids[cand], -acc[cand]))[:limit]
    picked = cand[order]
    return list(zip(rids[picked].tolist(), (-1.0 * acc[picked]).tolist()))


class LexicalIndexes:
    """The in-process indexes of a store's realms, bounded by ``max_bytes`` (LRU across realms).

    Args:
        snapshot: ``snapshot(realm)`` opens a read transaction on the realm's database (a
            context manager yielding a ``sqlite3`` connection); used to build indexes.
        max_bytes: memory budget of every realm's index together; ``0`` turns the index off.
        background: build cold realms on a worker thread (``False``: only :meth:`warm` builds).
        min_rows: realms with a shorter change log than this are left to FTS5 (:data:`MIN_ROWS`).
        on_built: called with a realm's name and its live rows on the building thread once its index is
            built, before it answers (the store keeps a realm that fits its record-view cache resident then);
            what it raises is logged, never the build's failure.
    """

    def __init__(self, snapshot: Snapshot, *, max_bytes: int = DEFAULT_MAX_BYTES, background: bool = True,
                 min_rows: int = MIN_ROWS, on_built: Callable[[str, int], None] | None = None) -> None:
        if max_bytes < 0 or min_rows < 0:
            raise ValueError("max_bytes and min_rows must be >= 0")
        self.snapshot = snapshot
        self.max_bytes = max_bytes
        self.background = background
        self.min_rows = min_rows
        self.on_built = on_built
        self._lock = threading.Lock()
        self._ready: OrderedDict[str, _RealmIndex] = OrderedDict()  # least recently searched first
        self._pending: set[str] = set()
        self._refused: dict[str, float] = {}
        self._drops: dict[str, int] = {}  # per realm: how many times it was dropped (a build begun before is void)
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._worker: threading.Thread | None = None
        self._closed = False
        self._answering = 0  # recalls being answered by FTS5 now (a build pauses meanwhile)
        self._build_started = time.monotonic()  # the running build's start and time paused (one worker builds)
        self._build_paused = 0.0
        #: builds finished, refused for their size, and realms evicted, since start (``stats``)
        self.builds = 0
        self.refusals = 0
        self.evictions = 0

    @contextlib.contextmanager
    def answering(self) -> Iterator[None]:
        """Mark a recall being answered by FTS5 (the caller's ``with`` block): a build on the worker pauses
        while any is (at most :data:`PAUSE_MAX_S` at a time), so that recall keeps its time budget."""
        with self._lock:
            self._answering += 1
        try:
            yield
        finally:
            with self._lock:
                self._answering -= 1

    def _pause(self) -> None:
        """Wait while a recall is being answered by FTS5, at most :data:`PAUSE_MAX_S`, and only while the running
        build's pauses stay within :data:`PAUSE_CREDIT_S` plus :data:`PAUSE_SHARE` of its time so far."""
        if self._answering <= 0:
            return
        now = time.monotonic()
        allowed = PAUSE_CREDIT_S + PAUSE_SHARE * (now - self._build_started) - self._build_paused
        end = now + min(PAUSE_MAX_S, allowed)
        while self._answering > 0 and time.monotonic() < end:
            time.sleep(0.002)
        self._build_paused += time.monotonic() - now

    # ------------------------------------------------------------------ state

    def ready(self, realm: str) -> bool:
        """Whether ``realm`` is answered from memory now."""
        with self._lock:
            return realm in self._ready

    def position(self, realm: str) -> int | None:
        """The change-log position ``realm``'s index reflects (``None`` without an index)."""
        with self._lock:
            index = self._ready.get(realm)
        return None if index is None else index.seq

    def nbytes(self) -> int:
        """Estimated memory of every realm's index, in bytes (at most ``max_bytes``)."""
        with self._lock:
            return sum(ix.nbytes() for ix in self._ready.values())

    def stats(self) -> dict[str, int]:
        """``{bytes, limit_bytes, realms, builds, refusals, evictions}``: the indexes' estimated memory and
        budget (bytes), the realms answered from memory now, and builds kept, refused for their size and
        realms evicted since start."""
        with self._lock:
            return {"bytes": sum(ix.nbytes() for ix in self._ready.values()), "limit_bytes": self.max_bytes,
                    "realms": len(self._ready), "builds": self.builds, "refusals": self.refusals,
                    "evictions": self.evictions}

    @property
    def died(self) -> bool:
        """True when the builder thread ended although the indexes were not closed (``/v1/ready`` reports it)."""
        worker = self._worker
        return worker is not None and not worker.is_alive() and not self._closed

    def drop(self, realm: str) -> None:
        """Forget ``realm``'s index (after an erase: its terms leave memory too); rebuilt on demand."""
        with self._lock:
            self._ready.pop(realm, None)
            self._drops[realm] = self._drops.get(realm, 0) + 1

    def close(self) -> None:
        """Stop the worker and drop every index."""
        with self._lock:
            self._closed = True
            self._ready.clear()
            worker, self._worker = self._worker, None
        if worker is not None:
            self._queue.put(None)
            worker.join(timeout=10)

    # ------------------------------------------------------------------ search

    def search(self, conn: Any, realm: str, scope: tuple[str, str], match: str, limit: int,
               only: Collection[int] | None = None,
               snapshot: object = None) -> tuple[list[tuple[int, float]], TermColumns] | None:
        """The scope's best ``limit`` ``(rid, bm25)`` for ``match``, best first, with their term table, or
        ``None``: ask FTS5. The table's column ``c`` is hit ``c``'s ``term -> columns holding it`` (bit ``i``
        = ``fts.COLUMNS[i]``) for the query's terms (:meth:`_RealmIndex.term_columns`,
        :mod:`meta_memory.recall.term_columns`). ``only``: the best among those rids alone (a filtered
        recall).

        ``conn`` is the caller's open read transaction on ``realm`` (the index catches up to its
        snapshot first; ``snapshot``, when not ``None``, is an object naming that transaction: an index
        caught up to it once is not asked again, its head only moves forward). ``None`` when the index
        is off, the realm is cold (a build is started), being rebuilt, too large for the budget, small
        (under ``min_rows``: no build is started), or ``match`` is not plain quoted terms
        (:func:`meta_memory.recall.fts.match_terms`). Raises what ``conn`` raises (``sqlite3.Error``,
        e.g. when the time budget stops a statement); the index is left unchanged then.
        """
        if self.max_bytes == 0:
            return None
        terms = fts.match_terms(match)
        if terms is None:
            return None
        with self._lock:
            index = self._ready.get(realm)
            if index is not None:
                self._ready.move_to_end(realm)
        if index is None:
            if int(conn.execute(_HEAD).fetchone()[0]) >= self.min_rows:
                self._schedule(realm)
            return None
        if not _acquire(index.lock):
            return None  # busy past this recall's share of its budget: FTS5 answers
        try:
            if not self._catch_up(conn, realm, index, snapshot):
                return None
            hits = index.top(scope, terms, limit, only)
            table = index.term_columns(terms, [rid for rid, _ in hits])
        finally:
            index.lock.release()
        self._fit(realm)
        return hits, table

    def neighbours(self, conn: Any, realm: str, scope: tuple[str, str], anchors: Sequence[int], span: int,
                   window_ms: int, snapshot: object = None) -> dict[int, list[int]] | None:
        """Per anchor rid, the rids of ``scope``'s rows written just before and after it (see
        :meth:`_RealmIndex.neighbours`: ``span`` per side in write order within ``window_ms``, nearest
        first, alternating sides), from memory; ``None`` (ask the database) when the realm is not
        answered from memory now or an anchor is not indexed in ``conn``'s snapshot. Raises what
        ``conn`` raises. ``snapshot``: as for :meth:`search`."""
        if self.max_bytes == 0:
            return None
        with self._lock:
            index = self._ready.get(realm)
        if index is None:
            return None
        out: dict[int, list[int]] = {}
        if not _acquire(index.lock):
            return None  # busy past this recall's share of its budget: the database answers
        try:
            if not self._catch_up(conn, realm, index, snapshot):
                return None
            for rid in anchors:
                found = index.neighbours(scope, rid, span, window_ms)
                if found is None:
                    return None
                out[rid] = found
        finally:
            index.lock.release()
        return out

    def _catch_up(self, conn: Any, realm: str, index: _RealmIndex, snapshot: object = None) -> bool:
        """Bring ``index`` to ``conn``'s snapshot (caller holds ``index.lock``); ``False`` when more than
        :data:`CATCH_UP_LIMIT` rows changed: the worker catches up meanwhile (the caller asks FTS5).
        ``snapshot`` (not ``None``): the transaction's name; the index already caught up to it is not
        asked again."""
        if snapshot is not None and index.caught_up_to is snapshot:
            return True
        found = _changes(conn, index.seq, CATCH_UP_LIMIT, index.runs is not None)
        if found is None:
            self._schedule(realm, force=True)
            return False
        _apply(index, *found)
        index.caught_up_to = snapshot
        if index.needs_rebuild() or (index.runs is not None and index.runs.due()):
            self._schedule(realm, force=True)  # still exact; a rebuild drops the removed rows' postings, the worker
            # merges the runs of the rows added since the last merge
        return True

    # ------------------------------------------------------------------ building

    def warm(self, realm: str) -> bool:
        """Build ``realm``'s index now, in this thread; ``True`` when it is ready afterwards."""
        if self.max_bytes == 0:
            return False
        self._build(realm)
        return self.ready(realm)

    def _schedule(self, realm: str, *, force: bool = False) -> None:
        if not self.background:
            return
        with self._lock:
            if self._closed or realm in self._pending:
                return
            if not force and realm in self._ready:
                return
            refused_at = self._refused.get(realm)
            if refused_at is not None and time.monotonic() - refused_at < RETRY_REFUSED_S:
                return
            self._pending.add(realm)
            if self._worker is None:
                self._worker = threading.Thread(target=self._run, name="recall-index", daemon=True)
                self._worker.start()
        self._queue.put(realm)

    def _run(self) -> None:
        while True:
            realm = self._queue.get()
            if realm is None:
                return
            try:
                self._refresh(realm)
            except Exception as exc:  # a failed build leaves the realm on FTS5; the next search retries
                _log.warning("recall index of realm %s not built: %s", realm, exc)
            finally:
                with self._lock:
                    self._pending.discard(realm)

    def _refresh(self, realm: str) -> None:
        """The worker's job for ``realm``: catch its index up (reading outside the index's lock, so
        searches go on meanwhile), or build it when it has none or holds many removed rows."""
        with self._lock:
            index = self._ready.get(realm)
        if index is None or index.needs_rebuild():
            self._build(realm)
            return
        seq = index.seq
        with self.snapshot(realm) as conn:
            found = _changes(conn, seq, None, index.runs is not None)
        assert found is not None
        with index.lock:
            if index.seq == seq:
                _apply(index, *found)
            if index.runs is not None and index.runs.due():
                index.runs.merge()
        self._fit(realm)

    def _build(self, realm: str) -> None:
        with self._lock:
            drops = self._drops.get(realm, 0)
        started = time.monotonic()
        self._build_started, self._build_paused = started, 0.0
        with self.snapshot(realm) as conn:
            seq = int(conn.execute(_HEAD).fetchone()[0])
            # a realm whose change log is longer than the runs' bound is read without the records' texts
            index = _RealmIndex.build(seq, conn.execute(_all_rows(seq <= RUNS_MAX_ROWS)), self.max_bytes, self._pause)
        # the scores searches would compute on first meeting a term, now, while FTS5 still answers
        prepared = 0 if index is None else index.prepare(int(self.max_bytes * PREPARE_SHARE), self._pause)
        if index is not None:  # a share of the budget, never past what the built index leaves of it
            index.dense_limit = max(0, min(int(self.max_bytes * DENSE_SHARE), self.max_bytes - index.nbytes()))
            index.prepare_dense(self._pause)
        if index is not None and self.on_built is not None:  # before the index answers, as the scores above
            try:
                self.on_built(realm, index.live)
            except Exception as exc:  # the index answers either way; recalls read what was not kept
                _log.warning("recall index of realm %s: keeping its rows resident failed: %s", realm, exc)
        with self._lock:
            if self._closed or self._drops.get(realm, 0) != drops:  # closed, or erased meanwhile: not kept
                return
            if index is None:
                self._ready.pop(realm, None)
                self._refused[realm] = time.monotonic()
                self.refusals += 1
                _log.info("recall index of realm %s refused: over the %d-byte budget; FTS5 serves it", realm,
                          self.max_bytes)
                return
            self._refused.pop(realm, None)
            self._ready[realm] = index
            self.builds += 1
            self._ready.move_to_end(realm)
        if _SETTLE and index.live >= SETTLE_MIN_ROWS:
            _settle()
        _log.info("recall index of realm %s ready: %d rows, %d postings (%d scored ahead), %d bytes of the %d-byte "
                  "budget, built in %.1f s", realm, index.live, index.n_postings, prepared, index.nbytes(), self.max_bytes,
                  time.monotonic() - started)
        self._fit(realm)

    def _fit(self, keep: str) -> None:
        """Evict least recently searched realms (never ``keep``) until the budget holds."""
        with self._lock:
            total = sum(ix.nbytes() for ix in self._ready.values())
            for name in list(self._ready):
                if total <= self.max_bytes:
                    break
                if name == keep:
                    continue
                total -= self._ready.pop(name).nbytes()
                self._refused[name] = time.monotonic()  # not rebuilt at once: see RETRY_REFUSED_S
                self.evictions += 1
            if total > self.max_bytes and self._ready.pop(keep, None) is not None:
                self._refused[keep] = time.monotonic()
