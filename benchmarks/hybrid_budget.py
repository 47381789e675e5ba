"""Explicit hybrid recall against its time budget, with the bundled model, on the machine as it is.

One identity holds the turns of the first LoCoMo conversations (``--records``); once the background indexer
has embedded them, each LoCoMo question of those conversations is asked once through the agent-memory
service (``meta/agent_memory/recall``'s code path, with the time box) under ``recall_timeout_ms``
(``--budget-ms``, default 500). Every question is a new query (no cached query vector). The report counts
answers fused with the embedding, answers degraded to the lexical ranking (per ``degraded_reason``) and
failures (per error), with the latency p50 / p99 / max. Run it while the machine is loaded to see the
budget at work: ``python benchmarks/hybrid_budget.py --data locomo-dev.json``.
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import locomo_recall as lr  # noqa: E402
from _common import percentile  # noqa: E402
from meta_memory.config import parse_config  # noqa: E402
from meta_memory.errors import MetaError  # noqa: E402
from meta_memory.runtime import Runtime  # noqa: E402

ID = "bench:hybrid"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    lr.add_data_argument(parser)
    parser.add_argument("--records", type=int, default=1200, help="turns stored (whole conversations, in order)")
    parser.add_argument("--budget-ms", type=int, default=500)
    parser.add_argument("--provider", choices=("hybrid", "lexical"), default="hybrid",
                        help="lexical: the same recalls without the dense side (what the lexical side alone meets)")
    parser.add_argument("--max-pending", type=int, default=None,
                        help="hybrid: HybridConfig.max_pending_embeddings (default: the shipped value)")
    args = parser.parse_args(argv)
    args.data = lr.data_path(parser, args)
    corpus = lr.load(args.data)
    conversations: list[str] = []
    kept = []
    for rec in corpus.records:
        if rec.scope_key not in conversations:
            if len(kept) >= args.records:
                break
            conversations.append(rec.scope_key)
        kept.append(rec)
    questions = [q for q in corpus.questions if q.identity in conversations]
    cfg = parse_config({"agent_memory": {"recall_provider": args.provider, "recall_timeout_ms": args.budget_ms}})
    with tempfile.TemporaryDirectory() as state, Runtime(cfg, Path(state)) as rt:
        service = rt.agent_memory.service
        if args.max_pending is not None:
            import dataclasses

            provider = service.provider
            provider.config = dataclasses.replace(provider.config, max_pending_embeddings=args.max_pending)
        for start in range(0, len(kept), 500):
            service.remember_batch("default", ID, [(r.title or "turn", r.body, list(r.tags), None, None)
                                                   for r in kept[start:start + 500]])
        t0 = time.perf_counter()
        while rt.agent_memory.recall.backlog()["pending"]:
            time.sleep(0.5)
        print(f"{len(kept)} records of {len(conversations)} conversations embedded in"
              f" {time.perf_counter() - t0:.0f} s; {len(questions)} questions, budget {args.budget_ms} ms")
        outcomes: collections.Counter[str] = collections.Counter()
        latencies: list[float] = []
        for q in questions:
            t0 = time.perf_counter()
            try:
                out = service.recall("default", ID, selection=None, query_text=q.text, query_terms=None,
                                     max_entries=8)
                reason = out.get("degraded_reason")
                outcomes["degraded: " + reason if reason else "fused"] += 1
            except MetaError as exc:
                outcomes[f"failed: {exc}"] += 1
            latencies.append((time.perf_counter() - t0) * 1000)
        for name, n in sorted(outcomes.items()):
            print(f"  {name:<48}{n:>6}  ({n / len(questions):.1%})")
        print(f"  latency p50 {percentile(latencies, 50):.0f} ms, p99 {percentile(latencies, 99):.0f} ms,"
              f" max {max(latencies):.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
