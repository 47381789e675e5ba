"""Test support: a real gateway subprocess on a free port, and JSON-RPC helpers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"


@dataclass
class GatewayProcess:
    """A ``meta-memory serve`` subprocess. ``url`` is ``http://127.0.0.1:<port>``."""

    proc: subprocess.Popen
    url: str
    state_dir: Path
    args: list[str] = field(default_factory=list)
    _ids: int = 0

    def rpc(self, method: str, params: Any = None, *, token: str | None = None, timeout: float = 30.0) -> dict[str, Any]:
        """POST one call; returns the whole JSON-RPC response object."""
        self._ids += 1
        payload: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": self._ids}
        if params is not None:
            payload["params"] = params
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        resp = httpx.post(self.url + "/rpc", json=payload, headers=headers, timeout=timeout)
        return resp.json()

    def result(self, method: str, params: Any = None, **kw: Any) -> Any:
        """POST one call and return its ``result`` (fails the test on an error)."""
        body = self.rpc(method, params, **kw)
        assert "error" not in body, body
        return body["result"]

    def error(self, method: str, params: Any = None, **kw: Any) -> dict[str, Any]:
        """POST one call that must fail; returns its ``error`` object."""
        body = self.rpc(method, params, **kw)
        assert "error" in body, body
        return body["error"]

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def _drain(proc: subprocess.Popen) -> None:
    """Keep reading the gateway's stdout and stderr so a chatty gateway never blocks on a full pipe;
    the last lines are kept on ``proc.log_tail`` for failure messages."""
    import threading
    from collections import deque

    tail: deque[str] = deque(maxlen=5000)
    proc.log_tail = tail  # type: ignore[attr-defined]

    def pump(stream) -> None:  # noqa: ANN001
        for line in iter(stream.readline, ""):
            tail.append(line)

    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            threading.Thread(target=pump, args=(stream,), daemon=True).start()


def start_gateway(state_dir: Path, *extra: str, config: Path | None = None, env: dict[str, str] | None = None,
                  expect_failure: bool = False, timeout: float = 30.0) -> GatewayProcess:
    """Start ``meta-memory serve --port 0`` and wait for its URL line on stdout."""
    args = [sys.executable, "-m", "meta_memory.cli", "serve", "--port", "0", "--state-dir", str(state_dir), *extra]
    if config is not None:
        args += ["--config", str(config)]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})})
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    line = proc.stdout.readline()
    if expect_failure:
        proc.wait(timeout=timeout)
        return GatewayProcess(proc, "", state_dir, args)
    if "listening on " not in line:
        proc.kill()
        err = proc.stderr.read() if proc.stderr else ""
        raise AssertionError(f"gateway did not start: stdout={line!r} stderr={err[-2000:]}")
    url = line.split("listening on ", 1)[1].split()[0]
    _drain(proc)
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/v1/health", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.05)
    return GatewayProcess(proc, url, state_dir, args)


def write_config(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def jsonrpc_lines(proc: subprocess.Popen, messages: list[Any]) -> list[Any]:
    """Write messages (one per line) to a stdio gateway and read one line back per message."""
    assert proc.stdin is not None and proc.stdout is not None
    out = []
    for m in messages:
        proc.stdin.write((json.dumps(m) + "\n").encode())
        proc.stdin.flush()
        out.append(json.loads(proc.stdout.readline()))
    return out


def raw_write(store: Any, realm: str, sql: str, params: tuple[Any, ...] = ()) -> int:
    """Run one statement (``?`` placeholders) in a write transaction of ``realm``; returns its row count.

    Tests only: it seeds or damages rows the store's public contract never writes that way.
    """
    with store.transaction(realm) as tx:
        return int(tx._sql.run(sql, params).rowcount)


def raw_rows(store: Any, realm: str, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
    """The rows of one statement (``?`` placeholders) read from a snapshot of ``realm`` (tests only)."""
    with store.snapshot(realm) as tx:
        return list(tx._sql.rows(sql, params))
