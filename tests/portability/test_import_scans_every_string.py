"""``meta-memory import`` scans every string a record line stores, not only its title, body and tags:
the provenance (author identity, evidence session ids, the verification claim, the profile), the
record's id, its quarantine reason and its links. A secret in any of them refuses the file by line
number, before anything is written, without repeating the secret. On SQLite and PostgreSQL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from contract.pgsupport import dsn_with_schema, require_postgres, throwaway_schema
from support import write_config

ID = "lead:main"
KEY = "AKIAIOSFODNN7EXAMPLE"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def config_args(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[list[str]]:
    if request.param == "sqlite":
        yield []
        return
    require_postgres()
    with throwaway_schema() as schema:
        config = write_config(tmp_path / "pg.toml",
                              f'[agent_memory]\nstore = "postgres"\ndsn = "{dsn_with_schema(schema)}"\n')
        yield ["--config", str(config)]


def mm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "meta_memory.cli", *args], capture_output=True, text=True,
                          timeout=300, env={**os.environ})


def _record(memory_id: str, **over: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "id": memory_id, "scope": {"scope": "identity", "realm": "default", "identity": ID}, "kind": "fact",
        "title": "Imported", "description": "", "body": "an ordinary note", "tags": [],
        "provenance": {"evidence": [], "author": {"author": "application"}}, "trust": "agent_observed",
        "status": {"status": "active"}, "derived_from": [], "created_at_ms": 1_700_000_000_000,
        "updated_at_ms": 1_700_000_000_000, "usage": {}, "ever_quarantined": False,
    }
    rec.update(over)
    return {"type": "record", "realm": "default", "record": rec, "tombstoned_at_ms": None, "rank_set_at_ms": None}


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    header = {"type": "header", "format": "meta-memory-export", "version": 1, "exported_at_ms": 1,
              "realms": ["default"]}
    path.write_text("\n".join(json.dumps(x) for x in [header, *records]) + "\n", encoding="utf-8")
    return path


WHERE = {
    "evidence session id": {"provenance": {"evidence": [{"session_id": f"sess-{KEY}", "generation": 0}],
                                           "author": {"author": "application"}}},
    "author identity": {"provenance": {"evidence": [], "author": {"author": "agent", "identity": f"bot:{KEY}"}}},
    "verification claim": {"provenance": {"evidence": [], "author": {"author": "application"},
                                          "verification": {"checked": "ran it with PGPASSWORD=hunter2x",
                                                           "evidence": []}}},
    "verification evidence": {"provenance": {"evidence": [], "author": {"author": "application"},
                                             "verification": {"checked": "looked", "evidence": [
                                                 {"session_id": KEY, "generation": 0}]}}},
    "profile": {"provenance": {"evidence": [], "author": {"author": "distiller", "run_id": "run-1"},
                               "profile": {"stage": "s", "bundle": "b", "version": "1",
                                           "model": f"gpt token={KEY}1a2b"}}},
    "operator principal": {"provenance": {"evidence": [], "author": {"author": "operator",
                                                                     "principal": f"ops {KEY}"}}},
    "metadata nested under its key": {"metadata": {"password": ["hunter2x"], "api_key": {"v": "a1b2c3d4e5f6g7h8i9j0k1"}}},
    "quarantine reason": {"status": {"status": "quarantined", "reason": f"held: {KEY}"}, "ever_quarantined": True},
}


@pytest.mark.parametrize("where", sorted(WHERE))
def test_a_secret_in_any_stored_string_refuses_the_file(tmp_path: Path, config_args: list[str], where: str) -> None:
    dump = _write(tmp_path / "x.jsonl", [_record("mem-ok-1"), _record("mem-bad", **WHERE[where])])
    state = tmp_path / "dst"
    out = mm("import", str(dump), "--state-dir", str(state), *config_args)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "line 3" in out.stderr and "secret_detected" in out.stderr, out.stderr
    assert "IOSFODNN7" not in out.stderr + out.stdout and "hunter2x" not in out.stderr + out.stdout
    assert "a1b2c3d4" not in out.stderr + out.stdout
    # nothing written: the refusal came before the first line landed
    state.mkdir(exist_ok=True)
    listed = mm("list", "--identity", ID, "--json", "--state-dir", str(state), *config_args)
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == []


def test_a_secret_in_the_record_id_is_refused_without_repeating_the_id(tmp_path: Path) -> None:
    dump = _write(tmp_path / "x.jsonl", [_record(f"mem-{KEY}")])
    out = mm("import", str(dump), "--state-dir", str(tmp_path / "dst"))
    assert out.returncode == 1 and "line 2" in out.stderr and "secret_detected" in out.stderr, out.stderr
    assert "IOSFODNN7" not in out.stderr + out.stdout


def test_clean_provenance_imports(tmp_path: Path, config_args: list[str]) -> None:
    clean = _record("mem-clean", provenance={
        "evidence": [{"session_id": "sess-42", "generation": 1}], "author": {"author": "agent", "identity": ID},
        "verification": {"checked": "read the label on the router", "evidence": [{"session_id": "sess-42"}]}})
    out = mm("import", str(_write(tmp_path / "x.jsonl", [clean])), "--state-dir", str(tmp_path / "dst"),
             *config_args)
    assert out.returncode == 0, out.stderr
