"""Ledger index latency against a hand-written durable file replace.

For 0, 1,024 and 4,096 stored assertions, times ``AssertionLedger.index`` on a
real file (health check off) and, interleaved in the same run, writing the same
bytes by hand: write the stage, fsync, rename (and, as a second baseline, also
fsync the directory, which the ledger does too). Prints p50/p99 in milliseconds
and the ledger/baseline ratios.

Usage::

    python3 benchmarks/ledger_index.py [--iterations 300] [--dir PATH] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from meta_memory.clock import ManualClock
from meta_memory.ledger import AssertionLedger, IndexRequest
from meta_memory.ledger.model import MemoryAssertion
from meta_memory.ledger.persistence import dump_state
from meta_memory.stats import percentile

SIZES = (0, 1024, 4096)


def seed_file(path: Path, count: int) -> None:
    assertions = [
        MemoryAssertion(
            assertion_id=f"memory-assert-{i:06d}",
            entity=f"identity:agent-{i % 97}",
            topic=f"topic-{i % 31}",
            store=("knowledge_graph", "vector", "timeline", "todo", "top_of_mind")[i % 5],
            fact=f"Assertion number {i}: production deploys of service {i % 13} require an approval first.",
            metadata={"source": "runbook", "line": i},
            indexed_at_ms=1_700_000_000_000 + i,
        )
        for i in range(count)
    ]
    path.write_bytes(dump_state(assertions, []))


def by_hand(path: Path, data: bytes, fsync_dir: bool) -> None:
    stage = path.with_suffix(".tmp")
    fd = os.open(stage, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(stage, path)
    if fsync_dir:
        dfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def run(size: int, iterations: int, base: Path) -> dict[str, float]:
    """Time ``iterations`` rounds at ``size`` stored assertions.

    Each round, all three operations write the *same new bytes*: a twin
    in-memory ledger fed the same requests and clock yields the bytes before
    anything is timed. The order of the three rotates every round, so each is
    first (writing content the disk has not seen) equally often.
    """
    work = Path(tempfile.mkdtemp(prefix=f"ledger-{size}-", dir=base))
    ledger_path = work / "memory-ledger-state.json"
    seed_file(ledger_path, size)
    clock, twin_clock = ManualClock(1_800_000_000_000), ManualClock(1_800_000_000_000)
    ledger = AssertionLedger(ledger_path, None, clock)
    ledger.load()
    seed_copy = work / "seed.json"
    seed_copy.write_bytes(ledger_path.read_bytes())
    twin = AssertionLedger(seed_copy, None, twin_clock)
    twin.load()
    twin.state_path = None  # the twin only computes the next state; it never writes
    hand_path = work / "hand" / "memory-ledger-state.json"
    hand_path.parent.mkdir()
    index_ms: list[float] = []
    hand_ms: list[float] = []
    hand_dir_ms: list[float] = []
    ops = ("index", "hand", "hand_dir")
    for i in range(iterations + 10):
        req = IndexRequest(
            entity=f"identity:agent-{i % 97}",
            topic="deployment",
            fact=f"Benchmark fact {i}: production deploys require approval.",
            metadata={"source": "bench", "n": i},
        )
        clock.advance(1)
        twin_clock.advance(1)
        twin.index(req)
        state = twin.query()
        data = dump_state(state.assertions, state.conflicts)
        timings: dict[str, float] = {}
        for op in ops[i % 3 :] + ops[: i % 3]:
            t0 = time.perf_counter()
            if op == "index":
                ledger.index(req)
            else:
                by_hand(hand_path, data, fsync_dir=op == "hand_dir")
            timings[op] = (time.perf_counter() - t0) * 1e3
        if i % 50 == 0:
            assert ledger_path.read_bytes() == data, "the hand-written bytes must equal the ledger's"
        if i >= 10:  # warm-up excluded
            index_ms.append(timings["index"])
            hand_ms.append(timings["hand"])
            hand_dir_ms.append(timings["hand_dir"])
    file_bytes = ledger_path.stat().st_size
    return {
        "stored": size,
        "file_bytes": file_bytes,
        "index_p50_ms": statistics.median(index_ms),
        "index_p99_ms": percentile(index_ms, 99),
        "hand_p50_ms": statistics.median(hand_ms),
        "hand_p99_ms": percentile(hand_ms, 99),
        "hand_dirsync_p50_ms": statistics.median(hand_dir_ms),
        "hand_dirsync_p99_ms": percentile(hand_dir_ms, 99),
        "ratio_p99": percentile(index_ms, 99) / percentile(hand_ms, 99),
        "ratio_p99_dirsync": percentile(index_ms, 99) / percentile(hand_dir_ms, 99),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--dir", type=Path, default=None, help="where to create the files (default: system temp)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    base = args.dir or Path(tempfile.gettempdir())
    results = [run(size, args.iterations, base) for size in SIZES]
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"iterations per size: {args.iterations} (after 10 warm-up), files under {base}")
    header = (
        f"{'stored':>7} {'bytes':>9} {'index p50':>10} {'index p99':>10} {'hand p50':>9} {'hand p99':>9} "
        f"{'ratio p99':>9} {'hand+dir p50':>12} {'hand+dir p99':>12} {'ratio':>6}"
    )
    print(header)
    for r in results:
        print(
            f"{r['stored']:>7} {r['file_bytes']:>9} {r['index_p50_ms']:>10.3f} {r['index_p99_ms']:>10.3f} "
            f"{r['hand_p50_ms']:>9.3f} {r['hand_p99_ms']:>9.3f} {r['ratio_p99']:>9.2f} "
            f"{r['hand_dirsync_p50_ms']:>12.3f} {r['hand_dirsync_p99_ms']:>12.3f} {r['ratio_p99_dirsync']:>6.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
