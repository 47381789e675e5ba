"""How a handle reaches a runtime: in-process, over HTTP, or over a spawned stdio gateway.

Every transport takes ``(method, params)`` and returns the JSON result, or
raises the typed :class:`~meta_memory.errors.MetaError` the gateway answered
(the remote transports rebuild it with :func:`meta_memory.errors.from_jsonrpc`),
so the same code handles errors identically in every mode.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Protocol

import httpx

from ..errors import InternalError, MetaError, from_jsonrpc
from ..rpc.registry import CallContext

__all__ = ["GatewayUnreachable", "Transport", "AsyncTransport", "EmbeddedTransport", "HttpTransport", "AsyncHttpTransport", "StdioTransport"]


class Transport(Protocol):
    def call(self, method: str, params: dict[str, Any] | None) -> Any: ...
    def close(self) -> None: ...


class AsyncTransport(Protocol):
    async def call(self, method: str, params: dict[str, Any] | None) -> Any: ...
    async def aclose(self) -> None: ...


class GatewayUnreachable(ConnectionError):
    """The gateway could not be reached (refused, reset, timed out). ``url`` names it."""

    def __init__(self, url: str, cause: Exception) -> None:
        super().__init__(f"cannot reach the meta-memory gateway at {url}: {cause}")
        self.url = url


def _unwrap(response: Any) -> Any:
    if not isinstance(response, dict) or response.get("jsonrpc") != "2.0":
        raise InternalError("malformed JSON-RPC response from the gateway")
    if "error" in response:
        raise from_jsonrpc(response["error"])
    return response.get("result")


class EmbeddedTransport:
    """Calls the method table in-process (the runtime lives inside the host)."""

    def __init__(self, gateway: Any, principal: Any = None) -> None:
        self.gateway = gateway
        self.ctx = CallContext(principal=principal, transport="embedded")

    def call(self, method: str, params: dict[str, Any] | None) -> Any:
        return self.gateway.call(method, params, self.ctx)

    async def acall(self, method: str, params: dict[str, Any] | None) -> Any:
        return await asyncio.to_thread(self.call, method, params)

    def close(self) -> None:
        self.gateway.runtime.close()


class HttpTransport:
    """JSON-RPC over HTTP with httpx. ``token`` is sent as ``Authorization: Bearer <token>``."""

    def __init__(self, url: str, *, token: str | None = None, timeout_s: float = 30.0) -> None:
        self.url = url.rstrip("/") + ("" if url.rstrip("/").endswith("/rpc") else "/rpc")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._client = httpx.Client(timeout=timeout_s, headers=headers)
        self._ids = itertools.count(1)

    def call(self, method: str, params: dict[str, Any] | None) -> Any:
        payload = {"jsonrpc": "2.0", "method": method, "params": params or {}, "id": next(self._ids)}
        try:
            resp = self._client.post(self.url, json=payload)
        except httpx.TransportError as exc:
            raise GatewayUnreachable(self.url, exc) from None
        try:
            body = resp.json()
        except ValueError:
            raise InternalError(f"gateway answered HTTP {resp.status_code} without JSON") from None
        return _unwrap(body)

    def close(self) -> None:
        self._client.close()


class AsyncHttpTransport:
    """Async JSON-RPC over HTTP with ``httpx.AsyncClient``."""

    def __init__(self, url: str, *, token: str | None = None, timeout_s: float = 30.0) -> None:
        self.url = url.rstrip("/") + ("" if url.rstrip("/").endswith("/rpc") else "/rpc")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._client = httpx.AsyncClient(timeout=timeout_s, headers=headers)
        self._ids = itertools.count(1)

    async def call(self, method: str, params: dict[str, Any] | None) -> Any:
        payload = {"jsonrpc": "2.0", "method": method, "params": params or {}, "id": next(self._ids)}
        try:
            resp = await self._client.post(self.url, json=payload)
        except httpx.TransportError as exc:
            raise GatewayUnreachable(self.url, exc) from None
        try:
            body = resp.json()
        except ValueError:
            raise InternalError(f"gateway answered HTTP {resp.status_code} without JSON") from None
        return _unwrap(body)

    async def aclose(self) -> None:
        await self._client.aclose()


class StdioTransport:
    """Spawns ``meta-memory gateway --stdio`` and talks newline-delimited JSON-RPC over its pipes.

    Calls are serialised (one in flight at a time); the child exits when the
    transport is closed.
    """

    def __init__(self, state_dir: Path | str, *, config: Path | str | None = None, command: list[str] | None = None) -> None:
        cmd = command or [sys.executable, "-m", "meta_memory.cli"]
        args = [*cmd, "gateway", "--stdio", "--state-dir", str(state_dir)]
        if config is not None:
            args += ["--config", str(config)]
        self._proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None, env=os.environ.copy())
        self._lock = threading.Lock()
        self._ids = itertools.count(1)

    def call(self, method: str, params: dict[str, Any] | None) -> Any:
        with self._lock:
            assert self._proc.stdin is not None and self._proc.stdout is not None
            request_id = next(self._ids)
            line = json.dumps({"jsonrpc": "2.0", "method": method, "params": params or {}, "id": request_id})
            try:
                self._proc.stdin.write(line.encode("utf-8") + b"\n")
                self._proc.stdin.flush()
                out = self._proc.stdout.readline()
            except (BrokenPipeError, OSError) as exc:
                raise MetaError(f"stdio gateway is gone: {exc}") from None
            if not out:
                raise MetaError(f"stdio gateway exited (code {self._proc.poll()})")
            return _unwrap(json.loads(out))

    async def acall(self, method: str, params: dict[str, Any] | None) -> Any:
        """:meth:`call` on a worker thread, so an async host's event loop is not blocked."""
        return await asyncio.to_thread(self.call, method, params)

    def close(self) -> None:
        if self._proc.poll() is None:
            assert self._proc.stdin is not None
            self._proc.stdin.close()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
