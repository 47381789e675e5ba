"""Console search: cost of ``meta/memory/panel/records`` with ``query`` against the plain listing.

Usage::

    python benchmarks/panel_search.py                    # 20,000 records, 30 timed pages per case
    python benchmarks/panel_search.py --records 5000 --pages 10

Writes ``--records`` records (bodies of about 300 bytes) into one realm of the bundled SQLite store,
then times one 50-row page of the panel listing through :class:`~meta_memory.panel.service.PanelService`
(no HTTP) for each case: a word in every record (the page fills at once), a word in one record in
a hundred, and a word in no record (every row is read to prove the page empty). Every figure is the
median page time as a ratio to the plain listing's (no ``query``) measured in the same run.

Prints one ``key=value`` line per figure.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from meta_memory.access.policy import AccessPolicy
from meta_memory.access.principal import ANONYMOUS
from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from meta_memory.clock import ManualClock
from meta_memory.panel.service import PanelService
from meta_memory.panel.store import SqlitePanelStore
from meta_memory.panel.visibility import Visibility

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import temp_store  # noqa: E402

FILLER = "The team reviewed the roadmap, the budget and the hiring plan for the quarter. " * 4


def _seed(store: SqliteAgentMemoryStore, clock: ManualClock, n: int) -> None:
    for i in range(n):
        clock.advance(1)
        marker = " kumquat" if i % 100 == 0 else ""
        record_writes.remember(store, "bench", f"agent:{i % 20}", f"Meeting note {i}", f"{FILLER}Note {i}{marker}.")


def _median_page(service: PanelService, terms: tuple[str, ...], pages: int) -> float:
    times = []
    for _ in range(pages):
        start = time.perf_counter()
        service.records(realm="bench", scope_kind=None, scope_key=None, status=None, limit=50, cursor=None, terms=terms)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--pages", type=int, default=30)
    args = ap.parse_args()
    with temp_store() as (store, clock, _):
        _seed(store, clock, args.records)
        service = PanelService(SqlitePanelStore(store), Visibility(AccessPolicy(), ANONYMOUS))
        base = _median_page(service, (), args.pages)
        print(f"records={args.records}")
        for name, terms in (("common_word", ("roadmap",)), ("one_in_100", ("kumquat",)), ("no_match", ("zzzqx",))):
            print(f"{name}_page_vs_plain_listing={_median_page(service, terms, args.pages) / base:.1f}x")


if __name__ == "__main__":
    main()
