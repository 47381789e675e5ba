"""A realm database rewritten in place while the gateway runs, with its size kept and its modification time
set back (a restore over the live file, ``os.utime``), is read again by the console: what the every-realm
reads keep of a realm is trusted only while each file keeps its change time and device too (which no
rewrite leaves as they were)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import httpx

from support import start_gateway

WHO = "lead:main"


def _reads(gw: Any) -> float:
    for line in httpx.get(gw.url + "/metrics", timeout=10).text.splitlines():
        if line.startswith("meta_memory_panel_realm_reads_total "):
            return float(line.split()[1])
    raise AssertionError("meta_memory_panel_realm_reads_total is not reported")


def _db(state: Path) -> Path:
    found = list(state.rglob("r0*.sqlite3"))
    assert len(found) == 1, found
    return found[0]


def _titles(gw: Any) -> list[str]:
    return sorted(r["title"] for r in gw.result("meta/memory/panel/records", {})["records"])


def _settle(db: Path, at_ns: int) -> None:
    for f in (db, db.with_name(db.name + "-wal")):
        if f.exists():
            os.utime(f, ns=(at_ns, at_ns))


def test_a_realm_rewritten_in_place_with_its_size_and_mtime_kept_is_read_again(tmp_path: Path) -> None:
    state = tmp_path / "state"
    snapshots: list[bytes] = []
    for title in ("One", "Two"):
        with start_gateway(state) as gw:
            gw.result("meta/agent_memory/remember", {"identity": WHO, "realm": "r0", "title": title,
                                                     "body": f"note {title}"})
        snapshots.append(_db(state).read_bytes())
    db = _db(state)
    assert len(snapshots[0]) == len(snapshots[1]), "the second note fits the pages of the first"
    old = time.time_ns() - 10_000_000_000
    db.write_bytes(snapshots[0])
    for f in state.rglob("panel-summaries.json"):
        f.unlink()
    _settle(db, old)
    with start_gateway(state) as gw:
        assert _titles(gw) == ["One"]
        # a realm opened the first time may write (planner statistics, a checkpoint): read until it stays idle,
        # then a read is answered from what was kept
        kept = _reads(gw)
        for _ in range(100):
            assert _titles(gw) == ["One"]
            if _reads(gw) == kept:
                break
            kept = _reads(gw)
            time.sleep(0.1)
        else:
            raise AssertionError("an idle realm is read again at every read")
        st = db.stat()
        with open(db, "r+b") as f:  # the same file, the same size, the modification time set back
            f.write(snapshots[1])
        os.utime(db, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert (db.stat().st_size, db.stat().st_mtime_ns, db.stat().st_ino) == (st.st_size, st.st_mtime_ns,
                                                                                st.st_ino)
        assert _reads(gw) == kept
        _titles(gw)
        # read again (what an open SQLite connection then answers is SQLite's: it may still hold the pages
        # it read before a rewrite that bypassed it)
        assert _reads(gw) > kept, "the rewritten realm is read again"
