"""Export and import throughput at scale: ``meta-memory export`` / ``import`` on one realm.

Run: ``python benchmarks/portability.py [--records 100000]``

A state is bulk-loaded with ``--records`` records of one identity (synthetic text from
``benchmarks/recall.py``), then, in the same run:

* ``export``  — :func:`meta_memory.portability.export_jsonl` to a file (read snapshots page by page,
  one signed JSON line each), against the baseline of writing the same bytes to a file by hand;
* ``import``  — :func:`meta_memory.portability.import_jsonl` of that file into an empty state (both
  passes: every line decoded, checked and its MAC verified under the key that signed it, the erasure
  register consulted, then restore batches through the validator, one
  transaction each, WAL with ``synchronous=FULL``), against the baseline of a raw SQLite insert of
  the same rows into a table and an FTS5 table in transactions of the same size at the same
  durability.

Figures are records per second and the ratio ours / baseline.
"""

from __future__ import annotations

import argparse
import io
import random
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from agent_memory import bulk_load  # noqa: E402
from meta_memory.config import MetaConfig  # noqa: E402
from meta_memory.limits import MAX_BATCH_OPS  # noqa: E402
from meta_memory.portability import export_jsonl, import_jsonl  # noqa: E402
from meta_memory.portability.signing import ExportKey, LineSigner  # noqa: E402
from meta_memory.runtime import Runtime  # noqa: E402
from recall import Vocabulary  # noqa: E402


def raw_insert(path: Path, rows: list[tuple[str, str]]) -> float:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, title TEXT, body TEXT)")
    conn.execute("CREATE VIRTUAL TABLE f USING fts5(title, body)")
    t0 = time.perf_counter()
    for start in range(0, len(rows), MAX_BATCH_OPS):
        conn.execute("BEGIN IMMEDIATE")
        for title, body in rows[start:start + MAX_BATCH_OPS]:
            rid = conn.execute("INSERT INTO t (title, body) VALUES (?, ?)", (title, body)).lastrowid
            conn.execute("INSERT INTO f (rowid, title, body) VALUES (?, ?, ?)", (rid, title, body))
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - t0
    conn.close()
    return elapsed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=100_000)
    args = ap.parse_args()
    n = args.records
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        src = Runtime(MetaConfig(), root / "src")
        bulk_load(src, n, seed=7)
        buf = io.StringIO()
        t0 = time.perf_counter()
        key = ExportKey.new("the benchmark's key")
        summary = export_jsonl(src, buf, signer=LineSigner(key), ledger=False)
        export_s = time.perf_counter() - t0
        src.close()
        text = buf.getvalue()
        dump = root / "dump.jsonl"
        t0 = time.perf_counter()
        with dump.open("w", encoding="utf-8") as fh:
            fh.write(text)
        write_s = time.perf_counter() - t0
        assert summary.total_records == n

        lines = dump.read_bytes().splitlines()
        dst = Runtime(MetaConfig(), root / "dst")
        t0 = time.perf_counter()
        result = import_jsonl(dst, lines, keys=[key])
        import_s = time.perf_counter() - t0
        dst.close()
        assert result.total_created == n and result.verified, result.verification

        vocab = Vocabulary(random.Random(7))
        rows = [(vocab.sentence(5), vocab.sentence(50)) for _ in range(n)]
        raw_s = raw_insert(root / "raw.sqlite3", rows)

    print(f"records: {n}  export file: {len(text) / 1e6:.1f} MB")
    print(f"{'':8} {'ours rec/s':>12} {'baseline rec/s':>15} {'ratio':>7}")
    print(f"{'export':8} {n / export_s:12,.0f} {n / write_s:15,.0f} {write_s / export_s:7.3f}   (baseline: the same bytes written by hand)")
    print(f"{'import':8} {n / import_s:12,.0f} {n / raw_s:15,.0f} {raw_s / import_s:7.3f}   (baseline: raw SQLite insert + FTS5, same batches)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
