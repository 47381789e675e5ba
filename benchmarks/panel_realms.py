"""Console Memory panel: cost of the every-realm record listing as the number of realms grows.

Usage::

    python benchmarks/panel_realms.py                          # 10, 300 and 1,000 realms, 10 timed pages each
    python benchmarks/panel_realms.py --realms 10,100 --pages 5
    python benchmarks/panel_realms.py --root DIR               # keep (and reuse) the realms in DIR

Writes one record into each realm ``r0``, ``r1``, ... of the bundled SQLite store (what one ``remember``
naming a new realm leaves), up to each ``--realms`` figure in turn, waits until the realms' files have been
quiet for a few seconds (an idle fleet), then times ``meta/memory/panel/records`` through
:class:`~meta_memory.panel.service.PanelService` (no HTTP): the first 50-row page of every realm (no
``realm``), the page after it (its ``next_cursor``), and the first page of one realm, for the access-free
caller. ``first_s`` is the first every-realm call after the wait; the other figures are medians of
``--pages`` calls: ``wall_s`` (elapsed) and ``cpu_s`` (this thread's CPU time: every read runs on it).
``search_page_wall_s`` is the first page of a search for a word no record holds (every realm must be
read to prove it empty), ``search_walk_*`` the pages and time of its whole walk (``next_cursor`` to the end).

``--reads`` times the other every-realm reads instead (``overview,quarantine,dreams,injections``, or any of
them): for each, ``<read>_first_s`` (its first call after the wait, the store's memory empty) and
``<read>_wall_s`` / ``<read>_cpu_s`` (medians of ``--pages`` calls after it). Each call is made by a fresh
:class:`PanelService` on one :class:`SqlitePanelStore` (as the gateway makes one per call).

``--restart N`` times the first call of each read after a restart instead (``records`` and the ``--reads``, or
all five): the store is closed and opened again, as a gateway's restart does, and the first call of a fresh
:class:`SqlitePanelStore` timed, ``N`` rounds alternating ``cold`` (no kept summaries: every realm read, as
before they were kept across restarts) and ``kept`` (the summaries the previous store kept, from
``panel-summaries.json`` beside the realms' folder, used for the realms whose files did not change). Prints, per
read and mode, the median ``<read>_<mode>_first_s`` (wall) and ``<read>_<mode>_first_cpu_s`` (thread CPU),
``load_s`` and ``save_s``, the median times to read the kept summaries' file (at the store's construction, at
start) and to write it (at the close, at stop), and ``file_bytes``, its size.

Each realm count has a store of its own (``DIR/<count>``). With ``--root`` the realms written stay in ``DIR``,
and a later run on it writes only the realms missing (so runs of two versions can share them).
Prints one ``key=value`` line per figure.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from meta_memory.access.config import parse_access_section
from meta_memory.access.policy import AccessPolicy
from meta_memory.access.principal import ANONYMOUS
from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from meta_memory.panel import kept_summaries
from meta_memory.panel.cursor import parse_cursor
from meta_memory.panel.service import PanelService
from meta_memory.panel.store import SqlitePanelStore
from meta_memory.panel.visibility import Visibility

#: How long the realms' files are left alone before the timed calls (an idle fleet).
QUIET_S = 3.0


def _timed(call: Callable[[], Any], pages: int) -> tuple[float, float]:
    """Median ``(wall seconds, thread CPU seconds)`` of ``pages`` calls."""
    walls, cpus = [], []
    for _ in range(pages):
        w, c = time.perf_counter(), time.thread_time()
        call()
        cpus.append(time.thread_time() - c)
        walls.append(time.perf_counter() - w)
    return statistics.median(walls), statistics.median(cpus)


def _listing(service: PanelService, realm: str | None, cursor: Any = None, terms: tuple[str, ...] = ()) -> dict[str, Any]:
    return service.records(realm=realm, scope_kind=None, scope_key=None, status=None, limit=50, cursor=cursor,
                           terms=terms)


def _search_walk(service: PanelService) -> tuple[int, float]:
    """``(pages, wall seconds)`` of the whole every-realm walk of a search for a word no record holds."""
    started, pages, cursor = time.perf_counter(), 0, None
    while True:
        page = _listing(service, None, cursor, ("walnut",))
        pages += 1
        assert not page["records"], "no record holds the word"
        if page["next_cursor"] is None:
            return pages, time.perf_counter() - started
        cursor = parse_cursor(page["next_cursor"])


#: The other every-realm reads ``--reads`` can time: each a call of a fresh service.
READS: dict[str, Callable[[PanelService], Any]] = {
    "overview": lambda s: s.overview(realm=None),
    "quarantine": lambda s: s.quarantine(realm=None, limit=50),
    "dreams": lambda s: s.dreams(realm=None, limit=20),
    "injections": lambda s: s.injections(realm=None, limit=50),
}


def run(root: Path, counts: list[int], pages: int, reads: list[str] | None = None, restart: int = 0) -> None:
    for n in counts:
        _measure(root / str(n), n, pages, reads, restart)


def _measure(root: Path, n: int, pages: int, reads: list[str] | None = None, restart: int = 0) -> None:
    """Seed ``root`` up to ``n`` realms (those missing), then time the listings (or ``reads``, or restarts)."""
    root.mkdir(parents=True, exist_ok=True)
    store = SqliteAgentMemoryStore(root, import_markdown=False, max_realms=n + 10)
    if restart:
        try:
            _seed(store, n)
        finally:
            store.close()
        _measure_restarts(root, n, restart, ["records", *(reads or READS)])
        return
    try:
        panel = SqlitePanelStore(store)
        visibility = Visibility(AccessPolicy(parse_access_section({"enabled": False})), ANONYMOUS)
        service = PanelService(panel, visibility)
        _seed(store, n)
        time.sleep(QUIET_S)
        if reads is not None:
            _measure_reads(n, pages, reads, lambda: PanelService(panel, visibility))
            return
        w = time.perf_counter()
        first = _listing(service, None)
        first_s = time.perf_counter() - w
        assert len(first["records"]) == min(50, n) and len(first["realms"]) == n, "every realm is listed"
        after = parse_cursor(first["next_cursor"])
        all_wall, all_cpu = _timed(lambda: _listing(service, None), pages)
        next_wall, next_cpu = _timed(lambda: _listing(service, None, after), pages)
        one_wall, one_cpu = _timed(lambda: _listing(service, "r0"), pages)
        search_wall, _ = _timed(lambda: _listing(service, None, terms=("walnut",)), pages)
        walk_pages, walk_wall = _search_walk(service)
        print(f"realms={n} first_s={first_s:.3f} all_wall_s={all_wall:.3f} all_cpu_s={all_cpu:.3f} "
              f"next_wall_s={next_wall:.3f} next_cpu_s={next_cpu:.3f} "
              f"one_realm_wall_s={one_wall:.4f} one_realm_cpu_s={one_cpu:.4f} "
              f"search_page_wall_s={search_wall:.3f} search_walk_pages={walk_pages} "
              f"search_walk_wall_s={walk_wall:.3f}", flush=True)
    finally:
        store.close()


def _seed(store: SqliteAgentMemoryStore, n: int) -> None:
    have = set(store.list_realms())
    started = time.perf_counter()
    for i in range(n):
        if f"r{i}" not in have:
            record_writes.remember(store, f"r{i}", "agent:a", f"Note {i}", f"Realm {i} keeps one note.")
    print(f"realms={n} seed_s={time.perf_counter() - started:.1f}", flush=True)


def _measure_restarts(root: Path, n: int, rounds: int, reads: list[str]) -> None:
    """Print the first call of each of ``reads`` after a restart, ``cold`` and ``kept`` (see the module doc)."""
    kept_file = root.parent / f"{root.name}-{kept_summaries.FILE_NAME}"
    visibility = Visibility(AccessPolicy(parse_access_section({"enabled": False})), ANONYMOUS)
    calls: dict[str, Callable[[PanelService], Any]] = {"records": lambda s: _listing(s, None), **READS}

    saves: list[float] = []

    def once(name: str, summaries: Path | None) -> tuple[float, float, float]:
        store = SqliteAgentMemoryStore(root, import_markdown=False, max_realms=n + 10)
        panel = None
        try:
            w = time.perf_counter()
            panel = SqlitePanelStore(store, summaries_file=summaries)
            load_s = time.perf_counter() - w
            w, c = time.perf_counter(), time.thread_time()
            answer = calls[name](PanelService(panel, visibility))
            cpu, wall = time.thread_time() - c, time.perf_counter() - w
            assert len(answer["realms"]) == n, "every realm is served"
            return wall, cpu, load_s
        finally:
            store.close()
            if panel is not None:
                w = time.perf_counter()
                panel.close()  # writes the kept summaries' file (with ``summaries``)
                if summaries is not None:
                    saves.append(time.perf_counter() - w)

    for name in reads:  # settle: a realm opened the first time after its write may write (planner statistics)
        once(name, None)
    time.sleep(QUIET_S)
    for name in reads:  # what the files are now is kept and written at the close
        once(name, kept_file)
    figures: list[str] = []
    loads: list[float] = []
    for name in reads:
        got: dict[str, list[tuple[float, float]]] = {"cold": [], "kept": []}
        for _ in range(rounds):
            for mode in ("cold", "kept"):
                wall, cpu, load_s = once(name, kept_file if mode == "kept" else None)
                got[mode].append((wall, cpu))
                if mode == "kept":
                    loads.append(load_s)
        for mode, runs in got.items():
            figures.append(f"{name}_{mode}_first_s={statistics.median(r[0] for r in runs):.3f} "
                           f"{name}_{mode}_first_cpu_s={statistics.median(r[1] for r in runs):.3f}")
    print(f"realms={n} load_s={statistics.median(loads):.3f} save_s={statistics.median(saves):.3f} "
          f"file_bytes={kept_file.stat().st_size} " + " ".join(figures), flush=True)


def _measure_reads(n: int, pages: int, reads: list[str], service: Callable[[], PanelService]) -> None:
    """Print ``<read>_first_s``, ``<read>_wall_s`` and ``<read>_cpu_s`` of each read in ``reads``."""
    figures: list[str] = []
    for name in reads:
        call = READS[name]
        w = time.perf_counter()
        answer = call(service())
        first_s = time.perf_counter() - w
        assert len(answer["realms"]) == n, "every realm is served"
        wall, cpu = _timed(lambda: call(service()), pages)
        figures.append(f"{name}_first_s={first_s:.3f} {name}_wall_s={wall:.4f} {name}_cpu_s={cpu:.4f}")
    print(f"realms={n} " + " ".join(figures), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--realms", default="10,300,1000", help="comma-separated realm counts, ascending")
    parser.add_argument("--pages", type=int, default=10, help="timed calls per figure")
    parser.add_argument("--root", type=Path, default=None, help="keep the realms in this directory")
    parser.add_argument("--reads", default=None,
                        help="time these other reads instead (comma-separated: " + ",".join(READS) + ")")
    parser.add_argument("--restart", type=int, default=0, metavar="N",
                        help="time the first call of each read after a restart, N rounds of cold and kept")
    args = parser.parse_args()
    counts = sorted(int(x) for x in args.realms.split(","))
    reads = None if args.reads is None else [x.strip() for x in args.reads.split(",") if x.strip()]
    if reads is not None and (not reads or any(x not in READS for x in reads)):
        parser.error(f"--reads takes some of: {', '.join(READS)}")
    if args.root is not None:
        args.root.mkdir(parents=True, exist_ok=True)
        run(args.root, counts, args.pages, reads, args.restart)
        return
    with tempfile.TemporaryDirectory() as tmp:
        run(Path(tmp), counts, args.pages, reads, args.restart)


if __name__ == "__main__":
    main()
