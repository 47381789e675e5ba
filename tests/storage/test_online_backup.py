"""Online backup and restore, as an operator runs them: a writer streaming through a real gateway, a
backup taken mid-stream with ``meta-memory backup --url``, the gateway killed (SIGKILL), the copy
served with ``meta-memory serve --state-dir`` and checked record by record."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from support import RpcClient, access_toml, realm_db, start_gateway, write_config

pytestmark = pytest.mark.gateway

OPS, WRITER = "ops-backup-token", "writer-token-2"


@dataclass
class Ack:
    sent_ms: int
    acked_ms: int
    identity: str
    memory_id: str
    title: str
    body: str


def now_ms() -> int:
    return int(time.time() * 1000)


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "meta_memory.cli", *args], capture_output=True, text=True,
                          timeout=300, env={**os.environ, **(env or {})})


def wait_for(condition: Any, thread: threading.Thread, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert thread.is_alive(), "the writer stopped"
        assert time.monotonic() < deadline, "the writer made no progress"
        time.sleep(0.05)


def exported(client: RpcClient) -> list[dict[str, Any]]:
    """Every line of the gateway's export (``meta/storage/export``), decoded."""
    page = client.result("meta/storage/export", {})
    lines = list(page["lines"])
    while not page["done"]:
        page = client.result("meta/storage/export", {"export_id": page["export_id"]})
        lines += page["lines"]
    return [json.loads(line) for line in lines]


def test_a_backup_taken_mid_stream_restores_exactly_the_acknowledged_writes(tmp_path: Path) -> None:
    backups = tmp_path / "backups"
    backups.mkdir()
    config = write_config(tmp_path / "c.toml", f'[gateway]\nbackup_dir = "{backups}"\n')
    gw = start_gateway(tmp_path / "live", config=config)
    try:
        _stream_back_up_and_restore(gw, backups)
    finally:
        gw.kill()


def _stream_back_up_and_restore(gw: Any, backups: Path) -> None:
    client = RpcClient(gw)
    acks: list[Ack] = []
    facts: list[tuple[int, str]] = []
    stop = threading.Event()

    def writer() -> None:
        i = 0
        while not stop.is_set():
            identity = f"agent:{i % 3}"
            title, body = f"note {i}", f"write number {i} of the stream, token {i * 7919}"
            sent = now_ms()
            out = client.rpc("meta/agent_memory/remember", {"identity": identity, "title": title, "body": body})
            if "result" in out:
                acks.append(Ack(sent, now_ms(), identity, out["result"]["memory_id"], title, body))
            if i % 10 == 0:
                fact = f"fact {i}"
                if "result" in client.rpc("meta/memory/index", {"entity": "stream", "topic": f"t{i}", "fact": fact}):
                    facts.append((now_ms(), fact))
            i += 1

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        wait_for(lambda: len(acks) >= 60, thread)
        asked_ms = now_ms()
        done = cli("backup", "--url", gw.url, str(backups / "mid-stream"), "--json")
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        written_at_report = len(acks)
        wait_for(lambda: len(acks) >= written_at_report + 20, thread)  # the gateway kept serving writes
    finally:
        stop.set()
        thread.join(30)
        client.close()
    gw.kill()  # SIGKILL: nothing of the live gateway is shut down cleanly

    began = report["began_at_ms"]
    before = [a for a in acks if a.acked_ms <= asked_ms]
    during = [a for a in acks if asked_ms < a.acked_ms and a.sent_ms < began]
    after = [a for a in acks if a.sent_ms > began]
    assert before and after, (len(before), len(after))
    assert asked_ms <= began

    dest = backups / "mid-stream"
    assert report["dest"] == str(dest)
    kinds = {f["path"]: f["kind"] for f in report["files"]}
    assert kinds[f"agent-memory/{realm_db(dest).name}"] == "sqlite" and kinds["memory-ledger-state.json"] == "ledger"
    assert kinds["session-state.db"] == "sqlite" and kinds["events.sqlite3"] == "sqlite"
    for path in [dest, *dest.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), (path, oct(mode))

    restored = start_gateway(dest)
    try:
        rc = RpcClient(restored)
        lines = exported(rc)
        records = {line["record"]["id"]: line["record"] for line in lines if line["type"] == "record"}
        for ack in before:  # every write acknowledged before the backup began, exactly as written
            rec = records.get(ack.memory_id)
            assert rec is not None, f"acknowledged write {ack.title} is missing from the backup"
            assert (rec["title"], rec["body"], rec["scope"]["identity"]) == (ack.title, ack.body, ack.identity)
        for ack in after:  # nothing that began after the backup began
            assert ack.memory_id not in records
        sent = {a.memory_id for a in acks}
        assert set(records) <= sent | {a.memory_id for a in during}
        assert set(records) >= {a.memory_id for a in before}
        ledger_facts = {line["fact"] for line in lines if line["type"] == "assertion"}
        assert {fact for at, fact in facts if at <= asked_ms} <= ledger_facts
        # the restored copy serves: recall finds a record, and it takes new writes
        first = before[0]
        found = rc.result("meta/agent_memory/recall", {"identity": first.identity, "query_text": first.title})
        assert any(r["memory_id"] == first.memory_id for r in found["records"])
        assert rc.result("meta/agent_memory/remember", {"identity": "agent:9", "title": "after", "body": "restore"})
        rc.close()
    finally:
        restored.stop()


@pytest.fixture
def secured(tmp_path: Path) -> Any:
    backups = tmp_path / "backups"
    backups.mkdir()
    cfg = write_config(tmp_path / "c.toml", access_toml(
        {OPS: "ops", WRITER: "writer"},
        [("ops", "operator.backup"), ("ops", "operator.status"),
         *(("writer", a, {"identity": "a:b"}) for a in ("agent.memory.write", "agent.memory.read", "agent.view"))])
        + f'\n[gateway]\nbackup_dir = "{backups}"\n')
    gw = start_gateway(tmp_path / "state", config=cfg)
    gw.rpc("meta/agent_memory/remember", {"identity": "a:b", "title": "t", "body": "b"}, token=WRITER)
    yield gw, backups
    gw.stop()


def test_a_backup_needs_operator_backup(secured: Any) -> None:
    gw, backups = secured
    for token in (None, WRITER):
        err = gw.error("meta/storage/backup", {"dest": str(backups / "x")}, token=token)
        assert err["code"] == -32030 and err["data"]["kind"] == "access_denied"
        assert err["data"]["action"] == "operator.backup"
    assert not (backups / "x").exists()
    assert gw.result("meta/storage/backup", {"dest": str(backups / "x")}, token=OPS)["dest"] == str(backups / "x")


@pytest.mark.parametrize("dest", [
    "/tmp/escape-{n}",                  # outside the backup directory
    "{root}/../escape-{n}",             # .. leads out
    "{root}/link/escape-{n}",           # a symbolic link inside leads out
    "{root}/missing/parent-{n}",        # a parent that does not exist
    "{root}",                           # the backup directory itself (it exists)
    "missing-{n}/parent",               # relative: joined to the backup directory, whose "missing-..." does not exist
    "link/escape-{n}",                  # relative, through a symbolic link that leads out
    "{root}/bad\u0007name",             # a control character
])
def test_a_remote_caller_cannot_name_a_path_outside_the_backup_directory(secured: Any, tmp_path: Path,
                                                                         dest: str) -> None:
    gw, backups = secured
    outside = tmp_path / "outside"
    outside.mkdir()
    (backups / "link").symlink_to(outside)
    n = os.urandom(3).hex()
    target = dest.format(root=backups, n=n)
    err = gw.error("meta/storage/backup", {"dest": target}, token=OPS)
    assert err["code"] == -32602 and err["data"]["field"] == "dest", err
    assert not list(outside.iterdir())
    assert not Path(f"/tmp/escape-{n}").exists() and not (tmp_path / f"escape-{n}").exists()
    assert sorted(p.name for p in backups.iterdir()) == ["link"]


@pytest.mark.parametrize("dest", [
    "{root}/ok1/../ok2",                # ``..`` that stays inside is refused all the same
    "{root}/ok1/..",
    "{root}/./ok1/../../backups/ok3",
])
def test_a_dot_dot_component_is_refused_before_anything_is_written(secured: Any, dest: str) -> None:
    gw, backups = secured
    (backups / "ok1").mkdir()
    err = gw.error("meta/storage/backup", {"dest": dest.format(root=backups)}, token=OPS)
    assert err["code"] == -32602 and err["data"]["field"] == "dest", err
    assert "'..'" in err["message"]
    assert sorted(p.name for p in backups.iterdir()) == ["ok1"] and not list((backups / "ok1").iterdir())


@pytest.mark.parametrize("dest", [".", "./", "/", "//."])
def test_a_dest_naming_no_new_directory_is_refused_saying_so(secured: Any, dest: str) -> None:
    """A ``dest`` of ``.`` or ``/`` (what ``meta-memory backup --url URL ""`` sent) was refused as lying
    outside the backup directory: it names no directory to write, and the refusal says that."""
    gw, backups = secured
    err = gw.error("meta/storage/backup", {"dest": dest}, token=OPS)
    assert err["code"] == -32602 and err["data"]["field"] == "dest", err
    assert "dest must name the new directory to write" in err["message"], err
    assert list(backups.iterdir()) == []


@pytest.mark.parametrize(("name", "rule"), [
    ("a" * 300, "longer than 255 bytes"),        # no file system takes it
    ("é" * 128, "longer than 255 bytes"),        # 256 bytes of UTF-8
    ("b" * 240, "at most 237 bytes"),            # fits, but its hidden working name would not
])
def test_a_name_too_long_is_refused_as_a_rule_not_an_io_error(secured: Any, name: str, rule: str) -> None:
    gw, backups = secured
    err = gw.error("meta/storage/backup", {"dest": f"{backups}/{name}"}, token=OPS)
    assert err["code"] == -32602 and err["data"]["field"] == "dest", err
    assert rule in err["message"] and name not in err["message"]
    assert list(backups.iterdir()) == []
    assert gw.result("meta/storage/backup", {"dest": f"{backups}/{'c' * 237}"}, token=OPS)["files"]


@pytest.mark.parametrize(("name", "char"), [
    ("\u202eevil", "U+202E"),                   # a right-to-left override: shows as "live"
    ("report\u200b", "U+200B"),                 # a zero-width space: shows as "report"
    ("a\u2066b\u2069", "U+2066"),               # a bidirectional isolate
    ("c1\x85name", "U+0085"),                   # a C1 control
])
def test_a_name_hiding_or_reordering_what_it_shows_is_refused(secured: Any, name: str, char: str) -> None:
    gw, backups = secured
    for dest in (name, f"{backups}/{name}"):  # relative to the backup directory, and absolute
        err = gw.error("meta/storage/backup", {"dest": dest}, token=OPS)
        assert err["code"] == -32602 and err["data"]["field"] == "dest", err
        assert "invisible or direction-changing" in err["message"] and char in err["message"], err
    assert list(backups.iterdir()) == []


def test_a_path_too_long_for_the_files_of_the_copy_is_refused(secured: Any) -> None:
    gw, backups = secured
    deep = backups
    while len(str(deep).encode()) < 3800:  # existing directories, a path a system call still takes
        deep = deep / ("d" * 200)
        deep.mkdir()
    dest = deep / ("e" * (4040 - len(str(deep).encode())))
    assert len(str(dest).encode()) <= 4095
    err = gw.error("meta/storage/backup", {"dest": str(dest)}, token=OPS)
    assert err["code"] == -32602 and err["data"]["field"] == "dest", err
    assert "a path holds at most 4095 bytes" in err["message"]
    assert not list(deep.iterdir())


def test_the_cli_refuses_a_dot_dot_component(secured: Any, tmp_path: Path) -> None:
    gw, backups = secured
    (backups / "ok1").mkdir()
    remote = cli("backup", "--url", gw.url, "--token", OPS, f"{backups}/ok1/../ok2")
    assert remote.returncode == 1 and "'..'" in remote.stderr, remote.stderr
    too_long = cli("backup", "--url", gw.url, "--token", OPS, f"{backups}/{'a' * 300}")
    assert too_long.returncode == 1 and "longer than 255 bytes" in too_long.stderr, too_long.stderr
    assert sorted(p.name for p in backups.iterdir()) == ["ok1"]
    gw.stop()
    local = cli("backup", "--state-dir", str(gw.state_dir), f"{tmp_path}/ok1/../ok2")
    assert local.returncode == 1 and "'..'" in local.stderr, local.stderr
    assert not (tmp_path / "ok2").exists()


def test_a_relative_dest_is_resolved_against_the_backup_directory(secured: Any, tmp_path: Path) -> None:
    """``backup --url URL DEST`` with a relative DEST writes ``<backup_dir>/DEST``, wherever the command runs
    and whatever the gateway's working directory; the RPC takes the relative path the same way."""
    gw, backups = secured
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = subprocess.run([sys.executable, "-m", "meta_memory.cli", "backup", "--url", gw.url, "--json", "nightly"],
                          capture_output=True, text=True, timeout=300, cwd=elsewhere,
                          env={**os.environ, "META_MEMORY_TOKEN": OPS})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["dest"] == str(backups / "nightly")
    assert (backups / "nightly" / "backup-manifest.json").is_file() and not list(elsewhere.iterdir())
    (backups / "weekly").mkdir()
    report = gw.result("meta/storage/backup", {"dest": "weekly/1"}, token=OPS)
    assert report["dest"] == str(backups / "weekly" / "1")
    again = gw.error("meta/storage/backup", {"dest": "nightly"}, token=OPS)
    assert again["data"]["field"] == "dest" and "never overwrites" in again["message"]
    help_text = " ".join(subprocess.run([sys.executable, "-m", "meta_memory.cli", "backup", "--help"],
                                        capture_output=True, text=True, timeout=60).stdout.split())
    assert "a relative DEST is resolved by the gateway against backup_dir" in help_text


def test_a_backup_never_overwrites(secured: Any) -> None:
    gw, backups = secured
    (backups / "taken").mkdir()
    (backups / "taken" / "keep.txt").write_text("mine")
    err = gw.error("meta/storage/backup", {"dest": str(backups / "taken")}, token=OPS)
    assert err["code"] == -32602 and "never overwrites" in err["message"]
    assert (backups / "taken" / "keep.txt").read_text() == "mine"


def test_without_a_backup_directory_the_method_is_refused(gateway: Any, tmp_path: Path) -> None:
    err = gateway.error("meta/storage/backup", {"dest": str(tmp_path / "b")})
    assert err["code"] == -32602 and "backup_dir" in err["message"]
    assert not (tmp_path / "b").exists()


def test_the_cli_backs_up_a_stopped_installation_and_refuses_a_served_one(tmp_path: Path) -> None:
    state = tmp_path / "state"
    gw = start_gateway(state)
    try:
        _offline_backup_checks(gw, state, tmp_path)
    finally:
        gw.stop()


def _offline_backup_checks(gw: Any, state: Path, tmp_path: Path) -> None:
    mid = gw.result("meta/agent_memory/remember", {"identity": "a:b", "title": "kept", "body": "offline copy"})["memory_id"]
    busy = cli("backup", "--state-dir", str(state), str(tmp_path / "copy"))
    assert busy.returncode == 1 and "--url" in busy.stderr
    assert not (tmp_path / "copy").exists()
    gw.stop()
    done = cli("backup", "--state-dir", str(state), str(tmp_path / "copy"))
    assert done.returncode == 0, done.stderr
    again = cli("backup", "--state-dir", str(state), str(tmp_path / "copy"))
    assert again.returncode == 1 and "never overwrites" in again.stderr
    usage = cli("backup", str(tmp_path / "other"))
    assert usage.returncode == 2
    inside = cli("backup", "--state-dir", str(state), str(state / "copy"))
    assert inside.returncode == 1 and "outside the state directory" in inside.stderr
    restored = start_gateway(tmp_path / "copy")
    try:
        listed = restored.result("meta/agent_memory/list", {"identity": "a:b"})
        assert [r["memory_id"] for r in listed["records"]] == [mid]
    finally:
        restored.stop()
