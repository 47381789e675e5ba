"""The panel's other every-realm reads (overview, quarantine, dreams, injections) over a few hundred realms,
through a real gateway.

Each answers across every realm what reading the realms one by one answers; a write made after the realms
went quiet (by the gateway, or by another process on the same files) shows in the next call. The quarantine
queue walked page by page lists every quarantined record once, newest created first. A caller whose grants
reach one identity of one realm learns no other realm's name, rows or counts, whatever cursor it sends, and
a call without a token is refused.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.model import Author, Scope
from meta_memory.agent_memory.store.base import InjectionRow
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from meta_memory.clock import ManualClock
from seed import TaintGate, _dream, _new
from support import GatewayProcess, access_toml, start_gateway, write_config

pytestmark = pytest.mark.gateway

REALMS = [f"r{i:03d}" for i in range(120)]
LEAD = "lead:main"
ADMIN, ALICE = "tok-admin-many-reads-0123", "tok-alice-many-reads-0123"
READS = ("agent.memory.read", "agent.view", "mob.memory.read", "operator.memory.read", "memory.quarantine.review")
#: realms where ``lead:main`` keeps a record, a quarantined record and an injection (alice may read ``r007``'s)
LEAD_REALMS = ["r007", "r008", "r100"]


def _seed(root: Path) -> None:
    """Every realm: one record of ``agent:a``; every second realm a quarantined one too; every third an
    injection; every fifth a dream run; and :data:`LEAD_REALMS` the same for ``lead:main``."""
    clock = ManualClock(1_760_000_000_000)
    store = SqliteAgentMemoryStore(root, clock, gate=TaintGate(), max_realms=len(REALMS) + 10)
    try:
        for i, realm in enumerate(REALMS):
            clock.advance(7 if i % 2 else 3)
            idents = ["agent:a", *([LEAD] if realm in LEAD_REALMS else [])]
            for who in idents:
                scope = Scope.identity(realm, who)
                rec, _ = record_writes.remember_authored(store, realm, scope, _new(f"note {realm}", f"{realm} note",
                                                                                   Author.application()),
                                                         Author.application())
                if i % 2 == 0 or who == LEAD:
                    record_writes.remember_authored(store, realm, scope, _new(f"poison {realm}", "tainted text",
                                                                              Author.agent(who)), Author.agent(who))
                if i % 3 == 0 or who == LEAD:
                    store.log_injections(realm, [InjectionRow(rec.id, who, "turn", clock.now_ms() + i, None)])
            if i % 5 == 0:
                with store.transaction(realm) as tx:
                    _dream(tx._sql.conn, f"dream-{realm}", clock.now_ms(), [("set_rank", rec.id, "rank it", None)])
    finally:
        store.close()


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    tmp = tmp_path_factory.mktemp("many-realm-reads")
    state = tmp / "state"
    _seed(state / "agent-memory")
    grants = [("admin", a) for a in (*READS, "agent.memory.write")]
    grants += [("alice", a, {"identity": LEAD, "realm": "r007"})
               for a in ("agent.memory.read", "agent.view", "memory.quarantine.review")]
    config = write_config(tmp / "c.toml", access_toml({ADMIN: "admin", ALICE: "alice"}, grants))
    gw = start_gateway(state, config=config)
    try:
        yield gw
    finally:
        gw.stop()


def _call(gw: GatewayProcess, method: str, token: str | None, **params: Any) -> Any:
    return gw.result(f"meta/memory/panel/{method}", params, token=token, timeout=60)


def _quarantine_walk(gw: GatewayProcess, token: str, limit: int, cursor: str | None = None) -> list[dict[str, Any]]:
    pages: list[dict[str, Any]] = []
    while True:
        page = _call(gw, "quarantine", token, limit=limit, **({"cursor": cursor} if cursor else {}))
        pages.append(page)
        cursor = page["next_cursor"]
        if cursor is None:
            return pages
        assert len(pages) < 500, "the walk does not end"


def _one_by_one(gw: GatewayProcess, method: str, member: str, key: Any, limit: int) -> list[Any]:
    """``member`` of ``method`` read realm by realm (``limit`` rows each), merged newest first (realm order
    breaks ties)."""
    rows = [row for realm in REALMS for row in _call(gw, method, ADMIN, realm=realm, limit=limit)[member]]
    return sorted(rows, key=key, reverse=True)


def test_every_realm_read_matches_the_realms_read_one_by_one(fleet: GatewayProcess) -> None:
    gw = fleet
    time.sleep(2.5)  # the realms' files have been quiet a while: what is read of them is kept between calls
    scopes = [s for r in REALMS for s in _call(gw, "overview", ADMIN, realm=r)["scopes"]]
    injections = _one_by_one(gw, "injections", "injections", lambda i: i["at_ms"], 200)
    dreams = _one_by_one(gw, "dreams", "runs", lambda d: (d["last_op_at_ms"], d["run_id"]), 100)
    runs = _one_by_one(gw, "dream_runs", "runs", lambda d: (d["completed_at_ms"], d["run_id"]), 100)
    assert len(injections) == len(REALMS) // 3 + len(LEAD_REALMS) and len(dreams) == len(REALMS) // 5
    for _ in range(2):  # the first call reads every realm, the second answers from what was kept
        overview = _call(gw, "overview", ADMIN)
        assert overview["realms"] == REALMS
        assert overview["scopes"] == scopes
        assert overview["totals"]["counts"] == {"active": len(REALMS) + len(LEAD_REALMS),
                                                "quarantined": len(REALMS) // 2 + len(LEAD_REALMS)}
        for limit in (1, 7, 50):
            assert _call(gw, "injections", ADMIN, limit=limit)["injections"] == injections[:limit]
            assert _call(gw, "dreams", ADMIN, limit=limit)["runs"] == dreams[:limit]
            assert _call(gw, "dream_runs", ADMIN, limit=limit)["runs"] == runs[:limit]

    queued = {r["id"] for realm in REALMS for r in _call(gw, "quarantine", ADMIN, realm=realm, limit=200)["records"]}
    assert len(queued) == len(REALMS) // 2 + len(LEAD_REALMS)
    for limit in (9, 50):
        rows = [r for page in _quarantine_walk(gw, ADMIN, limit) for r in page["records"]]
        assert [r["id"] for r in rows] == list(dict.fromkeys(r["id"] for r in rows)), "no row is listed twice"
        assert {r["id"] for r in rows} == queued
        keys = [(r["created_at_ms"], r["id"]) for r in rows]
        assert keys == sorted(keys, reverse=True), "newest created first, across every realm and page"


def test_a_write_after_the_realms_went_quiet_shows_at_once(fleet: GatewayProcess) -> None:
    gw = fleet
    time.sleep(2.5)
    before = _call(gw, "overview", ADMIN)
    _call(gw, "injections", ADMIN)
    gw.result("meta/agent_memory/remember", {"identity": "agent:late", "realm": "r111", "title": "late",
                                             "body": "written after the realms went quiet"}, token=ADMIN)
    after = _call(gw, "overview", ADMIN)
    assert after["totals"]["records"] == before["totals"]["records"] + 1
    assert any(s["realm"] == "r111" and s["scope_key"] == "agent:late" for s in after["scopes"])

    # another process writes into a realm the gateway has kept an answer of
    mid = _call(gw, "records", ADMIN, realm="r113")["records"][0]["id"]
    far = int(time.time() * 1000) + 10**9
    other = SqliteAgentMemoryStore(Path(gw.state_dir) / "agent-memory", max_realms=len(REALMS) + 10)
    try:
        other.log_injections("r113", [InjectionRow(mid, "agent:a", "turn", far, None)])
    finally:
        other.close()
    newest = _call(gw, "injections", ADMIN, limit=1)["injections"]
    assert [(i["realm"], i["at_ms"]) for i in newest] == [("r113", far)]


def test_a_caller_of_one_realm_learns_nothing_of_the_others(fleet: GatewayProcess) -> None:
    gw = fleet
    others = [r for r in REALMS if r != "r007"]
    other_ids = {r["id"] for r in _call(gw, "quarantine", ADMIN, realm="r008", limit=200)["records"]}
    # the realm-wide reads need a grant on every realm: refused, naming nothing
    for method in ("overview", "dreams", "dream_runs", "injections"):
        for params in ({}, {"realm": "r008"}, {"realm": "r007"}):
            body = gw.rpc(f"meta/memory/panel/{method}", params, token=ALICE)
            assert body["error"]["code"] == -32030 and "result" not in body
            assert not any(f'"{realm}"' in json.dumps(body) for realm in others)
    answers = _quarantine_walk(gw, ALICE, 1)
    queue = [r for page in answers for r in page["records"]]
    assert [(r["scope"]["realm"], r["scope"]["identity"]) for r in queue] == [("r007", LEAD)]
    for cursor in ("99999999999999:~", f"99999999999999:{min(other_ids)}", f"1:{min(other_ids)}~", "0:a"):
        answers += _quarantine_walk(gw, ALICE, 1, cursor)
    for answer in answers:
        assert answer["realms"] == ["r007"] and "skipped_realms" not in answer
        text = json.dumps(answer)
        assert not any(f'"{realm}"' in text for realm in others)
        assert not any(mid in text for mid in other_ids)
        assert {r["id"] for r in answer["records"]} <= {r["id"] for r in queue}
        assert answer["next_cursor"] is None or answer["next_cursor"].split(":", 1)[1] in {r["id"] for r in queue}


@pytest.mark.parametrize("method", ["overview", "quarantine", "dreams", "injections"])
def test_no_token_is_refused(fleet: GatewayProcess, method: str) -> None:
    body = fleet.rpc(f"meta/memory/panel/{method}", {})
    assert "error" in body and "result" not in body
    assert not any(realm in json.dumps(body) for realm in REALMS)
