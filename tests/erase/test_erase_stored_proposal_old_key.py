"""A proposal stored by an earlier release, under a metadata key today's key rule refuses (a zero-width
character in it), stays readable where it is stored data, over a real gateway:

* the proposal listing still answers, and lists it (one such row used to make the whole listing fail);
* an erase of the content it holds takes it too (it used to be matched only through its proposer's identity,
  so a record's erase left the erased text in the proposal).

Accepting it still goes through today's write rules (the key is refused then: nothing unchecked is written).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from support import realm_db

pytestmark = pytest.mark.gateway

ID = "lead:main"
TITLE, BODY = "Orchard", "persimmon secret fact about the quokkazanzibar grove"
OLD_KEY = "source\u200b"  # accepted by an earlier release's key rule, refused by today's


def _store_with_old_proposal(tmp_path: Path, gateway_factory: Any) -> tuple[Path, str, str]:
    state = tmp_path / "state"
    gw = gateway_factory(state)
    mid = gw.result("meta/agent_memory/remember", {"identity": ID, "title": TITLE, "body": BODY})["memory_id"]
    gw.result("meta/session/note", {"identity": ID, "session_key": "s1"})
    out = gw.result("meta/agent_memory/tool", {"identity": ID, "session_key": "s1", "mob": "team", "arguments": {
        "action": "propose_to_mob", "title": TITLE, "body": BODY}})
    assert not out["is_error"], out
    [proposal] = gw.result("meta/memory/proposals/list", {})["proposals"]
    gw.stop()
    conn = sqlite3.connect(realm_db(state))
    try:
        with conn:
            (raw,) = conn.execute("SELECT record FROM proposals WHERE proposal_id = ?",
                                  (proposal["proposal_id"],)).fetchone()
            record = json.loads(raw)
            record["metadata"] = {OLD_KEY: "web"}
            conn.execute("UPDATE proposals SET record = ? WHERE proposal_id = ?",
                         (json.dumps(record), proposal["proposal_id"]))
    finally:
        conn.close()
    return state, mid, proposal["proposal_id"]


def test_an_old_proposal_under_a_key_refused_today_is_still_listed(tmp_path: Path, gateway_factory: Any) -> None:
    state, _, pid = _store_with_old_proposal(tmp_path, gateway_factory)
    gw = gateway_factory(state)
    listed = gw.rpc("meta/memory/proposals/list", {})
    assert "result" in listed, listed
    assert [p["proposal_id"] for p in listed["result"]["proposals"]] == [pid]
    panel = gw.rpc("meta/memory/panel/proposals", {})
    assert "result" in panel, panel
    # accepting it writes through today's rules: the key is refused, nothing is written
    decided = gw.rpc("meta/memory/proposals/decide", {"proposal_id": pid, "action": "accept"})
    assert "error" in decided and "metadata" in json.dumps(decided["error"]), decided


def test_an_erase_takes_an_old_proposal_holding_its_content(tmp_path: Path, gateway_factory: Any) -> None:
    state, mid, pid = _store_with_old_proposal(tmp_path, gateway_factory)
    gw = gateway_factory(state)
    report = gw.result("meta/agent_memory/erase", {"identity": ID, "memory_id": mid})
    assert report["proposals"] == [pid], report
    assert gw.result("meta/memory/proposals/list", {})["proposals"] == []
    gw.stop()
    conn = sqlite3.connect(realm_db(state))
    try:
        assert conn.execute("SELECT COUNT(*) FROM proposals WHERE record LIKE '%quokkazanzibar%'").fetchone() == (0,)
    finally:
        conn.close()
