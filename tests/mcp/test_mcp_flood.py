"""``meta-memory mcp`` under a request flood: a client that writes requests and never reads the answers
holds at most ``MAX_IN_FLIGHT`` of them in the server (no further line is read until one is answered), so
its writes block on its own pipe and the server's memory stays bounded; once it reads, every request is
answered, in full."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from meta_memory.mcp_server import MAX_IN_FLIGHT
from support import REPO_ROOT

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    p for p in (str(REPO_ROOT / "src"), os.environ.get("PYTHONPATH", "")) if p)}
#: Far more requests than the in-flight cap, the pipes' buffers and a small answer backlog hold together.
FLOOD = 3_000


def _vm_hwm_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def test_a_client_that_never_reads_is_held_back_by_its_pipe_and_then_answered_in_full(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "meta_memory.cli", "mcp", "--identity", "agent:flood", "--state-dir",
         str(tmp_path / "s")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=ENV)
    assert proc.stdin is not None and proc.stdout is not None
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "flood", "version": "1"}}}
    head = (json.dumps(init) + "\n" + json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
    lines = [json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/list"}) + "\n" for i in range(1, FLOOD + 1)]
    written = [0]

    def writer() -> None:
        assert proc.stdin is not None
        proc.stdin.write(head.encode())
        for line in lines:
            proc.stdin.write(line.encode())
            proc.stdin.flush()
            written[0] += 1
        proc.stdin.close()

    thread = threading.Thread(target=writer, daemon=True)
    try:
        thread.start()
        time.sleep(8.0)  # the server answers what it reads; nobody reads the answers
        held_back = written[0]
        hwm_while_flooded = _vm_hwm_kib(proc.pid)
        # the writer is blocked on its pipe: the server stopped reading at its cap, far short of the flood
        assert thread.is_alive() and held_back < FLOOD, held_back
        ids: set[int] = set()
        for raw in proc.stdout:  # now read: every request is answered, once, in full
            message = json.loads(raw)
            assert "result" in message, message
            assert message["id"] == 0 or message["result"]["tools"], message
            ids.add(message["id"])
        thread.join(timeout=60)
        assert ids == set(range(FLOOD + 1))
        assert proc.wait(timeout=60) == 0
        assert MAX_IN_FLIGHT <= 64 and hwm_while_flooded < 400 * 1024, hwm_while_flooded
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
