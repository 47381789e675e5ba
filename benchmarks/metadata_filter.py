"""The cost of a metadata filter on recall and list: filtered against unfiltered, same store, same run.

One identity holds ``--records`` records (default 100,000; synthetic text from ``benchmarks/recall.py``),
each with metadata ``{"category": "c<i % 10>", "n": i, "team": {"name": "t<i % 100>"}}``, written in
batches of 1,024 through the store. The in-process recall index is warmed, then the same contextual
queries (three Zipf-drawn words each) are recalled (``max_entries`` 8, the lexical provider, the
runtime's scope re-check) with no filter and with filters matching 90 %, 10 %, 1 % and 0.1 % of the
records; then one page of ``list`` (100 records) with the same filters. Each row is the median and
p95 over the queries, in milliseconds, alternating the variants query by query so the machine's load
falls on all of them alike.

Run: ``python benchmarks/metadata_filter.py [--records 100000] [--queries 200]``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import percentile  # noqa: E402
from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.filters import parse_filter  # noqa: E402
from meta_memory.agent_memory.model import Scope  # noqa: E402
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore  # noqa: E402
from meta_memory.agent_memory.writes import RememberItem  # noqa: E402
from meta_memory.recall.lexical import LexicalRecallProvider  # noqa: E402
from meta_memory.recall.provider import RecallRequest  # noqa: E402
from meta_memory.services.recall_reader import guarded_recall  # noqa: E402
from recall import IDENTITY, Vocabulary  # noqa: E402

REALM = "default"
VARIANTS: list[tuple[str, dict[str, Any] | None]] = [
    ("no filter", None),
    ("90 % match: category $ne c3", {"category": {"$ne": "c3"}}),
    ("10 % match: category = c3", {"category": "c3"}),
    ("1 % match: team.name = t42", {"team.name": "t42"}),
    ("0.1 % match: n < records/1000", {}),  # filled in from --records
]


def fill(store: SqliteAgentMemoryStore, records: int, vocab: Vocabulary) -> float:
    started = time.perf_counter()
    batch: list[RememberItem] = []
    for i in range(records):
        batch.append(RememberItem(f"{vocab.sentence(5).capitalize()} {i}", vocab.sentence(40), (),
                                  {"category": f"c{i % 10}", "n": i, "team": {"name": f"t{i % 100}"}}))
        if len(batch) == 1024 or i == records - 1:
            out = record_writes.remember_many(store, REALM, IDENTITY, batch)
            assert all(o.record is not None for o in out), [o.error for o in out if o.error][:1]
            batch = []
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    VARIANTS[4] = (f"0.1 % match: n < {args.records // 1000}", {"n": {"$lt": args.records // 1000}})
    vocab = Vocabulary(random.Random(args.seed))
    scope = Scope.identity(REALM, IDENTITY)
    provider = LexicalRecallProvider()
    with tempfile.TemporaryDirectory() as tmp, SqliteAgentMemoryStore(Path(tmp) / "am") as store:
        seconds = fill(store, args.records, vocab)
        print(f"{args.records} records written in {seconds:.1f} s")
        started = time.perf_counter()
        assert store.lexical_index.warm(REALM)
        print(f"recall index warm in {time.perf_counter() - started:.1f} s")
        queries = [" ".join(vocab.sample(3)) for _ in range(args.queries)]
        wheres = [(label, parse_filter(flt)) for label, flt in VARIANTS]
        recall_ms: dict[str, list[float]] = {label: [] for label, _ in wheres}
        list_ms: dict[str, list[float]] = {label: [] for label, _ in wheres}
        found: dict[str, list[int]] = {label: [] for label, _ in wheres}
        for q in queries:
            for label, where in wheres:
                request = RecallRequest(identity=IDENTITY, realm=REALM, query_text=q, max_entries=8, where=where)
                t0 = time.perf_counter()
                out = guarded_recall(provider, store, request, scope)
                recall_ms[label].append((time.perf_counter() - t0) * 1000)
                found[label].append(len(out.records))
        for _ in range(max(10, args.queries // 10)):
            for label, where in wheres:
                t0 = time.perf_counter()
                store.list_active(REALM, scope, limit=101, where=where)
                list_ms[label].append((time.perf_counter() - t0) * 1000)
        print(f"\n{args.records} records, {args.queries} queries (recall, max_entries 8) / "
              f"{len(list_ms['no filter'])} list pages (100 records)\n")
        print("| variant | recall p50 ms | recall p95 ms | records per recall | list p50 ms | list p95 ms |")
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        for label, _ in wheres:
            r, li = recall_ms[label], list_ms[label]
            print(f"| {label} | {statistics.median(r):.1f} | {percentile(r, 95):.1f} | "
                  f"{statistics.mean(found[label]):.1f} | {statistics.median(li):.1f} | {percentile(li, 95):.1f} |")


if __name__ == "__main__":
    main()
