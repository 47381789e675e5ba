"""An erase's field-closure scan: the records of a scope showing an erased body in any field.

One process, the real SQLite record store in a temporary directory (no gateway). ``--records`` records of
one identity are written through the store's validator, each showing ``--fields`` text fields long enough
to count for the field-level erasure register (a title, a body, a description, a tag and metadata strings
of four words and more), plus one record to erase and three copies of its body, stored before the erase
as another record's description, tag and metadata string. Timed:

- ``baseline``: a plain read of every row of the scope, parsed into records (what the scan reads anyway);
- ``erase (dry run)``: ``store.erase(..., dry_run=True)`` of the one record: its content closure, the
  field scan included, in the realm's write transaction, under its write lock. Checked: the closure holds
  the record and its three copies, and nothing else.

Reported: records, fields per record, seconds of each (best of ``--repeat``) and their ratio.

Run: ``python benchmarks/erase_fields.py [--records 12288] [--fields 132] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.batch import CreateOp, StagedBatch
from meta_memory.agent_memory.model import Author, NewMemoryRecord, Provenance, Scope
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from meta_memory.clock import SystemClock
from meta_memory.limits import MAX_BATCH_OPS

REALM, IDENTITY = "default", "bench"
AUTHOR = Author.application()
SECRET = "The back door code is 4471 and the alarm word is heron"
WORDS = ("amber", "basil", "cedar", "delta", "ember", "fable", "grove", "harbor", "island", "juniper", "kettle",
         "lantern", "meadow", "nectar", "orchard", "pepper", "quartz", "river", "saffron", "timber", "umber",
         "valley", "willow", "yarrow", "zephyr")


def _phrase(rng: random.Random, words: int = 5) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)) + f" {rng.randrange(10**6)}"


def _record(rng: random.Random, fields: int, **over: Any) -> NewMemoryRecord:
    meta = {f"k{i:03d}": _phrase(rng) for i in range(max(0, fields - 4))}
    base: dict[str, Any] = {"title": _phrase(rng, 3), "body": _phrase(rng, 8), "description": _phrase(rng),
                            "tags": (_phrase(rng, 3),), "metadata": meta}
    base.update(over)
    return NewMemoryRecord(provenance=Provenance(AUTHOR), **base)


def build(store: SqliteAgentMemoryStore, n: int, fields: int, seed: int) -> tuple[str, list[str]]:
    """Write the corpus; returns the id of the record to erase and the ids of its copies."""
    rng = random.Random(seed)
    scope = Scope.identity(REALM, IDENTITY)
    recs = [_record(rng, fields) for _ in range(n)]
    copies = [_record(rng, fields, description=SECRET), _record(rng, fields, tags=(SECRET.lower(),)),
              _record(rng, fields, metadata={"note": SECRET})]
    target = _record(rng, fields, title="Door code", body=SECRET)
    ids = [f"mem-bench-{i:06d}" for i in range(n + 4)]
    ops = [CreateOp(scope=scope, record=r, id=i) for r, i in zip([*recs, *copies, target], ids, strict=True)]
    for start in range(0, len(ops), MAX_BATCH_OPS):
        record_writes.apply_batch(store, StagedBatch(realm=REALM, author=AUTHOR, ops=tuple(ops[start:start + MAX_BATCH_OPS])))
    return ids[-1], ids[n:n + 3]


def best(fn: Any, repeat: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=12_288)
    ap.add_argument("--fields", type=int, default=132, help="text fields per record (at most 132: 128 metadata strings)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="erase-fields-") as tmp:
        store = SqliteAgentMemoryStore(Path(tmp) / "agent-memory", SystemClock())
        try:
            t0 = time.perf_counter()
            target, copies = build(store, args.records, args.fields, args.seed)
            load_s = time.perf_counter() - t0
            scope = Scope.identity(REALM, IDENTITY)

            def read_all() -> int:
                with store.transaction(REALM) as tx:
                    return len(store._scope_records(tx._sql.conn, REALM, scope))

            def erase() -> list[str]:
                report = store.erase(REALM, scope, target, erased_by="bench", dry_run=True)
                return sorted(r.memory_id for r in report.records)

            base_s, rows = best(read_all, args.repeat)
            erase_s, taken = best(erase, args.repeat)
        finally:
            store.close()
    ok = taken == sorted([target, *copies])
    print(f"records {rows:,} (loaded in {load_s:.1f} s), fields per record {args.fields}")
    print(f"baseline (plain read of the scope): {base_s:.2f} s")
    print(f"erase, dry run (closure with field scan): {erase_s:.2f} s  = {erase_s / base_s:.1f}x baseline")
    print(f"closure: {len(taken)} records, {'the record and its 3 copies' if ok else 'WRONG: ' + repr(taken)}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
