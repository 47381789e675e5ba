"""Single public ``remember``s right after a bulk load, beside the same writes into a small identity.

One process, one run, embedded SDK handle (the method table, validation, the store; no socket):

1. ``small``: ``--small`` records of one identity bulk-loaded through ``remember_batch`` into a fresh
   state directory, then ``--writes`` single ``meta/agent_memory/remember`` calls into it, timed.
2. ``after bulk``: ``--records`` records of another identity bulk-loaded the same way into another
   fresh state directory, then at once (no pause: the background upkeep's full-text merges and
   checkpoints are still running) the same number of single remembers into it, timed.

Reported: p50/p99 of both and their ratio (the goal is ``after bulk`` p50 <= 1.5x ``small`` p50),
plus, for each run, how long the background upkeep held the realm's writer
while the timed writes ran (the writer lock's hold time by the upkeep thread, measured by a timing
wrapper this script installs around the store's merge step; nothing in product code).

Run: ``python benchmarks/write_after_bulk.py [--records 100000] [--small 3000] [--writes 200]``.
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

from _common import percentile  # noqa: E402
from meta_memory.agent_memory.store import upkeep  # noqa: E402
from meta_memory.sdk import Meta  # noqa: E402
from recall import Vocabulary, make_records  # noqa: E402

BATCH = 1000


class MergeClock:
    """Seconds the background merge steps ran while ``enabled`` (each step holds the realm's writer)."""

    def __init__(self) -> None:
        self.total = 0.0
        self.steps = 0
        self.enabled = False
        inner = upkeep.merge_step

        def timed(conn: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return inner(conn)
            finally:
                if self.enabled:
                    self.total += time.perf_counter() - t0
                    self.steps += 1

        upkeep.merge_step = timed  # type: ignore[assignment]


def one(identity: str, n_records: int, n_writes: int, seed: int, merges: MergeClock) -> dict[str, Any]:
    vocab = Vocabulary(random.Random(seed))
    records = make_records(n_records + n_writes, vocab)
    with tempfile.TemporaryDirectory(prefix="write-after-bulk-") as tmp, \
            Meta.builder().persistent_state(Path(tmp) / "state").build() as h:
        t0 = time.perf_counter()
        for i in range(0, n_records, BATCH):
            items = [{"title": r.title, "body": r.body, "tags": list(r.tags)} for r in records[i:min(i + BATCH, n_records)]]
            h.call("meta/agent_memory/remember_batch", {"identity": identity, "records": items})
        load_s = time.perf_counter() - t0
        merges.total, merges.steps, merges.enabled = 0.0, 0, True
        ms: list[float] = []
        t_writes = time.perf_counter()
        for r in records[n_records:]:
            t0 = time.perf_counter()
            h.call("meta/agent_memory/remember", {"identity": identity, "title": r.title, "body": r.body,
                                                  "tags": list(r.tags)})
            ms.append((time.perf_counter() - t0) * 1000)
        writes_s = time.perf_counter() - t_writes
        merges.enabled = False
    return {"records": n_records, "load_s": load_s, "p50": statistics.median(ms), "p99": percentile(ms, 99),
            "merge_s": merges.total, "merge_steps": merges.steps, "writes_s": writes_s}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--small", type=int, default=3_000)
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    merges = MergeClock()
    small = one("lead:small", args.small, args.writes, args.seed, merges)
    big = one("lead:bulk", args.records, args.writes, args.seed, merges)
    print(f"{'run':<24} {'records':>8} {'load s':>7} {'p50 ms':>7} {'p99 ms':>7} {'merging s':>9} {'of writes s':>11}")
    for name, r in (("small identity", small), ("right after bulk load", big)):
        print(f"{name:<24} {r['records']:>8} {r['load_s']:>7.1f} {r['p50']:>7.2f} {r['p99']:>7.2f} "
              f"{r['merge_s']:>9.2f} {r['writes_s']:>11.2f}")
    print(f"after bulk / small: p50 {big['p50'] / small['p50']:.2f}x, p99 {big['p99'] / small['p99']:.2f}x "
          "(goal p50 <= 1.5x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
