"""A realm name whose database file fits a file name but whose ``-wal``/``-shm``/``-journal`` would not is
refused up front, and one realm that cannot be read (damaged, or a file such a name left behind) no longer
takes the listings of every realm, the export and the readiness answer down with it.

Before: ``remember --realm <245 x a>`` failed ``-32040 io ... File name too long`` and left a 0-byte
``<realm>.sqlite3``; from then on the console's Records, Overview and Quarantine, ``meta-memory export``
(even of one identity) failed with the same error, while ``doctor`` said ok and ``/v1/ready`` ready. One
realm overwritten with random bytes emptied the console for every realm in the same way. Driven as a
user would: the CLI, a real gateway, files damaged on disk.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from meta_memory.readiness import TTL_S
from support import corrupt_table_pages, start_gateway

IDENT = "lead:main"
LONG = "a" * 245  # <LONG>.sqlite3 is 253 bytes; its -wal 257, -journal 261


def mm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "meta_memory.cli", *args], capture_output=True, text=True,
                          timeout=300, env={**os.environ})


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_realm_name_whose_side_files_would_not_fit_is_refused_before_any_file_is_made(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with start_gateway(state) as gw:
        made = mm("remember", "x", "y", "--identity", IDENT, "--realm", LONG, "--url", gw.url)
        assert made.returncode != 0
        assert "realm must be at most 239 bytes once encoded as a file name (got 245" in made.stderr, made.stderr
        assert "File name too long" not in made.stderr
        body = gw.rpc("meta/agent_memory/remember", {"identity": IDENT, "realm": "é" * 40, "title": "t", "body": "b"})
        assert body["error"]["code"] == -32602 and body["error"]["data"]["field"] == "realm", body
        assert "-journal" in body["error"]["message"]
        # the longest name that passes is served: its database and every file beside it fit
        gw.result("meta/agent_memory/remember", {"identity": IDENT, "realm": "a" * 239, "title": "t", "body": "b"})
        assert len(gw.result("meta/memory/panel/records", {"limit": 10})["records"]) == 1
        assert httpx.get(gw.url + "/v1/ready", timeout=30).json()["status"] == "ready"
    assert sorted(p.name for p in (state / "agent-memory").iterdir()) == ["a" * 239 + ".sqlite3"]


def _damaged_state(tmp_path: Path) -> Path:
    """Records in ``default`` and ``other``; then ``other`` overwritten with random bytes and a 0-byte
    ``<LONG>.sqlite3`` beside them (what the earlier refusal left behind)."""
    state = tmp_path / "state"
    with start_gateway(state) as gw:
        for realm in ("default", "other"):
            gw.result("meta/agent_memory/remember_batch", {"identity": IDENT, "realm": realm, "records": [
                {"title": f"{realm} note {i}", "body": f"apples in {realm}, note {i}"} for i in range(3)]})
    root = state / "agent-memory"
    (root / "other.sqlite3").write_bytes(os.urandom(64 * 1024))
    for side in ("other.sqlite3-wal", "other.sqlite3-shm"):
        (root / side).unlink(missing_ok=True)
    (root / f"{LONG}.sqlite3").write_bytes(b"")
    return state


def test_an_unreadable_realm_leaves_the_others_listed_and_is_named(tmp_path: Path) -> None:
    state = _damaged_state(tmp_path)
    with start_gateway(state) as gw:
        records = gw.result("meta/memory/panel/records", {"limit": 50})
        assert sorted(r["title"] for r in records["records"]) == [f"default note {i}" for i in range(3)]
        assert records["realms"] == ["default"]
        skipped = {s["realm"]: s for s in records["skipped_realms"]}
        assert set(skipped) == {LONG, "other"}
        assert skipped["other"]["reason"] == "corrupt" and "other.sqlite3" in skipped["other"]["message"]
        assert skipped[LONG]["reason"] == "invalid_name" and "239 bytes" in skipped[LONG]["message"]
        overview = gw.result("meta/memory/panel/overview", {})
        assert overview["totals"]["records"] == 3 and {s["realm"] for s in overview["skipped_realms"]} == {LONG, "other"}
        quarantine = gw.result("meta/memory/panel/quarantine", {"limit": 10})
        assert quarantine["realms"] == ["default"] and len(quarantine["skipped_realms"]) == 2
        for method in ("dreams", "dream_runs", "audit_verdicts", "injections", "proposals", "harvests"):
            answer = gw.result(f"meta/memory/panel/{method}", {"limit": 10})
            assert answer["realms"] == ["default"] and len(answer["skipped_realms"]) == 2, method
        # a healthy gateway's answer has no such member; a call naming the realm is refused as before
        assert "skipped_realms" not in gw.result("meta/memory/panel/records", {"realm": "default", "limit": 5})
        err = gw.error("meta/memory/panel/records", {"realm": "other", "limit": 5})
        assert err["code"] == -32040 and err["data"]["reason"] == "corrupt"

        time.sleep(TTL_S + 0.05)
        ready = httpx.get(gw.url + "/v1/ready", timeout=30)
        assert ready.status_code == 503
        names = {c["name"]: c["problem"] for c in ready.json()["checks"]}
        assert "realm:other" in names and f"realm:{LONG}" in names, names
        assert "239 bytes" in names[f"realm:{LONG}"]
        # the scrape still has the figures of the realms that can be read
        scrape = httpx.get(gw.url + "/metrics", timeout=30)
        assert scrape.status_code == 200 and 'realm="default"' in scrape.text and 'realm="other"' not in scrape.text

        # export over the gateway: one identity succeeds, naming what it left out; every realm fails closed
        one = tmp_path / "one.jsonl"
        out = mm("export", "--url", gw.url, "--identity", IDENT, "-o", str(one), "--quiet")
        assert out.returncode == 0, out.stderr
        assert "realm 'other' could not be read (corrupt)" in out.stderr
        header, *rest = _lines(one)
        assert header["realms"] == ["default"]
        assert {s["realm"]: s["reason"] for s in header["skipped_realms"]} == {LONG: "invalid_name", "other": "corrupt"}
        assert sum(1 for line in rest if line["type"] == "record") == 3
        every = tmp_path / "every.jsonl"
        out = mm("export", "--url", gw.url, "-o", str(every), "--quiet")
        assert out.returncode == 1 and "export refused" in out.stderr and f"realm '{LONG}'" in out.stderr, out.stderr
        assert not every.exists()

    # the same export from the state directory, the gateway stopped
    one = tmp_path / "local-one.jsonl"
    out = mm("export", "--state-dir", str(state), "--identity", IDENT, "-o", str(one), "--quiet")
    assert out.returncode == 0 and "realm 'other' could not be read" in out.stderr, out.stderr
    assert _lines(one)[0]["realms"] == ["default"]
    # an import of that file reads its header as written
    assert mm("import", str(one), "--state-dir", str(tmp_path / "elsewhere")).returncode == 0
    every = tmp_path / "local-every.jsonl"
    out = mm("export", "--state-dir", str(state), "-o", str(every), "--quiet")
    assert out.returncode == 1 and "export refused" in out.stderr, out.stderr
    assert not every.exists()

    doctor = mm("doctor", "--state-dir", str(state))
    findings = {f["kind"]: f for f in json.loads(doctor.stdout)["findings"]}
    assert doctor.returncode == 1
    assert findings["unservable_realm_name"]["paths"] == [str(state / "agent-memory" / f"{LONG}.sqlite3")]
    assert "damaged_database" in findings


def test_a_realm_damaged_past_its_header_leaves_every_realm_listing_served(tmp_path: Path) -> None:
    """A realm whose audit and injection-ledger pages are damaged still opens (its header, schema and records
    are whole), so only the reads of those tables fail: every listing of all realms leaves it out and names
    it; a call naming it is refused -32040 ``corrupt``; no row of it is listed as another realm's."""
    import sqlite3

    state = tmp_path / "state"
    with start_gateway(state) as gw:
        for realm in ("default", "other"):
            for batch in range(3):
                gw.result("meta/agent_memory/remember_batch", {"identity": IDENT, "realm": realm, "records": [
                    {"title": f"{realm} note {batch}-{i}", "body": f"apples in {realm}, note {batch}-{i} " + "x" * 400}
                    for i in range(50)]})
            for i in range(30):
                gw.result("meta/turn/inject", {"identity": IDENT, "realm": realm, "query_text": f"apples note {i}",
                                               "session_key": f"sess:{i}"})
    db = state / "agent-memory" / "other.sqlite3"
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert corrupt_table_pages(db, "audit", "injections") > 2
    with start_gateway(state) as gw:
        assert gw.result("meta/status", {})  # the status answer is not taken down
        for method in ("injections", "dreams", "dream_runs", "audit_verdicts", "proposals", "harvests", "quarantine",
                       "records", "overview"):
            answer = gw.result(f"meta/memory/panel/{method}", {} if method == "overview" else {"limit": 50})
            skipped = {s["realm"]: s["reason"] for s in answer.get("skipped_realms", [])}
            assert answer["realms"] in (["default"], ["default", "other"]), (method, answer["realms"])
            if "other" not in answer["realms"]:
                assert skipped == {"other": "corrupt"}, (method, answer)
        injections = gw.result("meta/memory/panel/injections", {"limit": 50})
        assert injections["realms"] == ["default"] and injections["skipped_realms"][0]["realm"] == "other"
        assert injections["injections"] and {i["realm"] for i in injections["injections"]} == {"default"}
        assert "other.sqlite3" in injections["skipped_realms"][0]["message"]
        dreams = gw.result("meta/memory/panel/dreams", {"limit": 10})
        assert dreams["realms"] == ["default"] and [s["realm"] for s in dreams["skipped_realms"]] == ["other"]
        # the records of the damaged realm are whole: a listing naming it is served, one reading the damage refused
        listed = gw.result("meta/agent_memory/list", {"identity": IDENT, "realm": "other", "limit": 5})
        assert {r["title"].split()[0] for r in listed["records"]} == {"other"}
        for method in ("injections", "dreams"):
            err = gw.error(f"meta/memory/panel/{method}", {"realm": "other", "limit": 5})
            assert err["code"] == -32040 and err["data"]["reason"] == "corrupt", err
        assert "skipped_realms" not in gw.result("meta/memory/panel/injections", {"realm": "default", "limit": 5})
