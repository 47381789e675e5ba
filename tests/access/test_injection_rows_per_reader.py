"""A reader of one identity learns nothing of other identities' injections from its record's ledger rows.

The injection ledger numbers its rows with one sequence per realm (one for every realm on PostgreSQL).
Shown as ``injection_id``, two rows of a reader's own record told it how many injections other identities
had between them. The rows of ``meta/memory/panel/record`` and ``meta/memory/panel/injections`` now carry
no row number: what a reader sees of its own rows does not move when another identity is injected.
Driven over a real gateway.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from support import GatewayProcess, access_toml, start_gateway, write_config

pytestmark = pytest.mark.gateway

MINE, OTHER = "a:mine", "b:other"
HOST, READER = "injection-rows-host-0001", "injection-rows-reader-0001"
GRANTS = [("host", a) for a in ("agent.memory.write", "agent.memory.read", "agent.view", "agent.session.manage")]
GRANTS += [("reader", a, {"identity": MINE}) for a in ("agent.memory.read", "agent.view")]
#: what a ledger row shows: no row number of a sequence other identities move
ROW_KEYS = {"realm", "record_id", "identity", "session_key", "surface", "at_ms"}


def _inject(gw: GatewayProcess, identity: str, session_key: str) -> None:
    gw.result("meta/session/note", {"identity": identity, "session_key": session_key}, token=HOST)
    gw.result("meta/turn/inject", {"identity": identity, "session_key": session_key, "query_text": "coffee espresso"},
              token=HOST)


def _logged(gw: GatewayProcess, memory_id: str, count: int) -> list[dict[str, Any]]:
    """The record's ledger rows as the host sees them, once ``count`` are logged (the ledger is written
    after the answer)."""
    deadline = time.monotonic() + 20
    while True:
        rows: list[dict[str, Any]] = gw.result("meta/memory/panel/record", {"memory_id": memory_id},
                                               token=HOST)["injections"]
        if len(rows) >= count:
            return rows
        assert time.monotonic() < deadline, f"{len(rows)} of {count} injections logged"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GatewayProcess, str, str]]:
    root = tmp_path_factory.mktemp("injection-rows")
    config = write_config(root / "c.toml", access_toml({HOST: "host", READER: "reader"}, GRANTS))
    gw = start_gateway(root / "state", config=config)
    try:
        ids = [gw.result("meta/agent_memory/remember", {"identity": who, "title": "Coffee", "body": "espresso"},
                         token=HOST)["memory_id"] for who in (MINE, OTHER)]
        # two of mine with five of the other's between them, then two of mine with none between
        _inject(gw, MINE, "mine-1")
        _logged(gw, ids[0], 1)
        for n in range(5):
            _inject(gw, OTHER, f"other-{n}")
        _logged(gw, ids[1], 5)
        for n in (2, 3, 4):
            _inject(gw, MINE, f"mine-{n}")
            _logged(gw, ids[0], n)
        yield gw, ids[0], ids[1]
    finally:
        gw.stop()


def test_a_readers_rows_carry_no_shared_row_number(world: tuple[GatewayProcess, str, str]) -> None:
    gw, mine, _ = world
    rows = gw.result("meta/memory/panel/record", {"memory_id": mine}, token=READER)["injections"]
    assert len(rows) == 4 and {r["identity"] for r in rows} == {MINE}
    for row in rows:
        assert set(row) == ROW_KEYS, row
    # nothing in a row is a number but its time
    assert all(not isinstance(v, int) for r in rows for k, v in r.items() if k != "at_ms"), rows
    # neither does any caller's listing (a whole-realm reader sees both identities' rows, still unnumbered)
    listed = gw.result("meta/memory/panel/injections", {}, token=HOST)["injections"]
    assert {r["identity"] for r in listed} == {MINE, OTHER} and all(set(r) == ROW_KEYS for r in listed), listed


def test_other_identities_injections_leave_a_readers_rows_as_they_were(
        world: tuple[GatewayProcess, str, str]) -> None:
    gw, mine, other = world
    before = gw.result("meta/memory/panel/record", {"memory_id": mine}, token=READER)
    assert gw.result("meta/memory/panel/record", {"memory_id": mine}, token=READER) == before  # stable
    for n in range(5, 8):
        _inject(gw, OTHER, f"other-{n}")
    _logged(gw, other, 8)
    assert gw.result("meta/memory/panel/record", {"memory_id": mine}, token=READER) == before
    # the other identity's record stays out of reach (one answer for unknown and unreadable)
    assert gw.error("meta/memory/panel/record", {"memory_id": other}, token=READER)["code"] == -32001
