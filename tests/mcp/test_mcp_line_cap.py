"""``meta-memory mcp`` over a raw stdio pipe caps a message line at ``[gateway] max_request_bytes``: a
longer line is read to its end and dropped (logged, never buffered whole, never run), and the server
goes on answering the next message."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

from support import REPO_ROOT

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    p for p in (str(REPO_ROOT / "src"), os.environ.get("PYTHONPATH", "")) if p)}
LIMIT = 65_536


def _read(proc: subprocess.Popen[bytes], timeout_s: float) -> dict[str, Any] | None:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout_s)
    return json.loads(proc.stdout.readline()) if ready else None


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def test_an_oversized_line_is_dropped_unbuffered_and_the_server_goes_on(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text(f"[gateway]\nmax_request_bytes = {LIMIT}\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "meta_memory.cli", "mcp", "--identity", "agent:x", "--state-dir", str(tmp_path / "s"),
         "--config", str(config)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV)
    assert proc.stdin is not None and proc.stderr is not None
    try:
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}
                                    ).encode() + b"\n")
        proc.stdin.flush()
        assert _read(proc, 60) is not None
        proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        before = _rss_kib(proc.pid)
        # a well-formed request, just too long: 64 MiB of padding in one line
        padding = "x" * (1 << 20)
        head = b'{"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"_meta": {"pad": "'
        proc.stdin.write(head)
        for _ in range(64):
            proc.stdin.write(padding.encode())
        proc.stdin.write(b'"}}}\n')
        proc.stdin.write(b'{"jsonrpc": "2.0", "id": 3, "method": "ping"}\n')
        proc.stdin.flush()
        answer = _read(proc, 60)
        assert answer is not None and answer["id"] == 3, answer  # the long line got no answer
        grown_mib = (_rss_kib(proc.pid) - before) / 1024
        assert grown_mib < 32, grown_mib  # the 64 MiB line was never held whole
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
        stderr = proc.stderr.read().decode()
    assert f"over max_request_bytes ({LIMIT})" in stderr and "67108" in stderr
