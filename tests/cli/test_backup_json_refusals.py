"""``meta-memory backup --json`` answers a refusal on stdout too, as the memory commands do: ``{"error":
{code, message, data: {kind, ...}}}``, the gateway's JSON-RPC error as it answered (``--url``), or ``code:
null`` with kind ``unreachable``, ``startup`` (a state directory another runtime holds) or ``refused``
(a ``DEST`` that exists, a state directory that does not), exit 1, the message still on stderr. Before,
stdout stayed empty, so a script reading the JSON had nothing to parse. Through the real command line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from support import cli_json_error


def mm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "meta_memory.cli", *args], capture_output=True, text=True,
                          timeout=120)


def test_a_refused_backup_prints_its_error_as_json(gateway: Any, tmp_path: Path) -> None:
    off = cli_json_error(mm("backup", "nightly", "--url", gateway.url, "--json"))  # no [gateway] backup_dir
    assert (off["code"], off["data"]["kind"]) == (-32602, "invalid_params")
    assert "backups over RPC are off" in off["message"]
    gone = cli_json_error(mm("backup", "nightly", "--url", "http://127.0.0.1:1", "--json"))
    assert (gone["code"], gone["data"]) == (None, {"kind": "unreachable"}) and "cannot reach" in gone["message"]
    held = cli_json_error(mm("backup", str(tmp_path / "copy"), "--state-dir", str(gateway.state_dir), "--json"))
    assert (held["code"], held["data"]) == (None, {"kind": "startup"}) and "already in use" in held["message"]
    missing = cli_json_error(mm("backup", str(tmp_path / "copy"), "--state-dir", str(tmp_path / "nothing"), "--json"))
    assert (missing["code"], missing["data"]) == (None, {"kind": "refused"})
    assert "no state directory" in missing["message"]
    assert not (tmp_path / "copy").exists()


def test_without_json_a_refusal_prints_nothing_on_stdout(tmp_path: Path) -> None:
    plain = mm("backup", str(tmp_path / "copy"), "--state-dir", str(tmp_path / "nothing"))
    assert plain.returncode == 1 and plain.stdout == "" and "no state directory" in plain.stderr


def test_a_refusal_prints_no_control_character_it_names(tmp_path: Path) -> None:
    # a path naming a direction override and DEL: shown escaped on stderr as every other command shows it,
    # and the JSON keeps the path's letters and escapes its controls (it decodes to the message as said)
    where = tmp_path / "caf\u00e9\u202enothing\x7f"
    proc = mm("backup", str(tmp_path / "copy"), "--state-dir", str(where), "--json")
    assert "\u202e" not in proc.stderr and "\x7f" not in proc.stderr, proc.stderr
    assert "\\u202e" in proc.stderr and "caf\u00e9" in proc.stderr, proc.stderr
    assert "\u202e" not in proc.stdout and "\x7f" not in proc.stdout and "caf\u00e9" in proc.stdout, proc.stdout
    assert str(where) in cli_json_error(proc, said_on_stderr=False)["message"]
