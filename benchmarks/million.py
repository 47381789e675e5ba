"""A million records in one identity: ingest over HTTP, recall beside bm25s, memory, a cold start, FTS5.

One command, one run, every figure beside a baseline measured in the same run:

1. **ingest** — ``--records`` synthetic records (``benchmarks/recall.py``: Zipf vocabulary, titles of
   3-7 words, bodies of 15-90) are written into ONE identity through the public
   ``meta/agent_memory/remember_batch`` (1,000 records a call) over HTTP to a real gateway
   subprocess (``meta-memory serve`` on a free port, a fresh state directory), from ``--clients``
   client threads, each with its own connection. Printed: the sustained rate (records/s over the
   whole load) and the rate over its last 10 %, so a rate that sags toward the end shows, beside the
   records per CPU second of the gateway process (every thread: HTTP, the writes, background upkeep)
   and the CPU the writing clients (JSON encoding, HTTP) took in this process, which a loaded machine
   blurs far less than the wall-clock rates;
2. **bm25s** is indexed on the same texts in this process (English stopwords, in memory);
3. **recall** — ``--queries`` queries (4-9 words, common and rare words and stopwords mixed)
   alternate query by query: ours is ``meta/agent_memory/recall`` (``max_entries`` 8) over HTTP under
   the gateway's DEFAULT time budget (500 ms: a recall past it fails and is counted, its time is kept),
   bm25s is query tokenising plus ``retrieve(k=8)``. p50/p99 of both and their ratios. The timed
   queries start once the gateway's recall index is built (its log line says so; the build starts
   with the first recall after the load, while bm25s indexes);
4. **memory** — the gateway's peak resident memory (``VmHWM`` of ``/proc/PID/status``) beside the
   configured ``[agent_memory] recall_index_mb`` (``--index-mb``) and the index's own size;
5. **cold** — the gateway is restarted on the same state directory and its first recall timed (the
   index is cold then: FTS5 answers while it builds);
6. **FTS5 path** — the gateway restarted with ``recall_index_mb = 1`` (the realm does not fit: its
   index is refused, as when evicted), and ``--fts-queries`` queries alternated with bm25s again.

7. **peers** (``--peers langgraph``) — LangGraph's ``SqliteStore`` (a file) and ``PostgresStore`` (a fresh
   schema of ``--dsn``) get the same records put in ONE namespace (``batch`` of 1,000 ``PutOp`` a call,
   in this process), then ``search(namespace, query=..., limit=8)`` for the timed queries. Without an
   embedding index (none is configured: the records are text) their ``search`` does not look at the
   query: it lists the namespace's items newest first (``ORDER BY updated_at DESC LIMIT``), so it is timed
   as is and ranks nothing. Each store gets ``--peer-cap-s`` seconds for its puts and as many for its
   searches, checked between calls; past it the line says "did not finish in N s" and how far it got.

``--backend postgres`` runs steps 1-5 against the PostgreSQL store instead (``--dsn``; a fresh
schema, dropped afterwards), whose candidates come from SQL (no in-process index); its default size
is 10,000 records (its batch write is far slower). The machine this runs on is shared: run it with
``nice -n 5`` and read ratios.

``bm25s`` is a benchmark-only dependency (the ``recall-peers`` extra).

Run: ``python benchmarks/million.py [--records 1000000] [--queries 300] [--fts-queries 300] [--clients 2]
[--index-mb 2048] [--backend sqlite|postgres] [--dsn DSN] [--seed 7] [--keep-state DIR] [--peers langgraph]
[--peer-cap-s 600]`` (``--records 100000``
for a quicker run; ``--keep-state DIR`` keeps the loaded state, and a later run with the same ``DIR``,
``--records`` and ``--seed`` measures recall on it without loading again; on PostgreSQL the schema is kept
with it, named after the directory's path, and left for the caller to drop).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import queue
import random
import secrets
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import percentile, proc_cpu_s, start_gateway, stop_gateway  # noqa: E402
from recall import Vocabulary, make_queries, make_records  # noqa: E402
from recall_vs_bm25 import build_bm25  # noqa: E402

IDENTITY = "lead:million"
BATCH = 1000
BUDGET_MS = 500  # the default explicit-recall time budget the gateway runs with
READY_MARK = "recall index of realm"


class Gateway:
    """A ``meta-memory serve`` subprocess, its URL, its log and one HTTP client."""

    def __init__(self, state: Path, config: Path, log: Path) -> None:
        self.log = log
        self.proc, self.url = start_gateway(state, config=config, log=log, timeout_s=120)
        self.client = httpx.Client(timeout=300)

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        body: dict[str, Any] = self.client.post(
            self.url + "/rpc", json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).json()
        return body

    def recall(self, query: str) -> dict[str, Any]:
        return self.call("meta/agent_memory/recall", {"identity": IDENTITY, "query_text": query, "max_entries": 8})

    def memory_kib(self) -> tuple[int, int]:
        """``(VmHWM, VmRSS)`` of the gateway in KiB."""
        fields = dict(line.split(":", 1) for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines()
                      if ":" in line)
        return int(fields["VmHWM"].split()[0]), int(fields["VmRSS"].split()[0])

    def index_line(self, timeout_s: float) -> str | None:
        """The gateway's log line saying its recall index was built (or refused), waiting up to ``timeout_s``."""
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            for line in self.log.read_text(errors="replace").splitlines():
                if READY_MARK in line:
                    return line.split(READY_MARK, 1)[1].strip()
            time.sleep(0.2)
        return None

    def stop(self) -> None:
        self.client.close()
        stop_gateway(self.proc, timeout_s=60)


def write_config(path: Path, index_mb: int, backend: str, dsn: str | None) -> Path:
    lines = ["[agent_memory]", f"recall_index_mb = {index_mb}"]
    if backend == "postgres":
        lines += ['store = "postgres"', f'dsn = "{dsn}"']
    path.write_text("\n".join(lines) + "\n")
    return path


def ingest(url: str, records: Sequence[Any], clients: int) -> tuple[float, float, int]:
    """Write ``records`` through ``remember_batch`` from ``clients`` threads; returns (records/s over the
    whole load, records/s over its last 10 %, refused or failed records)."""
    batches: queue.Queue[int] = queue.Queue()
    for i in range(0, len(records), BATCH):
        batches.put(i)
    done: list[tuple[float, int]] = []
    refused = [0]
    lock = threading.Lock()

    def worker() -> None:
        with httpx.Client(timeout=600) as client:
            while True:
                try:
                    i = batches.get_nowait()
                except queue.Empty:
                    return
                part = records[i:i + BATCH]
                items = [{"title": r.title, "body": r.body, "tags": list(r.tags)} for r in part]
                body = client.post(url + "/rpc", json={
                    "jsonrpc": "2.0", "id": i, "method": "meta/agent_memory/remember_batch",
                    "params": {"identity": IDENTITY, "records": items}}).json()
                bad = len(part) if "result" not in body else sum(1 for r in body["result"]["results"] if r.get("error"))
                with lock:
                    done.append((time.perf_counter(), len(part)))
                    refused[0] += bad

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done.sort()
    end = done[-1][0]
    total = sum(n for _, n in done)
    acc, t90, n90 = 0, t0, 0
    for at, n in done:
        acc += n
        if acc >= 0.9 * total:
            t90, n90 = at, acc
            break
    tail = (total - n90) / (end - t90) if end > t90 else float("nan")
    return total / (end - t0), tail, refused[0]


def alternate(ours: Callable[[str], dict[str, Any]], theirs: Callable[[str], Any],
              queries: Sequence[str]) -> tuple[list[float], list[float], Counter[str], Counter[str]]:
    """Per-query ms of ours and theirs, called alternately; ours' errors by message, and ours' answers that
    carried a ``degraded_reason`` (answered, but not proven the best ranking) by reason."""
    ours_ms: list[float] = []
    theirs_ms: list[float] = []
    errors: Counter[str] = Counter()
    degraded: Counter[str] = Counter()
    for q in queries:
        t0 = time.perf_counter()
        body = ours(q)
        ours_ms.append((time.perf_counter() - t0) * 1000)
        if "result" not in body:
            errors[str(body.get("error", {}).get("message", body))[:80]] += 1
        elif body["result"].get("degraded_reason"):
            degraded[str(body["result"]["degraded_reason"])] += 1
        t0 = time.perf_counter()
        theirs(q)
        theirs_ms.append((time.perf_counter() - t0) * 1000)
    return ours_ms, theirs_ms, errors, degraded


def line(name: str, ours: Sequence[float], theirs: Sequence[float], errors: Counter[str],
         degraded: Counter[str]) -> None:
    o50, o99 = statistics.median(ours), percentile(ours, 99)
    t50, t99 = statistics.median(theirs), percentile(theirs, 99)
    over = sum(1 for ms in ours if ms > BUDGET_MS)
    print(f"{name:<28} ours p50 {o50:8.2f} p99 {o99:8.2f} | bm25s p50 {t50:6.2f} p99 {t99:6.2f} | "
          f"ratio p50 {o50 / t50:6.2f}x p99 {o99 / t99:6.2f}x | failed {sum(errors.values())}, "
          f"over {BUDGET_MS} ms {over} of {len(ours)}", flush=True)
    for message, n in errors.most_common(3):
        print(f"    {n} x {message}")
    for reason, n in degraded.most_common():
        print(f"    {n} answered with degraded_reason {reason}")


def langgraph_peers(records: Sequence[Any], queries: Sequence[str], work: Path, dsn: str, cap_s: float) -> None:
    """Put ``records`` into one namespace of LangGraph's ``SqliteStore`` and ``PostgresStore`` and time their
    ``search`` (see the module docstring, step 7), each within ``cap_s`` seconds for puts and for searches."""
    import psycopg
    from langgraph.store.base import PutOp
    from langgraph.store.postgres import PostgresStore
    from langgraph.store.sqlite import SqliteStore

    from meta_memory.agent_memory.store.postgres import PostgresAgentMemoryStore

    namespace = ("million", "lead")
    schema = f"lg_million_{secrets.token_hex(4)}"
    sep = "&" if "?" in dsn else "?"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    stores = [("SqliteStore", lambda: SqliteStore.from_conn_string(str(work / "langgraph.sqlite"))),
              ("PostgresStore", lambda: PostgresStore.from_conn_string(
                  f"{dsn}{sep}options=-c%20search_path%3D{schema}"))]
    try:
        for name, opener in stores:
            with opener() as store:
                store.setup()
                t0 = time.perf_counter()
                put = 0
                for i in range(0, len(records), BATCH):
                    if time.perf_counter() - t0 > cap_s:
                        break
                    store.batch([PutOp(namespace, f"r{i + j}", {"title": r.title, "body": r.body, "tags": list(r.tags)})
                                 for j, r in enumerate(records[i:i + BATCH])])
                    put = min(len(records), i + BATCH)
                put_s = time.perf_counter() - t0
                if put < len(records):
                    print(f"langgraph {name}: puts did not finish in {cap_s:.0f} s ({put} of {len(records)} records, "
                          f"{put / put_s:.0f} records/s)", flush=True)
                    continue
                times: list[float] = []
                t0 = time.perf_counter()
                for q in queries:
                    if time.perf_counter() - t0 > cap_s:
                        break
                    s0 = time.perf_counter()
                    store.search(namespace, query=q, limit=8)
                    times.append((time.perf_counter() - s0) * 1000)
                done = "" if len(times) == len(queries) else \
                    f" (searches did not finish in {cap_s:.0f} s: {len(times)} of {len(queries)})"
                print(f"langgraph {name}: put {len(records) / put_s:.0f} records/s; search (no ranking: newest first) "
                      f"p50 {statistics.median(times):.2f} ms p99 {percentile(times, 99):.2f} ms{done}", flush=True)
    finally:
        PostgresAgentMemoryStore.drop_schema(dsn, schema)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=None, help="default 1,000,000 (sqlite), 10,000 (postgres)")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--fts-queries", type=int, default=300, help="queries on the FTS5 path (0: skip it)")
    parser.add_argument("--clients", type=int, default=2, help="client threads (connections) writing")
    parser.add_argument("--index-mb", type=int, default=2048, help="[agent_memory] recall_index_mb of the gateway")
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--dsn", default=os.environ.get("META_MEMORY_TEST_DSN", "postgresql://postgres@127.0.0.1:5432/test"))
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep-state", type=Path, default=None,
                        help="keep the gateway's state directory here (it must not exist yet); when it exists, reuse "
                             "it: a state a run with the same --records and --seed wrote (no ingest then); with --backend "
                             "postgres its schema is kept too (named after the directory's path)")
    parser.add_argument("--peers", choices=("langgraph",), default=None,
                        help="also run LangGraph's SqliteStore and PostgresStore on the same records (step 7)")
    parser.add_argument("--peer-cap-s", type=float, default=600, help="seconds each peer may take for puts, and again "
                        "for searches")
    args = parser.parse_args(argv)
    n = args.records or (1_000_000 if args.backend == "sqlite" else 10_000)
    if n < 1 or args.queries < 1 or args.clients < 1:
        parser.error("--records, --queries and --clients must be at least 1")

    import bm25s

    t0 = time.perf_counter()
    vocab = Vocabulary(random.Random(args.seed))
    records = make_records(n, vocab)
    queries = make_queries(args.queries + 20, vocab)
    print(f"{n} records, {args.queries} queries, backend {args.backend}, recall_index_mb {args.index_mb}, "
          f"{args.clients} writing clients, cpus {os.cpu_count()}, load {os.getloadavg()[0]:.1f} "
          f"(records made in {time.perf_counter() - t0:.0f} s)", flush=True)
    work = Path(tempfile.mkdtemp(prefix="mm-million-"))
    state = work / "state" if args.keep_state is None else args.keep_state
    reuse = state.exists()
    dsn = None
    schema = None
    keep_schema = args.backend == "postgres" and args.keep_state is not None
    if args.backend == "postgres":
        # a kept state keeps its schema too, named after the state's path, so a later run finds it
        schema = (f"mm_million_{hashlib.sha256(str(args.keep_state.resolve()).encode()).hexdigest()[:8]}"
                  if keep_schema else f"mm_million_{secrets.token_hex(4)}")
        sep = "&" if "?" in args.dsn else "?"
        dsn = f"{args.dsn}{sep}options=-c%20search_path%3D{schema}"
    config = write_config(work / "gateway.toml", args.index_mb, args.backend, dsn)
    try:
        gw = Gateway(state, config, work / "gateway-1.log")
        try:
            if reuse:
                print(f"ingest: not measured (state reused from {state})", flush=True)
            else:
                gw_cpu, own_cpu, load_before = proc_cpu_s(gw.proc.pid), time.process_time(), os.getloadavg()[0]
                rate, tail, refused = ingest(gw.url, records, args.clients)
                gw_cpu, own_cpu = proc_cpu_s(gw.proc.pid) - gw_cpu, time.process_time() - own_cpu
                print(f"ingest: {rate:.0f} records/s sustained, {tail:.0f} records/s over the last 10 % "
                      f"({refused} refused or failed); {n / gw_cpu:.0f} records per CPU second of the gateway "
                      f"(every thread), the writing clients' CPU {own_cpu:.1f} s for {gw_cpu:.1f} s of the gateway's; "
                      f"load {load_before:.1f} before, {os.getloadavg()[0]:.1f} after", flush=True)
            t0 = time.perf_counter()
            gw.recall(queries[0])  # starts the recall index's background build (sqlite)
            first_ms = (time.perf_counter() - t0) * 1000
            retriever, bm25_s = build_bm25(records)
            print(f"first recall after the load {first_ms:.0f} ms; bm25s indexed in {bm25_s:.1f} s", flush=True)
            if args.backend == "sqlite":
                built = gw.index_line(timeout_s=1800)
                print(f"recall index: {built or 'not built within 30 min'} "
                      f"({time.perf_counter() - t0:.1f} s after the first recall)", flush=True)

            def theirs(q: str) -> Any:
                return retriever.retrieve(bm25s.tokenize([q], stopwords="en", show_progress=False), k=8,
                                          show_progress=False)

            warm, timed = queries[:20], queries[20:]
            alternate(gw.recall, theirs, warm)
            ours_ms, bm25_ms, errors, degraded = alternate(gw.recall, theirs, timed)
            line(f"recall ({args.backend}{', index' if args.backend == 'sqlite' else ''})", ours_ms, bm25_ms, errors,
                 degraded)
            hwm, rss = gw.memory_kib()
            print(f"gateway memory: peak {hwm / 1024:.0f} MiB (VmHWM), now {rss / 1024:.0f} MiB, "
                  f"recall_index_mb {args.index_mb}", flush=True)
        finally:
            gw.stop()
        gw = Gateway(state, config, work / "gateway-2.log")
        try:
            t0 = time.perf_counter()
            body = gw.recall(timed[0])
            cold_ms = (time.perf_counter() - t0) * 1000
            t0 = time.perf_counter()
            gw.recall(timed[1])
            second_ms = (time.perf_counter() - t0) * 1000
            print(f"after a restart: first recall {cold_ms:.0f} ms ({'ok' if 'result' in body else body.get('error')}),"
                  f" second {second_ms:.0f} ms", flush=True)
        finally:
            gw.stop()
        if args.backend == "sqlite" and args.fts_queries > 0:
            config = write_config(work / "gateway-fts.toml", 1, args.backend, dsn)
            gw = Gateway(state, config, work / "gateway-3.log")
            try:
                gw.recall(warm[0])  # the realm's build is tried and refused for its size
                print(f"FTS5 path: recall index {gw.index_line(timeout_s=1800) or 'never refused'}", flush=True)
                fts_queries = timed[: args.fts_queries]
                alternate(gw.recall, theirs, warm)
                ours_ms, bm25_ms, errors, degraded = alternate(gw.recall, theirs, fts_queries)
                line("recall (sqlite, FTS5 path)", ours_ms, bm25_ms, errors, degraded)
            finally:
                gw.stop()
        if args.peers == "langgraph":
            langgraph_peers(records, timed, work, args.dsn, args.peer_cap_s)
    finally:
        if schema is not None and not keep_schema:
            from meta_memory.agent_memory.store.postgres import PostgresAgentMemoryStore

            PostgresAgentMemoryStore.drop_schema(args.dsn, schema)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
