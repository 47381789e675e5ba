"""Review listings, panel reads and a promotion/release round trip, as ratios to raw SQL on the same database.

Usage::

    python benchmarks/review_panel.py                     # 5,000 records, 200 timed calls per case
    python benchmarks/review_panel.py --records 1000 --calls 50

Seeds one realm of the bundled SQLite store with ``--records`` active records, a tenth as many
quarantined ones, pending proposals, gated promotions, pending harvests and held forgets. Then times,
per case, the median of ``--calls`` calls of:

- review listings (``list_pending_promotions``, ``list_proposals``, ``list_harvests``,
  ``list_held_forgets``);
- panel reads (:class:`~meta_memory.panel.store.SqlitePanelStore` ``records_page`` of 50 rows,
  ``record`` by id, ``scope_overview``: the counts);
- a round trip: ``promote_pending_gate`` then ``gating_decide(approve)`` of an active record, and a
  quarantine ``release`` (the record copy, its tombstone and the audit rows).

Every figure is a ratio to a baseline measured in the same run on the same file, call for call in
alternation (both see the same machine load): the equivalent statements through a plain ``sqlite3``
connection (a listing's ``SELECT`` of the same rows, undecoded; for the round trip, the stage and
promotion inserts then the resolve, unstage and audit writes, in two ``BEGIN IMMEDIATE``
transactions; for the release, a record read, an update and two audit rows in one). Prints one
``key=value`` line per figure (``*_us`` medians in microseconds, ``*_ratio`` = store path / raw SQL).
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.model import Author, NewMemoryRecord, Provenance, Scope
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore, realm_db_path
from meta_memory.clock import ManualClock
from meta_memory.panel.store import RecordFilters, SqlitePanelStore
from meta_memory.review import forgets, harvest, promotions, proposals
from meta_memory.review.model import Reviewer
from meta_memory.review.quarantine import decide

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import temp_store  # noqa: E402

REALM = "bench"
FILLER = "The team reviewed the roadmap, the budget and the hiring plan for the quarter. " * 2


class _TaintGate:
    """Quarantines agent-authored writes (a tainted session), never a review."""

    def quarantine_reason(self, author: Author, batch_kind: str, evidence: list[object], *, realm: str) -> str | None:
        return "bench taint" if author.kind.value == "agent" else None


def _interleaved_us(ours: Callable[[], object], raw: Callable[[], object], calls: int) -> tuple[float, float]:
    """Median microseconds of ``ours`` and of ``raw``, called alternately (so both see the same load)."""
    ours()
    raw()
    a: list[float] = []
    b: list[float] = []
    for _ in range(calls):
        start = time.perf_counter()
        ours()
        a.append(time.perf_counter() - start)
        start = time.perf_counter()
        raw()
        b.append(time.perf_counter() - start)
    return statistics.median(a) * 1e6, statistics.median(b) * 1e6


def _seed(store: SqliteAgentMemoryStore, clock: ManualClock, n: int) -> tuple[list[str], list[str]]:
    active: list[str] = []
    quarantined: list[str] = []
    for i in range(n):
        clock.advance(1)
        rec, _ = record_writes.remember(store, REALM, f"agent:{i % 20}", f"Meeting note {i}", f"{FILLER}Note {i}.")
        active.append(rec.memory_id)
    for i in range(max(10, n // 10)):
        clock.advance(1)
        ident = f"agent:{i % 20}"
        rec, _ = record_writes.remember_authored(store,
            REALM, Scope.identity(REALM, ident),
            NewMemoryRecord(title=f"Tainted note {i}", body=f"{FILLER}Tainted {i}.",
                            provenance=Provenance(Author.agent(ident))),
            Author.agent(ident),
        )
        quarantined.append(rec.id)
    for i in range(50):
        record_writes.propose(store, REALM, Scope.mob(REALM, "crew"), NewMemoryRecord(
            title=f"Proposal {i}", body=f"{FILLER}Proposal {i}.", provenance=Provenance(Author.agent("agent:0"))),
            Author.agent("agent:0"))
    for i in range(50):
        promotions.promote_pending_gate(store, REALM, active[i], run_id="dream-seed", clock=clock,
                                        target_scope=Scope.mob(REALM, "crew"))
    for i in range(50):
        clock.advance(1)
        harvest.record_harvest(store, REALM, f"agent:{i}", f"s-{i}", "retired", clock=clock)
    for mid in active[60:90]:
        rec = store.get(REALM, mid)
        assert rec is not None
        forgets.request_forget(store, rec.scope, mid, Author.agent(rec.scope.key), "bench taint", session_key="s",
                               clock=clock)
    return active, quarantined


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=5000)
    ap.add_argument("--calls", type=int, default=200)
    args = ap.parse_args()
    with temp_store(gate=_TaintGate()) as (store, clock, root):
        active, quarantined = _seed(store, clock, args.records)
        panel = SqlitePanelStore(store)
        raw = sqlite3.connect(realm_db_path(root, REALM), isolation_level=None)
        raw.execute("PRAGMA query_only = ON")
        figures: dict[str, float] = {}

        def pair(key: str, ours: Callable[[], object], baseline: Callable[[], object], calls: int) -> None:
            figures[f"{key}_us"], figures[f"{key}_raw_us"] = _interleaved_us(ours, baseline, calls)
            figures[f"{key}_ratio"] = figures[f"{key}_us"] / figures[f"{key}_raw_us"]

        def raw_rows(sql: str, params: tuple[object, ...] = ()) -> Callable[[], object]:
            def run() -> object:
                raw.execute("BEGIN")
                rows = raw.execute(sql, params).fetchall()
                raw.execute("COMMIT")
                return rows
            return run

        pair("review_promotions", lambda: promotions.list_pending_promotions(store, REALM, 50),
             raw_rows("SELECT * FROM pending_promotions WHERE status = 'pending' "
                      "ORDER BY created_at_ms DESC, pending_id DESC LIMIT 50"), args.calls)
        pair("review_proposals", lambda: proposals.list_proposals(store, REALM, limit=50),
             raw_rows("SELECT * FROM proposals WHERE status IN ('pending', 'held') "
                      "ORDER BY created_at_ms, proposal_id LIMIT 50"), args.calls)
        pair("review_harvests", lambda: harvest.list_harvests(store, REALM, 50),
             raw_rows("SELECT * FROM pending_harvests WHERE status = 'pending' "
                      "ORDER BY retired_at_ms, identity LIMIT 50"), args.calls)
        pair("review_held_forgets", lambda: forgets.list_held_forgets(store, REALM, 50),
             raw_rows("SELECT f.* FROM pending_forgets f JOIN records r ON r.memory_id = f.memory_id "
                      "WHERE f.status = 'pending' AND r.status_kind <> 'tombstoned' "
                      "ORDER BY f.created_at_ms DESC, f.forget_id DESC LIMIT 50"), args.calls)
        pair("panel_list", lambda: panel.records_page(REALM, RecordFilters(), None, 50),
             raw_rows("SELECT * FROM records ORDER BY updated_at_ms DESC, memory_id DESC LIMIT 51"), args.calls)
        target = active[len(active) // 2]
        pair("panel_get", lambda: panel.record(REALM, target),
             raw_rows("SELECT * FROM records WHERE memory_id = ?", (target,)), args.calls)
        pair("panel_counts", lambda: panel.scope_overview(REALM),
             raw_rows("SELECT scope_kind, scope_key, status_kind, trust, COUNT(*), SUM(LENGTH(body)) "
                      "FROM records GROUP BY scope_kind, scope_key, status_kind, trust"), args.calls)

        sources = iter(active[100:])

        def promotion_round_trip() -> object:
            staged = promotions.promote_pending_gate(store, REALM, next(sources), run_id="dream-bench",
                                                     clock=clock, target_scope=Scope.realm_scope(REALM))
            return promotions.gating_decide(store, REALM, staged.pending_id, "approve", clock=clock)

        writer = sqlite3.connect(realm_db_path(root, REALM), isolation_level=None)
        counter = iter(range(10**9))

        def raw_round_trip() -> object:
            i = next(counter)
            writer.execute("BEGIN IMMEDIATE")
            src = writer.execute("SELECT * FROM records WHERE memory_id = ?", (active[i % 100],)).fetchone()
            writer.execute("INSERT INTO stage(token, batch, created_at_ms) VALUES (?, ?, ?)",
                           (f"raw-stage-{i}", "{}", i))
            writer.execute(
                "INSERT INTO pending_promotions(pending_id, stage_token, record_id, scope_kind, scope_key, "
                "rationale, status, created_at_ms, resolved_at_ms) VALUES (?, ?, ?, 'realm', '', NULL, "
                "'pending', ?, NULL)", (f"raw-gate-{i}", f"raw-stage-{i}", src[1], i))
            writer.execute("COMMIT")
            writer.execute("BEGIN IMMEDIATE")
            writer.execute("SELECT batch FROM stage WHERE token = ?", (f"raw-stage-{i}",)).fetchone()
            writer.execute("UPDATE pending_promotions SET status = 'committed', resolved_at_ms = ? "
                           "WHERE pending_id = ?", (i, f"raw-gate-{i}"))
            writer.execute("DELETE FROM stage WHERE token = ?", (f"raw-stage-{i}",))
            writer.execute(
                "INSERT INTO audit(stage_token, op_index, op_kind, memory_id, detail, applied_at_ms) "
                "VALUES (?, 0, 'create', ?, '{}', ?)", (f"raw-stage-{i}", src[1], i))
            writer.execute("COMMIT")
            return src

        pair("promotion_round_trip", promotion_round_trip, raw_round_trip, min(args.calls, len(active) - 102))
        releases = iter(quarantined)

        def release() -> object:
            mid = next(releases)
            rec = store.get(REALM, mid)
            assert rec is not None
            return decide(store, REALM, rec.scope.key, mid, "release", rec.content_hash, None,
                          Reviewer.operator("bench"), clock=clock)

        def raw_release() -> object:
            i = next(counter)
            writer.execute("BEGIN IMMEDIATE")
            src = writer.execute("SELECT * FROM records WHERE memory_id = ?", (active[i % 100],)).fetchone()
            writer.execute("UPDATE records SET updated_at_ms = ? WHERE memory_id = ?", (src[-5], src[1]))
            for op in range(2):
                writer.execute(
                    "INSERT INTO audit(stage_token, op_index, op_kind, memory_id, detail, applied_at_ms) "
                    "VALUES (?, ?, 'release', ?, '{}', ?)", (f"raw-review-{i}", op, src[1], i))
            writer.execute("COMMIT")
            return src

        pair("release", release, raw_release, min(args.calls, len(quarantined) - 2))
        writer.close()
        raw.close()
    print(f"records={args.records}")
    for key, value in figures.items():
        print(f"{key}={value:.2f}")


if __name__ == "__main__":
    main()
