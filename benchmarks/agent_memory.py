"""Agent memory through the real store and runtime: remember throughput, recall and inject latency.

Run: ``python benchmarks/agent_memory.py [--sizes 1000,10000,100000] [--queries 200] [--remembers 300]``

Part 1 — remember throughput: ``AgentMemoryService.remember`` (validator, dedup check, record row,
full-text row, audit row, one ``BEGIN IMMEDIATE`` transaction, WAL with ``synchronous=FULL``)
beside a raw SQLite insert + commit of the same text into a table and an FTS5 table at the same
durability (WAL, ``synchronous=FULL``), in the same run. Ratio = ours / raw (records per second).

Part 2 — latency at each size, records of one identity in one realm database (bulk-loaded through
staged batches of 1,000 create ops, one record a minute), the same queries timed query by query:

* ``recall``  — ``meta/agent_memory/recall`` through the method table in process (params, access,
  provider under the time box, scope guard, usage marks);
* ``inject``  — ``meta/turn/inject`` for a turn (recall + rendering + injection-ledger rows);
* ``fts5``    — bare ``SELECT rowid FROM records_fts WHERE records_fts MATCH ? ORDER BY bm25 LIMIT 8``
  on a separate connection to the same database file.

Synthetic text comes from ``benchmarks/recall.py`` (Zipf vocabulary, 4–9 word queries).
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from recall import IDENTITY, Vocabulary, make_queries, make_records  # noqa: E402

from meta_memory.agent_memory.batch import CreateOp, StagedBatch  # noqa: E402
from meta_memory.agent_memory.model import Author, NewMemoryRecord, Provenance, Scope  # noqa: E402
from meta_memory.config import MetaConfig, parse_config  # noqa: E402
from meta_memory.recall import fts  # noqa: E402
from meta_memory.rpc.registry import CallContext  # noqa: E402
from meta_memory.runtime import Runtime  # noqa: E402
from meta_memory.server.gateway import Gateway  # noqa: E402


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def remember_throughput(n: int) -> dict[str, float]:
    vocab = Vocabulary(random.Random(3))
    texts = [(vocab.sentence(5).capitalize(), vocab.sentence(40)) for _ in range(n)]
    with tempfile.TemporaryDirectory() as tmp:
        runtime = Runtime(MetaConfig(), Path(tmp) / "state")
        service = runtime.agent_memory.service
        t0 = time.perf_counter()
        for title, body in texts:
            service.remember("default", IDENTITY, title, body, [])
        ours = n / (time.perf_counter() - t0)
        runtime.close()

        conn = sqlite3.connect(Path(tmp) / "raw.sqlite3", isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("CREATE TABLE r (rid INTEGER PRIMARY KEY, id TEXT UNIQUE, title TEXT, body TEXT)")
        conn.execute("CREATE VIRTUAL TABLE rf USING fts5(title, body)")
        t0 = time.perf_counter()
        for i, (title, body) in enumerate(texts):
            conn.execute("BEGIN IMMEDIATE")
            cur = conn.execute("INSERT INTO r (id, title, body) VALUES (?, ?, ?)", (f"raw-{i}", title, body))
            conn.execute("INSERT INTO rf (rowid, title, body) VALUES (?, ?, ?)", (cur.lastrowid, title, body))
            conn.execute("COMMIT")
        raw = n / (time.perf_counter() - t0)
        conn.close()
    return {"ours_per_s": ours, "raw_per_s": raw, "ratio": ours / raw}


def bulk_load(runtime: Runtime, size: int, seed: int) -> tuple[list[str], float]:
    vocab = Vocabulary(random.Random(seed))
    records = make_records(size, vocab)
    queries = make_queries(400, vocab)
    store = runtime.agent_memory.store
    scope = Scope.identity("default", IDENTITY)
    t0 = time.perf_counter()
    for start in range(0, size, 1000):
        ops = tuple(
            CreateOp(scope=scope, record=NewMemoryRecord(title=r.title, body=r.body, tags=r.tags,
                                                         provenance=Provenance(Author.application())),
                     created_at_ms=r.created_at_ms, updated_at_ms=r.updated_at_ms)
            for r in records[start:start + 1000]
        )
        store.apply_batch(StagedBatch("default", Author.application(), ops))
    return queries, time.perf_counter() - t0


def latency(size: int, n_queries: int, seed: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        # the largest time budget, so the figures measure recall rather than the cut-off
        runtime = Runtime(parse_config({"agent_memory": {"recall_timeout_ms": 30_000}}), Path(tmp) / "state")
        queries, load_s = bulk_load(runtime, size, seed)
        queries = queries[:n_queries]
        gateway = Gateway.for_runtime(runtime)
        ctx = CallContext(transport="embedded")
        db = runtime.layout.realm_db_path("default")
        bare = sqlite3.connect(f"file:{db}?mode=ro", uri=True)

        def recall(q: str) -> object:
            return gateway.call("meta/agent_memory/recall", {"identity": IDENTITY, "query_text": q, "max_entries": 8}, ctx)

        def inject(q: str) -> object:
            return gateway.call("meta/turn/inject", {"identity": IDENTITY, "query_text": q}, ctx)

        def fts5(q: str) -> object:
            match = fts.match_expression(q)
            if not match:
                return []
            return bare.execute(
                f"SELECT rowid FROM {fts.FTS_TABLE} WHERE {fts.FTS_TABLE} MATCH ? ORDER BY bm25({fts.FTS_TABLE}) LIMIT 8",
                (match,),
            ).fetchall()

        for q in queries[:20]:
            recall(q), inject(q), fts5(q)
        times: dict[str, list[float]] = {"recall": [], "inject": [], "fts5": []}
        for q in queries:
            for name, fn in (("recall", recall), ("inject", inject), ("fts5", fts5)):
                t0 = time.perf_counter()
                fn(q)
                times[name].append((time.perf_counter() - t0) * 1000)
        bare.close()
        runtime.close()
    row: dict[str, float] = {"size": size, "load_s": load_s}
    for name, values in times.items():
        row[f"{name}_p50"] = statistics.median(values)
        row[f"{name}_p99"] = pct(values, 99)
    row["recall_over_fts_p99"] = row["recall_p99"] / row["fts5_p99"]
    row["inject_over_fts_p99"] = row["inject_p99"] / row["fts5_p99"]
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--remembers", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    r = remember_throughput(args.remembers)
    print(f"remember: ours {r['ours_per_s']:.0f}/s, raw SQLite insert+FTS+commit {r['raw_per_s']:.0f}/s, "
          f"ratio {r['ratio']:.2f} (target >= 0.50)")
    print()
    print(f"{'records':>8} {'load s':>7} {'recall p50':>10} {'p99':>7} {'inject p50':>10} {'p99':>7} "
          f"{'fts5 p50':>8} {'p99':>7} {'recall/fts p99':>14} {'inject/fts p99':>14}")
    for size in (int(s) for s in args.sizes.split(",")):
        row = latency(size, args.queries, args.seed)
        print(f"{size:>8} {row['load_s']:>7.1f} {row['recall_p50']:>10.2f} {row['recall_p99']:>7.2f} "
              f"{row['inject_p50']:>10.2f} {row['inject_p99']:>7.2f} {row['fts5_p50']:>8.2f} {row['fts5_p99']:>7.2f} "
              f"{row['recall_over_fts_p99']:>14.2f} {row['inject_over_fts_p99']:>14.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
