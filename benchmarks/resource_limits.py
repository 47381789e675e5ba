"""Resource limits under a greedy or hostile client, against one real gateway over loopback.

Usage::

    python benchmarks/resource_limits.py                 # starts its own gateway on a temp state dir
    python benchmarks/resource_limits.py --reads 1000 --writes 1000 --probes 200 --hostile 16

Phases (bounded: about a minute on a 2-vCPU machine):

1. **new-realm reads**: ``--reads`` recalls, each on a realm never written to. Prints the gateway's
   open file descriptors and RSS before and after, and how many realm databases exist (reads create none).
2. **new-realm writes**: ``--writes`` remembers, each on a new realm (under ``max_realms``). Prints fds,
   RSS and realm databases after (open connections stay bounded by ``max_open_realms``).
3. **recall under hostile load**: another identity's recall and turn injection latency (p50/p99) first
   alone, then while ``--hostile`` clients loop memory-tool recalls with 256 KiB of query text and the
   same number loop the largest recall the rule admits (16 KiB, many distinct terms). Prints each as a
   ratio to the unloaded figure measured in the same run, and how many probes were refused.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import percentile, proc_stats, start_gateway  # noqa: E402


class Rpc:
    def __init__(self, url: str) -> None:
        self.url = url + "/rpc"
        self.local = threading.local()

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        client = getattr(self.local, "client", None)
        if client is None:
            client = self.local.client = httpx.Client(timeout=120)
        return client.post(self.url, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).json()


def realm_files(state_dir: Path) -> int:
    return sum(1 for _ in (state_dir / "agent-memory").glob("*.sqlite3"))


def probe_latencies(rpc: Rpc, n: int) -> tuple[list[float], list[float], int]:
    """``n`` recall + inject pairs by the patient identity: (recall ms, inject ms, refusals)."""
    recalls, injects, refused = [], [], 0
    for i in range(n):
        t0 = time.perf_counter()
        a = rpc.call("meta/agent_memory/recall", {"identity": "bench:patient", "query_text": f"kettle note {i % 50}"})
        t1 = time.perf_counter()
        b = rpc.call("meta/turn/inject", {"identity": "bench:patient", "query_text": f"the kettle {i % 50}?"})
        t2 = time.perf_counter()
        recalls.append((t1 - t0) * 1000)
        injects.append((t2 - t1) * 1000)
        refused += ("error" in a) + ("error" in b)
    return recalls, injects, refused


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reads", type=int, default=1000)
    ap.add_argument("--writes", type=int, default=1000)
    ap.add_argument("--probes", type=int, default=200)
    ap.add_argument("--hostile", type=int, default=16)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="mm-limits-") as tmp:
        state = Path(tmp) / "state"
        state.mkdir()
        proc, url = start_gateway(state, log=state.parent / "gateway.log")
        rpc = Rpc(url)
        try:
            rpc.call("meta/agent_memory/remember", {"identity": "bench:patient", "title": "warm", "body": "up"})
            rss0, fds0, _ = proc_stats(proc.pid)
            print(f"start: fds {fds0}, RSS {rss0 / 1024:.0f} MiB, realm databases {realm_files(state)}")

            t0 = time.perf_counter()
            with ThreadPoolExecutor(4) as pool:
                list(pool.map(lambda i: rpc.call("meta/agent_memory/recall", {
                    "identity": "bench:reader", "realm": f"ghost-{i}", "query_text": "anything"}), range(args.reads)))
            rss, fds, _ = proc_stats(proc.pid)
            print(f"after {args.reads} new-realm reads ({time.perf_counter() - t0:.1f} s): fds {fds} "
                  f"({fds / fds0:.2f}x start), RSS {rss / 1024:.0f} MiB ({rss / rss0:.2f}x), "
                  f"realm databases {realm_files(state)}")

            t0 = time.perf_counter()
            with ThreadPoolExecutor(4) as pool:
                outs = list(pool.map(lambda i: rpc.call("meta/agent_memory/remember", {
                    "identity": "bench:writer", "realm": f"new-{i}", "title": "t", "body": f"b {i}"}),
                    range(args.writes)))
            errors = sum("error" in o for o in outs)
            rss, fds, _ = proc_stats(proc.pid)
            print(f"after {args.writes} new-realm writes ({time.perf_counter() - t0:.1f} s, {errors} refused): "
                  f"fds {fds} ({fds / fds0:.2f}x start), RSS {rss / 1024:.0f} MiB ({rss / rss0:.2f}x), "
                  f"realm databases {realm_files(state)}")

            for i in range(50):
                rpc.call("meta/agent_memory/remember", {"identity": "bench:patient", "title": f"Kettle {i}",
                                                        "body": f"kettle note {i}: descale monthly"})
            probe_latencies(rpc, 20)  # warm-up
            base_r, base_i, base_refused = probe_latencies(rpc, args.probes)

            stop = threading.Event()
            counts = {"hostile": 0}
            huge = "appointment tuesday dentist kettle " * (256 * 1024 // 35)
            at_cap = " ".join(f"w{i:04d}x" for i in range(16_000 // 7))

            def hostile(k: int) -> None:
                own = Rpc(url)
                while not stop.is_set():
                    if k % 2:
                        own.call("meta/agent_memory/tool", {"identity": f"bench:hostile-{k}", "session_key": "h",
                                                            "arguments": {"action": "recall", "query_text": huge}})
                    else:
                        own.call("meta/agent_memory/recall", {"identity": f"bench:hostile-{k}", "query_text": at_cap})
                    counts["hostile"] += 1

            threads = [threading.Thread(target=hostile, args=(k,), daemon=True) for k in range(args.hostile * 2)]
            for t in threads:
                t.start()
            time.sleep(1.0)
            load_r, load_i, load_refused = probe_latencies(rpc, args.probes)
            stop.set()
            for t in threads:
                t.join(timeout=60)

            def line(name: str, base: list[float], load: list[float]) -> str:
                b50, b99, l50, l99 = (percentile(v, q) for v in (base, load) for q in (50, 99))
                return (f"{name}: alone p50 {b50:.1f} ms p99 {b99:.1f} ms; under hostile load p50 {l50:.1f} ms "
                        f"p99 {l99:.1f} ms; ratio p50 {l50 / b50:.2f}x p99 {l99 / b99:.2f}x")

            print(f"hostile clients: {args.hostile} x 256 KiB tool recalls + {args.hostile} x at-cap recalls, "
                  f"{counts['hostile']} hostile calls during {args.probes} probes")
            print(line("other identity's recall", base_r, load_r))
            print(line("other identity's inject", base_i, load_i))
            print(f"probe refusals: alone {base_refused}, under load {load_refused}")
            t0 = time.perf_counter()
            proc.terminate()
            proc.wait(timeout=60)
            print(f"SIGTERM to exit: {time.perf_counter() - t0:.2f} s (exit code {proc.returncode})")
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
