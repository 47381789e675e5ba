"""Score-level fusion against the hybrid provider's re-ranking fusion on LoCoMo, leave-one-conversation-out.

The hybrid provider fuses by re-ranking (``HybridConfig(fusion="rerank")``: the lexical score over the best
lexical score plus ``0.4 x cosine``, and dense-only candidates at ``0.5 + 0.4 x cosine``). The alternative
measured here is a weighted sum of min-max normalised scores (``fusion="weighted"``:
``(1 - w) x lexical + w x cosine``). Its one parameter ``w`` is chosen leave-one-conversation-out: for each
conversation, the ``w`` of the grid with the best mean recall@8 on the *other* conversations, scored on the
held-out one. The report gives each fold, the fold mean and the spread (standard deviation, worst fold)
for the chosen weighted fusion, the re-ranking fusion and lexical recall, all on the same folds.

Run (semantic extra installed): ``python benchmarks/locomo_fusion.py --data locomo-dev.json``.
Every record and question is embedded once (the queries are memoised), and every lexical ranking is
computed once and shared by the grid, so the grid costs only the fusion itself.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import locomo_recall as lr  # noqa: E402
from _store import StoreCorpus  # noqa: E402
from meta_memory.recall.lexical import LexicalRecallProvider  # noqa: E402
from meta_memory.recall.provider import RecallOutcome, RecallRequest  # noqa: E402

#: The weights of the grid (dense share of the weighted sum).
GRID = tuple(round(0.1 * i, 1) for i in range(11))
K = 8


class MemoEmbedder:
    """An embedder that remembers single-text (query) embeddings; batches (records) pass through."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.model_id, self.dim = inner.model_id, inner.dim
        self._memo: dict[str, list[float]] = {}

    @property
    def ready(self) -> bool:
        return bool(self.inner.ready)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if len(texts) != 1:
            return self.inner.embed(texts)
        text = texts[0]
        if text not in self._memo:
            self._memo[text] = self.inner.embed([text])[0]
        return [self._memo[text]]


class MemoLexical:
    """The lexical provider, each ranking computed once per (identity, query, size)."""

    def __init__(self, inner: LexicalRecallProvider) -> None:
        self.inner = inner
        self._memo: dict[tuple[Any, ...], RecallOutcome[Any]] = {}

    def recall(self, request: RecallRequest, reader: Any) -> RecallOutcome[Any]:
        key = (request.identity, request.query_text, request.query_terms, request.selection, request.max_entries)
        if key not in self._memo:
            self._memo[key] = self.inner.recall(request, reader)
        return self._memo[key]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    lr.add_data_argument(parser)
    args = parser.parse_args(argv)
    args.data = lr.data_path(parser, args)
    from meta_memory.recall.semantic.hybrid import HybridConfig, HybridRecallProvider
    from meta_memory.recall.semantic.model import MiniLMEmbedder

    corpus = lr.load(args.data)
    index = StoreCorpus()
    index.add_many(corpus.records)
    index.warm()
    embedder = MemoEmbedder(MiniLMEmbedder())
    t0 = time.perf_counter()
    n = index.fill_vectors(embedder)
    print(f"LoCoMo: {len(corpus.records)} turns, {len(corpus.questions)} questions; embedded {n} records"
          f" in {time.perf_counter() - t0:.0f} s")
    lexical = MemoLexical(LexicalRecallProvider())

    def folds_of(cfg: HybridConfig | None) -> dict[str, lr.Result]:
        if cfg is None:
            ranker = lr.provider_ranker(index, lexical)
        else:
            ranker = lr.provider_ranker(index, HybridRecallProvider(embedder, cfg, lexical=lexical))  # type: ignore[arg-type]
        return lr.evaluate_folds("", ranker, corpus.questions)[1]

    t0 = time.perf_counter()
    lexical_folds = folds_of(None)
    rerank_folds = folds_of(HybridConfig())
    grid = [folds_of(HybridConfig(fusion="weighted", fusion_weight=w)) for w in GRID]
    print(f"grid: {len(GRID)} weights x {len(rerank_folds)} folds ({time.perf_counter() - t0:.0f} s)")
    choice = lr.choose_per_fold([{f: r.recall(K) for f, r in folds.items()} for folds in grid])
    held_out = {fold: grid[i][fold] for fold, i in choice.items() if fold != lr.ALL_FOLDS}
    print()
    print(f"recall@{K} of every grid point, per fold (the weighted sum; w = dense share)")
    print(f"{'w':>5} " + "".join(f"{f:>10}" for f in rerank_folds) + f"{'mean':>10}")
    for w, folds in zip(GRID, grid):
        scores = [folds[f].recall(K) for f in rerank_folds]
        print(f"{w:>5} " + "".join(f"{s:>10.3f}" for s in scores) + f"{statistics.fmean(scores):>10.3f}")
    print()
    print(f"held-out recall@{K} per fold (weighted: w chosen on the other folds)")
    print(f"{'fold':<10}{'n':>5}{'lexical':>10}{'rerank':>10}{'weighted':>10}{'w':>6}")
    for fold in rerank_folds:
        n_q = sum(held_out[fold].totals.values())
        print(f"{fold:<10}{n_q:>5}{lexical_folds[fold].recall(K):>10.3f}{rerank_folds[fold].recall(K):>10.3f}"
              f"{held_out[fold].recall(K):>10.3f}{GRID[choice[fold]]:>6}")
    for name, folds in (("lexical", lexical_folds), ("rerank (shipped)", rerank_folds), ("weighted (LOCO)", held_out)):
        for k in (1, K, 10):
            scores = [folds[f].recall(k) for f in rerank_folds]
            print(f"{name:<18} R@{k:<3} fold mean {statistics.fmean(scores):.3f}  sd {statistics.stdev(scores):.3f}"
                  f"  worst {min(scores):.3f}  best {max(scores):.3f}")
    diffs = [held_out[f].recall(K) - rerank_folds[f].recall(K) for f in rerank_folds]
    print(f"weighted - rerank, R@{K} per fold: " + ", ".join(f"{d:+.3f}" for d in diffs)
          + f"; mean {statistics.fmean(diffs):+.3f}; folds better {sum(d > 0 for d in diffs)}/{len(diffs)}")
    print(f"w chosen on all folds: {GRID[choice[lr.ALL_FOLDS]]}")
    index.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
