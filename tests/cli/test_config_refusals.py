"""A bad ``[agent_memory]`` value stops ``serve`` and ``gateway --stdio`` before anything opens: one line
naming the key and the rule, exit code 1, and the state directory is not created."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from support import write_config

pytestmark = pytest.mark.gateway


def start(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "meta_memory.cli", *args], capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize(
    ("section", "line"),
    [
        ('selection = "sometimes"',
         "meta-memory: agent_memory.selection: must be one of 'always', 'contextual' (got 'sometimes')"),
        ("max_entries = 65",
         "meta-memory: agent_memory.max_entries: must be an integer between 1 and 64 (0 = the default 8); got 65"),
        ("recall_timeout_ms = -1",
         "meta-memory: agent_memory.recall_timeout_ms: must be an integer between 1 and 30000 "
         "(0 = the default 500); got -1"),
        ('llm_writes = 3', "meta-memory: agent_memory.llm_writes: must be one of 'observed', 'quarantined' (got 3)"),
    ],
)
@pytest.mark.parametrize("command", [["serve", "--port", "0"], ["gateway", "--stdio"]])
def test_a_bad_agent_memory_value_is_one_line_naming_key_and_rule(tmp_path: Path, section: str, line: str,
                                                                  command: list[str]) -> None:
    cfg = write_config(tmp_path / "bad.toml", f"[agent_memory]\n{section}\n")
    state = tmp_path / "state"
    proc = start(*command, "--state-dir", str(state), "--config", str(cfg))
    assert proc.returncode == 1, proc.stderr
    assert [text for text in proc.stderr.splitlines() if text.strip()] == [line]
    assert proc.stdout == ""
    assert not state.exists()


def test_in_range_spellings_start(tmp_path: Path) -> None:
    """The decoder's normalisations (any-case enums, ``0`` = the default) are accepted at start-up."""
    cfg = write_config(tmp_path / "ok.toml", '[agent_memory]\nselection = " Always "\nmax_entries = 0\n')
    proc = subprocess.run([sys.executable, "-m", "meta_memory.cli", "gateway", "--stdio", "--state-dir",
                           str(tmp_path / "state"), "--config", str(cfg)],
                          input='{"jsonrpc":"2.0","id":1,"method":"meta/status"}\n', capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert '"agent_memory":{"enabled":true' in proc.stdout.replace(" ", "")


@pytest.mark.parametrize(
    ("section", "line"),
    [
        ('kindd = "local_json"',
         "meta-memory: memory.kindd is an unknown key (allowed: kind, health_check_endpoint, max_state_bytes)"),
        ('health_check_endpoint = "http://127.0.0.1:9"',
         'meta-memory: memory.kind is required: the only backend kind is "local_json"'),
    ],
)
def test_a_misspelt_ledger_kind_is_named_as_the_unknown_key(tmp_path: Path, section: str, line: str) -> None:
    """``[memory]`` without ``kind``: a misspelt key is named as unknown (not reported as a missing kind)."""
    cfg = write_config(tmp_path / "bad.toml", f"[memory]\n{section}\n")
    state = tmp_path / "state"
    proc = start("serve", "--port", "0", "--state-dir", str(state), "--config", str(cfg))
    assert proc.returncode == 1, proc.stderr
    assert [text for text in proc.stderr.splitlines() if text.strip()] == [line]
    assert not state.exists()


@pytest.mark.parametrize("command", [["remember", "Title", "Body", "--identity", "lead:main"], ["serve", "--port", "0"],
                                     ["gateway", "--stdio"], ["mcp", "--identity", "lead:main"], ["doctor"],
                                     ["export", "-o", "out.jsonl"], ["backup", "copy"],
                                     ["storage-adopt-predecessor"]])
@pytest.mark.parametrize("blank", ["", "  "])
def test_a_blank_state_dir_is_a_usage_error_not_the_current_directory(tmp_path: Path, command: list[str],
                                                                      blank: str) -> None:
    """``--state-dir ""`` (an unset ``--state-dir "$STATE"``) was the current directory: ``remember`` wrote its
    databases and lock file there and ``serve`` served it, an empty memory beside the user's own files."""
    proc = subprocess.run([sys.executable, "-m", "meta_memory.cli", *command, "--state-dir", blank], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "--state-dir" in proc.stderr and "must name a directory" in proc.stderr, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize("made", ["nothing", "a file"])
def test_a_backup_dir_that_is_no_directory_stops_serve_naming_the_key(tmp_path: Path, made: str) -> None:
    """``[gateway] backup_dir`` naming no directory was accepted at start, then every ``backup --url`` failed
    as if its DEST were wrong: ``serve`` refuses it as it refuses a relative one, before anything opens."""
    backups = tmp_path / "backups"
    if made == "a file":
        backups.write_text("not a directory\n", encoding="utf-8")
    cfg = write_config(tmp_path / "c.toml", f'[gateway]\nbackup_dir = "{backups}"\n')
    state = tmp_path / "state"
    proc = start("serve", "--port", "0", "--state-dir", str(state), "--config", str(cfg))
    assert proc.returncode == 1, proc.stderr
    why = "does not exist" if made == "nothing" else "is not a directory"
    assert [text for text in proc.stderr.splitlines() if text.strip()] == [
        f"meta-memory: gateway.backup_dir must name an existing directory: '{backups}' {why} (create it first: "
        "meta/storage/backup writes each backup as a new directory inside it)"]
    assert not state.exists()


def test_a_config_file_saved_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    """Some editors save UTF-8 with a leading byte-order mark: the file is read as the TOML it holds (its keys
    applied), not refused as invalid at line 1, column 1."""
    cfg = tmp_path / "bom.toml"
    cfg.write_bytes("\ufeff[agent_memory]\nenabled = true\nrealm = \"bom\"\n".encode())
    proc = subprocess.run([sys.executable, "-m", "meta_memory.cli", "gateway", "--stdio", "--state-dir",
                           str(tmp_path / "state"), "--config", str(cfg)],
                          input='{"jsonrpc":"2.0","id":1,"method":"meta/status"}\n', capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert '"realm":"bom"' in proc.stdout.replace(" ", ""), proc.stdout
