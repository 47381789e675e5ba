"""``meta-memory mcp`` over a raw stdio pipe caps a message line at ``[gateway] max_request_bytes``: a
longer line is read to its end and refused (logged, never buffered whole, never run) with a ``-32600``
error under the id its head names, and the server goes on answering the next message. A line that is not
JSON is answered ``-32700`` under ``null`` and one that is not a JSON-RPC message ``-32600``, as
``meta-memory gateway --stdio`` answers them: no request is left waiting."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from support import REPO_ROOT

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    p for p in (str(REPO_ROOT / "src"), os.environ.get("PYTHONPATH", "")) if p)}
LIMIT = 65_536


_PENDING: dict[int, bytes] = {}  # by process id: what was read past the last line


def _read(proc: subprocess.Popen[bytes], timeout_s: float) -> dict[str, Any] | None:
    """The next message line on the server's stdout, or ``None`` when none comes within ``timeout_s``."""
    assert proc.stdout is not None
    fd, key = proc.stdout.fileno(), proc.pid
    deadline = time.monotonic() + timeout_s
    while b"\n" not in _PENDING.get(key, b""):
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        chunk = os.read(fd, 1 << 16) if ready else b""
        if not chunk:
            return None
        _PENDING[key] = _PENDING.get(key, b"") + chunk
    line, _, _PENDING[key] = _PENDING[key].partition(b"\n")
    message: dict[str, Any] = json.loads(line)
    return message


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
        refusal = _read(proc, 60)
        assert refusal is not None and refusal["id"] == 2, refusal
        assert refusal["error"]["code"] == -32600 and str(LIMIT) in refusal["error"]["message"], refusal
        assert "max_request_bytes" in refusal["error"]["message"], refusal
        answer = _read(proc, 60)
        assert answer is not None and answer["id"] == 3 and "result" in answer, answer
        grown_mib = (_rss_kib(proc.pid) - before) / 1024
        assert grown_mib < 32, grown_mib  # the 64 MiB line was never held whole
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
        stderr = proc.stderr.read().decode()
    assert f"over max_request_bytes ({LIMIT})" in stderr and "67108" in stderr


def _started(tmp_path: Path, limit: int = LIMIT) -> subprocess.Popen[bytes]:
    config = tmp_path / "c.toml"
    config.write_text(f"[gateway]\nmax_request_bytes = {limit}\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "meta_memory.cli", "mcp", "--identity", "agent:x", "--state-dir", str(tmp_path / "s"),
         "--config", str(config)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV)
    assert proc.stdin is not None
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}
                                ).encode() + b"\n")
    proc.stdin.flush()
    assert _read(proc, 60) is not None
    proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
    return proc


def _send(proc: subprocess.Popen[bytes], *lines: bytes) -> None:
    assert proc.stdin is not None
    for line in lines:
        proc.stdin.write(line + b"\n")
    proc.stdin.flush()


def test_a_line_that_is_not_json_or_not_a_message_is_answered_and_the_server_goes_on(tmp_path: Path) -> None:
    proc = _started(tmp_path)
    try:
        _send(proc, b'{"jsonrpc": "2.0", "id": 2, "method": "ping"',  # cut short
              b"",  # blank: skipped, as the gateway skips it
              b'{"jsonrpc": "2.0", "id": 3, "id": 4, "method": "ping"}',  # a key named twice
              b'\xff{"jsonrpc": "2.0", "id": 5, "method": "ping"}',  # not UTF-8
              b'{"jsonrpc": "1.0", "id": "six", "method": "ping"}',  # JSON, not a JSON-RPC 2.0 message
              b'[1, 2]',
              b'{"jsonrpc": "2.0", "id": 7, "method": "ping"}')
        answers = [_read(proc, 30) for _ in range(6)]
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=60)
    assert all(a is not None for a in answers), answers
    parse, duplicate, undecodable, invalid, batch, pong = (a or {} for a in answers)
    for refusal in (parse, duplicate, undecodable):
        assert refusal["id"] is None and refusal["error"]["code"] == -32700, refusal
    assert "duplicate key" in duplicate["error"]["message"], duplicate
    assert invalid["id"] == "six" and invalid["error"]["code"] == -32600, invalid
    assert batch["id"] is None and batch["error"]["code"] == -32600, batch
    assert pong["id"] == 7 and pong["result"] == {}, pong


def test_an_oversized_line_whose_id_is_past_its_head_is_refused_under_null(tmp_path: Path) -> None:
    proc = _started(tmp_path)
    try:
        padding = json.dumps("x" * (2 * LIMIT))
        _send(proc, ('{"jsonrpc": "2.0", "method": "ping", "params": {"_meta": {"pad": ' + padding + '}}, "id": 2}'
                     ).encode(), b'{"jsonrpc": "2.0", "id": 3, "method": "ping"}')
        refusal, pong = _read(proc, 60), _read(proc, 60)
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=60)
    assert refusal is not None and refusal["id"] is None and refusal["error"]["code"] == -32600, refusal
    assert pong is not None and pong["id"] == 3, pong
