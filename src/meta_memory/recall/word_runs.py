"""Which rows' titles and bodies hold a long query term inside a word, without reading their texts.

The substring rule of re-ranking (:func:`meta_memory.recall.lexical.term_points`) gives a point when a field's
normalised text (:func:`meta_memory.recall.text.normalize`) holds a term of at least
:data:`~meta_memory.recall.lexical.SUBSTRING_MIN_CHARS` characters that the field does not hold as a word. A term
made of word characters alone (:func:`meta_memory.recall.text.is_word_run`) lies, wherever a text holds it, inside
one of the text's maximal runs of word characters (:func:`meta_memory.recall.text.word_runs`). So a realm's
distinct runs of at least that many characters (its *run vocabulary*), each row's runs per field, and a map from
each three characters to the runs holding them answer "does this field of this row hold the term" for a search's
candidates in a few array operations: the runs holding the term are found through its rarest three characters,
then the candidates' runs are looked up at once.

Kept by :class:`meta_memory.recall.lexical_index._RealmIndex` beside its postings, one :class:`WordRuns` per
realm, slot by slot (a slot is one version of one row: its runs never change; a removed row's slot is never a
candidate again). Its memory is counted in the index's (:meth:`WordRuns.nbytes`). The runs found for a term are
kept (:data:`MATCHES_KEPT` terms at most) until a run new to the realm is added, the only change that can make a
term held by a run it was not held by before.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from meta_memory.recall.text import word_runs

if TYPE_CHECKING:  # numpy is imported by the index that keeps the runs
    import numpy as np

__all__ = ["WordRuns", "MIN_RUN_CHARS", "MAX_TERMS", "MATCHES_KEPT", "RUN_BYTES", "SLOT_BYTES", "GRAM_BYTES"]

#: Runs shorter than this hold no term the substring rule applies to (its
#: :data:`~meta_memory.recall.lexical.SUBSTRING_MIN_CHARS`), so they are not kept.
MIN_RUN_CHARS = 5
#: The most terms one look-up answers (two bits a term, title and body, in one 64-bit word per candidate).
MAX_TERMS = 32
#: Slots waiting in arrays of their own from which :meth:`WordRuns.due` asks for a merge into the flat array (a copy
#: of the whole, which the index's worker makes, off the recalls' path; a build merges once, at its end).
TAIL_ROWS = 256
#: The most terms whose runs are kept between look-ups.
MATCHES_KEPT = 4096
#: Measured memory (CPython 3.11, numpy 2) of one run beyond its characters: its dict entry and key string, its
#: place in the runs list, its int, and its two entries of the look-up's scratch array.
RUN_BYTES = 200
#: Measured memory of one slot waiting in its own array (:data:`TAIL_ROWS`), beyond its runs' 8 bytes each: the
#: array's header and list entry (a merged slot costs 8 bytes beyond its runs').
SLOT_BYTES = 120
#: Measured memory of one three-character key beyond its runs' 8 bytes each: dict entry, key string, list header.
GRAM_BYTES = 180
#: Memory of one kept term's runs beyond 8 bytes a run: dict entry, key string, list header.
MATCH_BYTES = 200

_TITLE, _BODY = 0, 1


class WordRuns:
    """The run vocabulary of one realm's rows, slot by slot (see the module doc). Not thread-safe: the index's
    lock is held by its callers."""

    def __init__(self) -> None:
        import numpy as np
        self._ids: dict[str, int] = {}  # run -> its number
        self._runs: list[str] = []  # number -> run
        self._grams: dict[str, list[int]] = {}  # three characters -> the numbers of the runs holding them
        # slot -> its runs' codes (2 * number + field), ascending: the first ``merged`` slots' in ``_flat`` (slot
        # ``s``'s at ``_start[s]:_start[s + 1]``), the later ones' in ``_tail``, one array each
        self._flat = np.zeros(0, dtype=np.intp)  # (an index array of numpy's own type: no conversion to gather by it)
        self._start = np.zeros(1, dtype=np.int64)
        self._tail: list[np.ndarray] = []
        self.merged = 0
        self._matches: dict[str, list[int]] = {}  # term -> the numbers of the runs holding it (kept)
        self._scratch = np.zeros(0, dtype=np.uint64)  # code -> the bits of the terms its run holds, while looking up
        self.codes = 0  # codes held over every slot
        self.chars = 0  # characters of the runs and the keys
        self.gram_entries = 0
        self.match_entries = 0

    def __len__(self) -> int:
        """Slots added."""
        return self.merged + len(self._tail)

    def add(self, slot: int, title: str, body: str) -> None:
        """Note the runs of slot ``slot``'s normalised title and body (``slot`` is the next one: ``len(self)``)."""
        import numpy as np
        if slot != len(self):
            raise ValueError(f"slot {slot} added out of order (next is {len(self)})")
        codes: set[int] = set()
        for field, text in ((_TITLE, title), (_BODY, body)):
            for run in word_runs(text):
                if len(run) < MIN_RUN_CHARS:
                    continue
                number = self._ids.get(run)
                if number is None:
                    number = self._new_run(run)
                codes.add(2 * number + field)
        self._tail.append(np.array(sorted(codes), dtype=np.intp))
        self.codes += len(codes)

    def due(self) -> bool:
        """Whether :data:`TAIL_ROWS` slots or more wait outside the flat array (:meth:`merge`)."""
        return len(self._tail) >= TAIL_ROWS

    def merge(self) -> None:
        """Move the waiting slots' codes into the flat array (a copy of it: the caller chooses when)."""
        import numpy as np
        tail = self._tail
        if not tail:
            return
        sizes = np.fromiter(map(len, tail), dtype=np.int64, count=len(tail))
        self._start = np.concatenate([self._start, self._start[-1] + np.cumsum(sizes)])
        self._flat = np.concatenate([self._flat, *tail])
        self.merged += len(tail)
        self._tail = []

    def _new_run(self, run: str) -> int:
        number = self._ids[run] = len(self._runs)
        self._runs.append(run)
        self.chars += len(run)
        for gram in {run[k:k + 3] for k in range(len(run) - 2)}:
            held = self._grams.get(gram)
            if held is None:
                held = self._grams[gram] = []
                self.chars += len(gram)
            held.append(number)
            self.gram_entries += 1
        if self._matches:  # a new run may hold a kept term
            self._matches = {}
            self.match_entries = 0
        return number

    def _holding(self, term: str) -> list[int]:
        """The numbers of the runs holding ``term`` (at least :data:`MIN_RUN_CHARS` characters)."""
        kept = self._matches.get(term)
        if kept is not None:
            return kept
        rarest: list[int] | None = None
        for k in range(len(term) - 2):
            held = self._grams.get(term[k:k + 3])
            if held is None:
                rarest = []
                break
            if rarest is None or len(held) < len(rarest):
                rarest = held
        runs = self._runs
        found = [number for number in rarest or () if term in runs[number]]
        if len(self._matches) >= MATCHES_KEPT:
            self._matches = {}
            self.match_entries = 0
        self._matches[term] = found
        self.match_entries += len(found)
        return found

    def inside(self, terms: Sequence[str], slots: np.ndarray) -> np.ndarray:
        """``out[t, c]``: whether the title (bit 0) and the body (bit 1) of slot ``slots[c]`` hold ``terms[t]``
        (each of word characters alone and at least :data:`MIN_RUN_CHARS` long, at most :data:`MAX_TERMS` of them;
        ``ValueError`` otherwise) as a substring of their normalised text; ``uint8``, shape
        ``(len(terms), len(slots))``."""
        import numpy as np
        if len(terms) > MAX_TERMS:
            raise ValueError(f"at most {MAX_TERMS} terms a look-up")
        out = np.zeros((len(terms), len(slots)), dtype=np.uint8)
        touched: dict[int, int] = {}  # run number -> bit 2t for each term t it holds
        for t, term in enumerate(terms):
            if len(term) < MIN_RUN_CHARS:
                raise ValueError(f"term {term!r} shorter than {MIN_RUN_CHARS} characters")
            for number in self._holding(term):
                touched[number] = touched.get(number, 0) | (1 << 2 * t)
        if not touched or not len(slots):
            return out
        if len(self._scratch) < 2 * len(self._runs):
            self._scratch = np.zeros(2 * len(self._runs), dtype=np.uint64)
        scratch = self._scratch
        for number, value in touched.items():  # a run in a title gives its terms' bit 2t, in a body bit 2t + 1
            scratch[2 * number] = value
            scratch[2 * number + 1] = value << 1
        try:
            merged = self.merged
            waiting: list[tuple[int, int]] = []  # slots added since the last merge: looked up one by one below
            if self._tail and int(slots.max()) >= merged:
                waiting = [(c, s) for c, s in enumerate(slots.tolist()) if s >= merged]
                slots = np.minimum(slots, merged - 1)
            if merged:
                first = self._start[slots]
                counts = self._start[slots + 1] - first
                ends = np.cumsum(counts)
                starts = ends - counts  # where each slot's codes begin among the gathered ones
                total = int(ends[-1])
                values = np.zeros(total + 1, dtype=np.uint64)  # one more: reduceat's starts are then all in range
                values[:total] = scratch[self._flat[np.repeat(first - starts, counts) + np.arange(total)]]
                held = np.bitwise_or.reduceat(values, starts)  # per slot, the bits of the terms its runs hold
                held[counts == 0] = 0  # reduceat gives an empty slot the value its start points at
            else:
                held = np.zeros(len(slots), dtype=np.uint64)
            for c, s in waiting:
                codes = self._tail[s - merged]
                held[c] = np.bitwise_or.reduce(scratch[codes]) if len(codes) else 0
        finally:
            for number in touched:
                scratch[2 * number] = 0
                scratch[2 * number + 1] = 0
        shifts = np.arange(0, 2 * len(terms), 2, dtype=np.uint64)
        out[:] = (held[None, :] >> shifts[:, None]) & np.uint64(3)
        return out

    def nbytes(self) -> int:
        """Memory held in bytes, from measured per-item costs (:data:`RUN_BYTES`, :data:`SLOT_BYTES`,
        :data:`GRAM_BYTES`, :data:`MATCH_BYTES`)."""
        return (len(self._runs) * RUN_BYTES + self.chars + self.merged * 8 + len(self._tail) * SLOT_BYTES
                + self.codes * 8 + len(self._grams) * GRAM_BYTES + self.gram_entries * 8
                + len(self._matches) * MATCH_BYTES + self.match_entries * 8)
