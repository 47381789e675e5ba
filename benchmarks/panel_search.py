"""Console search: cost of ``meta/memory/panel/records`` with ``query`` against the plain listing.

Usage::

    python benchmarks/panel_search.py                    # 20,000 records, 30 timed pages per case
    python benchmarks/panel_search.py --records 5000 --pages 10

Writes ``--records`` records (bodies of about 300 bytes) into one realm of the bundled SQLite store,
then times one 50-row page of the panel listing through :class:`~meta_memory.panel.service.PanelService`
(no HTTP) for each case: a word in every record (the page fills at once), a word in one record in
a hundred, and a word in no record (every row is read to prove the page empty). Every figure is the
median page time as a ratio to the plain listing's (no ``query``) measured in the same run.

The default realm measures a restricted reader: ``alice`` reads ``alice:main`` only (its 200 records), while
``bob:main`` holds ``--unreadable`` records, all with the word ``walnut``, a tenth with ``pecan``. Alice's
search for each word (she gets no row of bob's) is timed against her search for a word no record holds:
a ratio near 1 means the time does not tell how many unreadable records hold a word. Times are the
process's CPU time (``time.process_time``: the store may read on another thread), medians of ``--pages`` calls.

Prints one ``key=value`` line per figure.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from meta_memory.access.config import parse_access_section
from meta_memory.access.policy import AccessPolicy
from meta_memory.access.principal import ANONYMOUS, Principal
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


def _median_page(service: PanelService, terms: tuple[str, ...], pages: int, realm: str = "bench") -> float:
    times = []
    for _ in range(pages):
        start = time.process_time()
        service.records(realm=realm, scope_kind=None, scope_key=None, status=None, limit=50, cursor=None, terms=terms)
        times.append(time.process_time() - start)
    return statistics.median(times)


def _restricted(store: SqliteAgentMemoryStore, clock: ManualClock, unreadable: int, pages: int) -> None:
    """Alice's searches for words only bob's records hold, against a word no record holds."""
    for i in range(unreadable):
        clock.advance(1)
        extra = " pecan" if i % 10 == 0 else ""
        record_writes.remember(store, "default", "bob:main", f"Bob note {i}", f"{FILLER}walnut{extra} {i}.")
        if i % (max(1, unreadable // 200)) == 0:
            record_writes.remember(store, "default", "alice:main", f"Alice note {i}", f"{FILLER}Alice {i}.")
    config = parse_access_section({"enabled": True, "grants": [
        {"action": action, "who": {"principal": "alice"}, "on": {"identity": "alice:main"}}
        for action in ("agent.memory.read", "agent.view")]})
    alice = PanelService(SqlitePanelStore(store), Visibility(AccessPolicy(config), Principal("alice")))
    def listed(word: str) -> int:
        return len(alice.records(realm="default", scope_kind=None, scope_key=None, status=None, limit=50, cursor=None,
                                 terms=(word,))["records"])

    assert listed("walnut") == 0 and listed("alice") == 50, "alice reads her own rows, never bob's"
    unused = _median_page(alice, ("zzzqx",), pages, "default")
    print(f"restricted_unreadable_records={unreadable}")
    print(f"restricted_unused_word_ms={unused * 1000:.1f}")
    for name, terms, matches in (("pecan", ("pecan",), (unreadable + 9) // 10), ("walnut", ("walnut",), unreadable)):
        t = _median_page(alice, terms, pages, "default")
        print(f"restricted_{name}_unreadable_matches={matches} ms={t * 1000:.1f} vs_unused_word={t / unused:.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--pages", type=int, default=30)
    ap.add_argument("--unreadable", type=int, default=5000, help="bob's records in the restricted case")
    ap.add_argument("--restricted-only", action="store_true", help="only the restricted reader's case")
    args = ap.parse_args()
    with temp_store() as (store, clock, _):
        _restricted(store, clock, args.unreadable, args.pages)
        if args.restricted_only:
            return
        _seed(store, clock, args.records)
        service = PanelService(SqlitePanelStore(store), Visibility(AccessPolicy(), ANONYMOUS))
        base = _median_page(service, (), args.pages)
        print(f"records={args.records}")
        for name, terms in (("common_word", ("roadmap",)), ("one_in_100", ("kumquat",)), ("no_match", ("zzzqx",))):
            print(f"{name}_page_vs_plain_listing={_median_page(service, terms, args.pages) / base:.1f}x")


if __name__ == "__main__":
    main()
