"""What the memory commands say and how they exit: the manifest's ``--limit`` described as it behaves,
``--json`` answers on stdout (results and refusals alike), no silent ``erase --all``.

Driven as a user would: ``meta-memory`` in a subprocess, embedded on a state directory and against a
real gateway over HTTP.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from meta_memory.limits import MAX_MANIFEST_K

pytestmark = pytest.mark.gateway

ID = "lead:main"


def mm(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "meta_memory.cli", *args], input=stdin, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "COLUMNS": "200"})


def ok_json(proc: subprocess.CompletedProcess[str]) -> Any:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_list_limit_is_the_manifest_working_set_and_its_help_says_so(tmp_path: Path, gateway: Any) -> None:
    """``--limit K`` is the RPC's ``k``: up to 2K entries, as ``meta/agent_memory/manifest`` answers; the
    help says so, and the option's range is the RPC's."""
    where = ["--state-dir", str(tmp_path / "s"), "--identity", ID]
    for i in range(5):
        ok_json(mm("remember", f"Note {i}", f"body {i}", *where, "--json"))
    listed = ok_json(mm("list", "--limit", "1", *where, "--json"))
    assert len(listed) == 2
    assert len(ok_json(mm("list", "--limit", "3", *where, "--json"))) == 5
    help_text = " ".join(mm("list", "--help").stdout.split())
    assert "at most 2*K records" in help_text and f"1..{MAX_MANIFEST_K}" in help_text
    too_many = mm("list", "--limit", str(MAX_MANIFEST_K + 1), *where)
    assert too_many.returncode == 2 and f"1<=x<={MAX_MANIFEST_K}" in too_many.stderr
    # the gateway's manifest answers the same count for the same k, and refuses the same bound
    for i in range(4):
        gateway.result("meta/agent_memory/remember", {"identity": ID, "title": f"N{i}", "body": f"b{i}"})
    got = gateway.result("meta/agent_memory/manifest", {"identity": ID, "k": 1})["records"]
    assert len(got) == 2
    err = gateway.error("meta/agent_memory/manifest", {"identity": ID, "k": MAX_MANIFEST_K + 1})
    assert err["code"] == -32602 and err["data"]["field"] == "k"
