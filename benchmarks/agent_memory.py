"""Agent memory through the real store and runtime: write cost at scale, bulk writes, recall and inject latency.

Run: ``python benchmarks/agent_memory.py [--parts remember,bulk,latency] [--sizes 1000,10000,100000]
[--writes 300] [--bulk-records 20000] [--queries 200]``

Part ``remember`` — the public write at scale: ``meta/agent_memory/remember`` through the method
table in process (params, access, service, the store: dedup check, the one validator, record row,
full-text row, audit row, one ``BEGIN IMMEDIATE`` transaction, WAL with ``synchronous=FULL``) into
one identity holding 1k, 10k and 100k records (filled between sizes through staged batches, not
timed). Interleaved write by write with it, in the same run: a raw SQLite insert of the same text
into a table and an FTS5 table, one transaction and commit per record at the same durability (WAL,
``synchronous=FULL``), into a database filled to the same size. Reported per size: p50/p99 of both,
throughput ratio ours / raw, the same ratio from the timed thread's CPU time alone (user and system:
what the machine's load and the disk's ``fsync`` wait do not blur), and p99 at the largest size over
p99 at the smallest.

Part ``bulk`` — a real HTTP gateway (``meta-memory serve`` in a subprocess, loopback): records/s of
``meta/agent_memory/remember_batch`` at 1,000 records per call, beside one
``meta/agent_memory/remember`` per HTTP request, in the same run, same identity, same text; then the
same bulk calls in process. Also records per CPU second of the gateway process and of the in-process
calls, which follow the code rather than the machine's load.

Part ``latency`` — latency at each size, records of one identity in one realm database (bulk-loaded
through staged batches of 1,000 create ops, one record a minute), the same queries timed query by query:

* ``recall``  — ``meta/agent_memory/recall`` through the method table in process (params, access,
  provider under the time box, scope guard, usage marks);
* ``inject``  — ``meta/turn/inject`` for a turn (recall + rendering + injection-ledger rows);
* ``fts5``    — bare ``SELECT rowid FROM records_fts WHERE records_fts MATCH ? ORDER BY bm25 LIMIT 8``
  on a separate connection to the same database file.

Synthetic text comes from ``benchmarks/recall.py`` (Zipf vocabulary, 4–9 word queries).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import percentile, proc_cpu_s, start_gateway  # noqa: E402
from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.batch import CreateOp, StagedBatch  # noqa: E402
from meta_memory.agent_memory.model import Author, NewMemoryRecord, Provenance, Scope  # noqa: E402
from meta_memory.config import MetaConfig, parse_config  # noqa: E402
from meta_memory.recall import fts  # noqa: E402
from meta_memory.rpc.registry import CallContext  # noqa: E402
from meta_memory.runtime import Runtime  # noqa: E402
from meta_memory.server.gateway import Gateway  # noqa: E402
from recall import IDENTITY, Vocabulary, make_queries, make_records  # noqa: E402


class RawSqlite:
    """The baseline: a record table with a unique id and an FTS5 table, one transaction per record."""

    def __init__(self, path: Path) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=FULL")
        self.conn.execute("CREATE TABLE r (rid INTEGER PRIMARY KEY, id TEXT UNIQUE, title TEXT, body TEXT)")
        self.conn.execute("CREATE VIRTUAL TABLE rf USING fts5(title, body)")
        self.n = 0

    def fill(self, texts: list[tuple[str, str]]) -> None:
        self.conn.execute("BEGIN IMMEDIATE")
        for title, body in texts:
            self._insert(title, body)
        self.conn.execute("COMMIT")

    def _insert(self, title: str, body: str) -> None:
        self.n += 1
        cur = self.conn.execute("INSERT INTO r (id, title, body) VALUES (?, ?, ?)", (f"raw-{self.n}", title, body))
        self.conn.execute("INSERT INTO rf (rowid, title, body) VALUES (?, ?, ?)", (cur.lastrowid, title, body))

    def write(self, title: str, body: str) -> None:
        self.conn.execute("BEGIN IMMEDIATE")
        self._insert(title, body)
        self.conn.execute("COMMIT")


def _fill_store(runtime: Runtime, vocab: Vocabulary, count: int, start_ms: int) -> None:
    store = runtime.agent_memory.store
    scope = Scope.identity("default", IDENTITY)
    for first in range(0, count, 1000):
        ops = tuple(
            CreateOp(scope=scope, record=NewMemoryRecord(title=vocab.sentence(5).capitalize(), body=vocab.sentence(40),
                                                         provenance=Provenance(Author.application())),
                     created_at_ms=start_ms + (first + i) * 60_000)
            for i in range(min(1000, count - first))
        )
        record_writes.apply_batch(store, StagedBatch("default", Author.application(), ops))


def remember_at_scale(sizes: list[int], writes: int, seed: int) -> list[dict[str, float]]:
    """Public remember vs the raw baseline, interleaved, at each store size (see the module doc)."""
    vocab = Vocabulary(random.Random(seed))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        runtime = Runtime(MetaConfig(), Path(tmp) / "state")
        gateway = Gateway.for_runtime(runtime)
        ctx = CallContext(transport="embedded")
        raw = RawSqlite(Path(tmp) / "raw.sqlite3")
        held = 0
        for size in sizes:
            fill = max(0, size - held)
            texts = [(vocab.sentence(5).capitalize(), vocab.sentence(40)) for _ in range(fill)]
            _fill_store(runtime, vocab, fill, 1_600_000_000_000 + held * 60_000)
            raw.fill(texts)
            held += fill
            batch = [(vocab.sentence(5).capitalize(), vocab.sentence(40)) for _ in range(writes + 20)]
            ours_ms: list[float] = []
            raw_ms: list[float] = []
            cpu = [0.0, 0.0]  # this thread's CPU seconds (user + system: the WAL writes, not the fsync wait)
            for i, (title, body) in enumerate(batch):
                c0, t0 = time.thread_time(), time.perf_counter()
                gateway.call("meta/agent_memory/remember", {"identity": IDENTITY, "title": title, "body": body}, ctx)
                c1, t1 = time.thread_time(), time.perf_counter()
                raw.write(title, body)
                c2, t2 = time.thread_time(), time.perf_counter()
                if i >= 20:  # warm-up
                    ours_ms.append((t1 - t0) * 1000)
                    raw_ms.append((t2 - t1) * 1000)
                    cpu[0] += c1 - c0
                    cpu[1] += c2 - c1
            held += len(batch)
            steps = _vm_steps_per_remember(runtime, gateway, ctx, vocab, 50)
            held += 50
            rows.append({
                "vm_steps": steps,
                "size": size, "ours_p50": statistics.median(ours_ms), "ours_p99": percentile(ours_ms, 99),
                "raw_p50": statistics.median(raw_ms), "raw_p99": percentile(raw_ms, 99),
                "ratio": sum(raw_ms) / sum(ours_ms),  # throughput ours / raw = time raw / time ours
                "cpu_ratio": cpu[1] / cpu[0] if cpu[0] else 0.0,  # the same from CPU time alone
                "ours_cpu_ms": cpu[0] * 1000 / len(ours_ms), "raw_cpu_ms": cpu[1] * 1000 / len(raw_ms),
            })
        raw.conn.close()
        runtime.close()
    return rows


def _vm_steps_per_remember(runtime: Runtime, gateway: Gateway, ctx: CallContext, vocab: Vocabulary, n: int) -> float:
    """Mean SQLite virtual-machine steps of one public remember on the realm's writer (a measure of the
    work a write does that no disk or CPU contention can blur). Only the steps of this thread's writes
    count, not the store's background index merges on the same connection; the handler is set and
    cleared under the realm's write lock, as every use of the writer connection must be."""
    db = runtime.agent_memory.store._db("default")
    writer = db.writer
    me = threading.get_ident()
    count = [0]

    def step() -> int:
        if threading.get_ident() == me:
            count[0] += 1
        return 0

    with db.write_lock:
        writer.set_progress_handler(step, 1)
    try:
        for _ in range(n):
            gateway.call("meta/agent_memory/remember",
                         {"identity": IDENTITY, "title": vocab.sentence(5).capitalize(), "body": vocab.sentence(40)}, ctx)
    finally:
        with db.write_lock:
            writer.set_progress_handler(None, 1)
    return count[0] / n


def bulk_over_http(records: int, per_call: int, single: int, seed: int) -> dict[str, float]:
    """remember_batch records/s through a real HTTP gateway, beside one remember per request."""
    vocab = Vocabulary(random.Random(seed))
    texts = [(vocab.sentence(5).capitalize(), vocab.sentence(40)) for _ in range(records + single)]
    with tempfile.TemporaryDirectory() as tmp:
        proc, url = start_gateway(Path(tmp) / "state", timeout_s=60)
        try:
            client = httpx.Client(base_url=url, timeout=120)
            n = 0

            def post(method: str, params: dict[str, Any]) -> Any:
                nonlocal n
                n += 1
                body = client.post("/rpc", content=json.dumps({"jsonrpc": "2.0", "id": n, "method": method,
                                                               "params": params}),
                                   headers={"Content-Type": "application/json"}).json()
                if "error" in body:
                    raise RuntimeError(body["error"]["message"])
                return body["result"]

            post("meta/agent_memory/remember", {"identity": IDENTITY, "title": "warm-up", "body": "opens the realm"})
            t0 = time.perf_counter()
            for title, body in texts[records:]:
                post("meta/agent_memory/remember", {"identity": IDENTITY, "title": title, "body": body})
            single_rate = single / (time.perf_counter() - t0)
            created = 0
            t0, cpu0 = time.perf_counter(), proc_cpu_s(proc.pid)
            for first in range(0, records, per_call):
                chunk = texts[first:first + per_call]
                out = post("meta/agent_memory/remember_batch",
                           {"identity": IDENTITY, "records": [{"title": t, "body": b} for t, b in chunk]})
                created += out["created"]
            bulk_rate = records / (time.perf_counter() - t0)
            gateway_cpu_rate = records / max(proc_cpu_s(proc.pid) - cpu0, 1e-9)
            client.close()
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        # the same calls in process (method table, no HTTP), same machine, same run
        runtime = Runtime(MetaConfig(), Path(tmp) / "in-process")
        gateway = Gateway.for_runtime(runtime)
        ctx = CallContext(transport="embedded")
        t0, cpu0 = time.perf_counter(), time.process_time()
        for first in range(0, records, per_call):
            gateway.call("meta/agent_memory/remember_batch",
                         {"identity": IDENTITY, "records": [{"title": t, "body": b} for t, b in texts[first:first + per_call]]},
                         ctx)
        in_process_rate = records / (time.perf_counter() - t0)
        in_process_cpu_rate = records / max(time.process_time() - cpu0, 1e-9)
        runtime.close()
    return {"bulk_per_s": bulk_rate, "single_per_s": single_rate, "speedup": bulk_rate / single_rate,
            "in_process_per_s": in_process_rate, "created": created,
            "gateway_cpu_per_s": gateway_cpu_rate, "in_process_cpu_per_s": in_process_cpu_rate}


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
        record_writes.apply_batch(store, StagedBatch("default", Author.application(), ops))
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
        row[f"{name}_p99"] = percentile(values, 99)
    row["recall_over_fts_p99"] = row["recall_p99"] / row["fts5_p99"]
    row["inject_over_fts_p99"] = row["inject_p99"] / row["fts5_p99"]
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts", default="remember,bulk,latency")
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--writes", type=int, default=300, help="timed public remembers per size")
    parser.add_argument("--bulk-records", type=int, default=20_000)
    parser.add_argument("--bulk-per-call", type=int, default=1000)
    parser.add_argument("--single-requests", type=int, default=500)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    sizes = [int(s) for s in args.sizes.split(",")]

    if "remember" in parts:
        rows = remember_at_scale(sizes, args.writes, args.seed)
        print("public remember (meta/agent_memory/remember in process) vs raw SQLite insert + FTS5 + commit, "
              "interleaved; ms")
        print(f"{'records':>8} {'ours p50':>9} {'ours p99':>9} {'raw p50':>8} {'raw p99':>8} {'p99 ours/raw':>13} "
              f"{'throughput ours/raw':>20} {'VM steps/write':>15} {'CPU ms ours':>11} {'CPU ms raw':>10} "
              f"{'CPU ours/raw':>12}")
        for row in rows:
            print(f"{row['size']:>8} {row['ours_p50']:>9.3f} {row['ours_p99']:>9.3f} {row['raw_p50']:>8.3f} "
                  f"{row['raw_p99']:>8.3f} {row['ours_p99'] / row['raw_p99']:>13.2f} {row['ratio']:>20.2f} "
                  f"{row['vm_steps']:>15.0f} {row['ours_cpu_ms']:>11.3f} {row['raw_cpu_ms']:>10.3f} "
                  f"{row['cpu_ratio']:>12.2f}")
        first, last = rows[0], rows[-1]
        print(f"p99 at {last['size']} / p99 at {first['size']}: ours {last['ours_p99'] / first['ours_p99']:.2f} "
              f"(target <= 1.5), raw {last['raw_p99'] / first['raw_p99']:.2f} in the same run; VM steps per write "
              f"{last['vm_steps'] / first['vm_steps']:.2f}x; throughput ratio min {min(r['ratio'] for r in rows):.2f} "
              f"(target >= 0.5)")
        print()
    if "bulk" in parts:
        b = bulk_over_http(args.bulk_records, args.bulk_per_call, args.single_requests, args.seed)
        print(f"HTTP gateway: remember_batch ({args.bulk_per_call}/call) {b['bulk_per_s']:.0f} records/s, "
              f"one remember per request {b['single_per_s']:.0f} records/s, speedup {b['speedup']:.1f}x "
              f"(target >= 5000 records/s); the same remember_batch calls in process {b['in_process_per_s']:.0f} "
              f"records/s")
        # CPU time follows the code, wall time the machine's load: records per CPU second of the gateway
        # process (every thread: HTTP, the write, background upkeep) and of this process in process
        print(f"CPU: gateway {b['gateway_cpu_per_s']:.0f} records/s of its CPU time; in process "
              f"{b['in_process_cpu_per_s']:.0f} records/s of CPU time; load average {os.getloadavg()[0]:.1f}")
        print()
    if "latency" not in parts:
        return 0
    print(f"{'records':>8} {'load s':>7} {'recall p50':>10} {'p99':>7} {'inject p50':>10} {'p99':>7} "
          f"{'fts5 p50':>8} {'p99':>7} {'recall/fts p99':>14} {'inject/fts p99':>14}")
    for size in sizes:
        row = latency(size, args.queries, args.seed)
        print(f"{size:>8} {row['load_s']:>7.1f} {row['recall_p50']:>10.2f} {row['recall_p99']:>7.2f} "
              f"{row['inject_p50']:>10.2f} {row['inject_p99']:>7.2f} {row['fts5_p50']:>8.2f} {row['fts5_p99']:>7.2f} "
              f"{row['recall_over_fts_p99']:>14.2f} {row['inject_over_fts_p99']:>14.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
