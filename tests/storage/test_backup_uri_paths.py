"""A backup copies exactly the files it names, whatever characters their paths hold: a state directory
whose path holds ``#``, ``?`` or ``%41`` and realms whose file names are percent-encoded (``équipe``,
``a b``, ``x%y``) are copied record for record, and nothing is created outside the state directory
(SQLite reads a ``file:`` URI's path up to ``?`` or ``#`` and decodes ``%HH`` in it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from meta_memory.storage.sqlite_uri import file_uri

REALMS = ["default", "équipe", "a b", "x%y", "q?r#s"]


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "meta_memory.cli", *args], capture_output=True, text=True,
                          timeout=120, cwd=cwd, env={**os.environ, "NO_COLOR": "1"})


def listed(state: Path, realm: str, cwd: Path) -> list[str]:
    out = cli("list", "--identity", "a:b", "--realm", realm, "--state-dir", str(state), "--json", cwd=cwd)
    assert out.returncode == 0, out.stderr
    return sorted(r["title"] for r in json.loads(out.stdout))


@pytest.mark.parametrize("state_name", ["st#1", "st?x=1", "st%41b"])
def test_a_backup_of_awkward_paths_holds_every_realm_s_records(tmp_path: Path, state_name: str) -> None:
    work = tmp_path / "work"
    work.mkdir()
    state = work / state_name
    for i, realm in enumerate(REALMS):
        out = cli("remember", f"Note {i}", f"the text of note {i}", "--identity", "a:b", "--realm", realm,
                  "--state-dir", str(state), cwd=work)
        assert out.returncode == 0, out.stderr
    before = set(os.listdir(work))
    out = cli("backup", "--state-dir", str(state), str(tmp_path / "copy"), cwd=work)
    assert out.returncode == 0, out.stdout + out.stderr
    assert set(os.listdir(work)) == before  # no stray file beside the state directory
    for i, realm in enumerate(REALMS):
        assert listed(tmp_path / "copy", realm, work) == [f"Note {i}"], realm


def test_the_uri_names_the_file_itself(tmp_path: Path) -> None:
    import sqlite3

    for name in ["st#1.sqlite3", "q?r.sqlite3", "%C3%A9quipe.sqlite3", "a b.sqlite3", "ü.sqlite3"]:
        path = tmp_path / name
        sqlite3.connect(path).execute("CREATE TABLE t (x)").connection.close()
        conn = sqlite3.connect(file_uri(path, "ro"), uri=True)
        try:
            assert conn.execute("SELECT name FROM sqlite_master").fetchall() == [("t",)]
        finally:
            conn.close()
    assert sorted(os.listdir(tmp_path)) == sorted(["st#1.sqlite3", "q?r.sqlite3", "%C3%A9quipe.sqlite3",
                                                   "a b.sqlite3", "ü.sqlite3"])


def test_a_state_directory_spelled_with_two_leading_slashes_is_that_directory(tmp_path: Path) -> None:
    """``//srv/state`` is ``/srv/state`` to the system; its URI must not read ``srv`` as an authority (every
    realm then looked damaged to ``doctor`` and readiness, and a backup was refused)."""
    state = tmp_path / "state"
    out = cli("remember", "Note", "the text of the note", "--identity", "a:b", "--state-dir", str(state), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    doubled = "/" + str(state)
    assert doubled.startswith("//")
    doctor = cli("doctor", "--state-dir", doubled, cwd=tmp_path)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert "cannot be opened" not in doctor.stdout + doctor.stderr
    out = cli("backup", "--state-dir", doubled, str(tmp_path / "copy"), cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert listed(tmp_path / "copy", "default", tmp_path) == ["Note"]
    import sqlite3

    conn = sqlite3.connect(file_uri("/" + str(state / "agent-memory" / "default.sqlite3"), "ro"), uri=True)
    try:
        assert conn.execute("SELECT count(*) FROM records").fetchone() == (1,)
    finally:
        conn.close()
