"""Recall's answers over the synthetic records of ``benchmarks/recall.py``, written to a file to compare two codes.

One identity, ``--records`` records written through ``meta/agent_memory/remember_batch`` into a fresh SQLite
state directory of an embedded gateway, then every query recalled at each ``--max-entries`` (8 and 20 by
default) once the in-process recall index is ready. Each answer is written as a JSON line: the query's
place, ``max_entries``, and the returned records' titles and bodies in order (record ids differ from run to
run, so the text names the records). Run it on two checkouts and ``diff`` the files:
a change meant to keep the ranking must leave them equal.

Run: ``python benchmarks/recall_answers.py --out answers.jsonl [--records 3000] [--queries 300] [--seed 7]``
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from meta_memory.sdk import Meta  # noqa: E402
from recall import Vocabulary, make_queries, make_records  # noqa: E402
from recall_vs_bm25 import IDENTITY, load_ours, wait_for_index  # noqa: E402


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--records", type=int, default=3000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--max-entries", type=int, nargs="+", default=[8, 20])
    args = parser.parse_args(argv)
    vocab = Vocabulary(random.Random(args.seed))
    records = make_records(args.records, vocab)
    queries = make_queries(args.queries, vocab)
    lines = []
    with tempfile.TemporaryDirectory(prefix="recall-answers-") as tmp:
        with Meta.builder().persistent_state(Path(tmp) / "state").agent_memory(recall_timeout_ms=30_000).build() as handle:
            load_ours(handle, records)
            handle.call("meta/agent_memory/recall", {"identity": IDENTITY, "query_text": queries[0], "max_entries": 8})
            wait_for_index(handle)
            for n in args.max_entries:
                for k, q in enumerate(queries):
                    out = handle.call("meta/agent_memory/recall",
                                      {"identity": IDENTITY, "query_text": q, "max_entries": n})
                    got = [[e["title"], e["body"]] for e in out["records"]]
                    lines.append(json.dumps({"query": k, "max_entries": n, "results": got}))
    args.out.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
