"""The recall index's candidate query alone, at one identity of many records: thread CPU per query.

One process, the embedded SDK, the records and queries of ``benchmarks/recall_phases.py`` (or the state
directory ``benchmarks/million.py --keep-state DIR`` left, with the same ``--records`` and ``--seed``). Each
query is recalled once through ``meta/agent_memory/recall`` while the index's ``top`` records what it is asked;
then every recorded candidate query is asked of the index directly, once untimed and ``--rounds`` times timed
(thread CPU time, so other work on the machine counts less than in wall time), and each answer is compared with
the exhaustive one (every posting scored): a difference is an error.

Printed: p50, p90, p99 and the sum of the timed calls in milliseconds, and the index's size.

Run: ``python benchmarks/index_top.py [--records 100000] [--queries 300] [--seed 7] [--state DIR] [--rounds 2]``
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import meta_memory.recall.lexical_index as lexical_index  # noqa: E402
from _common import percentile  # noqa: E402
from meta_memory.recall.lexical_index import MIN_ROWS  # noqa: E402
from meta_memory.sdk import Meta  # noqa: E402
from recall import Vocabulary, make_queries, make_records  # noqa: E402
from recall_phases import one_identity_parser  # noqa: E402
from recall_vs_bm25 import IDENTITY, load_ours, wait_for_index  # noqa: E402


def main(argv: Sequence[str] | None = None) -> int:
    parser = one_identity_parser(__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    if args.records < MIN_ROWS or args.queries < 1 or args.rounds < 1:
        parser.error(f"--records must be at least {MIN_ROWS}, --queries and --rounds at least 1")
    vocab = Vocabulary(random.Random(args.seed))
    records = make_records(args.records, vocab)  # made either way: the queries follow them in the same stream
    queries = make_queries(args.queries + 20, vocab)
    asked: list[tuple[Any, tuple[str, str], list[str], int]] = []
    original = lexical_index._RealmIndex.top

    def recording(self: Any, scope: tuple[str, str], terms: Sequence[str], limit: int, only: Any = None,
                  *, exhaustive: bool = False) -> Any:
        if only is None and not exhaustive:
            asked.append((self, scope, list(terms), limit))
        return original(self, scope, terms, limit, only, exhaustive=exhaustive)

    with tempfile.TemporaryDirectory(prefix="index-top-") as tmp:
        state = args.state or Path(tmp) / "state"
        with Meta.builder().persistent_state(state).agent_memory(recall_timeout_ms=30_000,
                                                                 recall_index_mb=args.index_mb).build() as handle:
            identity = "lead:million" if args.state is not None else IDENTITY
            if args.state is None:
                load_ours(handle, records)
            del records
            handle.call("meta/agent_memory/recall", {"identity": identity, "query_text": queries[0], "max_entries": 8})
            built_s = wait_for_index(handle)
            lexical_index._RealmIndex.top = recording  # type: ignore[method-assign]
            try:
                for q in queries[20:]:
                    handle.call("meta/agent_memory/recall", {"identity": identity, "query_text": q, "max_entries": 8})
            finally:
                lexical_index._RealmIndex.top = original  # type: ignore[method-assign]
            if not asked:
                print("the index answered no candidate query", file=sys.stderr)
                return 1
            index = asked[0][0]
            with index.lock:
                for ix, scope, terms, limit in asked:  # untimed: and each answer against the exhaustive one
                    if ix.top(scope, terms, limit) != ix.top(scope, terms, limit, exhaustive=True):
                        print(f"the pruned answer differs from the exhaustive one for {terms!r}", file=sys.stderr)
                        return 1
                timed: list[float] = []
                for _ in range(args.rounds):
                    for ix, scope, terms, limit in asked:
                        t0 = time.thread_time()
                        ix.top(scope, terms, limit)
                        timed.append((time.thread_time() - t0) * 1000)
            print(f"{args.records} records in one identity, recall index built in {built_s:.1f} s, "
                  f"{index.nbytes()} bytes after the queries")
            print(f"candidate query, thread CPU ms over {len(timed)} calls: p50 {percentile(timed, 50):.2f}, "
                  f"p90 {percentile(timed, 90):.2f}, p99 {percentile(timed, 99):.2f}, sum {sum(timed):.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
