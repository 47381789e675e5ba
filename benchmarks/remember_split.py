"""Where a single public remember's CPU goes against the raw writer: Python, SQL, and the commit's frames.

Run: ``python benchmarks/remember_split.py [--size 1000] [--writes 300] [--rounds 3] [--seed 7]``

One identity is filled to ``--size`` records through staged batches (not counted), and the raw writer
of ``benchmarks/agent_memory.py`` (a record table with a unique id and an FTS5 table, one transaction per
record, WAL, ``synchronous=FULL``) is filled to the same size in the same directory. Then
``--writes`` public ``meta/agent_memory/remember`` calls run through the method table in process
while the statements each one sends to the realm's writer are recorded (SQL and parameters). Then, for
``--rounds`` rounds, write by write and interleaved, the timed thread's CPU (``time.thread_time``:
user and system, so the WAL writes and the ``fdatasync`` are in it, waiting for the disk is not) of:

* a new public remember of a new text;
* the statements of a recorded remember replayed alone on the same writer, under its write lock, with a
  new record id (the rows are new rows; the row id the full-text row points at is the new record's):
  the same SQL, the same ``BEGIN IMMEDIATE``, ``COMMIT`` and durability, without any Python of the
  store, the validator or the method table around them. This is what a remember would cost if its
  Python cost nothing: the most a change of the Python alone can reach;
* the raw writer's write of the same text.

The ``COMMIT`` of the replay and of the raw write are timed on their own too. Last, the commit's cost
per page on this disk: a transaction changing ``n`` pages (one row in each of ``n`` small tables) is
committed 200 times at ``synchronous=FULL`` and at ``NORMAL``; the slope is the CPU a WAL frame costs,
the gap between the two the ``fdatasync``. ``benchmarks/write_pages.py`` says how many frames each
commit writes and to which b-trees.

Printed: mean and median µs per write of each, and the ratios raw / remember and raw / replay (the CPU
ratio the remember benchmark reports, and its ceiling with no Python).
"""

from __future__ import annotations

import argparse
import collections
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from agent_memory import RawSqlite, _fill_store  # noqa: E402
from meta_memory.config import MetaConfig  # noqa: E402
from meta_memory.rpc.registry import CallContext  # noqa: E402
from meta_memory.runtime import Runtime  # noqa: E402
from meta_memory.server.gateway import Gateway  # noqa: E402
from recall import IDENTITY, Vocabulary  # noqa: E402

_REMEMBER = "meta/agent_memory/remember"


class _Recording:
    """A stand-in for the realm's writer connection that records each ``execute`` (SQL, parameters)."""

    def __init__(self, conn: sqlite3.Connection, log: list[tuple[str, tuple[Any, ...]]]) -> None:
        self._conn = conn
        self._log = log

    def execute(self, sql: str, params: Any = ()) -> sqlite3.Cursor:
        self._log.append((sql, tuple(params)))
        return self._conn.execute(sql, params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def _replay(conn: sqlite3.Connection, log: list[tuple[str, tuple[Any, ...]]], tag: str) -> float:
    """Run a recorded remember's statements again on ``conn`` with a new record id; returns the CPU of its COMMIT."""
    commit = 0.0
    rid = 0
    for sql, params in log:
        params = tuple(p.replace("mem-", f"mem-{tag}-", 1) if isinstance(p, str) and p.startswith("mem-") else p
                       for p in params)
        if sql.startswith("INSERT INTO records_fts(") or sql.startswith("INSERT INTO records_fts_log"):
            params = (rid, *params[1:])
        if sql == "COMMIT":
            c0 = time.thread_time()
            conn.execute(sql)
            commit = time.thread_time() - c0
            continue
        cur = conn.execute(sql, params)
        if sql.startswith("INSERT INTO records("):
            rid = int(cur.lastrowid or 0)
    return commit


def _raw_write(raw: RawSqlite, title: str, body: str) -> float:
    """The raw writer's write; returns the CPU of its COMMIT."""
    raw.conn.execute("BEGIN IMMEDIATE")
    raw._insert(title, body)
    c0 = time.thread_time()
    raw.conn.execute("COMMIT")
    return time.thread_time() - c0


def commit_per_page(directory: Path, pages: tuple[int, ...] = (1, 10, 20, 30), commits: int = 200) -> dict[str, list[float]]:
    """µs of CPU a ``COMMIT`` costs by pages changed (``pages``), at ``synchronous=FULL`` and ``NORMAL``."""
    conn = sqlite3.connect(directory / "pages.sqlite3", isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    for i in range(max(pages)):
        conn.execute(f"CREATE TABLE t{i} (a INTEGER PRIMARY KEY, b)")
        conn.execute(f"INSERT INTO t{i} VALUES (1, 0)")
    out: dict[str, list[float]] = {}
    for sync in ("FULL", "NORMAL"):
        conn.execute(f"PRAGMA synchronous={sync}")
        costs = []
        for n in pages:
            spent = 0.0
            for k in range(commits):
                conn.execute("BEGIN IMMEDIATE")
                for i in range(n):
                    conn.execute(f"UPDATE t{i} SET b = ? WHERE a = 1", (k,))
                c0 = time.thread_time()
                conn.execute("COMMIT")
                spent += time.thread_time() - c0
                if k % 100 == 99:
                    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            costs.append(spent / commits * 1e6)
        out[sync] = costs
    conn.close()
    return out


def run(size: int, writes: int, rounds: int, seed: int, tmp: Path) -> dict[str, list[float]]:
    """Thread CPU (s) per write of each kind (see the module doc)."""
    vocab = Vocabulary(random.Random(seed))
    runtime = Runtime(MetaConfig(), tmp / "state")
    try:
        gateway = Gateway.for_runtime(runtime)
        ctx = CallContext(transport="embedded")
        _fill_store(runtime, vocab, size, 1_600_000_000_000)
        raw = RawSqlite(tmp / "raw.sqlite3")
        raw.fill([(vocab.sentence(5).capitalize(), vocab.sentence(40)) for _ in range(size)])
        for i in range(20):  # warm-up: statement caches, the identity's first write
            gateway.call(_REMEMBER, {"identity": IDENTITY, "title": f"Warm {i}", "body": vocab.sentence(40)}, ctx)
        db = runtime.agent_memory.store._db("default")
        writer = db.writer
        logs: list[list[tuple[str, tuple[Any, ...]]]] = []
        for _ in range(writes):
            log: list[tuple[str, tuple[Any, ...]]] = []
            db.writer = _Recording(writer, log)  # type: ignore[assignment]
            try:
                gateway.call(_REMEMBER, {"identity": IDENTITY, "title": vocab.sentence(5).capitalize(),
                                         "body": vocab.sentence(40)}, ctx)
            finally:
                db.writer = writer
            logs.append(log)
        # the statements of a plain remember (the writes that also refreshed the planner's statistics left out)
        usual = collections.Counter(len(log) for log in logs).most_common(1)[0][0]
        logs = [log for log in logs if len(log) == usual]
        cpu: dict[str, list[float]] = {k: [] for k in ("remember", "replay", "replay COMMIT", "raw", "raw COMMIT")}
        for r in range(rounds):
            for k, log in enumerate(logs):
                title, body = vocab.sentence(5).capitalize(), vocab.sentence(40)
                c0 = time.thread_time()
                gateway.call(_REMEMBER, {"identity": IDENTITY, "title": title, "body": body}, ctx)
                c1 = time.thread_time()
                with db.write_lock:
                    commit = _replay(writer, log, f"r{r}x{k}")
                c2 = time.thread_time()
                raw_commit = _raw_write(raw, title, body)
                c3 = time.thread_time()
                cpu["remember"].append(c1 - c0)
                cpu["replay"].append(c2 - c1)
                cpu["replay COMMIT"].append(commit)
                cpu["raw"].append(c3 - c2)
                cpu["raw COMMIT"].append(raw_commit)
        cpu["statements"] = [float(usual)]
        # what the replays left in the realm: their records, each with its full-text row and its audit row
        cpu["replayed rows"] = [float(writer.execute(
            "SELECT count(*) FROM records r JOIN records_fts f ON f.rowid = r.rid "
            "JOIN audit a ON a.memory_id = r.memory_id WHERE r.memory_id LIKE 'mem-r%'").fetchone()[0])]
        return cpu
    finally:
        runtime.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--writes", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        cpu = run(args.size, args.writes, args.rounds, args.seed, Path(tmp))
        pages = commit_per_page(Path(tmp))
    statements = int(cpu.pop("statements")[0])
    replayed = int(cpu.pop("replayed rows")[0])
    print(f"thread CPU a write at {args.size} records, {len(cpu['remember'])} writes of each, "
          f"{statements} statements a remember; the replays left {replayed} records with their full-text "
          "and audit rows")
    print(f"{'':16s} {'mean µs':>9s} {'median µs':>10s}")
    for name, values in cpu.items():
        print(f"{name:16s} {statistics.mean(values) * 1e6:9.1f} {statistics.median(values) * 1e6:10.1f}")
    med = {k: statistics.median(v) for k, v in cpu.items()}
    print(f"CPU raw / remember {med['raw'] / med['remember']:.2f}; raw / replay (no Python) "
          f"{med['raw'] / med['replay']:.2f}; the remember's Python {(med['remember'] - med['replay']) * 1e6:.0f} µs")
    print("COMMIT CPU by pages changed, µs:")
    for sync, costs in pages.items():
        print(f"  synchronous={sync:6s} " + ", ".join(f"{n} pages {c:.0f}" for n, c in zip((1, 10, 20, 30), costs,
                                                                                            strict=True)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
