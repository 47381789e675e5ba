"""Where a public remember's pages go: WAL frames per remember, by table and index.

Run: ``python benchmarks/write_pages.py [--size 1000] [--writes 100] [--seed 7]``

One identity is filled to ``--size`` records through staged batches (not counted), the full-text
index is merged and the WAL checkpointed and truncated; then ``--writes`` public
``meta/agent_memory/remember`` calls run through the method table in process, with the store's
background upkeep held off (no checkpoint), so the WAL holds exactly the pages those
writes committed, and the full-text merges the background upkeep would run meanwhile are run in line
every ``--merge-every`` writes and counted apart. Each WAL frame names the database page it holds; ``dbstat`` says which table or
index owns that page, so the frames are attributed to the b-tree they belong to (page 1, the
database header, as ``(header)``; pages on the freelist as ``(free)``).

Printed: frames per remember by b-tree, the total, and — as the baseline in the same run — the same
count for a raw SQLite insert + FTS5 row + commit of the same text at the same durability into a
database filled to the same size (``benchmarks/agent_memory.py``'s ``RawSqlite``). Frame counts are
a property of the code and the data, not of the machine's load.
"""

from __future__ import annotations

import argparse
import collections
import random
import sqlite3
import struct
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from agent_memory import RawSqlite, _fill_store  # noqa: E402
from meta_memory.config import MetaConfig  # noqa: E402
from meta_memory.recall import fts  # noqa: E402
from meta_memory.rpc.registry import CallContext  # noqa: E402
from meta_memory.runtime import Runtime  # noqa: E402
from meta_memory.server.gateway import Gateway  # noqa: E402
from recall import IDENTITY, Vocabulary  # noqa: E402

_WAL_HEADER = 32
_FRAME_HEADER = 24


def wal_pages(db_path: Path, page_size: int) -> list[int]:
    """The database page number of every frame in ``db_path``'s WAL, in order."""
    data = Path(str(db_path) + "-wal").read_bytes()
    frame = _FRAME_HEADER + page_size
    out = []
    for at in range(_WAL_HEADER, len(data) - frame + 1, frame):
        out.append(struct.unpack(">I", data[at:at + 4])[0])
    return out


def owners(conn: sqlite3.Connection) -> dict[int, str]:
    """Page number -> the table or index owning it (``dbstat``), page 1 as ``(header)``."""
    out = {int(pageno): str(name) for name, pageno in conn.execute("SELECT name, pageno FROM dbstat")}
    out[1] = "(header)" if out.get(1) == "sqlite_schema" else out.get(1, "(header)")
    return out


def attribute(conn: sqlite3.Connection, db_path: Path, writes: int,
              frames: Sequence[bool] | None = None) -> dict[str, float]:
    """Frames per write by owning b-tree; only the frames whose flag in ``frames`` is true, when given."""
    page_size = int(conn.execute("PRAGMA page_size").fetchone()[0])
    by_page = owners(conn)
    pages = wal_pages(db_path, page_size)
    counts: collections.Counter[str] = collections.Counter(
        by_page.get(p, "(free)") for i, p in enumerate(pages) if frames is None or (i < len(frames) and frames[i]))
    return {name: n / writes for name, n in counts.most_common()}


def wal_frames(db_path: Path, page_size: int = 4096) -> int:
    """Frames in ``db_path``'s WAL now (from its size)."""
    size = Path(str(db_path) + "-wal").stat().st_size
    return max(0, (size - _WAL_HEADER) // (_FRAME_HEADER + page_size))


def ours(size: int, writes: int, seed: int, tmp: Path, merge_every: int) -> tuple[dict[str, float], dict[str, float]]:
    """Frames per remember by b-tree: those its own commit wrote, and those of the full-text merges the
    background upkeep would run for it (run here after every ``merge_every`` writes, to completion)."""
    vocab = Vocabulary(random.Random(seed))
    runtime = Runtime(MetaConfig(), tmp / "state")
    try:
        gateway = Gateway.for_runtime(runtime)
        ctx = CallContext(transport="embedded")
        _fill_store(runtime, vocab, size, 1_600_000_000_000)
        for i in range(20):  # warm-up: statement caches, the identity's first write
            gateway.call("meta/agent_memory/remember",
                         {"identity": IDENTITY, "title": f"Warm {i}", "body": vocab.sentence(40)}, ctx)
        store = runtime.agent_memory.store
        store._upkeep.stop()  # no background merge or checkpoint while counting
        db = store._db("default")
        with db.write_lock:
            db.writer.execute("BEGIN IMMEDIATE")
            while store_merge(db.writer):
                pass
            db.writer.execute("COMMIT")
            db.writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        foreground: list[bool] = []  # per WAL frame: written by a remember's commit (else by a merge)
        for i in range(writes):
            gateway.call("meta/agent_memory/remember",
                         {"identity": IDENTITY, "title": vocab.sentence(5).capitalize(), "body": vocab.sentence(40)}, ctx)
            foreground += [True] * (wal_frames(db.path) - len(foreground))
            if (i + 1) % merge_every == 0:
                with db.write_lock:
                    db.writer.execute("BEGIN IMMEDIATE")
                    while store_merge(db.writer):
                        pass
                    db.writer.execute("COMMIT")
                foreground += [False] * (wal_frames(db.path) - len(foreground))
        with db.write_lock:
            return (attribute(db.writer, db.path, writes, foreground),
                    attribute(db.writer, db.path, writes, [not f for f in foreground]))
    finally:
        runtime.close()


def store_merge(conn: sqlite3.Connection) -> bool:
    before = conn.total_changes
    conn.execute(f"INSERT INTO {fts.FTS_TABLE}({fts.FTS_TABLE}, rank) VALUES ('merge', 64)")
    return conn.total_changes - before >= 2


def raw(size: int, writes: int, seed: int, tmp: Path) -> dict[str, float]:
    vocab = Vocabulary(random.Random(seed))
    path = tmp / "raw.sqlite3"
    base = RawSqlite(path)
    base.conn.execute("PRAGMA wal_autocheckpoint = 0")
    base.fill([(vocab.sentence(5).capitalize(), vocab.sentence(40)) for _ in range(size)])
    base.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for _ in range(writes):
        base.write(vocab.sentence(5).capitalize(), vocab.sentence(40))
    try:
        return attribute(base.conn, path, writes)
    finally:
        base.conn.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=1000)
    ap.add_argument("--writes", type=int, default=100)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--merge-every", type=int, default=16,
                    help="writes between two full-text merge rounds (the background upkeep's, run here in line)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        mine, merges = ours(args.size, args.writes, args.seed, Path(tmp), args.merge_every)
        base = raw(args.size, args.writes, args.seed, Path(tmp))
    print(f"WAL frames per write at {args.size} records, {args.writes} writes (no checkpoint while counting)")
    for title, rows in (("public remember, its commit", mine),
                        (f"public remember, full-text merges off the write path (every {args.merge_every} writes)", merges),
                        ("raw insert + FTS5 + commit (FTS5's merges inside the commit)", base)):
        print(f"\n{title}: {sum(rows.values()):.2f} frames per write")
        for name, n in rows.items():
            print(f"  {name:<40} {n:6.2f}")
    print(f"\nframes per commit ours / raw: {sum(mine.values()) / sum(base.values()):.2f}; with the merges: "
          f"{(sum(mine.values()) + sum(merges.values())) / sum(base.values()):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
