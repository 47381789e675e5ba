"""What a recall costs around its ranking: the thread CPU of ``meta/agent_memory/recall`` through the embedded SDK
with the provider's ranking replaced by the answer it gave to the same query.

One process: the synthetic records of ``benchmarks/recall.py`` written into one identity (as
``benchmarks/recall_vs_bm25.py`` does), the recall index built, every query recalled once with the configured
provider while its answers are captured, then the timed passes with a provider that hands back the captured
answer at once. What is timed is then everything a recall runs but the ranking: the SDK's call caps, the method
table (params, access, metrics, the answer held to its result model), the time box, the read transaction, the
runtime's re-check of the records the provider returned (its read of them, the scope guard), the wire records and
the usage marks' queueing. Reported: the median over ``--passes`` passes of each pass's p50 (and the best pass's),
in microseconds of the calling thread's CPU time (``time.thread_time``).

Run: ``python benchmarks/recall_overhead.py [--records 3000] [--queries 300] [--seed 7] [--passes 7]``
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from meta_memory.sdk import Meta  # noqa: E402
from recall import Vocabulary, make_queries, make_records  # noqa: E402
from recall_vs_bm25 import IDENTITY, load_ours, wait_for_index  # noqa: E402


class _Captured:
    """The configured provider, its answers kept by query text; ``replay`` then hands them back unranked."""

    stops_at_deadline = True  # as the lexical provider: the recall runs on the calling thread

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.answers: dict[str | None, Any] = {}
        self.replay = False

    def recall(self, request: Any, reader: Any) -> Any:
        if self.replay:
            return self.answers[request.query_text]
        out = self.inner.recall(request, reader)
        self.answers[request.query_text] = out
        return out


def run(n_records: int, n_queries: int, seed: int, passes: int) -> dict[str, float]:
    vocab = Vocabulary(random.Random(seed))
    records = make_records(n_records, vocab)
    queries = make_queries(n_queries, vocab)
    with tempfile.TemporaryDirectory(prefix="recall-overhead-") as tmp:
        with Meta.builder().persistent_state(Path(tmp) / "state").agent_memory(recall_timeout_ms=30_000).build() as handle:
            load_ours(handle, records)

            def ours(q: str) -> Any:
                return handle.call("meta/agent_memory/recall", {"identity": IDENTITY, "query_text": q, "max_entries": 8})

            ours(queries[0])  # starts the recall index's background build
            wait_for_index(handle)
            service = handle.runtime.agent_memory.service
            captured = _Captured(service.provider)
            service.provider = captured
            for q in queries:
                ours(q)
            captured.replay = True
            for q in queries:  # a warm pass
                ours(q)
            p50s: list[float] = []
            for _ in range(passes):
                cpu: list[float] = []
                for q in queries:
                    c0 = time.thread_time()
                    ours(q)
                    cpu.append((time.thread_time() - c0) * 1e6)
                p50s.append(statistics.median(cpu))
    return {"median_p50_us": statistics.median(p50s), "best_p50_us": min(p50s)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=3000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--passes", type=int, default=7)
    args = parser.parse_args(argv)
    if args.records < 1 or args.queries < 1 or args.passes < 1:
        parser.error("--records, --queries and --passes must be at least 1")
    r = run(args.records, args.queries, args.seed, args.passes)
    print(f"a recall around its ranking ({args.records} records, {args.queries} queries, {args.passes} passes): "
          f"thread CPU p50 {r['median_p50_us']:.1f} us (median of the passes), {r['best_p50_us']:.1f} us (best)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
