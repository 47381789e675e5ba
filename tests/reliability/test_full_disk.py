"""A full disk, for real: the state directory on a small tmpfs, filled up, under a real gateway.

Writes are refused naming the disk (-32040 ``disk_full``) and leave nothing behind; reads keep
working (recall, injection, listings, the panel): their usage marks and injection-ledger rows are
dropped and counted instead of failing the read; an untrusted tool result's taint that cannot be
written is held and enforced (the session's LLM writes quarantine), then written once there is room,
so it survives a restart. ``/v1/ready`` says ``disk`` meanwhile.

Before, recall failed with ``database or disk is full``, ``meta/turn/inject`` and
``meta/turn/tool_result`` with ``cannot rollback - no transaction is active``, and the tainted
session's later write landed active.
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from meta_memory.readiness import TTL_S
from support import start_gateway, write_config

IDENT = "lead:main"
SIZE = "8m"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A fresh 8 MiB tmpfs, unmounted after the test (needs root, as the operator's own machine would)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SIZE}", "tmpfs", str(mount)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode(errors='replace').strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(path: Path) -> None:
    """Write ``path`` until the disk refuses another byte."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError as exc:
        assert exc.errno == 28, exc  # ENOSPC
    finally:
        os.close(fd)


def _tool(gw: Any, session: str, title: str) -> dict[str, Any]:
    return gw.result("meta/agent_memory/tool", {"identity": IDENT, "session_key": session, "arguments": {
        "action": "remember", "title": title, "body": f"{title} as the web page said"}})


def test_a_full_disk_refuses_writes_naming_it_and_reads_keep_working(small_disk: Path, tmp_path: Path) -> None:
    state = small_disk / "state"
    config = write_config(tmp_path / "meta.toml", "[gateway]\nmin_free_disk_mb = 1\n")
    gw = start_gateway(state, config=config)
    try:
        stored = [gw.result("meta/agent_memory/remember", {"identity": IDENT, "title": f"Apples {i}",
                                                           "body": "apples are red " * 30})["memory_id"]
                  for i in range(20)]
        assert httpx.get(gw.url + "/v1/ready").status_code == 200
        filler = small_disk / "filler"
        _fill(filler)

        # writes: refused naming the disk, once SQLite's own slack is used up
        refusal = None
        for i in range(300):
            out = gw.rpc("meta/agent_memory/remember", {"identity": IDENT, "title": f"Pears {i}",
                                                        "body": f"pears are green {i} " * 60})
            if "error" in out:
                refusal = out["error"]
                break
            stored.append(out["result"]["memory_id"])
        assert refusal is not None, "the disk never filled"
        assert refusal["code"] == -32040 and refusal["data"] == {"kind": "agent_memory", "reason": "disk_full"}
        assert f"mounted at {small_disk}" in refusal["message"] and "Reads keep working" in refusal["message"]
        batch = gw.error("meta/agent_memory/remember_batch", {"identity": IDENT, "records": [
            {"title": f"Plums {i}", "body": "plums are purple " * 60} for i in range(20)]})
        assert batch["data"]["reason"] == "disk_full"

        # reads: recall (its usage marks dropped and counted), injection, listings, the panel
        found = gw.result("meta/agent_memory/recall", {"identity": IDENT, "query_text": "apples red"})
        assert len(found["records"]) == 8
        block = gw.result("meta/turn/inject", {"identity": IDENT, "session_key": "s-read",
                                               "query_text": "what colour are apples?"})
        assert block["skip_reason"] is None and "Apples" in block["text"]
        listed = gw.result("meta/agent_memory/manifest", {"identity": IDENT, "tier": "full"})
        assert {r["id"] for r in listed["records"]} == set(stored)  # the refused writes left nothing
        assert gw.result("meta/memory/panel/records", {"limit": 5})["records"]
        # the telemetry those reads cause is dropped and counted once it needs room: SQLite may still
        # fit the first usage marks in WAL space it already holds, so keep reading until one drops
        for i in range(300):
            if gw.result("meta/status")["agent_memory"]["telemetry"]["dropped"] >= 1:
                break
            again = gw.result("meta/turn/inject", {"identity": IDENT, "session_key": f"s-read-{i}",
                                                   "query_text": f"apples {i}"})
            assert "Apples" in again["text"]
        assert gw.result("meta/status")["agent_memory"]["telemetry"]["dropped"] >= 1
        time.sleep(TTL_S + 0.05)  # the report computed before the disk filled has expired
        ready = httpx.get(gw.url + "/v1/ready")
        assert ready.status_code == 503 and "disk" in ready.json()["failing"]

        # taint that cannot be written still closes the gate
        session = f"web-{uuid.uuid4().hex[:8]}"
        verdict = gw.result("meta/turn/tool_result", {"identity": IDENT, "session_key": session,
                                                      "tool_name": "web_fetch"})
        assert verdict["trusted"] is False and verdict["session_tainted"] is True
        # refused naming the disk, or (when a checkpoint gave the write-ahead log room again, so the
        # taint and the record could be written) held for review: never stored active
        held = _tool(gw, session, "Full disk note")["text"]
        assert "disk full" in held or "QUARANTINED" in held, held
        note = gw.error("meta/session/note", {"identity": IDENT, "session_key": "another"})
        assert note["data"]["reason"] == "disk_full"

        filler.unlink()  # room again: writes resume, the held taint is written first
        quarantined = _tool(gw, session, "Planted fact")
        assert "QUARANTINED" in quarantined["text"], quarantined
        gw.result("meta/agent_memory/remember", {"identity": IDENT, "title": "Cherries", "body": "cherries are red"})
    finally:
        gw.stop()

    with start_gateway(state, config=config) as again:  # the taint was written: it survives the restart
        assert "QUARANTINED" in _tool(again, session, "Planted again")["text"]
        assert httpx.get(again.url + "/v1/ready").status_code == 200


def test_answers_report_a_held_taint_as_the_gate_enforces_it(small_disk: Path, tmp_path: Path) -> None:
    """A session noted before the disk filled, then tainted by a web result whose taint could not be
    written: noting it again, compacting it and meta/status report the taint its writes are quarantined
    under (before, the note answered ``tainted: false``)."""
    config = write_config(tmp_path / "meta.toml", "[gateway]\nmin_free_disk_mb = 1\n")
    gw = start_gateway(small_disk / "state", config=config)
    try:
        assert gw.result("meta/session/note", {"identity": IDENT, "session_key": "s0"})["tainted"] is False
        _fill(small_disk / "filler")
        verdict = None
        for _ in range(50):  # SQLite may fit the first taints in room it already holds
            verdict = gw.result("meta/turn/tool_result", {"identity": IDENT, "session_key": "s0",
                                                          "tool_name": "web_fetch"})
            if gw.result("meta/status")["agent_memory"]["taint_tracker"]["held_taints"]:
                break
            gw.result("meta/session/reset", {"identity": IDENT, "session_key": "s0"})
            gw.result("meta/session/note", {"identity": IDENT, "session_key": "s0"})
        assert verdict is not None and verdict["session_tainted"] is True
        assert gw.result("meta/status")["agent_memory"]["taint_tracker"]["held_taints"] == 1
        assert "disk full" in _tool(gw, "s0", "Full disk note")["text"]
        assert gw.result("meta/session/note", {"identity": IDENT, "session_key": "s0"})["tainted"] is True
        assert gw.result("meta/session/compacted", {"identity": IDENT, "session_key": "s0"})["tainted"] is True
    finally:
        gw.stop()


def test_the_ledger_refuses_a_write_on_a_full_disk_naming_it(small_disk: Path, tmp_path: Path) -> None:
    """``meta/memory/index`` on a full disk: -32010 (``memory_backend``, as the spec fixes it) naming the disk,
    saying nothing was written and the ledger file is unchanged, and what to do; the next write after room
    is made succeeds."""
    config = write_config(tmp_path / "meta.toml", "[gateway]\nmin_free_disk_mb = 1\n")
    state = small_disk / "state"
    gw = start_gateway(state, config=config)
    try:
        facts = [gw.result("meta/memory/index", {"entity": "deploy", "topic": f"t{i}", "fact": "x " * 2000})
                 for i in range(3)]
        committed = (state / "memory-ledger-state.json").read_bytes()
        _fill(small_disk / "filler")
        refusal = gw.error("meta/memory/index", {"entity": "deploy", "topic": "late", "fact": "y " * 2000})
        assert refusal["code"] == -32010 and refusal["data"]["kind"] == "memory_backend"
        message = refusal["message"]
        assert message.startswith("Memory backend unavailable: memory ledger persist failed: no space left on")
        assert f"mounted at {small_disk}" in message and "MiB free" in message
        assert "nothing was written" in message and "memory-ledger-state.json is unchanged" in message
        assert "free space on that disk, then retry" in message
        assert (state / "memory-ledger-state.json").read_bytes() == committed
        (small_disk / "filler").unlink()
        assert gw.result("meta/memory/index", {"entity": "deploy", "topic": "late", "fact": "y"})["assertion_id"]
        assert len(facts) == 3
    finally:
        gw.stop()
