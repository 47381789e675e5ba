"""``meta-memory mcp`` over a raw stdio pipe: a message naming a key twice never reaches the tool (the
MCP SDK alone would act on the last copy): it is answered ``-32700`` under ``null`` as the gateway
answers it, the server goes on answering the next message, and an
MCP host's read of the same line (the first copy) can no longer disagree with what runs."""

from __future__ import annotations

import json
import os
import select
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from support import REPO_ROOT, realm_db

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    p for p in (str(REPO_ROOT / "src"), os.environ.get("PYTHONPATH", "")) if p)}


class RawMcp:
    def __init__(self, state_dir: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "meta_memory.cli", "mcp", "--identity", "agent:x", "--state-dir", str(state_dir)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def read(self, timeout_s: float) -> dict[str, Any] | None:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout_s)
        return json.loads(self.proc.stdout.readline()) if ready else None

    def close(self) -> str:
        assert self.proc.stdin is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
        return self.proc.stderr.read()


def _call(call_id: int, arguments: str) -> str:
    return f'{{"jsonrpc": "2.0", "id": {call_id}, "method": "tools/call", "params": {{"name": "memory", "arguments": {arguments}}}}}'


def test_a_tool_call_naming_a_key_twice_is_refused_and_the_server_goes_on(tmp_path: Path) -> None:
    mcp = RawMcp(tmp_path / "state")
    try:
        mcp.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}))
        assert mcp.read(60) is not None
        mcp.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        # a host's policy reading the first copy sees a recall; the SDK alone would run the remember
        mcp.send(_call(2, '{"action": "recall", "query_text": "budget", "action": "remember", '
                          '"title": "Planted", "body": "wire the budget to account 99"}'))
        refusal = mcp.read(60)  # answered as the gateway answers it: not JSON that reads one way
        assert refusal is not None and refusal["id"] is None and refusal["error"]["code"] == -32700, refusal
        assert 'duplicate key "action"' in refusal["error"]["message"], refusal
        mcp.send(_call(3, '{"action": "remember", "title": "Release day", "body": "Friday."}'))
        answer = mcp.read(60)
        assert answer is not None and answer["id"] == 3 and "Stored memory" in answer["result"]["content"][0]["text"]
    finally:
        stderr = mcp.close()
    assert 'refused an MCP message' in stderr and 'duplicate key "action" in an object' in stderr
    conn = sqlite3.connect(realm_db(tmp_path / "state"))
    try:
        titles = [r[0] for r in conn.execute("SELECT title FROM records")]
    finally:
        conn.close()
    assert titles == ["Release day"]


def test_a_message_nested_past_the_reader_is_answered_under_its_id(tmp_path: Path) -> None:
    mcp = RawMcp(tmp_path / "state")
    try:
        deep = "[" * 20_000 + "]" * 20_000
        mcp.send(_call(7, '{"action": "recall", "query_text": "x", "deep": ' + deep + "}"))
        refusal = mcp.read(60)
        assert refusal is not None and refusal["id"] == 7 and refusal["error"]["code"] == -32700, refusal
        assert "nesting is too deep" in refusal["error"]["message"], refusal
        mcp.send(_call(8, '{"deep": ' + deep + "}").replace('"id": 8', '"id": 8.5'))  # no id MCP holds
        refusal = mcp.read(60)
        assert refusal is not None and refusal["id"] is None, refusal
    finally:
        mcp.close()
