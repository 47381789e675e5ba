"""A backup carries the installation's keys: restored into a new state directory, the installation still
verifies the exports it signed before the backup as its own, and a reader is shown the same session-key
digests. Driven as an operator runs it: ``meta-memory export --url``, ``meta/storage/backup``, the copy
moved to a new directory, ``meta-memory import`` and ``meta-memory serve`` on it."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from support import GatewayProcess, access_toml, start_gateway, write_config

pytestmark = pytest.mark.gateway

ID = "a:main"
WEAK = "session-1"
HOST, READER, OPS = "backup-keys-host-0001", "backup-keys-reader-0001", "backup-keys-ops-0001"
GRANTS = [("host", a, {"identity": ID}) for a in ("agent.memory.write", "agent.session.manage")]
GRANTS += [(who, a, {"identity": ID}) for who in ("host", "reader") for a in ("agent.memory.read", "agent.view")]
GRANTS += [("ops", "operator.backup"), ("ops", "operator.status")]
TOKENS = {HOST: "host", READER: "reader", OPS: "ops"}
KEY_FILES = ("export.key", "session-digest.key")


def mm(*args: str, token: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "META_MEMORY_TOKEN"}
    if token is not None:
        env["META_MEMORY_TOKEN"] = token
    return subprocess.run([sys.executable, "-m", "meta_memory.cli", *args], capture_output=True, text=True,
                          timeout=300, env=env)


def shown_digest(gw: GatewayProcess) -> list[str]:
    """The evidence session ids of the record "Notes" as the reader (read grants only) is shown them."""
    rows = [r for r in gw.result("meta/memory/panel/records", {}, token=READER)["records"] if r["title"] == "Notes"]
    assert len(rows) == 1
    return [e["session_id"] for e in rows[0]["provenance"]["evidence"]]


def installation(tmp_path: Path, backups: Path | None = None) -> Path:
    """A configuration granting the tokens above (and ``backup_dir = backups``)."""
    extra = f'\n[gateway]\nbackup_dir = "{backups}"\n' if backups is not None else ""
    return write_config(tmp_path / "config.toml", access_toml(TOKENS, GRANTS) + extra)


def use_keys(gw: GatewayProcess, dump: Path) -> list[str]:
    """Make the installation use both keys: a reader is shown a session-key digest (returned) and an
    export is signed (written to ``dump``)."""
    gw.result("meta/session/note", {"identity": ID, "session_key": WEAK}, token=HOST)
    gw.result("meta/agent_memory/remember", {"identity": ID, "title": "Notes", "body": "notes",
                                             "derived_from_sessions": [WEAK]}, token=HOST)
    shown = shown_digest(gw)
    assert shown[0].startswith("key:") and WEAK not in shown[0]
    exported = mm("export", "--url", gw.url, "-o", str(dump), "--quiet", token=OPS)
    assert exported.returncode == 0, exported.stderr
    return shown


def test_a_restored_backup_verifies_its_own_exports_and_keeps_session_digests(tmp_path: Path) -> None:
    backups = tmp_path / "backups"
    backups.mkdir()
    config = installation(tmp_path, backups)
    dump = tmp_path / "before.jsonl"
    with start_gateway(tmp_path / "live", config=config) as gw:
        before = use_keys(gw, dump)
        report = gw.result("meta/storage/backup", {"dest": str(backups / "copy")}, token=OPS)
    kinds = {f["path"]: f["kind"] for f in report["files"]}
    assert {name: kinds.get(name) for name in KEY_FILES} == {name: "key" for name in KEY_FILES}
    for name in KEY_FILES:
        copied = backups / "copy" / name
        assert copied.read_bytes() == (tmp_path / "live" / name).read_bytes()
        assert stat.S_IMODE(copied.stat().st_mode) == 0o600

    restored = tmp_path / "restored"
    shutil.copytree(backups / "copy", restored)  # restore: the copy put where a new state directory goes
    shutil.rmtree(tmp_path / "live")  # the old installation is gone
    doctor = mm("doctor", "--state-dir", str(restored))
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert not [f for f in json.loads(doctor.stdout)["findings"] if "key" in f["kind"]]
    imported = mm("import", str(dump), "--state-dir", str(restored), "--quiet", "--json")
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout)["verified"] is True  # its own export, signed before the backup
    with start_gateway(restored, config=config) as gw:
        assert shown_digest(gw) == before


def key_findings(state: Path) -> tuple[int, dict[str, str]]:
    done = mm("doctor", "--state-dir", str(state), "--quick")
    return done.returncode, {Path(f["paths"][0]).name: f["kind"] for f in json.loads(done.stdout)["findings"]
                             if f["kind"].endswith("key_file")}


def test_the_doctor_names_a_key_file_a_careless_restore_exposed_or_broke(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with start_gateway(state, config=installation(tmp_path)) as gw:
        use_keys(gw, tmp_path / "x.jsonl")
    assert key_findings(state) == (0, {})
    restored = tmp_path / "restored"
    shutil.copytree(state, restored, copy_function=shutil.copyfile)  # a copy that kept no modes
    for name in KEY_FILES:
        os.chmod(restored / name, 0o644)
    assert key_findings(restored) == (0, {name: "exposed_key_file" for name in KEY_FILES})
    (restored / "export.key").write_text("not a key\n")
    os.chmod(restored / "session-digest.key", 0o666)  # anyone could put their own key in it
    code, found = key_findings(restored)
    assert code == 1 and found == {name: "unusable_key_file" for name in KEY_FILES}


def test_a_cli_backup_of_a_stopped_installation_carries_the_keys_as_they_are(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with start_gateway(state, config=installation(tmp_path)) as gw:
        use_keys(gw, tmp_path / "x.jsonl")
    (state / "extra.key").write_bytes(b"\x00another installation secret")  # any key file, copied as it is
    os.chmod(state / "extra.key", 0o600)
    done = mm("backup", "--state-dir", str(state), str(tmp_path / "copy"), "--json")
    assert done.returncode == 0, done.stderr
    kinds = {f["path"]: f["kind"] for f in json.loads(done.stdout)["files"]}
    manifest = json.loads((tmp_path / "copy" / "backup-manifest.json").read_text())
    assert {f["path"]: f["kind"] for f in manifest["files"]} == kinds
    for name in (*KEY_FILES, "extra.key"):
        assert kinds[name] == "key"
        assert (tmp_path / "copy" / name).read_bytes() == (state / name).read_bytes()
        assert stat.S_IMODE((tmp_path / "copy" / name).stat().st_mode) == 0o600
