"""``meta-memory remember TITLE -`` (and ``update --body -``) reads the body from stdin up to one byte past the
record body's cap and no further: a longer body is refused as every memory refuses it
(``BODY must be at most 65536 bytes [field=body]``), before anything is sent, whatever the target (a
gateway whose request cap is far larger, one not even running, a state directory). Driven as a user would:
the installed command in a subprocess, fed through a pipe."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from meta_memory.agent_memory.fields import MAX_BODY_BYTES

pytestmark = pytest.mark.gateway

ID = "lead:main"
SAID = f"meta-memory: refused (invalid_params): Invalid params: BODY must be at most {MAX_BODY_BYTES} bytes [field=body]"


def piped(tmp_path: Path, *args: str, size: int) -> subprocess.CompletedProcess[bytes]:
    """``meta-memory ARGS`` with ``size`` bytes of ``a`` on stdin."""
    body = tmp_path / f"body-{size}"
    body.write_bytes(b"a" * size)
    with body.open("rb") as stdin:
        return subprocess.run([sys.executable, "-m", "meta_memory.cli", *args], stdin=stdin, capture_output=True,
                              timeout=120, env={**os.environ, "COLUMNS": "200"})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_body_over_the_cap_is_refused_with_the_body_rule_before_sending(gateway: Any, tmp_path: Path) -> None:
    where = ["--identity", ID]
    # 9 MiB: past the gateway's default request cap (8 MiB), which a gateway would name instead
    for target in (["--url", gateway.url], ["--url", f"http://127.0.0.1:{free_port()}"],
                   ["--state-dir", str(tmp_path / "s")]):
        proc = piped(tmp_path, "remember", "Big", "-", *where, *target, size=9 * 1024 * 1024)
        assert proc.returncode == 1, (target, proc.stderr)
        assert proc.stderr.decode().splitlines() == [SAID], (target, proc.stderr)
    assert not (tmp_path / "s").exists()  # refused before the state directory is opened (or created)
    # nothing reached the gateway
    assert gateway.result("meta/agent_memory/list", {"identity": ID})["records"] == []
    # one byte past the cap: the same words, and the same JSON error the gateway answers, under --json
    proc = piped(tmp_path, "remember", "Big", "-", *where, "--url", gateway.url, "--json", size=MAX_BODY_BYTES + 1)
    assert proc.returncode == 1
    error = json.loads(proc.stdout)["error"]
    assert error == gateway.error("meta/agent_memory/remember",
                                  {"identity": ID, "title": "Big", "body": "a" * (MAX_BODY_BYTES + 1)})
    assert error["data"] == {"kind": "invalid_params", "field": "body"}


def test_a_body_at_the_cap_is_written_and_update_body_is_held_to_it(gateway: Any, tmp_path: Path) -> None:
    where = ["--identity", ID, "--url", gateway.url, "--json"]
    proc = piped(tmp_path, "remember", "Full", "-", *where, size=MAX_BODY_BYTES)
    assert proc.returncode == 0, proc.stderr
    mid = json.loads(proc.stdout)["memory_id"]
    proc = piped(tmp_path, "update", mid, "--body", "-", "--identity", ID, "--url", gateway.url, size=2 * MAX_BODY_BYTES)
    assert proc.returncode == 1
    assert proc.stderr.decode().splitlines() == [SAID.replace("BODY", "--body")]
