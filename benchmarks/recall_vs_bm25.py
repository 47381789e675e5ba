"""Recall latency of meta-memory (durable, through the method table) beside bm25s (in memory), same records.

One process, one run: the synthetic records of ``benchmarks/recall.py`` (Zipf
vocabulary, one identity) are written through ``meta/agent_memory/remember_batch``
into a fresh SQLite state directory of an embedded gateway, and indexed by
``bm25s`` (English stopwords, batch-built, not durable). The same queries are
then timed alternately, query by query:

* ``ours``  — ``meta/agent_memory/recall`` (``max_entries`` 8) through the
  embedded SDK handle, i.e. the same method table, validator, time box, store
  and usage marks a gateway call runs (no socket);
* ``bm25s`` — tokenising the query and ``BM25.retrieve(k=8)``.

Reported: p50/p99 of both and their ratios, and the p50 and p99 of the calling thread's CPU time of
both (``time.thread_time``: on a loaded machine a call's wall time includes waiting for a CPU, which
weighs on a 5 ms call more than on a 0.4 ms one) (the goals: p99 <= 3x at 100k records; at 3,000
records, p50 <= 3x and p99 <= 5x). The timed queries run with nothing of this script around the
product's functions. Then, in a second pass over the same queries, where our time goes, measured by
timing wrappers this script installs around the product's functions (nothing in product code; the
wrappers' own cost makes that pass slower, so its shares, not its totals, are the figures to read):

* ``full-text query``  — ``StoreReader.search`` (the FTS5 candidate query),
* ``neighbour reads``  — ``StoreReader.neighbours`` and ``recent`` (write-order context),
* ``re-ranking``       — the provider call and scope guard, less the two above,
* ``time-box hop``     — ``TimeBox.call`` less the provider call it ran,
* ``usage marks``      — ``store.mark_usage`` (queueing the marks; the store's background writer
  lands them, one transaction per batch, off the recall's thread),
* ``rest``             — dispatch, validation and projecting the records.

Each is given as a mean per recall in ms and as a share of ours' mean. Last, a third pass without the
wrappers, each query preceded by a ``remember`` into another identity of the same realm (the mixed workload
of agents that write between turns: a write moves the realm's generation, so the rows the store keeps decoded
are checked against the file again): ours' p50/p99 and thread CPU. The
explicit-recall time budget is raised to 30 s so slow queries are measured
rather than cut off at the default 500 ms.

Candidates come from the in-process recall index (``recall/lexical_index.py``):
the warm-up's first recall starts its background build and the timed queries
begin once it is ready (the build time is reported). ``--fts`` turns the index
off (``[agent_memory]`` budget 0 at run time), so every candidate query runs in
FTS5: the figures before the index, in the same kind of run.

``bm25s`` is a benchmark-only dependency (the ``recall-peers`` extra: ``pip install -e '.[recall-peers]'``); the package
does not need it.

``--candidate-limits 100,64,32`` times the lexical provider at each ``candidate_limit`` in the same run: each value
answers every query once untimed (so all start equally warm: the index's per-term caches are shared, and a value
asked right after another for the same query would find them warm), then ``--rounds`` (3) rounds of one timed pass
per value, ours and bm25s alternated query by query as above, the values' order rotated each round. Reported per
value: p50/p99, CPU p50/p99 and their ratios to the bm25s calls of its own passes, and how often its top 8 is the
first value's (the same records in the same order; the share of those records kept).

Run: ``python benchmarks/recall_vs_bm25.py [--records 100000] [--queries 300] [--seed 7] [--fts]
[--candidate-limits 100,64,32]``
(``--records 20000`` for a quick run; ``--records 3000`` for the small-identity figures).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import candidate_limits, percentile  # noqa: E402
from meta_memory.recall import store_reader  # noqa: E402
from meta_memory.sdk import Meta  # noqa: E402
from meta_memory.services import recall_reader  # noqa: E402
from recall import Vocabulary, make_queries, make_records  # noqa: E402

IDENTITY = "lead:bench"
OTHER = "lead:aside"
BATCH = 1000


class Clockwork:
    """Accumulates wall time per named phase while ``enabled``."""

    def __init__(self) -> None:
        self.totals: dict[str, float] = defaultdict(float)
        self.enabled = False

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            if self.enabled:
                self.totals[name] += time.perf_counter() - t0

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            with self.phase(name):
                return fn(*args, **kwargs)

        return timed


def instrument(handle: Any, clock: Clockwork) -> Callable[[], None]:
    """Install the timing wrappers (this process only; the product is not changed on disk); returns what takes
    them out again."""
    import meta_memory.services.agent_memory as service_module

    cls = store_reader.StoreReader
    service = handle.runtime.agent_memory.service
    saved = (cls.search, cls.neighbours, cls.recent, recall_reader.guarded_recall, service_module.guarded_recall,
             service.timebox.call, service.store.mark_usage)

    def undo() -> None:
        (cls.search, cls.neighbours, cls.recent, recall_reader.guarded_recall, service_module.guarded_recall,  # type: ignore[method-assign]
         service.timebox.call, service.store.mark_usage) = saved


    cls.search = clock.wrap("search", cls.search)  # type: ignore[method-assign]
    cls.neighbours = clock.wrap("neighbours", cls.neighbours)  # type: ignore[method-assign]
    cls.recent = clock.wrap("neighbours", cls.recent)  # type: ignore[method-assign]
    recall_reader.guarded_recall = clock.wrap("provider", recall_reader.guarded_recall)
    service_module.guarded_recall = recall_reader.guarded_recall
    service.timebox.call = clock.wrap("timebox", service.timebox.call)
    service.store.mark_usage = clock.wrap("usage", service.store.mark_usage)
    return undo


def load_ours(handle: Any, records: Sequence[Any]) -> tuple[float, int]:
    """Write every record through ``remember_batch``; returns (seconds, refused items)."""
    refused = 0
    t0 = time.perf_counter()
    for i in range(0, len(records), BATCH):
        items = [{"title": r.title, "body": r.body, "tags": list(r.tags)} for r in records[i:i + BATCH]]
        out = handle.call("meta/agent_memory/remember_batch", {"identity": IDENTITY, "records": items})
        refused += sum(1 for item in out["results"] if item.get("error"))
    return time.perf_counter() - t0, refused


def build_bm25(records: Sequence[Any]) -> tuple[Any, float]:
    import bm25s

    t0 = time.perf_counter()
    corpus = [f"{r.title}\n{r.body}\n{' '.join(r.tags)}" for r in records]
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(corpus, stopwords="en", show_progress=False), show_progress=False)
    return retriever, time.perf_counter() - t0


def wait_for_index(handle: Any, timeout_s: float = 600.0) -> float:
    """Seconds until the recall index of the default realm is ready (its build was started by a recall)."""
    store = handle.runtime.agent_memory.service.store
    t0 = time.perf_counter()
    while not store.lexical_index.ready(store_realm(handle)):
        if time.perf_counter() - t0 > timeout_s:
            raise SystemExit("the recall index was not ready in time")
        time.sleep(0.05)
    return time.perf_counter() - t0


def store_realm(handle: Any) -> str:
    return str(handle.runtime.config.agent_memory.realm)


def provider_arms(handle: Any, limits: Sequence[int]) -> list[tuple[int | None, Any]]:
    """``(candidate_limit, provider)`` per limit: the service's lexical provider with that one knob changed
    (``[(None, None)]``, the provider as configured, when ``limits`` is empty)."""
    if not limits:
        return [(None, None)]
    from dataclasses import replace

    from meta_memory.recall.lexical import LexicalRecallProvider

    current = handle.runtime.agent_memory.service.provider
    if not isinstance(current, LexicalRecallProvider):
        raise SystemExit(f"--candidate-limits needs the lexical provider, not {type(current).__name__}")
    return [(n, LexicalRecallProvider(replace(current.config, candidate_limit=n))) for n in limits]


def run(n_records: int, n_queries: int, seed: int, use_index: bool = True,
        limits: Sequence[int] = (), rounds: int = 3) -> dict[str, Any]:
    import bm25s

    vocab = Vocabulary(random.Random(seed))
    records = make_records(n_records, vocab)
    queries = make_queries(n_queries, vocab)
    with tempfile.TemporaryDirectory(prefix="recall-vs-bm25-") as tmp:
        # the explicit-recall time budget is raised so a slow query is measured, not cut off
        with Meta.builder().persistent_state(Path(tmp) / "state").agent_memory(recall_timeout_ms=30_000).build() as handle:
            ingest_s, refused = load_ours(handle, records)
            index = handle.runtime.agent_memory.service.store.lexical_index
            if not use_index:
                index.max_bytes = 0
            retriever, bm25_build_s = build_bm25(records)

            def ours(q: str) -> Any:
                return handle.call("meta/agent_memory/recall",
                                   {"identity": IDENTITY, "query_text": q, "max_entries": 8})

            def theirs(q: str) -> Any:
                tokens = bm25s.tokenize([q], stopwords="en", show_progress=False)
                k = min(8, len(records))
                return retriever.retrieve(tokens, k=k, show_progress=False)

            service = handle.runtime.agent_memory.service
            configured = service.provider
            arms = provider_arms(handle, limits)
            ours(queries[0])  # starts the recall index's background build
            index_build_s = wait_for_index(handle) if use_index else 0.0
            for q in queries[:20]:  # warm both the same way
                ours(q)
                theirs(q)
            if limits:  # each value answers every query once, untimed: all start from the same warm state
                for _, provider in arms:
                    service.provider = provider
                    for q in queries:
                        ours(q)
            arm_ms: list[list[float]] = [[] for _ in arms]
            arm_cpu: list[list[float]] = [[] for _ in arms]
            arm_bm25_ms: list[list[float]] = [[] for _ in arms]
            arm_bm25_cpu: list[list[float]] = [[] for _ in arms]
            answers: list[list[list[str]]] = [[] for _ in arms]  # per arm, per query: the ids returned
            for r in range(rounds if limits else 1):
                for j in range(len(arms)):  # one pass per arm, their order rotated each round
                    a = (r + j) % len(arms)
                    service.provider = arms[a][1] or configured
                    for q in queries:
                        t0, c0 = time.perf_counter(), time.thread_time()
                        out = ours(q)
                        arm_cpu[a].append((time.thread_time() - c0) * 1000)
                        arm_ms[a].append((time.perf_counter() - t0) * 1000)
                        t0, c0 = time.perf_counter(), time.thread_time()
                        theirs(q)
                        arm_bm25_cpu[a].append((time.thread_time() - c0) * 1000)
                        arm_bm25_ms[a].append((time.perf_counter() - t0) * 1000)
                        if r == 0:
                            answers[a].append([e["memory_id"] for e in out["records"]])
            service.provider = configured
            ours_ms, ours_cpu, bm25_ms, bm25_cpu = arm_ms[0], arm_cpu[0], arm_bm25_ms[0], arm_bm25_cpu[0]
            # the breakdown: a second pass over the same queries with the timing wrappers installed
            clock = Clockwork()
            undo = instrument(handle, clock)
            timed_ms: list[float] = []
            clock.enabled = True
            for q in queries:
                t0 = time.perf_counter()
                ours(q)
                timed_ms.append((time.perf_counter() - t0) * 1000)
            clock.enabled = False
            # a third pass, without the wrappers: a remember into another identity of the realm before each recall
            # (a write moves the realm's generation, so the kept rows are checked again: the mixed workload)
            undo()
            mixed_ms: list[float] = []
            mixed_cpu: list[float] = []
            for i, q in enumerate(queries):
                handle.call("meta/agent_memory/remember", {"identity": OTHER, "title": f"aside {i}",
                                                           "body": f"an unrelated note {i}"})
                t0, c0 = time.perf_counter(), time.thread_time()
                ours(q)
                mixed_cpu.append((time.thread_time() - c0) * 1000)
                mixed_ms.append((time.perf_counter() - t0) * 1000)
    per_limit = [
        {"limit": limit, "p50": statistics.median(arm_ms[a]), "p99": percentile(arm_ms[a], 99),
         "cpu_p50": statistics.median(arm_cpu[a]), "cpu_p99": percentile(arm_cpu[a], 99),
         "bm25_cpu_p50": statistics.median(arm_bm25_cpu[a]), "bm25_cpu_p99": percentile(arm_bm25_cpu[a], 99),
         # against the first arm: the same records in the same order, and the share of its records kept
         "same_order": statistics.fmean(x == y for x, y in zip(answers[a], answers[0])),
         "kept": statistics.fmean(len(set(x) & set(y)) / len(y) if y else 1.0 for x, y in zip(answers[a], answers[0]))}
        for a, (limit, _) in enumerate(arms) if limit is not None
    ]
    n = len(queries)
    per = {k: v * 1000 / n for k, v in clock.totals.items()}
    mean = statistics.fmean(timed_ms)
    search, neighbours = per.get("search", 0.0), per.get("neighbours", 0.0)
    provider, timebox, usage = per.get("provider", 0.0), per.get("timebox", 0.0), per.get("usage", 0.0)
    breakdown = {
        "full-text query": search,
        "neighbour reads": neighbours,
        "re-ranking": provider - search - neighbours,
        "time-box hop": timebox - provider,
        "usage marks": usage,
        "rest (dispatch, validation, projection)": mean - timebox - usage,
    }
    return {
        "records": n_records, "queries": n, "ingest_s": ingest_s, "refused": refused, "bm25_build_s": bm25_build_s,
        "index_build_s": index_build_s, "candidates": "in-process index" if use_index else "FTS5",
        "ours_p50": statistics.median(ours_ms), "ours_p99": percentile(ours_ms, 99), "ours_mean": mean,
        "bm25_p50": statistics.median(bm25_ms), "bm25_p99": percentile(bm25_ms, 99),
        "ours_cpu_p50": statistics.median(ours_cpu), "bm25_cpu_p50": statistics.median(bm25_cpu),
        "ours_cpu_p99": percentile(ours_cpu, 99), "bm25_cpu_p99": percentile(bm25_cpu, 99),
        "breakdown": breakdown,
        "mixed_p50": statistics.median(mixed_ms), "mixed_p99": percentile(mixed_ms, 99),
        "mixed_cpu_p50": statistics.median(mixed_cpu), "mixed_cpu_p99": percentile(mixed_cpu, 99),
        "per_limit": per_limit,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--fts", action="store_true", help="recall index off: candidates from FTS5 (the baseline)")
    parser.add_argument("--candidate-limits", type=candidate_limits, default=(), metavar="N,N,...",
                        help="time the lexical provider at each candidate_limit, alternating query by query (the first"
                             " is the baseline of the answers' comparison and of the rows below the table)")
    parser.add_argument("--rounds", type=int, default=3, help="with --candidate-limits: timed passes per value")
    args = parser.parse_args(argv)
    if args.records < 1 or args.queries < 1 or args.rounds < 1:
        parser.error("--records, --queries and --rounds must be at least 1")
    r = run(args.records, args.queries, args.seed, use_index=not args.fts, limits=args.candidate_limits,
            rounds=args.rounds)
    print(f"{r['records']} records, {r['queries']} queries; ours ingest {r['ingest_s']:.1f} s through remember_batch "
          f"({r['records'] / r['ingest_s']:.0f} records/s, {r['refused']} refused); bm25s build {r['bm25_build_s']:.1f} s")
    print(f"candidates: {r['candidates']}" + (f" (background build ready {r['index_build_s']:.1f} s after the first recall)"
                                              if r["candidates"] != "FTS5" else ""))
    print(f"{'system':<8} {'p50 ms':>8} {'p99 ms':>8}")
    print(f"{'ours':<8} {r['ours_p50']:>8.2f} {r['ours_p99']:>8.2f}")
    print(f"{'bm25s':<8} {r['bm25_p50']:>8.2f} {r['bm25_p99']:>8.2f}")
    goal = "p50 <= 3x, p99 <= 5x" if r["records"] <= 3000 else "p99 <= 3x"
    print(f"ours/bm25s: p50 {r['ours_p50'] / r['bm25_p50']:.2f}x, p99 {r['ours_p99'] / r['bm25_p99']:.2f}x (goal {goal})")
    print(f"thread CPU time p50: ours {r['ours_cpu_p50']:.2f} ms, bm25s {r['bm25_cpu_p50']:.2f} ms, "
          f"{r['ours_cpu_p50'] / r['bm25_cpu_p50']:.2f}x; p99: ours {r['ours_cpu_p99']:.2f} ms, bm25s "
          f"{r['bm25_cpu_p99']:.2f} ms, {r['ours_cpu_p99'] / r['bm25_cpu_p99']:.2f}x "
          "(the calling thread's own time: waits for a CPU left out)")
    if r["per_limit"]:
        first = r["per_limit"][0]["limit"]
        print(f"per candidate_limit ({args.rounds} rounds of one pass per value, after one untimed pass each; ratios to"
              f" the bm25s calls of the value's own passes; answers of max_entries 8 against {first}'s):")
        print(f"{'limit':>6} {'p50 ms':>7} {'p99 ms':>7} {'CPU p50':>8} {'CPU p99':>8} {'CPU p50/bm25s':>14} "
              f"{'CPU p99/bm25s':>14} {'same top 8':>11} {'kept':>6}")
        for row in r["per_limit"]:
            print(f"{row['limit']:>6} {row['p50']:>7.2f} {row['p99']:>7.2f} {row['cpu_p50']:>8.2f} {row['cpu_p99']:>8.2f} "
                  f"{row['cpu_p50'] / row['bm25_cpu_p50']:>13.2f}x {row['cpu_p99'] / row['bm25_cpu_p99']:>13.2f}x "
                  f"{row['same_order']:>11.1%} {row['kept']:>6.1%}")
        print(f"(the rows below: ours at candidate_limit {first}; the breakdown and the mixed pass at the configured one)")
    print(f"where ours' time goes (a second pass with timing wrappers, which add their own cost: "
          f"mean {r['ours_mean']:.2f} ms per recall):")
    for name, ms in r["breakdown"].items():
        print(f"  {name:<42} {ms:>7.2f} ms  {ms / r['ours_mean']:>6.1%}")
    print(f"with a remember into another identity of the realm before each recall: ours p50 {r['mixed_p50']:.2f} ms, "
          f"p99 {r['mixed_p99']:.2f} ms; thread CPU p50 {r['mixed_cpu_p50']:.2f} ms, p99 {r['mixed_cpu_p99']:.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
