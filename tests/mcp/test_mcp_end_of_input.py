"""``meta-memory mcp`` answers every call still running when its input ends before it exits: a client
that writes its calls and closes stdin reads one answer per request (seed: Integrations, MCP)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from support import REPO_ROOT

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "pipe", "version": "1"}}}


def _call(request_id: int | str, arguments: dict[str, object]) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": "memory", "arguments": arguments}}


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(REPO_ROOT / "src"), os.environ.get("PYTHONPATH", "")) if p)}


def _pipe(state: Path, messages: list[dict[str, object]]) -> tuple[dict[object, dict[str, object]], str]:
    env = _env()
    done = subprocess.run(
        [sys.executable, "-m", "meta_memory.cli", "mcp", "--identity", "agent:x", "--state-dir", str(state)],
        input="".join(json.dumps(m) + "\n" for m in messages).encode(), capture_output=True, env=env, timeout=120,
        check=False)
    assert done.returncode == 0, done.stderr.decode()
    replies = [json.loads(line) for line in done.stdout.decode().splitlines() if line.strip()]
    return {r["id"]: r for r in replies}, done.stderr.decode()


def test_calls_piped_before_stdin_closes_are_all_answered(tmp_path: Path) -> None:
    messages: list[dict[str, object]] = [INITIALIZE, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                                         _call(2, {"action": "remember", "title": "Deploy day",
                                                   "body": "deploys go out on tuesday"}),
                                         {"jsonrpc": "2.0", "id": "list", "method": "tools/list"},
                                         _call(3, {"action": "remember", "title": "Rollback rule",
                                                   "body": "roll back within the hour"})]
    replies, stderr = _pipe(tmp_path / "s", messages)
    assert set(replies) == {1, 2, "list", 3}, stderr
    for request_id in (2, 3):
        result = replies[request_id]["result"]
        assert isinstance(result, dict) and result["isError"] is False
        assert "Stored memory mem-" in result["content"][0]["text"]
    tools = replies["list"]["result"]
    assert isinstance(tools, dict) and [t["name"] for t in tools["tools"]] == ["memory"]
    # the records the answers name are the ones stored
    exported = subprocess.run(
        [sys.executable, "-m", "meta_memory.cli", "export", "--state-dir", str(tmp_path / "s"), "--quiet",
         "--identity", "agent:x"], capture_output=True, env=_env(), timeout=120, check=True)
    lines = [json.loads(line) for line in exported.stdout.decode().splitlines()]
    titles = {line["record"]["title"] for line in lines if line["type"] == "record"}
    assert {"Deploy day", "Rollback rule"} <= titles
