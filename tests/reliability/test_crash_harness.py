"""Crash safety on every write path.

A real gateway runs a mixed workload (ledger index, remember, update, forget, tool writes under
taint, quarantine release/tombstone, proposals, markdown import) and is SIGKILLed at a random
moment, many times. After every restart the state must load, every acknowledged write must be
present exactly once, in-doubt writes must be all-or-nothing, audit rows must match the records
and the FTS index must match the records table. Power-loss variants: a leftover ledger stage file,
and a realm database copied with its un-checkpointed WAL while a writer runs.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from crash_driver import (
    LEDGER_FILE,
    LEDGER_STAGE,
    Journal,
    Workload,
    check_realm_invariants,
    open_ro,
    realm_db,
    rids_matching,
    verify_after_restart,
)
from support import start_gateway

KILLS = int(os.environ.get("META_CRASH_KILLS", "12"))
SEED = int(os.environ.get("META_CRASH_SEED", "20240917"))
MAX_RUN_S = 1.5

pytestmark = [pytest.mark.gateway, pytest.mark.slow]


def test_sigkill_at_random_points_loses_no_acknowledged_write(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    state = tmp_path / "state"
    journal = Journal()
    started = time.monotonic()
    ops_total = 0
    stage_seen = 0
    for run in range(KILLS):
        gw = start_gateway(state)
        try:
            if run:
                verify_after_restart(journal, state, gw.url)
            workload = Workload(journal, state, rng, run)
            delay = rng.uniform(0.05, MAX_RUN_S)
            killer = threading.Timer(delay, lambda p=gw.proc: p.send_signal(signal.SIGKILL))
            killer.start()
            ops_total += workload.drive(gw.url)
            killer.join()
            gw.proc.wait(timeout=10)
            assert gw.proc.returncode == -signal.SIGKILL
            stage_seen += (state / LEDGER_STAGE).exists()
        finally:
            gw.kill()
            for pipe in (gw.proc.stdout, gw.proc.stderr):
                if pipe:
                    pipe.close()
    gw = start_gateway(state)
    try:
        counts = verify_after_restart(journal, state, gw.url)
    finally:
        gw.stop()
    elapsed = time.monotonic() - started
    acked = sum(journal.acked.values())
    print(f"\ncrash harness: seed={SEED} kills={KILLS} ops_acknowledged={acked} ops_in_doubt="
          f"{sum(journal.doubted.values())} lost={len(journal.lost)} ledger_stage_left_behind={stage_seen} "
          f"elapsed={elapsed:.1f}s\n  acknowledged by kind: {dict(sorted(journal.acked.items()))}\n"
          f"  in doubt by kind: {dict(sorted(journal.doubted.items()))}\n  verified: {counts}")
    assert journal.lost == []
    assert acked >= KILLS * 3, "the workload barely ran; the kills proved nothing"
    assert ops_total == acked
    # Every kind of write was acknowledged at least once across the runs.
    kinds = {"remember", "update", "forget", "tool_tainted", "tool_clean", "propose", "ledger_index", "import"}
    assert kinds <= set(journal.acked), sorted(kinds - set(journal.acked))
    assert {"decide_release", "decide_tombstone"} & set(journal.acked)


# ----------------------------------------------------------------------------- power loss: ledger stage


def test_ledger_stage_left_behind_is_ignored_and_replaced(tmp_path: Path) -> None:
    """Power loss between writing ``memory-ledger-state.tmp`` and the rename: the committed file wins."""
    state = tmp_path / "state"
    gw = start_gateway(state)
    try:
        gw.result("meta/memory/index", {"entity": "alice", "topic": "coffee", "fact": "flat white"})
        gw.result("meta/memory/index", {"entity": "bob", "topic": "tea", "fact": "green"})
    finally:
        gw.kill()
    committed = (state / LEDGER_FILE).read_bytes()
    # A torn stage (truncated JSON) and, in a second round, a complete but uncommitted stage.
    for stage in (committed[: len(committed) // 2],
                  json.dumps({"assertions": [{"assertion_id": "memory-assert-999999", "entity": "mallory",
                                              "topic": "x", "store": "knowledge_graph", "fact": "uncommitted",
                                              "metadata": None, "indexed_at_ms": 1}], "conflicts": []}).encode()):
        (state / LEDGER_STAGE).write_bytes(stage)
        gw = start_gateway(state)
        try:
            got = gw.result("meta/memory/query", {})["assertions"]
            assert [(a["entity"], a["fact"]) for a in got][:2] == [("alice", "flat white"), ("bob", "green")]
            assert all(a["entity"] != "mallory" for a in got)
            assert (state / LEDGER_FILE).read_bytes().startswith(committed[:20])
            # The next persist replaces the stage and commits over the file.
            gw.result("meta/memory/index", {"entity": "carol", "topic": "juice", "fact": "orange"})
            assert not (state / LEDGER_STAGE).exists()
            entities = [a["entity"] for a in json.loads((state / LEDGER_FILE).read_text("utf-8"))["assertions"]]
            assert entities[:2] == ["alice", "bob"] and "carol" in entities and "mallory" not in entities
        finally:
            gw.kill()
        committed = (state / LEDGER_FILE).read_bytes()


# ----------------------------------------------------------------------------- power loss: realm WAL


def _copy_db_with_wal(src: Path, dst: Path) -> bool:
    """Copy ``db`` then ``db-wal`` (what a power cut leaves: the WAL not yet checkpointed)."""
    shutil.copyfile(src, dst)
    wal = src.with_name(src.name + "-wal")
    if wal.exists():
        shutil.copyfile(wal, dst.with_name(dst.name + "-wal"))
        return True
    return False


def test_realm_db_copied_mid_write_with_its_wal_is_consistent(tmp_path: Path) -> None:
    state = tmp_path / "state"
    gw = start_gateway(state)
    stop = threading.Event()
    acked: list[tuple[str, str]] = []
    errors: list[str] = []

    def writer() -> None:
        import httpx

        with httpx.Client(timeout=10) as client:
            i = 0
            while not stop.is_set():
                i += 1
                tok = f"walw{i}q"
                body = client.post(gw.url + "/rpc", json={"jsonrpc": "2.0", "id": i, "method": "meta/agent_memory/remember",
                                                          "params": {"identity": f"w:{i % 3}", "title": f"t {tok}",
                                                                     "body": f"b {tok} " + "x" * (i % 200)}}).json()
                if "error" in body:
                    errors.append(str(body))
                    return
                acked.append((body["result"]["memory_id"], tok))
                if i % 5 == 0:  # keep the FTS delete path busy too
                    client.post(gw.url + "/rpc", json={"jsonrpc": "2.0", "id": -i, "method": "meta/agent_memory/forget",
                                                       "params": {"identity": f"w:{i % 3}",
                                                                  "memory_id": acked[-2][0]}})

    thread = threading.Thread(target=writer)
    thread.start()
    copies = 0
    with_wal = 0
    try:
        src = realm_db(state, "default")
        deadline = time.monotonic() + 2.0
        while not src.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        for n in range(8):
            time.sleep(0.08)
            before = len(acked)
            dst = tmp_path / f"copy-{n}.sqlite3"
            with_wal += _copy_db_with_wal(src, dst)
            copies += 1
            conn = sqlite3.connect(dst)  # recovery replays the committed WAL frames, drops a torn tail
            conn.row_factory = sqlite3.Row
            try:
                assert check_realm_invariants(conn) == []
                ids = {r[0] for r in conn.execute("SELECT memory_id FROM records")}
                # Everything acknowledged before the copy started is in the copy (WAL frames fsynced).
                missing = [mid for mid, _ in acked[:before] if mid not in ids]
                assert missing == []
                for mid, tok in acked[:before][-20:]:
                    row = conn.execute("SELECT rid, status_kind FROM records WHERE memory_id = ?", (mid,)).fetchone()
                    assert rids_matching(conn, tok) == ([row["rid"]] if row["status_kind"] == "active" else [])
            finally:
                conn.close()
    finally:
        stop.set()
        thread.join()
        gw.stop()
    assert errors == []
    assert with_wal >= 1, "no copy caught a WAL file"
    print(f"\nWAL power-loss copies: {copies} ({with_wal} with a live WAL), writes acknowledged {len(acked)}")
    with open_ro(realm_db(state, "default")) as conn:
        assert check_realm_invariants(conn) == []
