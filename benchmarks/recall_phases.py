"""Where an explicit recall's time goes, part by part, in one identity of many records.

One process, the embedded SDK: the synthetic records of ``benchmarks/recall.py`` written into one identity
(or the state directory ``benchmarks/million.py --keep-state DIR`` left, with the same ``--records`` and
``--seed``: then nothing is written), the recall index built, 20 warm-up recalls, then each query recalled
once through ``meta/agent_memory/recall`` (``max_entries`` 8) with the wall time of each part summed over the
recall: the index's candidate query (``index.top``) and term table, the rows' liveness and views read from the
file or the view cache (``views``: candidates and neighbours alike), the substring rule's bounded pass
(``rank.bounded``), the context neighbours (``rank.context``), the provider as a whole and the whole call.
Every query is new to the caches of rows (as a recall of an identity larger than them is); the index's
per-term scores are warm after the warm-up for the common words only.

Printed: the whole call's p50 and p99 in milliseconds, each part's median, and the parts of the slowest
recalls. Each part is timed by wrapping its function, so a part nested in another counts in both.

Run: ``python benchmarks/recall_phases.py [--records 100000] [--queries 300] [--seed 7] [--state DIR] [--index-mb 2048]``
"""

from __future__ import annotations

import argparse
import functools
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import meta_memory.agent_memory.store.view_cache as view_cache  # noqa: E402
import meta_memory.recall.lexical as lexical  # noqa: E402
import meta_memory.recall.lexical_index as lexical_index  # noqa: E402
from _common import percentile  # noqa: E402
from meta_memory.recall.lexical_index import MIN_ROWS  # noqa: E402
from meta_memory.sdk import Meta  # noqa: E402
from recall import Vocabulary, make_queries, make_records  # noqa: E402
from recall_vs_bm25 import IDENTITY, load_ours, wait_for_index  # noqa: E402

#: ``(owner, function name, part)``: the functions timed, and the part each one's time is summed into
PARTS: tuple[tuple[Any, str, str], ...] = (
    (lexical_index._RealmIndex, "top", "index.top"),
    (lexical_index._RealmIndex, "term_columns", "index.term_columns"),
    (view_cache.ViewCache, "views", "views"),
    (lexical.LexicalRecallProvider, "_bounded", "rank.bounded"),
    (lexical.LexicalRecallProvider, "_with_context", "rank.context"),
    (lexical.LexicalRecallProvider, "recall", "provider"),
)


def timed_parts() -> dict[str, float]:
    """Wrap each function of :data:`PARTS` so its wall time (ms) is added to the returned dict's entry."""
    spent: dict[str, float] = {}

    def wrap(fn: Callable[..., Any], part: str) -> Callable[..., Any]:
        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[part] = spent.get(part, 0.0) + (time.perf_counter() - t0) * 1000

        return run

    for owner, name, part in PARTS:
        setattr(owner, name, wrap(getattr(owner, name), part))
    return spent


def measure(handle: Any, identity: str, queries: Sequence[str], spent: dict[str, float]) -> list[tuple[float, dict[str, float]]]:
    """Per query: ``(the whole call's ms, each part's ms)``."""
    rows: list[tuple[float, dict[str, float]]] = []
    for q in queries:
        spent.clear()
        t0 = time.perf_counter()
        handle.call("meta/agent_memory/recall", {"identity": identity, "query_text": q, "max_entries": 8})
        rows.append(((time.perf_counter() - t0) * 1000, dict(spent)))
    return rows


def report(rows: Sequence[tuple[float, dict[str, float]]], worst: int = 6) -> None:
    parts = [part for _, _, part in PARTS]
    whole = [total for total, _ in rows]
    print(f"recall p50 {statistics.median(whole):.2f} ms, p99 {percentile(whole, 99):.2f} ms ({len(rows)} queries)")
    print("median of each part (ms): " + ", ".join(
        f"{part} {statistics.median(d.get(part, 0.0) for _, d in rows):.2f}" for part in parts))
    print(f"the {worst} slowest recalls (ms):")
    for total, d in sorted(rows, key=lambda r: -r[0])[:worst]:
        print(f"  {total:7.2f}  " + ", ".join(f"{part} {d.get(part, 0.0):.2f}" for part in parts))


def one_identity_parser(description: str) -> argparse.ArgumentParser:
    """The options of a benchmark over one identity of synthetic records: ``--records``, ``--queries``,
    ``--seed``, ``--state`` (a state ``benchmarks/million.py --keep-state`` wrote) and ``--index-mb``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--state", type=Path, default=None,
                        help="a state directory benchmarks/million.py --keep-state wrote with the same --records "
                             "and --seed (identity lead:million); without it the records are written to a fresh one")
    parser.add_argument("--index-mb", type=int, default=2048, help="[agent_memory] recall_index_mb (as million.py)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = one_identity_parser(__doc__.splitlines()[0])
    args = parser.parse_args(argv)
    if args.records < MIN_ROWS or args.queries < 1:
        parser.error(f"--records must be at least {MIN_ROWS} (a smaller realm gets no recall index) and --queries at "
                     "least 1")
    vocab = Vocabulary(random.Random(args.seed))
    records = make_records(args.records, vocab)  # made either way: the queries follow them in the same stream
    queries = make_queries(args.queries + 20, vocab)
    with tempfile.TemporaryDirectory(prefix="recall-phases-") as tmp:
        state = args.state or Path(tmp) / "state"
        with Meta.builder().persistent_state(state).agent_memory(recall_timeout_ms=30_000,
                                                                 recall_index_mb=args.index_mb).build() as handle:
            if args.state is None:
                load_ours(handle, records)
                identity = IDENTITY
            else:
                identity = "lead:million"
            del records
            handle.call("meta/agent_memory/recall", {"identity": identity, "query_text": queries[0], "max_entries": 8})
            built_s = wait_for_index(handle)
            print(f"{args.records} records in one identity, recall index built in {built_s:.1f} s", flush=True)
            spent = timed_parts()
            measure(handle, identity, queries[:20], spent)
            report(measure(handle, identity, queries[20:], spent))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
