"""Property tests of the panel reads over a real SQLite store (hypothesis).

For random grant sets, records (two realms, colliding update times and ids) and
page sizes: walking the record listing yields exactly the rows the principal
may read, in order, without duplicates — also while rows are updated between
pages — and no other panel method returns a row or a count the principal may
not read. The oracle restates the seed's rules directly on the policy.
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from access_strategies import IDENTITIES, MEMORY_ACTIONS, MOBS, configs, principals
from meta_memory.access.policy import AccessPolicy
from meta_memory.access.resources import Resources
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from meta_memory.clock import ManualClock
from meta_memory.panel.cursor import parse_cursor
from meta_memory.panel.service import PanelService
from meta_memory.panel.store import SqlitePanelStore
from meta_memory.panel.visibility import Visibility
from support import raw_write

REALMS = ["r1", "r2"]
SCOPES = [("identity", i) for i in IDENTITIES] + [("mob", m) for m in MOBS] + [("operator", "op"), ("realm", "")]
STATUSES = ["active", "superseded", "quarantined", "tombstoned"]

rows_strategy = st.lists(
    st.tuples(
        st.sampled_from(REALMS),
        st.sampled_from(SCOPES),
        st.sampled_from(STATUSES),
        st.booleans(),
        st.integers(0, 6),  # updated_at_ms: few values, many ties
        st.sampled_from([f"mem-{c}" for c in "abcdefghij"]),  # ids collide across realms
    ),
    max_size=24,
    unique_by=lambda r: (r[0], r[5]),
)
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def oracle(policy: AccessPolicy, principal: Any, realm: str, kind: str, key: str, status: str, everq: bool) -> bool:
    """The seed's row rule, stated directly."""
    res = Resources().scope(realm, kind, key)
    needs = {"identity": ["agent.memory.read", "agent.view"], "mob": ["mob.memory.read"],
             "operator": ["operator.memory.read"], "realm": ["agent.memory.read"]}[kind]
    if status == "quarantined" or (status == "tombstoned" and everq):
        needs = needs + ["memory.quarantine.review"]
    return all(policy.check(principal, a, res) for a in needs)


class World:
    def __init__(self, root: Path, rows: list[tuple[Any, ...]]) -> None:
        self.store = SqliteAgentMemoryStore(root, ManualClock(1_000))
        self.rows = {(r[0], r[5]): r for r in rows}
        for realm in REALMS:
            mine = [r for r in rows if r[0] == realm]

            def fill(tx: Any, mine: list[tuple[Any, ...]] = mine) -> None:
                for _, (kind, key), status, everq, updated, mid in mine:
                    tx._sql.conn.execute(
                        "INSERT INTO records(memory_id, scope_kind, scope_key, kind, title, body, provenance, trust, "
                        "status_kind, status_detail, content_hash, created_at_ms, updated_at_ms, ever_quarantined) "
                        "VALUES (?, ?, ?, 'fact', ?, ?, ?, 'agent_observed', ?, ?, 'h', 0, ?, ?)",
                        (mid, kind, key, f"title {mid}", f"body {mid}", json.dumps({"evidence": [], "author": {"author": "application"}}),
                         status, {"superseded": "mem-x", "quarantined": "tainted"}.get(status), updated, int(everq)),
                    )
                for i, (_, _, _, _, _, mid) in enumerate(mine):
                    tx._sql.conn.execute(
                        "INSERT INTO injections(record_id, identity, session_key, surface, at_ms) VALUES (?, ?, 's', 'turn', ?)",
                        (mid, IDENTITIES[i % len(IDENTITIES)], i),
                    )
                    tx._sql.conn.execute(
                        "INSERT OR IGNORE INTO pending_harvests(identity, session_key, cause, retired_at_ms) VALUES (?, 's', 'retired', ?)",
                        (IDENTITIES[i % len(IDENTITIES)], i),
                    )

            with self.store.transaction(realm) as tx:
                fill(tx)
        self.panel = SqlitePanelStore(self.store)

    def bump(self, realm: str, mid: str, updated: int) -> None:
        raw_write(self.store, realm, "UPDATE records SET updated_at_ms = ? WHERE memory_id = ?", (updated, mid))


def walk(service: PanelService, limit: int, between: Any = None,
         terms: tuple[str, ...] = ()) -> tuple[list[tuple[str, str, int]], list[int]]:
    seen: list[tuple[str, str, int]] = []
    sizes: list[int] = []
    cursor = None
    step = 0
    while True:
        res = service.records(realm=None, scope_kind=None, scope_key=None, status=None, limit=limit,
                              cursor=parse_cursor(cursor), terms=terms)
        sizes.append(len(res["records"]))
        seen += [(r["scope"]["realm"], r["id"], r["updated_at_ms"]) for r in res["records"]]
        cursor = res["next_cursor"]
        if cursor is None:
            return seen, sizes
        assert cursor == f"{seen[-1][2]}:{seen[-1][1]}"
        if between is not None:
            between(step)
        step += 1


@SETTINGS
@given(config=configs(MEMORY_ACTIONS, enabled=True), principal=principals, rows=rows_strategy, limit=st.integers(1, 5))
def test_pages_union_is_exactly_the_readable_rows_in_order(config: Any, principal: Any, rows: Any, limit: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        world = World(Path(tmp), rows)
        try:
            policy = AccessPolicy(config)
            service = PanelService(world.panel, Visibility(policy, principal))
            seen, sizes = walk(service, limit)
            expected = [
                (r[0], r[5], r[4]) for r in rows if oracle(policy, principal, r[0], r[1][0], r[1][1], r[2], r[3])
            ]
            expected.sort(key=lambda x: (-x[2], [-ord(c) for c in x[1]], REALMS.index(x[0])))
            assert seen == expected
            assert len(set(seen)) == len(seen)
            # a page exceeds limit only to keep one (update time, id) key together across realms
            for size in sizes:
                assert size <= limit + len(REALMS) - 1
            check_other_methods(world, service, policy, principal)
        finally:
            world.store.close()


@SETTINGS
@given(config=configs(MEMORY_ACTIONS, enabled=True), principal=principals, rows=rows_strategy, limit=st.integers(1, 4),
       query=st.lists(st.sampled_from(["mem-", "body", "TITLE", "mem-a", "mem-b", "e", "c", "body mem-d", "zz"]),
                      min_size=1, max_size=3))
def test_a_search_walk_is_exactly_the_readable_matching_rows(config: Any, principal: Any, rows: Any, limit: int,
                                                              query: list[str]) -> None:
    """The params model's terms (lowercased, distinct) through the service: no unreadable row, no gap."""
    from meta_memory.rpc.methods.panel import PanelRecordsParams

    terms = PanelRecordsParams(query=" ".join(query)).terms()
    with tempfile.TemporaryDirectory() as tmp:
        world = World(Path(tmp), rows)
        try:
            policy = AccessPolicy(config)
            service = PanelService(world.panel, Visibility(policy, principal))
            seen, sizes = walk(service, limit, terms=terms)
            expected = [
                (r[0], r[5], r[4]) for r in rows
                if oracle(policy, principal, r[0], r[1][0], r[1][1], r[2], r[3])
                and all(t in f"title {r[5]}\nbody {r[5]}" for t in terms)
            ]
            expected.sort(key=lambda x: (-x[2], [-ord(c) for c in x[1]], REALMS.index(x[0])))
            assert seen == expected
            for size in sizes:
                assert size <= limit + len(REALMS) - 1
        finally:
            world.store.close()


@SETTINGS
@given(config=configs(MEMORY_ACTIONS, enabled=True), principal=principals, rows=rows_strategy,
       limit=st.integers(1, 4), bumps=st.lists(st.integers(0, 23), max_size=6))
def test_walk_has_no_gaps_or_duplicates_while_rows_change(config: Any, principal: Any, rows: Any, limit: int,
                                                         bumps: list[int]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        world = World(Path(tmp), rows)
        try:
            policy = AccessPolicy(config)
            service = PanelService(world.panel, Visibility(policy, principal))
            changed: set[tuple[str, str]] = set()

            def between(step: int) -> None:
                if step < len(bumps) and rows:
                    r = rows[bumps[step] % len(rows)]
                    world.bump(r[0], r[5], 100 + step)  # an update moves the row to the front
                    changed.add((r[0], r[5]))

            seen, _ = walk(service, limit, between)
            keys = [(s[2], s[1]) for s in seen]
            assert len(set((s[0], s[1]) for s in seen)) == len(seen)  # no duplicates
            assert keys == sorted(keys, reverse=True)  # in listing order
            for r in rows:
                stable = (r[0], r[5]) not in changed
                if stable and oracle(policy, principal, r[0], r[1][0], r[1][1], r[2], r[3]):
                    assert (r[0], r[5], r[4]) in seen  # no gaps
            for realm, mid, _ in seen:
                r = world.rows[(realm, mid)]
                assert oracle(policy, principal, realm, r[1][0], r[1][1], r[2], r[3])
        finally:
            world.store.close()


def check_other_methods(world: World, service: PanelService, policy: AccessPolicy, principal: Any) -> None:
    """No other read returns a row or a count the caller may not read."""

    def visible(realm: str, mid: str) -> bool:
        r = world.rows.get((realm, mid))
        return r is not None and oracle(policy, principal, realm, r[1][0], r[1][1], r[2], r[3])

    def identity_ok(realm: str, identity: str) -> bool:
        return oracle(policy, principal, realm, "identity", identity, "active", False)

    for inj in service.injections(realm=None, limit=200)["injections"]:
        assert visible(inj["realm"], inj["record_id"]) and identity_ok(inj["realm"], inj["identity"])
    for h in service.harvests(realm=None, limit=200)["harvests"]:
        assert identity_ok(h["realm"], h["identity"])
    for q in service.quarantine(realm=None, limit=200)["records"]:
        assert visible(q["scope"]["realm"], q["id"])
    overview = service.overview(realm=None)
    expected: dict[tuple[str, str, str], Counter[str]] = {}
    for (realm, mid), r in world.rows.items():
        if visible(realm, mid):
            expected.setdefault((realm, r[1][0], r[1][1]), Counter())[r[2]] += 1
    got = {(s["realm"], s["scope_kind"], s["scope_key"]): Counter(s["counts"]) for s in overview["scopes"]}
    assert got == expected
    for s in overview["scopes"]:  # every World record is 'agent_observed'
        assert s["trust"] == {"agent_observed": sum(s["counts"].values())}
    assert overview["totals"]["records"] == sum(sum(c.values()) for c in expected.values())
