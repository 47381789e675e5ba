"""Realm names are case-sensitive (``Default`` and ``default`` are two realms) and each SQLite realm is one
file named from its name: so no two realm names may give file names that differ in case only, or a
case-insensitive file system (macOS, Windows, a casefold ext4 folder) would make them one database, records,
taint and audit shared across the two realms. An upper-case letter is escaped (``Default`` ->
``%44efault.sqlite3``); a file an earlier version named with the letter kept is renamed when the store opens,
with the files SQLite keeps beside it, and a realm with both names is refused rather than merged."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import unicodedata
from pathlib import Path

import httpx
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from meta_memory.errors import AgentMemoryError
from meta_memory.identity import parse_realm
from meta_memory.sdk import Meta
from meta_memory.storage.layout import (
    AgentMemoryPaths,
    StorageLayout,
    decode_path_segment,
    encode_path_segment,
    encoded_size,
    legacy_encode_path_segment,
    realm_file_name_problem,
)
from support import realm_db, serving, start_gateway

IDENT = "agent:writer"


def _valid_realm(value: str) -> bool:
    try:
        parse_realm(value)
    except ValueError:
        return False
    return True


realm_names = st.text(st.characters(codec="utf-8"), min_size=1, max_size=24).filter(_valid_realm)
#: names built from the letters the encoding treats apart, so that case-only differences are common
cased_names = st.text(st.sampled_from("aAbBzZ0-_%éÉßẞıIİi"), min_size=1, max_size=12).filter(_valid_realm)


def _case_variants(name: str) -> list[str]:
    return [v for v in {name.upper(), name.lower(), name.swapcase(), name.casefold(), name.title()}
            if _valid_realm(v)]


@settings(max_examples=400, deadline=None)
@given(a=st.one_of(realm_names, cased_names), data=st.data())
@example(a="Default", data=None)
def test_distinct_realm_names_never_share_a_file_name_under_case_folding(a: str, data: st.DataObject | None) -> None:
    b = "default" if data is None else data.draw(st.one_of(realm_names, cased_names, st.sampled_from(_case_variants(a))))
    ea, eb = encode_path_segment(a), encode_path_segment(b)
    assert (ea.casefold() == eb.casefold()) == (a == b)
    assert (ea.lower() == eb.lower()) == (a == b)


@settings(max_examples=300, deadline=None)
@given(name=st.one_of(realm_names, cased_names))
def test_an_encoded_name_is_ascii_normalisation_stable_and_decodes_back(name: str) -> None:
    encoded = encode_path_segment(name)
    assert encoded.isascii() and re.sub("%[0-9A-F]{2}", "", encoded) == re.sub("%[0-9A-F]{2}", "", encoded).lower()
    for form in ("NFC", "NFD", "NFKC", "NFKD"):
        assert unicodedata.normalize(form, encoded) == encoded
    assert decode_path_segment(encoded) == name
    assert decode_path_segment(legacy_encode_path_segment(name)) == name  # an earlier version's name too
    assert encoded_size(name) == len(encoded)
    assert (realm_file_name_problem(name) is None) == (len(encoded) <= 239)


def test_upper_case_letters_are_escaped_and_lower_case_names_keep_their_file() -> None:
    assert encode_path_segment("Default") == "%44efault"
    assert encode_path_segment("default") == "default"
    assert encode_path_segment("team-a_1") == "team-a_1"
    assert encode_path_segment("café") == "caf%C3%A9"
    assert encode_path_segment("DEFAULT").casefold() != encode_path_segment("default").casefold()


def test_the_byte_cap_counts_an_upper_case_letter_as_three() -> None:
    assert realm_file_name_problem("A" * 79) is None and realm_file_name_problem("a" * 239) is None
    problem = realm_file_name_problem("A" * 80)
    assert problem is not None and "got 240" in problem and "lower-case ASCII letter" in problem
    with pytest.raises(ValueError, match="at most 239 bytes once encoded"):
        parse_realm("A" * 80)


def _wal_database(path: Path, rows: int) -> sqlite3.Connection:
    """A WAL database whose rows are only in its ``-wal`` (the connection stays open: no checkpoint)."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute("CREATE TABLE t (x INTEGER)")
    for i in range(rows):
        conn.execute("INSERT INTO t VALUES (?)", (i,))
    return conn


def _earlier_copy(src_root: Path, src_stem: str, dst_root: Path, dst_stem: str) -> list[str]:
    """Copy a database and the files beside it under another stem (what an earlier version left)."""
    dst_root.mkdir(parents=True, exist_ok=True)
    copied = []
    for suffix in (".sqlite3", ".sqlite3-wal", ".sqlite3-shm"):
        if (src_root / (src_stem + suffix)).exists():
            shutil.copyfile(src_root / (src_stem + suffix), dst_root / (dst_stem + suffix))
            copied.append(dst_stem + suffix)
    return copied


def test_the_upgrade_moves_a_database_with_its_write_ahead_log(tmp_path: Path) -> None:
    conn = _wal_database(tmp_path / "src.sqlite3", 5)
    root = tmp_path / "am"
    copied = _earlier_copy(tmp_path, "src", root, "Ops")
    conn.close()
    assert "Ops.sqlite3-wal" in copied and (root / "Ops.sqlite3-wal").stat().st_size > 0
    done = AgentMemoryPaths(root).upgrade_file_names()
    assert done.conflicts == {} and [new for _, new in done.moves["Ops"]][-1] == "%4Fps.sqlite3"
    assert sorted(os.listdir(root)) == ["%4Fps.sqlite3", "%4Fps.sqlite3-shm", "%4Fps.sqlite3-wal"]
    with sqlite3.connect(root / "%4Fps.sqlite3") as check:
        assert check.execute("SELECT count(*) FROM t").fetchone()[0] == 5  # the rows the -wal held
    assert AgentMemoryPaths(root).upgrade_file_names().moves == {}  # nothing left to do


def test_a_crash_between_renames_is_finished_by_the_next_start(tmp_path: Path) -> None:
    conn = _wal_database(tmp_path / "src.sqlite3", 3)
    root = tmp_path / "state" / "agent-memory"
    _earlier_copy(tmp_path, "src", root, "Ops")
    conn.close()
    os.rename(root / "Ops.sqlite3-wal", root / "%4Fps.sqlite3-wal")  # the first rename, then the crash
    plan = AgentMemoryPaths(root).plan_file_name_upgrade()
    assert plan.conflicts == {} and plan.moves["Ops"] == [("Ops.sqlite3-shm", "%4Fps.sqlite3-shm"),
                                                          ("Ops.sqlite3", "%4Fps.sqlite3")]
    kinds = [f["kind"] for f in StorageLayout(tmp_path / "state").doctor(thorough=False)["findings"]]
    assert "earlier_realm_file_name" in kinds and "orphan_wal" not in kinds  # the next start finishes it
    AgentMemoryPaths(root).upgrade_file_names()
    with sqlite3.connect(root / "%4Fps.sqlite3") as check:
        assert check.execute("SELECT count(*) FROM t").fetchone()[0] == 3


def test_a_lower_case_realms_file_is_never_taken_for_an_upper_case_ones(tmp_path: Path) -> None:
    """Only names as the folder holds them count: ``default.sqlite3`` stays realm ``default``'s."""
    root = tmp_path / "am"
    root.mkdir()
    (root / "default.sqlite3").write_bytes(b"")
    (root / "caf%C3%A9.sqlite3").write_bytes(b"")
    (root / "Not.Canonical.sqlite3").write_bytes(b"")
    assert AgentMemoryPaths(root).upgrade_file_names().moves == {}
    assert sorted(os.listdir(root)) == ["Not.Canonical.sqlite3", "caf%C3%A9.sqlite3", "default.sqlite3"]


def _sdk_write(state: Path, realm: str, titles: list[str]) -> None:
    with Meta.builder().persistent_state(state).memory().build() as handle:
        for title in titles:
            handle.remember_agent_memory(IDENT, title=title, body=f"{title} in {realm}", realm=realm)


def _sdk_titles(state: Path, realm: str) -> list[str]:
    with Meta.builder().persistent_state(state).memory().build() as handle:
        return sorted(r.title for r in handle.recall_agent_memory(IDENT, realm=realm, selection="always"))


def _as_earlier_version(state: Path, realm: str) -> Path:
    """Rename realm ``realm``'s files (and markdown folder) to the names an earlier version gave them."""
    root = state / "agent-memory"
    new, old = encode_path_segment(realm), legacy_encode_path_segment(realm)
    for name in os.listdir(root):
        if name == new or name.startswith(new + "."):
            os.rename(root / name, root / (old + name[len(new):]))
    return root / (old + ".sqlite3")


def test_a_realm_written_under_its_earlier_file_name_is_found_after_the_upgrade(tmp_path: Path) -> None:
    state = tmp_path / "state"
    _sdk_write(state, "Ops", ["Deploy", "Rollback"])
    _sdk_write(state, "ops", ["Lowercase"])
    old = _as_earlier_version(state, "Ops")
    assert old.is_file() and not realm_db(state, "Ops").exists()
    doctor = StorageLayout(state).doctor()
    found = [f for f in doctor["findings"] if f["kind"] == "earlier_realm_file_name"]
    assert doctor["ok"] and len(found) == 1 and "%4Fps.sqlite3" in found[0]["message"]

    assert _sdk_titles(state, "Ops") == ["Deploy", "Rollback"]
    assert _sdk_titles(state, "ops") == ["Lowercase"]
    assert not old.exists() and realm_db(state, "Ops").name == "%4Fps.sqlite3" and realm_db(state, "Ops").is_file()
    assert not [f for f in StorageLayout(state).doctor()["findings"] if "realm_file" in f["kind"]]


def test_a_legacy_markdown_folder_under_its_earlier_name_is_imported(tmp_path: Path) -> None:
    state = tmp_path / "state"
    folder = state / "agent-memory" / "Ops"  # an earlier version's folder of realm Ops
    folder.mkdir(parents=True)
    (folder / f"{legacy_encode_path_segment(IDENT)}.md").write_text(
        '## Deploy\n<!-- meta-agent-memory {"memory_id": "m-1", "tags": [], "created_at_ms": 1700000000000, '
        '"updated_at_ms": 1700000000500} -->\nDeploys on tuesdays.\n<!-- /meta-agent-memory -->\n', encoding="utf-8")
    assert _sdk_titles(state, "Ops") == ["Deploy"]
    assert (state / "agent-memory" / "%4Fps").is_dir() and not (state / "agent-memory" / "Ops").exists()
    assert _sdk_titles(state, "ops") == []


def test_a_realm_with_both_names_is_refused_never_merged(tmp_path: Path) -> None:
    state = tmp_path / "state"
    _sdk_write(state, "Ops", ["Old"])
    old = _as_earlier_version(state, "Ops")
    shutil.copyfile(old, tmp_path / "saved.sqlite3")
    _sdk_titles(state, "Ops")  # renamed
    shutil.copyfile(tmp_path / "saved.sqlite3", old)  # and the earlier name back beside it
    before = {p.name: p.read_bytes() for p in (state / "agent-memory").iterdir() if p.is_file()}

    doctor = StorageLayout(state).doctor()
    conflict = [f for f in doctor["findings"] if f["kind"] == "realm_file_name_conflict"]
    assert not doctor["ok"] and len(conflict) == 1 and conflict[0]["severity"] == "error"
    assert conflict[0]["paths"] == [str(old), str(realm_db(state, "Ops"))]
    with Meta.builder().persistent_state(state).memory().build() as handle:
        with pytest.raises(AgentMemoryError) as refused:
            handle.recall_agent_memory(IDENT, realm="Ops", selection="always")
        assert "Ops.sqlite3" in str(refused.value) and "%4Fps.sqlite3" in str(refused.value)
        with pytest.raises(AgentMemoryError):
            handle.remember_agent_memory(IDENT, title="New", body="new", realm="Ops")
        handle.remember_agent_memory(IDENT, title="Other", body="other realms are served", realm="ops")
    with start_gateway(state) as gw:  # over RPC: refused by name, /v1/ready names the realm, others served
        err = gw.error("meta/agent_memory/recall", {"identity": IDENT, "realm": "Ops", "selection": "always"})
        assert err["data"]["reason"] == "io" and "Ops.sqlite3" in err["message"] and "doctor" in err["message"]
        ready = httpx.get(gw.url + "/v1/ready", timeout=60)
        assert ready.status_code == 503 and [c["name"] for c in ready.json()["checks"]] == ["realm:Ops"]
        got = gw.result("meta/agent_memory/recall", {"identity": IDENT, "realm": "ops", "selection": "always"})
        assert [r["title"] for r in got["records"]] == ["Other"]
    for name in ("Ops.sqlite3", "%4Fps.sqlite3"):  # neither database was renamed, overwritten or merged
        assert (state / "agent-memory" / name).read_bytes() == before[name]


def test_over_rpc_default_and_default_upper_land_in_two_files(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with serving(state) as rpc:
        for realm in ("Default", "default", "DEFAULT"):
            rpc.result("meta/agent_memory/remember", {"identity": IDENT, "realm": realm,
                                                      "title": f"In {realm}", "body": f"kept in {realm}"})
        for realm in ("Default", "default", "DEFAULT"):
            got = rpc.result("meta/agent_memory/recall", {"identity": IDENT, "realm": realm, "selection": "always"})
            assert [r["title"] for r in got["records"]] == [f"In {realm}"]
        listed = rpc.result("meta/status")["agent_memory"]["realms"]
        assert sorted(listed) == ["DEFAULT", "Default", "default"]
    names = sorted(p.name for p in (state / "agent-memory").glob("*.sqlite3"))
    assert names == sorted(realm_db(state, r).name for r in ("Default", "default", "DEFAULT"))
    assert len({n.casefold() for n in names}) == 3


def test_the_cli_doctor_reports_an_earlier_name(tmp_path: Path) -> None:
    state = tmp_path / "state"
    _sdk_write(state, "Ops", ["Deploy"])
    _as_earlier_version(state, "Ops")
    out = subprocess.run([sys.executable, "-m", "meta_memory.cli", "doctor", "--state-dir", str(state), "--quick"],
                         capture_output=True, text=True, timeout=120)
    report = json.loads(out.stdout)
    assert out.returncode == 0 and "earlier_realm_file_name" in [f["kind"] for f in report["findings"]]


def test_an_earlier_name_too_long_once_escaped_is_left_and_reported(tmp_path: Path) -> None:
    """80 upper-case letters fit before (80 bytes) and not now (240): the file keeps its name, and the doctor
    says what to do with it (never a rename to a name whose -journal would not fit)."""
    root = tmp_path / "state" / "agent-memory"
    root.mkdir(parents=True)
    sqlite3.connect(root / ("A" * 80 + ".sqlite3")).close()
    assert AgentMemoryPaths(root).upgrade_file_names().moves == {}
    assert os.listdir(root) == ["A" * 80 + ".sqlite3"]
    findings = {f["kind"]: f for f in StorageLayout(tmp_path / "state").doctor()["findings"]}
    assert "unservable_realm_name" in findings and "earlier_realm_file_name" not in findings
