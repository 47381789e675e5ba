"""Load test: N gateways over loopback, concurrent clients, SQLite and PostgreSQL in one run.

Configurations, in order:

* ``sqlite x1``    — one gateway on the embedded store (its own state directory);
* ``postgres x1``  — one gateway on a fresh PostgreSQL schema;
* ``postgres x2``  — two gateways (two processes, two state directories) on
  one fresh PostgreSQL schema.

Each configuration is seeded with ``--seed-records`` records spread over
``--identities`` identities, then runs two phases, each bounded by an op count
(``--ops``) and a wall-clock cap (``--max-seconds``):

* ``mixed``  — remember / recall / inject in the ratio ``--mix`` (default 1:3:1),
  through ``meta/agent_memory/remember``, ``meta/agent_memory/recall`` and
  ``meta/turn/inject``;
* ``recall`` — recall only (the figure the two-gateway target is about).

Clients are separate processes (``--clients``), so the load generator is not
one Python interpreter; client ``i`` talks to gateway ``i mod N``. Printed per
configuration and phase: ops, errors, throughput (ops/s) and p50/p99 latency
(ms) per operation, then the PostgreSQL two-gateway / one-gateway recall
throughput ratio.

Run: ``python benchmarks/load.py [--dsn postgresql://postgres@127.0.0.1:5432/test] [--clients 8] [--ops 2000]``.
Schemas are created as ``mm_load_<random>`` and dropped at the end.
"""

from __future__ import annotations

import argparse
import os
import random
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common  # noqa: E402
from _common import percentile  # noqa: E402

WORDS = (
    "kiwi walrus garden tomato coffee deploy tuesday passport drawer travel budget invoice meeting standup "
    "release rollback database index query latency cache cluster region backup restore token session "
    "review quarantine proposal steward mob realm identity recall inject remember forget update manifest "
    "café straße 绿茶 multi-agent planning roadmap customer support ticket escalation pager alert metric"
).split()

OPS = ("remember", "recall", "inject")


@dataclass
class Gateway:
    proc: subprocess.Popen[str]
    url: str


@dataclass
class PhaseResult:
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    elapsed_s: float = 0.0


def start_gateway(state_dir: Path, config: Path | None) -> Gateway:
    """``meta-memory serve --port 0`` in a subprocess; waits for its URL line and its health endpoint."""
    return Gateway(*_common.start_gateway(state_dir, config=config))


def stop_gateway(gw: Gateway) -> None:
    _common.stop_gateway(gw.proc)


def _text(rng: random.Random, lo: int, hi: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


def _call(client: httpx.Client, url: str, method: str, params: dict[str, Any], rid: int) -> bool:
    body = client.post(url + "/rpc", json={"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).json()
    return "result" in body


def _params(op: str, rng: random.Random, identities: int, worker: int, i: int) -> tuple[str, dict[str, Any]]:
    identity = f"load:agent{rng.randrange(identities)}"
    if op == "remember":
        return "meta/agent_memory/remember", {
            "identity": identity,
            "title": _text(rng, 2, 5),
            "body": f"{_text(rng, 10, 40)} w{worker}n{i}",
        }
    if op == "recall":
        return "meta/agent_memory/recall", {"identity": identity, "query_text": _text(rng, 2, 6), "max_entries": 8}
    return "meta/turn/inject", {
        "identity": identity,
        "query_text": _text(rng, 2, 6),
        "session_key": f"sess-{worker}-{i % 50}",
    }


def client_worker(
    url: str, worker: int, ops: int, deadline: float, mix: tuple[int, int, int], identities: int, seed: int
) -> tuple[dict[str, list[float]], dict[str, int]]:
    """One client process: ``ops`` calls (or until ``deadline``, epoch seconds) against ``url``."""
    rng = random.Random(seed * 1000 + worker)
    lat: dict[str, list[float]] = defaultdict(list)
    err: dict[str, int] = defaultdict(int)
    with httpx.Client(timeout=30) as client:
        for i in range(ops):
            if time.time() > deadline:
                break
            op = rng.choices(OPS, weights=mix)[0]
            method, params = _params(op, rng, identities, worker, i)
            t0 = time.perf_counter()
            try:
                ok = _call(client, url, method, params, i)
            except (httpx.HTTPError, ValueError):
                ok = False
            lat[op].append((time.perf_counter() - t0) * 1000)
            if not ok:
                err[op] += 1
    return dict(lat), dict(err)


def run_phase(
    pool: ProcessPoolExecutor, gateways: list[Gateway], args: argparse.Namespace, mix: tuple[int, int, int], seed: int
) -> PhaseResult:
    per_client = max(1, args.ops // args.clients)
    deadline = time.time() + args.max_seconds
    t0 = time.perf_counter()
    futures = [
        pool.submit(client_worker, gateways[w % len(gateways)].url, w, per_client, deadline, mix, args.identities, seed)
        for w in range(args.clients)
    ]
    result = PhaseResult()
    for fut in futures:
        lat, err = fut.result()
        for op, values in lat.items():
            result.latencies[op].extend(values)
        for op, n in err.items():
            result.errors[op] += n
    result.elapsed_s = time.perf_counter() - t0
    return result


def seed_store(gw: Gateway, args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    with httpx.Client(timeout=30) as client:
        for i in range(args.seed_records):
            method, params = _params("remember", rng, args.identities, 999, i)
            _call(client, gw.url, method, params, i)


def report(name: str, phase: str, result: PhaseResult) -> dict[str, float]:
    """Print one block; returns ``op -> throughput``."""
    out: dict[str, float] = {}
    total = sum(len(v) for v in result.latencies.values())
    print(f"  {name:<13} {phase:<6} {total:>6} ops in {result.elapsed_s:6.2f}s = {total / result.elapsed_s:7.1f} ops/s")
    for op in OPS:
        values = result.latencies.get(op, [])
        if not values:
            continue
        rate = len(values) / result.elapsed_s
        out[op] = rate
        print(
            f"      {op:<9} n={len(values):>6} err={result.errors.get(op, 0):>4} {rate:8.1f} ops/s "
            f"p50={statistics.median(values):7.2f} ms p99={percentile(values, 99):7.2f} ms"
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default=os.environ.get("META_MEMORY_TEST_DSN", "postgresql://postgres@127.0.0.1:5432/test"))
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--ops", type=int, default=2000, help="ops per phase (split over the clients)")
    parser.add_argument("--max-seconds", type=float, default=30.0, help="wall-clock cap per phase")
    parser.add_argument("--seed-records", type=int, default=400)
    parser.add_argument("--identities", type=int, default=8)
    parser.add_argument("--mix", default="1:3:1", help="remember:recall:inject weights")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--skip-postgres", action="store_true")
    args = parser.parse_args(argv)
    mix = tuple(int(x) for x in args.mix.split(":"))
    assert len(mix) == 3

    print(f"load: {args.clients} client processes, {args.ops} ops/phase (cap {args.max_seconds:g}s), "
          f"mix remember:recall:inject = {args.mix}, {args.seed_records} seed records, cpus={os.cpu_count()}")
    work = Path(tempfile.mkdtemp(prefix="mm-load-"))
    schemas: list[str] = []
    recall_rates: dict[str, float] = {}
    total_errors = 0
    configs: list[tuple[str, int, str | None]] = [("sqlite x1", 1, None)]
    if not args.skip_postgres:
        configs += [("postgres x1", 1, "pg"), ("postgres x2", 2, "pg")]
    try:
        with ProcessPoolExecutor(max_workers=args.clients) as pool:
            for name, n, backend in configs:
                config: Path | None = None
                if backend == "pg":
                    schema = f"mm_load_{secrets.token_hex(4)}"
                    schemas.append(schema)
                    sep = "&" if "?" in args.dsn else "?"
                    config = work / f"{schema}.toml"
                    config.write_text(
                        f'[agent_memory]\nstore = "postgres"\ndsn = "{args.dsn}{sep}options=-c%20search_path%3D{schema}"\n'
                    )
                gateways = [start_gateway(work / f"{name.replace(' ', '-')}-{i}", config) for i in range(n)]
                try:
                    seed_store(gateways[0], args)
                    mixed = run_phase(pool, gateways, args, mix, args.seed)
                    recall_only = run_phase(pool, gateways, args, (0, 1, 0), args.seed + 1)
                finally:
                    for gw in gateways:
                        stop_gateway(gw)
                report(name, "mixed", mixed)
                rates = report(name, "recall", recall_only)
                recall_rates[name] = rates.get("recall", 0.0)
                total_errors += sum(mixed.errors.values()) + sum(recall_only.errors.values())
    finally:
        if schemas:
            from meta_memory.agent_memory.store.postgres import PostgresAgentMemoryStore

            for schema in schemas:
                PostgresAgentMemoryStore.drop_schema(args.dsn, schema)
        shutil.rmtree(work, ignore_errors=True)
    if "postgres x1" in recall_rates and recall_rates["postgres x1"]:
        ratio = recall_rates["postgres x2"] / recall_rates["postgres x1"]
        print(f"postgres recall throughput, two gateways / one: {ratio:.2f}x (target >= 1.6x)")
    print(f"errors: {total_errors}")
    return 1 if total_errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
