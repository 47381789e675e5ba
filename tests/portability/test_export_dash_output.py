"""``meta-memory export -o -`` writes the export to stdout, as ``import -`` reads it from stdin, so
``export -o - | import -`` moves memory through a pipe; it never leaves a file named ``-`` behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from meta_memory.cli import build_runtime
from meta_memory.sdk.handle import MetaHandle
from meta_memory.sdk.transport import EmbeddedTransport
from meta_memory.server.gateway import Gateway


def mm(cwd: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "meta_memory.cli", *args], input=stdin, capture_output=True,
                          timeout=300, cwd=cwd, env={**os.environ})


def test_export_to_dash_writes_stdout_and_import_dash_reads_it(tmp_path: Path) -> None:
    with MetaHandle(EmbeddedTransport(Gateway.for_runtime(build_runtime(tmp_path / "src", None)))) as h:
        h.remember_agent_memory("lead:main", title="Passport location", body="Top drawer of the desk.")
    exported = mm(tmp_path, "export", "--state-dir", "src", "-o", "-", "--quiet")
    assert exported.returncode == 0, exported.stderr
    assert not (tmp_path / "-").exists()
    lines = [json.loads(line) for line in exported.stdout.decode().splitlines()]
    assert lines[0]["type"] == "header" and lines[-1]["type"] == "end"
    assert [line["type"] for line in lines].count("record") == 1
    imported = mm(tmp_path, "import", "-", "--state-dir", "dst", "--quiet", stdin=exported.stdout)
    assert imported.returncode == 0, imported.stderr
    listed = mm(tmp_path, "list", "--identity", "lead:main", "--state-dir", "dst", "--json")
    assert [r["title"] for r in json.loads(listed.stdout)] == ["Passport location"], listed.stderr
