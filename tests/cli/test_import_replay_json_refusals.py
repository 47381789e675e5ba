"""``meta-memory import --json`` and ``meta-memory replay --json`` answer a refusal on stdout too, as every
other ``--json`` command does: one ``{"error": {code, message, data: {kind, ...}}}`` object (a gateway's or
the runtime's JSON-RPC error as answered, its ``data.field`` included, or ``code: null`` with kind
``refused``, ``startup`` or ``unreachable``), exit 1, the message still on stderr. Before, stdout stayed
empty, so a script reading the JSON had nothing to parse. Through the real command line."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from support import cli_json_error


def mm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "meta_memory.cli", *args], capture_output=True, text=True,
                          timeout=120)


def _locomo(path: Path) -> Path:
    turns = [{"speaker": "Ana", "dia_id": "D1:1", "text": "We moved the backups to S3"}]
    path.write_text(json.dumps([{
        "sample_id": "t1",
        "conversation": {"speaker_a": "Ana", "speaker_b": "Ben", "session_1": turns,
                         "session_1_date_time": "1:00 pm on 8 May, 2023"},
        "qa": [{"question": "Where are the backups?", "evidence": ["D1:1"], "category": 4}],
    }]), encoding="utf-8")
    return path


def _langgraph_store(path: Path) -> Path:
    """An empty LangGraph ``SqliteStore`` file (its ``store`` table, no rows)."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE store (prefix TEXT, key TEXT, value TEXT, created_at TEXT, updated_at TEXT)")
    conn.commit()
    conn.close()
    return path


def test_a_refused_import_prints_its_error_as_json(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "nothing"}\n', encoding="utf-8")
    damaged = cli_json_error(mm("import", str(bad), "--state-dir", str(tmp_path / "state"), "--json"))
    assert damaged["code"] is None and damaged["data"] == {"kind": "refused", "line": 1}
    assert damaged["message"].startswith("import refused: line 1: ")
    missing = cli_json_error(mm("import", "--from", "langgraph", str(tmp_path / "none.sqlite"), "--state-dir",
                        str(tmp_path / "state"), "--json"))
    assert (missing["code"], missing["data"]) == (None, {"kind": "refused"})
    assert "no such LangGraph SqliteStore database" in missing["message"]
    # a refusal of the runtime: its JSON-RPC error, naming the field
    config = tmp_path / "meta.toml"
    config.write_text('[agent_memory]\nrealms = ["default"]\n', encoding="utf-8")
    unlisted = cli_json_error(mm("import", "--from", "langgraph", str(_langgraph_store(tmp_path / "lg.sqlite")),
                         "--realm", "elsewhere", "--state-dir", str(tmp_path / "state"), "--config", str(config),
                         "--json"))
    assert unlisted["code"] == -32602
    assert unlisted["data"]["kind"] == "invalid_params" and unlisted["data"]["field"] == "realm"


def test_an_import_into_a_held_state_directory_prints_a_startupcli_json_error(gateway: Any, tmp_path: Path) -> None:
    source = _langgraph_store(tmp_path / "lg.sqlite")
    held = cli_json_error(mm("import", "--from", "langgraph", str(source), "--state-dir", str(gateway.state_dir), "--json"))
    assert (held["code"], held["data"]) == (None, {"kind": "startup"}) and "already in use" in held["message"]


def test_a_refused_replay_prints_its_error_as_json(gateway: Any, tmp_path: Path) -> None:
    shapeless = tmp_path / "shapeless.json"
    shapeless.write_text("{}", encoding="utf-8")
    bad = cli_json_error(mm("replay", str(shapeless), "--url", gateway.url, "--json"))
    assert (bad["code"], bad["data"]) == (None, {"kind": "refused"})
    assert "expected a JSON list of LoCoMo samples" in bad["message"]
    data = _locomo(tmp_path / "conv.json")
    gone = cli_json_error(mm("replay", str(data), "--url", "http://127.0.0.1:1", "--json"))
    assert (gone["code"], gone["data"]) == (None, {"kind": "unreachable"}) and "cannot reach" in gone["message"]
    # the gateway's refusal as it answered: code, kind and the field it names
    refused = cli_json_error(mm("replay", str(data), "--url", gateway.url, "--realm", " ops ", "--json"))
    assert refused["code"] == -32602
    assert refused["data"]["kind"] == "invalid_params" and refused["data"]["field"] == "realm"


def test_without_json_a_refused_import_or_replay_prints_nothing_on_stdout(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "nothing"}\n', encoding="utf-8")
    plain = mm("import", str(bad), "--state-dir", str(tmp_path / "state"))
    assert plain.returncode == 1 and plain.stdout == "" and "import refused: line 1" in plain.stderr
    plain = mm("replay", str(_locomo(tmp_path / "conv.json")), "--url", "http://127.0.0.1:1")
    assert plain.returncode == 1 and plain.stdout == "" and "cannot reach" in plain.stderr
