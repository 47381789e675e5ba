"""End-to-end helpers: a gateway subprocess reached over HTTP with one persistent client,
plus read-only access to a realm's SQLite file (what an operator would inspect)."""

from __future__ import annotations

import itertools
import sqlite3
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from meta_memory.agent_memory._paths import encode_path_segment
from support import GatewayProcess


class Rpc:
    """JSON-RPC over HTTP to a running gateway (one keep-alive client per thread)."""

    def __init__(self, gw: GatewayProcess) -> None:
        self.gw = gw
        self.url = gw.url + "/rpc"
        self._ids = itertools.count(1)
        self._local = threading.local()

    @property
    def http(self) -> httpx.Client:
        client = getattr(self._local, "client", None)
        if client is None:
            client = self._local.client = httpx.Client(timeout=30)
        return client

    def rpc(self, method: str, params: Any = None) -> dict[str, Any]:
        payload: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": next(self._ids)}
        if params is not None:
            payload["params"] = params
        return self.http.post(self.url, json=payload).json()

    def result(self, method: str, params: Any = None) -> Any:
        body = self.rpc(method, params)
        assert "error" not in body, body
        return body["result"]

    def error(self, method: str, params: Any = None) -> dict[str, Any]:
        body = self.rpc(method, params)
        assert "error" in body, body
        return body["error"]

    # -- conveniences ------------------------------------------------------------------------
    def remember(self, identity: str, title: str, body: str, **extra: Any) -> dict[str, Any]:
        return self.result("meta/agent_memory/remember", {"identity": identity, "title": title, "body": body, **extra})

    def recall(self, identity: str, query_text: str | None = None, **extra: Any) -> dict[str, Any]:
        params = {"identity": identity, **extra}
        if query_text is not None:
            params["query_text"] = query_text
        return self.result("meta/agent_memory/recall", params)

    def recall_ids(self, identity: str, query_text: str | None = None, **extra: Any) -> list[str]:
        return [r["memory_id"] for r in self.recall(identity, query_text, **extra)["records"]]

    def manifest_ids(self, identity: str, **extra: Any) -> list[str]:
        out = self.result("meta/agent_memory/manifest", {"identity": identity, "tier": "full", **extra})
        return [r["id"] for r in out["records"]]

    def inject(self, identity: str, query_text: str, session_key: str | None = None, **extra: Any) -> dict[str, Any]:
        params = {"identity": identity, "query_text": query_text, **extra}
        if session_key is not None:
            params["session_key"] = session_key
        return self.result("meta/turn/inject", params)

    def tool(self, identity: str, arguments: Any, session_key: str | None = None, **extra: Any) -> dict[str, Any]:
        params = {"identity": identity, "arguments": arguments, **extra}
        if session_key is not None:
            params["session_key"] = session_key
        return self.result("meta/agent_memory/tool", params)

    def tool_result(self, identity: str, session_key: str, tool_name: str, **extra: Any) -> dict[str, Any]:
        return self.result("meta/turn/tool_result",
                           {"identity": identity, "session_key": session_key, "tool_name": tool_name, **extra})

    # -- the realm file ----------------------------------------------------------------------
    def realm_db_path(self, realm: str = "default") -> Path:
        return self.gw.state_dir / "agent-memory" / f"{encode_path_segment(realm)}.sqlite3"

    @contextmanager
    def db(self, realm: str = "default") -> Iterator[sqlite3.Connection]:
        """A read-only connection to the realm's SQLite file (WAL: sees committed writes)."""
        conn = sqlite3.connect(f"file:{self.realm_db_path(realm)}?mode=ro", uri=True, timeout=10)
        conn.row_factory = sqlite3.Row
        try:
            yield conn
        finally:
            conn.close()

    def record_row(self, memory_id: str, realm: str = "default") -> sqlite3.Row | None:
        with self.db(realm) as conn:
            return conn.execute("SELECT * FROM records WHERE memory_id = ?", (memory_id,)).fetchone()

    def close(self) -> None:
        client = getattr(self._local, "client", None)
        if client is not None:
            client.close()


def uid(prefix: str = "agent") -> str:
    """A fresh identity (or session key) so tests sharing one gateway never see each other."""
    return f"{prefix}:{uuid.uuid4().hex[:12]}"


def memory_id_of(tool_text: str) -> str:
    """The record id in a ``Stored memory <id>...`` / ``Updated: new record memory <id>...`` text."""
    after = tool_text.split("memory ", 1)[1]
    return after.split(" ", 1)[0].rstrip(".")
