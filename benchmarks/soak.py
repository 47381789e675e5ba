"""Soak: mixed traffic over loopback against one gateway, sampling its RSS, open fds and threads.

Usage::

    python benchmarks/soak.py --seconds 180 --workers 4            # starts its own gateway
    python benchmarks/soak.py --url http://127.0.0.1:7420 --pid 1234 # an already running one

Traffic per worker, in a loop: remember (fresh content), recall (query and ``always``), a turn
injection on a fresh session key, a tool result on a fresh identity (every tenth from a web tool,
so the session taints), a tool write, forget of an older record, a ledger index and query. Fresh
session keys and identities on every loop grow the session-state tables (taint, budgets, nonces;
bounded by age and ``session_state_limit``, never evicted).

Prints one line per sample and a summary; exits 1 when growth after warm-up exceeds the bounds
(``--rss-mib``, ``--fds``, ``--threads``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import proc_stats, start_gateway  # noqa: E402

__all__ = ["Sample", "SoakResult", "proc_stats", "run_soak", "start_gateway_process"]


@dataclass(frozen=True)
class Sample:
    """One measurement: seconds since start, RSS (KiB), open fds, threads, calls so far."""

    t: float
    rss_kib: int
    fds: int
    threads: int
    calls: int


@dataclass
class SoakResult:
    """Samples, call counts and errors of one soak run."""

    samples: list[Sample] = field(default_factory=list)
    calls: int = 0
    errors: list[str] = field(default_factory=list)
    sessions: int = 0
    identities: int = 0

    def growth(self, warmup_fraction: float = 0.25) -> dict[str, float]:
        """Max growth after warm-up: ``{rss_mib, fds, threads}`` relative to the first post-warm-up sample."""
        start = self.samples[max(0, int(len(self.samples) * warmup_fraction) - 1)]
        later = self.samples[self.samples.index(start):]
        return {
            "rss_mib": (max(s.rss_kib for s in later) - start.rss_kib) / 1024,
            "fds": max(s.fds for s in later) - start.fds,
            "threads": max(s.threads for s in later) - start.threads,
        }


def start_gateway_process(state_dir: Path) -> tuple[subprocess.Popen[str], str]:
    """``meta-memory serve --port 0`` on ``state_dir``; returns the process and its base URL.
    Its stderr goes to ``<state_dir>/../soak-gateway.log`` (never an unread pipe)."""
    return start_gateway(state_dir, log=state_dir.parent / "soak-gateway.log")


def _worker(url: str, wid: int, stop: threading.Event, counter: Any, result: SoakResult, lock: threading.Lock) -> None:
    ids = itertools.count()
    mine: list[tuple[str, str]] = []
    with httpx.Client(timeout=30) as client:
        def call(method: str, params: dict[str, Any]) -> Any:
            body = client.post(url + "/rpc", json={"jsonrpc": "2.0", "id": next(ids), "method": method,
                                                   "params": params}).json()
            next(counter)
            if "error" in body:
                with lock:
                    if len(result.errors) < 50:
                        result.errors.append(f"{method}: {body['error']}")
                return None
            return body["result"]

        n = 0
        while not stop.is_set():
            n += 1
            ident = f"soak:{wid}:{n % 64}"
            fresh = f"soak-fresh:{wid}:{n}"
            session = f"soak-s:{wid}:{n}"
            rec = call("meta/agent_memory/remember", {"identity": ident, "title": f"soak {wid} {n}",
                                                      "body": f"soak body {wid} {n} " + "lorem ipsum " * (n % 40)})
            if rec:
                mine.append((ident, rec["memory_id"]))
            call("meta/agent_memory/recall", {"identity": ident, "query_text": f"soak body {n % 97} lorem"})
            call("meta/agent_memory/recall", {"identity": ident, "selection": "always", "max_entries": 8})
            call("meta/turn/inject", {"identity": ident, "session_key": session, "query_text": "soak lorem"})
            call("meta/session/note", {"identity": fresh, "session_key": session})
            call("meta/turn/tool_result", {"identity": fresh, "session_key": session,
                                           "tool_name": "web_fetch" if n % 10 == 0 else "calculator"})
            call("meta/agent_memory/tool", {"identity": fresh, "session_key": session, "arguments": {
                "action": "remember", "title": f"tool {wid} {n}", "body": f"tool body {wid} {n}"}})
            if len(mine) > 50:
                old_ident, old_id = mine.pop(0)
                call("meta/agent_memory/forget", {"identity": old_ident, "memory_id": old_id})
            if n % 5 == 0:
                call("meta/memory/index", {"entity": f"soak-{wid}-{n % 50}", "topic": "soak", "fact": f"f {n}"})
                call("meta/memory/query", {"entity": f"soak-{wid}-{n % 50}"})
            with lock:
                result.sessions += 1
                result.identities += 1


def run_soak(url: str, pid: int, seconds: float, workers: int = 4, interval: float = 0.5,
             verbose: bool = False) -> SoakResult:
    """Drive mixed traffic for ``seconds`` with ``workers`` threads, sampling ``pid`` every ``interval`` s."""
    result = SoakResult()
    stop = threading.Event()
    counter = itertools.count()
    lock = threading.Lock()
    threads = [threading.Thread(target=_worker, args=(url, w, stop, counter, result, lock), daemon=True)
               for w in range(workers)]
    start = time.monotonic()
    for t in threads:
        t.start()
    try:
        while time.monotonic() - start < seconds:
            rss, fds, nthreads = proc_stats(pid)
            calls = next(counter)
            sample = Sample(round(time.monotonic() - start, 2), rss, fds, nthreads, calls)
            result.samples.append(sample)
            if verbose:
                print(json.dumps(sample.__dict__), flush=True)
            time.sleep(interval)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    result.calls = next(counter)
    rss, fds, nthreads = proc_stats(pid)
    result.samples.append(Sample(round(time.monotonic() - start, 2), rss, fds, nthreads, result.calls))
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=180.0)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--url")
    ap.add_argument("--pid", type=int)
    ap.add_argument("--rss-mib", type=float, default=64.0, help="allowed RSS growth after warm-up")
    ap.add_argument("--fds", type=int, default=8, help="allowed fd growth after warm-up")
    ap.add_argument("--threads", type=int, default=8, help="allowed thread growth after warm-up")
    args = ap.parse_args(argv)
    proc = None
    if args.url:
        if args.pid is None:
            ap.error("--url needs --pid (to sample the process)")
        url, pid = args.url, args.pid
    else:
        proc, url = start_gateway_process(Path(tempfile.mkdtemp(prefix="meta-soak-")) / "state")
        pid = proc.pid
    try:
        res = run_soak(url, pid, args.seconds, args.workers, verbose=True)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)
    g = res.growth()
    first, last = res.samples[0], res.samples[-1]
    print(json.dumps({"calls": res.calls, "calls_per_s": round(res.calls / args.seconds), "errors": len(res.errors),
                      "fresh_sessions": res.sessions, "fresh_identities": res.identities,
                      "rss_mib": [first.rss_kib // 1024, last.rss_kib // 1024],
                      "fds": [first.fds, last.fds], "threads": [first.threads, last.threads],
                      "growth_after_warmup": g}))
    ok = not res.errors and g["rss_mib"] <= args.rss_mib and g["fds"] <= args.fds and g["threads"] <= args.threads
    for e in res.errors[:5]:
        print("error:", e, file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
