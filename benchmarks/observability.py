"""What operating a gateway costs: metrics on recall latency, and a backup on write latency.

Run: ``python benchmarks/observability.py [--records 20000] [--queries 400] [--writes 300]``

Two parts, each against a baseline measured in the same run:

* ``metrics`` — two gateways serve copies of one state (``--records`` records of one identity, the
  synthetic text of ``benchmarks/recall.py``): one with ``[telemetry] metrics = true`` (the default)
  and one with ``metrics = false``. The same queries go to both, alternating one by one so a noisy
  machine slows both alike, while ``/metrics`` is scraped every second on the first (store census
  included). Figures: recall p50 and p99 over HTTP, on and off, and the ratio on / off.
* ``backup`` — one gateway on such a state takes remembers from one client, one after another:
  first with nothing else running (the baseline), then while ``meta/storage/backup`` copies the
  state back to back. Figures: remember p50 and p99 without and during backups, the ratio, and how
  long one backup of the state took.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import percentile, start_gateway, stop_gateway  # noqa: E402
from agent_memory import IDENTITY, bulk_load  # noqa: E402
from meta_memory.config import parse_config  # noqa: E402
from meta_memory.runtime import Runtime  # noqa: E402
from meta_memory.storage.backup import backup_state  # noqa: E402


def _call(client: httpx.Client, url: str, method: str, params: dict[str, object]) -> float:
    t0 = time.perf_counter()
    body = client.post(url + "/rpc", json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).json()
    elapsed = time.perf_counter() - t0
    if "error" in body:
        raise RuntimeError(f"{method} failed: {body['error']}")
    return elapsed


def _state(root: Path, records: int, seed: int) -> tuple[Path, list[str]]:
    """A state directory with ``records`` records of one identity; the queries for it."""
    state = root / "state"
    runtime = Runtime(parse_config({"agent_memory": {}}), state)
    try:
        queries, _ = bulk_load(runtime, records, seed)
    finally:
        runtime.close()
    return state, queries


def _ms(values: list[float], p: float) -> float:
    return percentile(values, p) * 1000


def metrics_part(root: Path, records: int, n_queries: int, seed: int) -> None:
    state, queries = _state(root, records, seed)
    on_state, off_state = root / "on", root / "off"
    for copy in (on_state, off_state):  # two identical copies: neither gateway serves the file the load wrote
        backup_state(state, copy)
    queries = queries[:n_queries]
    on_cfg = root / "on.toml"
    on_cfg.write_text('[agent_memory]\nrecall_timeout_ms = 30000\n')
    off_cfg = root / "off.toml"
    off_cfg.write_text('[agent_memory]\nrecall_timeout_ms = 30000\n[telemetry]\nmetrics = false\n')
    on_proc, on_url = start_gateway(on_state, config=on_cfg)
    off_proc, off_url = start_gateway(off_state, config=off_cfg)
    stop = threading.Event()
    scrapes = [0]

    def scraper() -> None:
        with httpx.Client(timeout=30) as c:
            while not stop.wait(1.0):
                c.get(on_url + "/metrics").raise_for_status()
                scrapes[0] += 1

    try:
        with httpx.Client(timeout=60) as client:
            for url in (on_url, off_url):  # warm both (the recall index builds on first use)
                for q in queries[:20]:
                    _call(client, url, "meta/agent_memory/recall", {"identity": IDENTITY, "query_text": q})
            thread = threading.Thread(target=scraper, daemon=True)
            thread.start()
            on: list[float] = []
            off: list[float] = []
            for i, q in enumerate(queries):
                params = {"identity": IDENTITY, "query_text": q, "max_entries": 8}
                order = ((on_url, on), (off_url, off)) if i % 2 == 0 else ((off_url, off), (on_url, on))
                for url, into in order:
                    into.append(_call(client, url, "meta/agent_memory/recall", params))
            stop.set()
            thread.join(5)
    finally:
        stop_gateway(on_proc)
        stop_gateway(off_proc)
    print(f"metrics: {records} records, {len(queries)} recalls each, {scrapes[0]} scrapes of /metrics meanwhile")
    print(f"  recall p50  metrics on {_ms(on, 50):7.2f} ms   off {_ms(off, 50):7.2f} ms   on/off {_ms(on, 50) / _ms(off, 50):.3f}")
    print(f"  recall p99  metrics on {_ms(on, 99):7.2f} ms   off {_ms(off, 99):7.2f} ms   on/off {_ms(on, 99) / _ms(off, 99):.3f}")


def backup_part(root: Path, records: int, writes: int, seed: int) -> None:
    state, _ = _state(root, records, seed)
    backups = root / "backups"
    backups.mkdir()
    cfg = root / "backup.toml"
    cfg.write_text(f'[gateway]\nbackup_dir = "{backups}"\n')
    proc, url = start_gateway(state, config=cfg)
    rng = random.Random(seed)
    taken: list[float] = []
    try:
        with httpx.Client(timeout=600) as client:
            def remember(i: int, phase: str) -> float:
                return _call(client, url, "meta/agent_memory/remember",
                             {"identity": IDENTITY, "title": f"{phase} {i}", "body": f"{phase} write {i} {rng.random()}"})

            for i in range(20):
                remember(i, "warm")
            baseline = [remember(i, "baseline") for i in range(writes)]
            stop = threading.Event()

            def backups_loop() -> None:
                n = 0
                with httpx.Client(timeout=600) as c:
                    while not stop.is_set():
                        taken.append(_call(c, url, "meta/storage/backup", {"dest": str(backups / f"b{n}")}))
                        n += 1

            thread = threading.Thread(target=backups_loop, daemon=True)
            thread.start()
            time.sleep(0.2)  # the first backup is under way when the writes start
            during = [remember(i, "during") for i in range(writes)]
            stop.set()
            thread.join(600)
    finally:
        stop_gateway(proc)
    print(f"backup: {records} records, {writes} remembers before and during {len(taken)} backups "
          f"(one took {sum(taken) / max(1, len(taken)):.2f} s)")
    print(f"  remember p50  baseline {_ms(baseline, 50):7.2f} ms   during {_ms(during, 50):7.2f} ms   "
          f"during/baseline {_ms(during, 50) / _ms(baseline, 50):.3f}")
    print(f"  remember p99  baseline {_ms(baseline, 99):7.2f} ms   during {_ms(during, 99):7.2f} ms   "
          f"during/baseline {_ms(during, 99) / _ms(baseline, 99):.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--writes", type=int, default=300)
    parser.add_argument("--parts", default="metrics,backup")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        if "metrics" in parts:
            metrics_part(Path(tmp) / "m", args.records, args.queries, args.seed)
        if "backup" in parts:
            backup_part(Path(tmp) / "b", args.records, args.writes, args.seed)


if __name__ == "__main__":
    main()
