"""Readiness cost: what ``GET /v1/ready`` reads per request, beside ``PRAGMA quick_check`` of a large realm.

Usage::

    python benchmarks/readiness.py                              # 500 small realms + one of 100,000 records
    python benchmarks/readiness.py --realms 50 --large 5000     # a quick run

Builds a state directory (the bundled SQLite store: ``--realms`` realms of ``--small`` records each,
plus one realm of ``--large`` records), then opens an embedded runtime on it (no background threads)
and times, each as the median of ``--rounds`` runs:

1. ``cold``: one readiness evaluation where every realm file is checked (header, read-only open, the
   schema page): the first request after start, or after every realm changed;
2. ``warm``: one evaluation when no file changed since it last passed (a ``stat`` of each file and
   its ``-wal``): the steady state of an idle installation;
3. ``one_changed``: after a write to one small realm (that realm is probed again, the others not);
4. ``probe_large``: the cheap probe of the large realm alone;
5. ``quick_check_large``: ``PRAGMA quick_check`` of the large realm (every page read): what the
   background integrity check costs per file, and why it never runs inside a request.

Every figure is also printed as a ratio to a baseline measured in the same run: ``meta/turn/defang``
of a short text through the method table (a call that touches no state). Prints ``key=value`` lines.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from meta_memory.agent_memory.writes import RememberItem
from meta_memory.clock import ManualClock
from meta_memory.config import MetaConfig
from meta_memory.rpc.methods import build_method_table
from meta_memory.rpc.registry import CallContext
from meta_memory.runtime import Runtime
from meta_memory.storage.integrity import probe


def median_ms(rounds: int, fn: Callable[[], object], before: Callable[[], object] | None = None) -> float:
    times = []
    for _ in range(rounds):
        if before is not None:
            before()
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def build(root: Path, realms: int, small: int, large: int) -> None:
    store = SqliteAgentMemoryStore(root, ManualClock(1_700_000_000_000))
    try:
        for r in range(realms):
            record_writes.remember_many(store, f"small-{r}", "lead:main", [
                RememberItem(f"note {i} of realm {r}", f"the harbour ferry leaves at {i} in realm {r}", ())
                for i in range(small)])
        for start in range(0, large, 500):
            record_writes.remember_many(store, "large", "lead:main", [
                RememberItem(f"record {i}", f"record {i} says the harbour ferry timetable changes on day {i % 365}",
                             (f"t{i % 50}",)) for i in range(start, min(large, start + 500))])
    finally:
        store.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--realms", type=int, default=500)
    ap.add_argument("--small", type=int, default=20)
    ap.add_argument("--large", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="meta-bench-ready-") as tmp:
        state = Path(tmp) / "state"
        t0 = time.perf_counter()
        build(state / "agent-memory", args.realms, args.small, args.large)
        print(f"built_s={time.perf_counter() - t0:.1f} realms={args.realms + 1}")
        rt = Runtime(MetaConfig(), state, start_background=False)
        try:
            assert rt.readiness is not None and rt.agent_memory is not None
            table, ctx = build_method_table(), CallContext(transport="embedded")
            base = median_ms(max(args.rounds, 50), lambda: table.call(rt, ctx, "meta/turn/defang", {"text": "hello"}))
            store = rt.agent_memory.store
            large = store.paths.realm_db_path("large")  # type: ignore[attr-defined]
            forget = lambda: setattr(store, "_probed", {})  # noqa: E731 - every file unchecked again
            figures = {
                "cold": median_ms(args.rounds, rt.readiness._evaluate, before=forget),
                "warm": median_ms(args.rounds, rt.readiness._evaluate),
                "one_changed": median_ms(args.rounds, rt.readiness._evaluate, before=lambda: record_writes.remember(store,
                    "small-0", "lead:main", f"touch {time.perf_counter_ns()}", "a new record")),
                "probe_large": median_ms(args.rounds, lambda: probe(large)),
                "quick_check_large": median_ms(max(1, args.rounds // 2), lambda: probe(large, full=True)),
            }
            failing = rt.readiness._evaluate()
            print(f"baseline_defang_ms={base:.4f} large_realm_mb={large.stat().st_size / 1e6:.1f} "
                  f"ready={not failing}")
            for name, ms in figures.items():
                print(f"{name}_ms={ms:.3f} {name}_x_baseline={ms / base:.0f}")
            print(f"quick_check_large_x_warm={figures['quick_check_large'] / figures['warm']:.0f}")
        finally:
            rt.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
