"""A backup refuses a state directory holding a damaged database, naming it, rather than copy the damage.

A realm database whose header was overwritten is no SQLite file: it used to be copied as a plain file
(kind ``file``) and the backup reported success. One whose header is intact but whose pages are broken
was refused by SQLite's words alone, naming no file. Both are refused now, offline and over RPC, the
message naming the file (and the realm), nothing left at the destination or beside it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from support import realm_db, start_gateway, write_config

pytestmark = pytest.mark.gateway


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "meta_memory.cli", *args], capture_output=True, text=True,
                          timeout=300, env={**os.environ})


def two_realms(state: Path) -> None:
    for extra in ((), ("--realm", "ops")):
        done = cli("remember", "a", "b", "--identity", "x", *extra, "--state-dir", str(state))
        assert done.returncode == 0, done.stderr


def overwrite_header(state: Path) -> None:
    realm_db(state, "ops").write_bytes(b"garbage")


def break_pages(state: Path) -> None:
    """Every page after the first (the header and schema) overwritten in part: the header stays SQLite's."""
    path = realm_db(state, "ops")
    size = path.stat().st_size
    assert size > 8192
    with open(path, "r+b") as fh:
        for offset in range(4096, size, 4096):
            fh.seek(offset + 8)
            fh.write(b"\xff" * 200)


def nothing_written(parent: Path, name: str) -> None:
    assert not (parent / name).exists()
    assert [p.name for p in parent.iterdir() if p.name.startswith(f".{name}.partial-")] == []


@pytest.mark.parametrize("damage", [overwrite_header, break_pages], ids=["header", "pages"])
def test_the_cli_refuses_to_back_up_a_damaged_realm_database_naming_it(tmp_path: Path, damage: Callable[[Path], None]) -> None:
    state = tmp_path / "cor"
    two_realms(state)
    damage(state)
    out = tmp_path / "out"
    out.mkdir()
    done = cli("backup", str(out / "bk"), "--state-dir", str(state))
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "backed up" not in done.stdout
    assert "agent-memory/ops.sqlite3" in done.stderr and "realm 'ops'" in done.stderr, done.stderr
    nothing_written(out, "bk")


def test_a_healthy_state_directory_still_backs_up(tmp_path: Path) -> None:
    state = tmp_path / "cor"
    two_realms(state)
    done = cli("backup", str(tmp_path / "bk"), "--state-dir", str(state), "--json")
    assert done.returncode == 0, done.stderr
    kinds = {f["path"]: f["kind"] for f in json.loads(done.stdout)["files"]}
    assert kinds["agent-memory/ops.sqlite3"] == "sqlite" and kinds["agent-memory/default.sqlite3"] == "sqlite"


@pytest.mark.parametrize("damage", [overwrite_header, break_pages], ids=["header", "pages"])
def test_the_backup_method_refuses_a_damaged_realm_database_naming_it(tmp_path: Path, damage: Callable[[Path], None]) -> None:
    state = tmp_path / "cor"
    two_realms(state)
    damage(state)
    backups = tmp_path / "backups"
    backups.mkdir()
    config = write_config(tmp_path / "c.toml", f'[gateway]\nbackup_dir = "{backups}"\n')
    gw = start_gateway(state, config=config)
    try:
        err = gw.error("meta/storage/backup", {"dest": "nightly"})
        assert "agent-memory/ops.sqlite3" in err["message"] and "realm 'ops'" in err["message"], err
        nothing_written(backups, "nightly")
        done = cli("backup", "--url", gw.url, "nightly")
        assert done.returncode == 1 and "agent-memory/ops.sqlite3" in done.stderr, done.stderr
        nothing_written(backups, "nightly")
    finally:
        gw.stop()
